//! Unit tests of the decision rule, tokens and the auth tables.

use super::*;

fn p(raw: &str) -> Principal {
    Principal::parse(raw).unwrap()
}

fn r(raw: &str) -> RoleName {
    RoleName::parse(raw).unwrap()
}

fn grant(auth: &mut Auth, role: &str, prefix: &str, verb: Verb, deny: bool) {
    let change = AuthChange::Grant {
        role: r(role),
        prefix: prefix.into(),
        verb,
        deny,
    };
    auth.apply_change(change, 0).unwrap();
}

fn user(auth: &mut Auth, principal: &str, roles: &[&str]) {
    let roles = roles.iter().map(|x| r(x)).collect();
    let change = AuthChange::AddUser {
        principal: p(principal),
        roles,
    };
    auth.apply_change(change, 0).unwrap();
}

#[test]
fn verbs_imply_as_documented() {
    assert!(Verb::Admin.implies(Verb::Force));
    assert!(Verb::Lock.implies(Verb::Observe));
    assert!(Verb::Force.implies(Verb::Observe));
    assert!(!Verb::Lock.implies(Verb::Force));
    assert!(!Verb::Observe.implies(Verb::Lock));
    for verb in Verb::ALL {
        assert_eq!(Verb::parse(verb.as_str()).unwrap(), verb);
    }
    assert!(Verb::parse("write").is_err());
}

#[test]
fn the_longest_prefix_decides_and_deny_wins_a_tie() {
    let mut auth = Auth::default();
    grant(&mut auth, "dev", "jobs/", Verb::Lock, false);
    grant(&mut auth, "dev", "jobs/prod/", Verb::Lock, true);
    grant(&mut auth, "ops", "jobs/prod/db", Verb::Lock, false);
    user(&mut auth, "alice", &["dev"]);
    user(&mut auth, "bob", &["dev", "ops"]);
    let alice = p("alice");
    assert!(auth.decide(&alice, Verb::Lock, "jobs/x").is_allowed());
    assert!(auth.decide(&alice, Verb::Observe, "jobs/x").is_allowed());
    assert_eq!(
        auth.decide(&alice, Verb::Lock, "jobs/prod/db"),
        Decision::DeniedBy {
            prefix: "jobs/prod/".into()
        }
    );
    // Denying lock leaves observe alone.
    assert!(auth
        .decide(&alice, Verb::Observe, "jobs/prod/db")
        .is_allowed());
    assert_eq!(auth.decide(&alice, Verb::Lock, "db/x"), Decision::NoRule);
    // A longer allow beats a shorter deny.
    assert!(auth
        .decide(&p("bob"), Verb::Lock, "jobs/prod/db")
        .is_allowed());
    // At the same prefix, deny beats allow whichever role says it.
    grant(&mut auth, "ops", "jobs/prod/", Verb::Lock, false);
    assert!(!auth
        .decide(&p("bob"), Verb::Lock, "jobs/prod/x")
        .is_allowed());
}

#[test]
fn denying_observe_denies_the_verbs_that_imply_it() {
    let mut auth = Auth::default();
    grant(&mut auth, "all", "", Verb::Admin, false);
    grant(&mut auth, "all", "secret/", Verb::Observe, true);
    user(&mut auth, "carol", &["all"]);
    let carol = p("carol");
    for verb in Verb::ALL {
        assert!(
            !auth.decide(&carol, verb, "secret/x").is_allowed(),
            "{verb}"
        );
        assert!(auth.decide(&carol, verb, "public/x").is_allowed(), "{verb}");
    }
}

#[test]
fn check_refuses_only_when_enabled_and_names_principal_verb_and_prefix() {
    let mut auth = Auth::default();
    user(&mut auth, "alice", &[]);
    assert_eq!(auth.check(None, Verb::Admin, ""), Ok(()));
    auth.apply_change(
        AuthChange::Bootstrap {
            principal: p("root"),
            token: None,
        },
        0,
    )
    .unwrap();
    auth.apply_change(AuthChange::Enable, 0).unwrap();
    let error = auth
        .check(Some(&p("alice")), Verb::Lock, "jobs/x")
        .unwrap_err();
    assert_eq!(error.reason(), crate::Reason::PermissionDenied);
    let text = error.to_string();
    assert!(
        text.contains("principal alice may not lock jobs/x"),
        "{text}"
    );
    assert!(
        text.contains("`lock`") && text.contains("\"jobs/\""),
        "{text}"
    );
    assert_eq!(
        auth.check(None, Verb::Observe, "x").unwrap_err().reason(),
        crate::Reason::Unauthenticated
    );
    assert_eq!(auth.check(Some(&p("root")), Verb::Force, "any"), Ok(()));
}

#[test]
fn enabling_needs_an_admin_and_the_last_admin_cannot_be_removed() {
    let mut auth = Auth::default();
    let refused = auth.apply_change(AuthChange::Enable, 0).unwrap_err();
    assert!(
        refused.to_string().contains("no principal holds admin"),
        "{refused}"
    );
    assert!(!auth.enabled());
    auth.apply_change(
        AuthChange::Bootstrap {
            principal: p("root"),
            token: None,
        },
        0,
    )
    .unwrap();
    assert!(auth
        .apply_change(
            AuthChange::Bootstrap {
                principal: p("eve"),
                token: None
            },
            0
        )
        .is_err());
    auth.apply_change(AuthChange::Enable, 0).unwrap();
    let before = auth.clone();
    let demote = AuthChange::SetRoles {
        principal: p("root"),
        roles: Default::default(),
    };
    assert!(auth.apply_change(demote, 0).is_err());
    let revoke = AuthChange::Revoke {
        role: r("admin"),
        prefix: String::new(),
        verb: Verb::Admin,
    };
    assert!(auth.apply_change(revoke, 0).is_err());
    assert_eq!(auth, before, "a refused change left a trace");
}

#[test]
fn tokens_authenticate_until_revoked_or_expired() {
    let mut auth = Auth::default();
    user(&mut auth, "alice", &[]);
    let id = TokenId::parse("abc123").unwrap();
    let secret = "lh_abc123_s3cret";
    let digest = [7u8; 32];
    let token = NewToken {
        id: id.clone(),
        sha256: digest,
        expires_unix_ms: Some(1_000),
    };
    let create = AuthChange::CreateToken {
        principal: p("alice"),
        token,
    };
    auth.apply_change(create, 5).unwrap();
    assert_eq!(auth.tokens()[&id].created_unix_ms, 5);
    assert_eq!(auth.authenticate(secret, &digest, 999), Ok(&p("alice")));
    assert!(matches!(
        auth.authenticate(secret, &digest, 1_000),
        Err(TokenRefusal::Expired { .. })
    ));
    assert_eq!(
        auth.authenticate(secret, &[8u8; 32], 0),
        Err(TokenRefusal::Unknown(id.clone()))
    );
    assert_eq!(
        auth.authenticate("bearer", &digest, 0),
        Err(TokenRefusal::Malformed)
    );
    auth.apply_change(AuthChange::RevokeToken { id: id.clone() }, 0)
        .unwrap();
    assert_eq!(
        auth.authenticate(secret, &digest, 0),
        Err(TokenRefusal::Unknown(id))
    );
}

#[test]
fn identifiers_are_validated() {
    assert!(Principal::parse("").is_err());
    assert!(Principal::parse("a b").is_err());
    assert!(Principal::parse(&"x".repeat(crate::limits::PRINCIPAL_BYTES_MAX + 1)).is_err());
    assert!(TokenId::parse("a_b").is_err());
    assert_eq!(TokenId::of_secret("lh_ab12_xyz").unwrap().as_str(), "ab12");
    assert!(TokenId::of_secret("lh_ab12_").is_none());
    assert!(digests_equal(&[1; 32], &[1; 32]) && !digests_equal(&[1; 32], &[2; 32]));
}

#[test]
fn the_audit_trail_is_bounded_and_numbered() {
    let mut log = AuditLog::default();
    let entry = AuditEntry {
        kind: AuditKind::Refused,
        principal: "x".repeat(crate::limits::AUDIT_TEXT_BYTES_MAX + 9),
        verb: None,
        name: String::new(),
        detail: String::new(),
    };
    for at in 0..crate::limits::AUDIT_RECORDS_REMEMBERED + 3 {
        log.push(entry.clone(), at as u64);
    }
    assert_eq!(
        log.since(0).count(),
        crate::limits::AUDIT_RECORDS_REMEMBERED
    );
    assert_eq!(log.since(0).next().unwrap().seq, 3);
    let last = log.since(0).next_back().unwrap();
    assert_eq!(
        last.entry.principal.len(),
        crate::limits::AUDIT_TEXT_BYTES_MAX
    );
    assert_eq!(log.since(last.seq).count(), 1);
    assert_eq!(log.next_seq(), last.seq + 1);
}

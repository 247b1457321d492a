//! Auth in apply: principals on leases, ownership, quotas, the unwrapped
//! command while enabled, force release's recorded caller, and the audit
//! trail.

use super::test_support::{args, name};
use crate::auth::{AuditKind, AuthChange, Principal, Quota, RoleName, Verb};
use crate::{Command, LockError, OwnerInfo, Reason, Reply, State, Token};

fn p(raw: &str) -> Principal {
    Principal::parse(raw).unwrap()
}

fn as_(principal: &str, command: Command) -> Command {
    Command::As {
        principal: p(principal),
        command: Box::new(command),
    }
}

fn change(state: &mut State, change: Command) {
    let applied = state.apply(change, 0);
    assert_eq!(applied.outcome, Ok(Reply::AuthChanged), "{applied:?}");
}

/// root is admin; alice and bob may lock `jobs/`; auth enabled.
fn secured() -> State {
    let mut state = State::default();
    let boot = AuthChange::Bootstrap {
        principal: p("root"),
        token: None,
    };
    change(&mut state, as_("root", Command::Auth(boot)));
    let grant = AuthChange::Grant {
        role: RoleName::parse("dev").unwrap(),
        prefix: "jobs/".into(),
        verb: Verb::Lock,
        deny: false,
    };
    change(&mut state, Command::Auth(grant));
    for who in ["alice", "bob"] {
        let add = AuthChange::AddUser {
            principal: p(who),
            roles: [RoleName::parse("dev").unwrap()].into(),
        };
        change(&mut state, Command::Auth(add));
    }
    change(&mut state, Command::Auth(AuthChange::Enable));
    state
}

fn grant(state: &mut State, principal: &str) -> Result<crate::LeaseId, LockError> {
    let command = Command::GrantLease {
        ttl_ms: 10_000,
        owner: OwnerInfo::default(),
        request_id: None,
    };
    match state.apply(as_(principal, command), 1).outcome? {
        Reply::LeaseGranted { lease, .. } => Ok(lease),
        other => panic!("{other:?}"),
    }
}

#[test]
fn a_lease_records_its_principal_and_only_it_or_an_admin_may_use_it() {
    let mut state = secured();
    let lease = grant(&mut state, "alice").unwrap();
    assert_eq!(state.lease(lease).unwrap().principal, Some(p("alice")));
    let keep = Command::KeepAlive { lease };
    let refused = state
        .apply(as_("bob", keep.clone()), 2)
        .outcome
        .unwrap_err();
    assert_eq!(refused.reason(), Reason::PermissionDenied);
    assert!(refused
        .to_string()
        .contains("belongs to principal alice, not bob"));
    let acquire = Command::Acquire(args(lease, "jobs/a", 0));
    assert!(state.apply(as_("bob", acquire.clone()), 2).outcome.is_err());
    let revoke = Command::RevokeLease {
        lease,
        request_id: None,
    };
    assert!(state.apply(as_("bob", revoke.clone()), 2).outcome.is_err());
    assert!(state.apply(as_("alice", keep.clone()), 2).outcome.is_ok());
    let Ok(Reply::Acquired { token, .. }) = state.apply(as_("alice", acquire), 2).outcome else {
        panic!("alice could not acquire with her own lease");
    };
    let release = Command::Release {
        lease,
        name: name("jobs/a"),
        token,
        request_id: None,
    };
    assert!(state.apply(as_("bob", release.clone()), 3).outcome.is_err());
    assert!(state.apply(as_("root", keep), 3).outcome.is_ok());
    assert!(state.apply(as_("alice", release), 3).outcome.is_ok());
    assert!(state.apply(as_("root", revoke), 3).outcome.is_ok());
    state.check_invariants().unwrap();
}

#[test]
fn the_verb_is_checked_in_apply_and_refusals_are_audited() {
    let mut state = secured();
    let lease = grant(&mut state, "alice").unwrap();
    let outside = Command::Acquire(args(lease, "db/x", 0));
    let refused = state.apply(as_("alice", outside), 2);
    let error = refused.outcome.unwrap_err();
    assert!(
        error
            .to_string()
            .contains("principal alice may not lock db/x"),
        "{error}"
    );
    let last = state.auth().audit().since(0).next_back().unwrap();
    assert_eq!(last.entry.kind, AuditKind::Refused);
    assert_eq!(
        (last.entry.principal.as_str(), last.entry.verb),
        ("alice", Some(Verb::Lock))
    );
    assert_eq!(last.entry.name, "db/x");
    assert_eq!(
        state.revision(),
        refused.revision,
        "a refusal bumped the revision"
    );
}

#[test]
fn without_a_principal_client_commands_are_unauthenticated_but_timers_apply() {
    let mut state = secured();
    let grant = Command::GrantLease {
        ttl_ms: 10_000,
        owner: OwnerInfo::default(),
        request_id: None,
    };
    let error = state.apply(grant, 1).outcome.unwrap_err();
    assert_eq!(error.reason(), Reason::Unauthenticated);
    let timer = Command::EndHold {
        name: name("jobs/a"),
        token: Token(1),
    };
    assert_eq!(
        state.apply(timer.clone(), 1).outcome,
        Ok(Reply::TimerApplied)
    );
    let wrapped = state.apply(as_("root", timer), 1).outcome.unwrap_err();
    assert_eq!(wrapped.reason(), Reason::InvalidArgument);
}

#[test]
fn admin_changes_need_admin_and_are_audited() {
    let mut state = secured();
    let quota = AuthChange::SetQuota {
        principal: p("alice"),
        quota: Quota::default(),
    };
    let refused = state.apply(as_("alice", Command::Auth(quota.clone())), 1);
    assert_eq!(
        refused.outcome.unwrap_err().reason(),
        Reason::PermissionDenied
    );
    change(&mut state, as_("root", Command::Auth(quota)));
    let last = state.auth().audit().since(0).next_back().unwrap();
    assert_eq!(last.entry.kind, AuditKind::AuthChange);
    assert_eq!(last.entry.principal, "root");
}

#[test]
fn quotas_bound_leases_held_locks_and_waits_per_principal() {
    let mut state = secured();
    let quota = Quota {
        leases: Some(2),
        held: Some(2),
        waiters: Some(1),
    };
    let set = AuthChange::SetQuota {
        principal: p("alice"),
        quota,
    };
    change(&mut state, as_("root", Command::Auth(set)));
    let (l1, l2) = (
        grant(&mut state, "alice").unwrap(),
        grant(&mut state, "alice").unwrap(),
    );
    let error = grant(&mut state, "alice").unwrap_err();
    assert!(
        matches!(&error, LockError::QuotaExceeded { quota, max: 2, .. } if quota.as_str() == "leases"),
        "{error}"
    );
    assert!(error
        .to_string()
        .contains("principal alice reached its leases quota (2)"));
    grant(&mut state, "bob").unwrap();
    let holder = grant(&mut state, "bob").unwrap();
    let acquire =
        |lease, lock: &str, wait_ms| as_("alice", Command::Acquire(args(lease, lock, wait_ms)));
    let hold = |state: &mut State, lease, lock: &str| {
        let bob = as_("bob", Command::Acquire(args(lease, lock, 0)));
        assert!(state.apply(bob, 2).outcome.is_ok());
    };
    hold(&mut state, holder, "jobs/busy");
    assert!(state.apply(acquire(l1, "jobs/a", 0), 2).outcome.is_ok());
    assert!(state
        .apply(acquire(l2, "jobs/busy", 60_000), 2)
        .outcome
        .is_ok());
    state.check_invariants().unwrap();
    assert_eq!(state.auth().usage(&p("alice")).waiters, 1);
    // held + waiting = 2: neither another hold nor another wait.
    let error = state
        .apply(acquire(l1, "jobs/b", 0), 2)
        .outcome
        .unwrap_err();
    assert!(error.to_string().contains("held quota"), "{error}");
    // The waiter is granted when bob lets go: counted as held now.
    let revoke = as_(
        "bob",
        Command::RevokeLease {
            lease: holder,
            request_id: None,
        },
    );
    assert!(state.apply(revoke, 3).outcome.is_ok());
    let usage = state.auth().usage(&p("alice"));
    assert_eq!((usage.leases, usage.held, usage.waiters), (2, 2, 0));
    state.check_invariants().unwrap();
    for lease in [l1, l2] {
        let end = Command::ExpireLease { lease, renewals: 0 };
        assert!(state.apply(end, 4).outcome.is_ok());
    }
    assert_eq!(state.auth().usage(&p("alice")), Default::default());
    state.check_invariants().unwrap();
}

#[test]
fn a_force_release_records_the_principal_while_enabled() {
    let mut state = secured();
    let lease = grant(&mut state, "alice").unwrap();
    let mut a = args(lease, "jobs/a", 0);
    a.fenced = true;
    let Ok(Reply::Acquired { token, .. }) =
        state.apply(as_("alice", Command::Acquire(a)), 2).outcome
    else {
        panic!("acquire failed");
    };
    let force = Command::ForceRelease {
        name: name("jobs/a"),
        expected_token: token,
        reason: "stuck".into(),
        caller: "mallory@laptop".into(),
        allow_unfenced: false,
        revoke_lease: false,
    };
    let refused = state
        .apply(as_("bob", force.clone()), 3)
        .outcome
        .unwrap_err();
    assert!(
        refused.to_string().contains("may not force jobs/a"),
        "{refused}"
    );
    assert!(state.apply(as_("root", force), 3).outcome.is_ok());
    assert_eq!(state.force_releases().next_back().unwrap().caller, "root");
    let last = state.auth().audit().since(0).next_back().unwrap();
    assert_eq!(last.entry.kind, AuditKind::ForceRelease);
    assert_eq!(
        (last.entry.principal.as_str(), last.entry.detail.as_str()),
        ("root", "stuck")
    );
}

#[test]
fn with_auth_disabled_nothing_is_refused_but_principals_are_recorded() {
    let mut state = State::default();
    let lease = grant(&mut state, "alice").unwrap();
    assert_eq!(state.lease(lease).unwrap().principal, Some(p("alice")));
    let keep = Command::KeepAlive { lease };
    assert!(state.apply(as_("bob", keep.clone()), 2).outcome.is_ok());
    assert!(state.apply(keep, 2).outcome.is_ok());
    assert_eq!(state.auth().usage(&p("alice")).leases, 1);
    state.check_invariants().unwrap();
}

//! Unit tests of the lease commands: grant, keep-alive, revoke, expire.

use super::test_support::*;
use crate::outcome::{FreeCause, WaitEndCause};
use crate::{limits, Command, Effect, LeaseId, LockError, OwnerInfo, Reply, RequestId, State};

fn grant_with(state: &mut State, ttl_ms: u64, request_id: &str) -> crate::Applied {
    state.apply(
        Command::GrantLease {
            ttl_ms,
            owner: OwnerInfo::default(),
            request_id: RequestId::parse(request_id).unwrap(),
        },
        7,
    )
}

#[test]
fn grant_uses_the_new_revision_as_lease_id() {
    let mut state = State::default();
    let applied = grant_with(&mut state, 5_000, "");
    assert_eq!(applied.revision.0, 1);
    let lease = LeaseId(1);
    assert_eq!(
        applied.outcome,
        Ok(Reply::LeaseGranted {
            lease,
            ttl_ms: 5_000
        })
    );
    assert_eq!(
        applied.effects,
        vec![Effect::LeaseRenewed {
            lease,
            ttl_ms: 5_000,
            renewals: 0,
            owner: String::new(),
            held: Vec::new(),
            holds: 0,
        }]
    );
    assert_eq!(state.lease(lease).unwrap().granted_unix_ms, 7);
    assert_eq!(grant(&mut state), LeaseId(2));
    assert_eq!(state.lease_count(), 2);
}

#[test]
fn grant_rejects_bad_ttl_and_owner_without_bumping() {
    let mut state = State::default();
    for ttl_ms in [0, limits::TTL_MS_MIN - 1, limits::TTL_MS_MAX + 1] {
        let applied = grant_with(&mut state, ttl_ms, "");
        let Err(LockError::InvalidArgument { field, .. }) = applied.outcome else {
            panic!("{applied:?}");
        };
        assert_eq!(field, "ttl_ms");
        assert_eq!(applied.revision.0, 0);
    }
    let owner = OwnerInfo {
        host: "h".repeat(limits::OWNER_FIELD_BYTES_MAX + 1),
        ..OwnerInfo::default()
    };
    let applied = state.apply(
        Command::GrantLease {
            ttl_ms: 5_000,
            owner,
            request_id: None,
        },
        0,
    );
    assert!(matches!(
        applied.outcome,
        Err(LockError::InvalidArgument { ref field, .. }) if field == "owner.host"
    ));
    assert_eq!((state.revision().0, state.lease_count()), (0, 0));
}

#[test]
fn retried_grant_returns_the_same_lease_until_it_ends() {
    let mut state = State::default();
    let first = grant_with(&mut state, 5_000, "req-1");
    let retry = grant_with(&mut state, 5_000, "req-1");
    assert_eq!(retry.outcome, first.outcome);
    assert_eq!(retry.revision, first.revision);
    assert!(retry.effects.is_empty());
    assert_eq!(state.lease_count(), 1);
    let other = grant_with(&mut state, 5_000, "req-2");
    assert_ne!(other.outcome, first.outcome);
    state.apply(
        Command::ExpireLease {
            lease: LeaseId(1),
            renewals: 0,
        },
        0,
    );
    let after_end = grant_with(&mut state, 5_000, "req-1");
    assert_eq!(
        after_end.outcome,
        Ok(Reply::LeaseGranted {
            lease: LeaseId(4),
            ttl_ms: 5_000
        })
    );
}

#[test]
fn a_renewal_names_its_first_locks_and_counts_them_all() {
    let mut state = State::default();
    let lease = grant(&mut state);
    let tokens: Vec<_> = (0..20)
        .map(|i| hold(&mut state, lease, &format!("many/{i:02}")))
        .collect();
    let applied = state.apply(Command::KeepAlive { lease }, 99);
    let [Effect::LeaseRenewed { held, holds, .. }] = applied.effects.as_slice() else {
        panic!("one renewal effect: {:?}", applied.effects);
    };
    assert_eq!(*holds, 20);
    let expected: Vec<_> = (0..crate::outcome::RENEWAL_NAMES_LOGGED)
        .map(|i| (name(&format!("many/{i:02}")), tokens[i]))
        .collect();
    assert_eq!(held, &expected);
}

#[test]
fn keep_alive_renews_without_bumping() {
    let mut state = State::default();
    let lease = grant(&mut state);
    let applied = state.apply(Command::KeepAlive { lease }, 99);
    assert_eq!(applied.revision.0, 1);
    assert_eq!(
        applied.outcome,
        Ok(Reply::KeptAlive {
            lease,
            ttl_ms: 10_000
        })
    );
    assert_eq!(
        applied.effects,
        vec![Effect::LeaseRenewed {
            lease,
            ttl_ms: 10_000,
            renewals: 1,
            owner: String::new(),
            held: Vec::new(),
            holds: 0,
        }]
    );
    assert_eq!(state.lease(lease).unwrap().renewed_unix_ms, 99);
}

#[test]
fn unknown_leases_are_expired_or_not_found() {
    let mut state = State::default();
    let expired = grant(&mut state);
    let revoked = grant(&mut state);
    state.apply(
        Command::ExpireLease {
            lease: expired,
            renewals: 0,
        },
        0,
    );
    state.apply(
        Command::RevokeLease {
            lease: revoked,
            request_id: None,
        },
        0,
    );
    let revision = state.revision();
    let keep = |state: &mut State, lease| state.apply(Command::KeepAlive { lease }, 0).outcome;
    assert_eq!(
        keep(&mut state, expired),
        Err(LockError::LeaseExpired { lease: expired })
    );
    assert_eq!(
        keep(&mut state, revoked),
        Err(LockError::LeaseNotFound { lease: revoked })
    );
    let revoke_again = state.apply(
        Command::RevokeLease {
            lease: expired,
            request_id: None,
        },
        0,
    );
    assert_eq!(
        revoke_again.outcome,
        Err(LockError::LeaseExpired { lease: expired })
    );
    let expire_again = state.apply(
        Command::ExpireLease {
            lease: revoked,
            renewals: 0,
        },
        0,
    );
    assert_eq!(expire_again.outcome, Ok(Reply::TimerApplied));
    assert!(expire_again.effects.is_empty());
    assert_eq!(state.revision(), revision);
}

#[test]
fn expired_memory_forgets_the_oldest_beyond_its_limit() {
    let mut state = State::default();
    let first = grant(&mut state);
    state.apply(
        Command::ExpireLease {
            lease: first,
            renewals: 0,
        },
        0,
    );
    for _ in 0..limits::EXPIRED_LEASES_REMEMBERED {
        let lease = grant(&mut state);
        state.apply(Command::ExpireLease { lease, renewals: 0 }, 0);
        assert!(state.recently_expired(lease));
    }
    assert!(!state.recently_expired(first));
    let applied = state.apply(Command::KeepAlive { lease: first }, 0);
    assert_eq!(
        applied.outcome,
        Err(LockError::LeaseNotFound { lease: first })
    );
}

#[test]
fn revoke_releases_holds_hands_over_and_leaves_queues() {
    let mut state = State::default();
    let (a, b) = (grant(&mut state), grant(&mut state));
    let held = hold(&mut state, a, "x");
    hold(&mut state, b, "y");
    acquire(&mut state, b, "x", 1_000);
    acquire(&mut state, a, "y", 1_000);
    let applied = state.apply(
        Command::RevokeLease {
            lease: a,
            request_id: None,
        },
        0,
    );
    let token = crate::Token(applied.revision.0);
    assert_eq!(applied.revision.0, 7);
    assert_eq!(
        applied.outcome,
        Ok(Reply::LeaseEnded {
            released: vec![name("x")]
        })
    );
    assert_eq!(
        applied.effects,
        vec![
            Effect::WaiterRemoved {
                name: name("y"),
                lease: a,
                cause: WaitEndCause::LeaseRevoked,
                owner: String::new(),
            },
            Effect::LockFreed {
                name: name("x"),
                lease: a,
                token: held,
                acquired_unix_ms: 2,
                cause: FreeCause::LeaseRevoked,
                forced: None,
                owner: "".into(),
            },
            Effect::LockGranted {
                name: name("x"),
                lease: b,
                token,
                from_queue: true,
                max_hold_ms: 0,
                owner: String::new(),
                value: None,
            },
            Effect::LeaseEnded {
                lease: a,
                expired: false
            },
        ]
    );
    assert!(state.lease(a).is_none());
    assert_eq!(state.lock(&name("y")).unwrap().waiters.len(), 0);
    assert_eq!(state.lease(b).unwrap().holds.len(), 2);
    assert!(!state.recently_expired(a));
    state.check_invariants().unwrap();
}

#[test]
fn expiry_without_waiters_removes_the_lock() {
    let mut state = State::default();
    let a = grant(&mut state);
    hold(&mut state, a, "x");
    let applied = state.apply(
        Command::ExpireLease {
            lease: a,
            renewals: 0,
        },
        0,
    );
    assert!(matches!(applied.outcome, Ok(Reply::LeaseEnded { .. })));
    assert!(applied.effects.contains(&Effect::LeaseEnded {
        lease: a,
        expired: true
    }));
    assert_eq!(state.lock_count(), 0);
    assert!(state.recently_expired(a));
}

#[test]
fn a_retried_revoke_gets_its_first_outcome() {
    let mut state = State::default();
    let lease = grant(&mut state);
    let id = crate::RequestId::parse("revoke-1").unwrap();
    let revoke = |state: &mut State, id: Option<crate::RequestId>| {
        state
            .apply(
                Command::RevokeLease {
                    lease,
                    request_id: id,
                },
                1,
            )
            .outcome
    };
    let first = revoke(&mut state, id.clone());
    assert!(matches!(first, Ok(crate::Reply::LeaseEnded { .. })));
    assert_eq!(revoke(&mut state, id), first);
    assert_eq!(
        revoke(&mut state, None),
        Err(crate::LockError::LeaseNotFound { lease })
    );
}

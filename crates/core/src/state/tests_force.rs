//! Unit tests of the force release: the token and fencing checks, the grant
//! to the next waiter, revoking the holder's lease, and the bounded record.

use super::test_support::*;
use crate::outcome::{ForcedBy, FreeCause};
use crate::{limits, Applied, Command, Effect, LockError, Reply, State, Token};

/// Applies a force release of `lock` naming `token`, with a reason.
fn force(
    state: &mut State,
    lock: &str,
    token: Token,
    allow_unfenced: bool,
    revoke_lease: bool,
) -> Applied {
    state.apply(
        Command::ForceRelease {
            name: name(lock),
            expected_token: token,
            reason: "holder hung in D state".into(),
            caller: "ops@bastion".into(),
            allow_unfenced,
            revoke_lease,
        },
        9,
    )
}

/// Acquires a free lock with `fenced` and returns its token.
fn hold_fenced(state: &mut State, lease: crate::LeaseId, lock: &str) -> Token {
    let mut acquire = args(lease, lock, 0);
    acquire.fenced = true;
    match state.apply(Command::Acquire(acquire), 2).outcome {
        Ok(Reply::Acquired { token, .. }) => token,
        other => panic!("acquire failed: {other:?}"),
    }
}

#[test]
fn the_right_token_frees_the_lock_and_the_waiter_gets_a_higher_token() {
    let mut state = State::default();
    let (a, b) = (grant(&mut state), grant(&mut state));
    let token = hold_fenced(&mut state, a, "db");
    assert_eq!(
        acquire(&mut state, b, "db", 5_000).outcome,
        Ok(Reply::Queued { position: 1 })
    );
    let before = state.revision();
    let applied = force(&mut state, "db", token, false, false);
    assert_eq!(
        applied.outcome,
        Ok(Reply::ForceReleased {
            lease: a,
            released: vec![name("db")],
            lease_revoked: false,
        })
    );
    assert_eq!(applied.revision.0, before.0 + 1);
    let next = Token(applied.revision.0);
    assert!(next > token);
    assert_eq!(
        applied.effects,
        vec![
            Effect::LockFreed {
                name: name("db"),
                lease: a,
                token,
                acquired_unix_ms: 2,
                cause: FreeCause::Released,
                forced: Some(ForcedBy {
                    caller: "ops@bastion".into(),
                    reason: "holder hung in D state".into()
                }),
                owner: "".into(),
            },
            Effect::LockGranted {
                name: name("db"),
                lease: b,
                token: next,
                from_queue: true,
                max_hold_ms: 0,
                owner: String::new(),
                value: None,
            },
        ]
    );
    let holder = state.lock(&name("db")).unwrap().holder.clone().unwrap();
    assert_eq!((holder.lease, holder.token), (b, next));
    // The old holder's lease lives on, without the lock.
    assert!(state.lease(a).unwrap().holds.is_empty());
    state.check_invariants().unwrap();
}

#[test]
fn a_free_lock_left_by_a_force_release_is_removed() {
    let mut state = State::default();
    let a = grant(&mut state);
    let token = hold_fenced(&mut state, a, "db");
    assert!(force(&mut state, "db", token, false, false).outcome.is_ok());
    assert!(state.lock(&name("db")).is_none());
    state.check_invariants().unwrap();
}

#[test]
fn a_wrong_token_is_refused_naming_the_holder_token() {
    let mut state = State::default();
    let a = grant(&mut state);
    let token = hold_fenced(&mut state, a, "db");
    let revision = state.revision();
    let wrong = Token(token.0 + 5);
    let applied = force(&mut state, "db", wrong, true, false);
    assert_eq!(
        applied.outcome,
        Err(LockError::NotHolder {
            name: name("db"),
            lease: None,
            token: wrong,
            holder_token: Some(token),
        })
    );
    assert_eq!(applied.revision, revision);
    assert!(applied.effects.is_empty());
    assert_eq!(
        state
            .lock(&name("db"))
            .unwrap()
            .holder
            .as_ref()
            .unwrap()
            .token,
        token
    );
    assert_eq!(state.force_releases().count(), 0);
}

#[test]
fn a_missing_lock_is_refused_with_nearby_names() {
    let mut state = State::default();
    let a = grant(&mut state);
    hold_fenced(&mut state, a, "orders-db");
    let applied = force(&mut state, "orders-dB", Token(2), true, false);
    let Err(LockError::NoSuchLock { nearby, .. }) = applied.outcome else {
        panic!("expected NoSuchLock: {applied:?}");
    };
    assert_eq!(nearby, vec!["orders-db".to_string()]);
}

#[test]
fn an_unfenced_holder_is_refused_without_the_flag_and_freed_with_it() {
    let mut state = State::default();
    let a = grant(&mut state);
    let token = hold(&mut state, a, "cron");
    let revision = state.revision();
    let refused = force(&mut state, "cron", token, false, false);
    assert_eq!(
        refused.outcome,
        Err(LockError::Unfenced { name: name("cron") })
    );
    assert_eq!(refused.revision, revision);
    let message = refused.outcome.unwrap_err().to_string();
    assert!(message.contains("could still write"), "{message}");
    assert!(message.contains("allow_unfenced"), "{message}");
    assert!(state.lock(&name("cron")).is_some());
    let allowed = force(&mut state, "cron", token, true, false);
    assert!(matches!(allowed.outcome, Ok(Reply::ForceReleased { .. })));
    assert!(state.lock(&name("cron")).is_none());
    state.check_invariants().unwrap();
}

#[test]
fn revoke_lease_frees_every_lock_of_the_lease_and_ends_it() {
    let mut state = State::default();
    let (a, b) = (grant(&mut state), grant(&mut state));
    let token = hold_fenced(&mut state, a, "db");
    hold_fenced(&mut state, a, "cache");
    acquire(&mut state, b, "cache", 5_000);
    let applied = force(&mut state, "db", token, false, true);
    let Ok(Reply::ForceReleased {
        lease,
        mut released,
        lease_revoked,
    }) = applied.outcome
    else {
        panic!("expected ForceReleased: {applied:?}");
    };
    released.sort();
    assert_eq!((lease, lease_revoked), (a, true));
    assert_eq!(released, vec![name("cache"), name("db")]);
    assert!(state.lease(a).is_none());
    assert!(state.lock(&name("db")).is_none());
    let next = Token(applied.revision.0);
    let cache = state.lock(&name("cache")).unwrap().holder.clone().unwrap();
    assert_eq!((cache.lease, cache.token), (b, next));
    let forced: Vec<_> = applied
        .effects
        .iter()
        .filter_map(|e| match e {
            Effect::LockFreed { cause, forced, .. } => Some((*cause, forced.is_some())),
            _ => None,
        })
        .collect();
    assert_eq!(forced, vec![(FreeCause::LeaseRevoked, true); 2]);
    assert!(applied.effects.contains(&Effect::LeaseEnded {
        lease: a,
        expired: false
    }));
    // Its keep-alives now fail.
    assert_eq!(
        state.apply(Command::KeepAlive { lease: a }, 10).outcome,
        Err(LockError::LeaseNotFound { lease: a })
    );
    state.check_invariants().unwrap();
}

#[test]
fn the_record_is_kept_and_bounded() {
    let mut state = State::default();
    let a = grant(&mut state);
    for _ in 0..limits::FORCE_RELEASES_REMEMBERED + 3 {
        let token = hold_fenced(&mut state, a, "db");
        assert!(force(&mut state, "db", token, false, false).outcome.is_ok());
    }
    let records: Vec<_> = state.force_releases().collect();
    assert_eq!(records.len(), limits::FORCE_RELEASES_REMEMBERED);
    let last = records.last().unwrap();
    assert_eq!(last.name, name("db"));
    assert_eq!(last.lease, a);
    assert_eq!(last.reason, "holder hung in D state");
    assert_eq!(last.caller, "ops@bastion");
    assert_eq!(last.at_unix_ms, 9);
    assert!(!last.lease_revoked);
    // The oldest were forgotten: the first kept is not the first made.
    assert!(records[0].token > Token(3));
}

#[test]
fn reason_and_caller_are_validated_naming_the_limit() {
    let command = |reason: String, caller: String| Command::ForceRelease {
        name: name("db"),
        expected_token: Token(1),
        reason,
        caller,
        allow_unfenced: false,
        revoke_lease: false,
    };
    assert!(command("why".into(), "ops@host".into()).validate().is_ok());
    let empty = command(" ".into(), String::new()).validate().unwrap_err();
    assert!(empty.to_string().contains("invalid reason"), "{empty}");
    let long = "r".repeat(limits::FORCE_REASON_BYTES_MAX + 1);
    let too_long = command(long, String::new()).validate().unwrap_err();
    assert!(too_long.to_string().contains("FORCE_REASON_BYTES_MAX"));
    let caller = "c".repeat(limits::FORCE_CALLER_BYTES_MAX + 1);
    let too_long = command("why".into(), caller).validate().unwrap_err();
    assert!(too_long.to_string().contains("FORCE_CALLER_BYTES_MAX"));
    // The core checks again at apply: a malformed entry changes nothing.
    let mut state = State::default();
    let a = grant(&mut state);
    let token = hold_fenced(&mut state, a, "db");
    let applied = state.apply(
        Command::ForceRelease {
            name: name("db"),
            expected_token: token,
            reason: String::new(),
            caller: String::new(),
            allow_unfenced: false,
            revoke_lease: false,
        },
        9,
    );
    assert!(matches!(
        applied.outcome,
        Err(LockError::InvalidArgument { .. })
    ));
    assert!(state.lock(&name("db")).is_some());
}

//! Unit tests of acquire and release: grants, queues, errors, dedup and the
//! per-lock and per-lease limits.

use super::test_support::*;
use crate::outcome::FreeCause;
use crate::{limits, Command, Effect, LockError, Reply, RequestId, State, Token};

#[test]
fn acquire_grants_a_free_lock_with_the_revision_as_token() {
    let mut state = State::default();
    let a = grant(&mut state);
    let applied = acquire(&mut state, a, "jobs/nightly", 0);
    assert_eq!(applied.revision.0, 2);
    assert_eq!(
        applied.outcome,
        Ok(Reply::Acquired {
            token: Token(2),
            already_held: false
        })
    );
    assert_eq!(
        applied.effects,
        vec![Effect::LockGranted {
            name: name("jobs/nightly"),
            lease: a,
            token: Token(2),
            from_queue: false,
            max_hold_ms: 0,
            owner: String::new(),
            value: None,
        }]
    );
    let again = acquire(&mut state, a, "jobs/nightly", 0);
    assert_eq!(
        again.outcome,
        Ok(Reply::Acquired {
            token: Token(2),
            already_held: true
        })
    );
    assert_eq!((again.revision.0, again.effects.len()), (2, 0));
}

#[test]
fn held_lock_is_busy_or_queues_fifo() {
    let mut state = State::default();
    let (a, b, c) = (grant(&mut state), grant(&mut state), grant(&mut state));
    let token = hold(&mut state, a, "x");
    let busy = acquire(&mut state, b, "x", 0);
    assert_eq!(
        busy.outcome,
        Err(LockError::Busy {
            name: name("x"),
            holder_token: Some(token)
        })
    );
    assert_eq!(busy.revision, state.revision());
    assert_eq!(
        acquire(&mut state, b, "x", 500).outcome,
        Ok(Reply::Queued { position: 1 })
    );
    assert_eq!(
        acquire(&mut state, c, "x", 500).outcome,
        Ok(Reply::Queued { position: 2 })
    );
    let revision = state.revision();
    let requeue = acquire(&mut state, c, "x", 0);
    assert_eq!(requeue.outcome, Ok(Reply::Queued { position: 2 }));
    assert_eq!(requeue.revision, revision);
    let released = release(&mut state, a, "x", token);
    let next = Token(released.revision.0);
    assert_eq!(released.outcome, Ok(Reply::Released));
    assert_eq!(
        released.effects,
        vec![
            Effect::LockFreed {
                name: name("x"),
                lease: a,
                token,
                acquired_unix_ms: 2,
                cause: FreeCause::Released,
                forced: None,
                owner: "".into(),
            },
            Effect::LockGranted {
                name: name("x"),
                lease: b,
                token: next,
                from_queue: true,
                max_hold_ms: 0,
                owner: String::new(),
                value: None,
            },
        ]
    );
    assert_eq!(
        acquire(&mut state, c, "x", 500).outcome,
        Ok(Reply::Queued { position: 1 })
    );
    state.check_invariants().unwrap();
}

#[test]
fn release_with_a_wrong_token_names_the_holder_token_and_is_remembered() {
    let mut state = State::default();
    let (a, b) = (grant(&mut state), grant(&mut state));
    let token = hold(&mut state, a, "x");
    let revision = state.revision();
    let stale = release(&mut state, a, "x", Token(1));
    let expected = LockError::NotHolder {
        name: name("x"),
        lease: Some(a),
        token: Token(1),
        holder_token: Some(token),
    };
    assert_eq!(stale.outcome, Err(expected.clone()));
    let other = release(&mut state, b, "x", token);
    assert!(matches!(
        other.outcome,
        Err(LockError::NotHolder { holder_token: Some(t), .. }) if t == token
    ));
    assert_eq!(state.revision(), revision);
    let failed: Vec<_> = state.failed_releases().collect();
    assert_eq!(failed.len(), 2);
    assert_eq!((failed[0].lease, failed[0].token), (a, Token(1)));
    assert_eq!(failed[0].error, expected.to_string());
    assert_eq!(failed[0].at_unix_ms, 3);
}

#[test]
fn release_of_an_unknown_name_suggests_near_misses() {
    let mut state = State::default();
    let a = grant(&mut state);
    hold(&mut state, a, "jobs/nightly");
    hold(&mut state, a, "db/migrate");
    let applied = release(&mut state, a, "jobs/nigthly", Token(2));
    assert_eq!(
        applied.outcome,
        Err(LockError::NoSuchLock {
            name: name("jobs/nigthly"),
            nearby: vec!["jobs/nightly".to_owned()]
        })
    );
    let failed: Vec<_> = state.failed_releases().collect();
    assert_eq!(failed.len(), 1);
    // Remembered with the owner and the near miss, for `diagnose`.
    assert_eq!(failed[0].owner, state.lease(a).unwrap().owner.owner());
    assert_eq!(failed[0].nearby, vec!["jobs/nightly".to_owned()]);
    assert!(matches!(
        &applied.effects[..],
        [Effect::ReleaseFailed { name: n, lease, .. }] if n == &name("jobs/nigthly") && *lease == a
    ));
}

#[test]
fn release_by_an_ended_lease_says_so() {
    let mut state = State::default();
    let a = grant(&mut state);
    let token = hold(&mut state, a, "x");
    state.apply(
        Command::ExpireLease {
            lease: a,
            renewals: 0,
        },
        0,
    );
    let applied = release(&mut state, a, "x", token);
    assert_eq!(applied.outcome, Err(LockError::LeaseExpired { lease: a }));
    assert_eq!(state.failed_releases().count(), 1);
}

#[test]
fn failed_release_memory_is_bounded() {
    let mut state = State::default();
    let a = grant(&mut state);
    for i in 0..limits::FAILED_RELEASES_REMEMBERED as u64 + 10 {
        release(&mut state, a, "x", Token(i));
    }
    assert_eq!(
        state.failed_releases().count(),
        limits::FAILED_RELEASES_REMEMBERED
    );
    assert_eq!(state.failed_releases().next().unwrap().token, Token(10));
}

#[test]
fn retried_requests_return_the_first_outcome() {
    let mut state = State::default();
    let (a, b) = (grant(&mut state), grant(&mut state));
    let token = hold(&mut state, a, "x");
    let mut busy_args = args(b, "x", 0);
    busy_args.request_id = RequestId::parse("acq-1").unwrap();
    let first = state.apply(Command::Acquire(busy_args.clone()), 0);
    assert!(matches!(first.outcome, Err(LockError::Busy { .. })));
    let release_cmd = Command::Release {
        lease: a,
        name: name("x"),
        token,
        request_id: RequestId::parse("rel-1").unwrap(),
    };
    let released = state.apply(release_cmd.clone(), 0);
    assert_eq!(released.outcome, Ok(Reply::Released));
    let retried_release = state.apply(release_cmd, 0);
    assert_eq!(retried_release.outcome, Ok(Reply::Released));
    assert_eq!(retried_release.revision, released.revision);
    assert!(retried_release.effects.is_empty());
    // The lock is free now, but the retry hears the first outcome.
    let retried = state.apply(Command::Acquire(busy_args), 0);
    assert_eq!(retried.outcome, first.outcome);
    assert_eq!(state.lock_count(), 0);
}

#[test]
fn a_retried_queued_acquire_rereads_the_state_instead_of_replaying_its_place() {
    let mut state = State::default();
    let (a, b) = (grant(&mut state), grant(&mut state));
    let token = hold(&mut state, a, "x");
    let mut queued = args(b, "x", 10_000);
    queued.request_id = RequestId::parse("acq-q").unwrap();
    let first = state.apply(Command::Acquire(queued.clone()), 0);
    assert_eq!(first.outcome, Ok(Reply::Queued { position: 1 }));
    // The caller went away and its wait was cancelled: a retry with the same
    // id queues again rather than hearing of a place it no longer has.
    let cancel = Command::CancelWait {
        lease: b,
        name: name("x"),
        timed_out: false,
    };
    state.apply(cancel, 0);
    assert!(state.lock(&name("x")).unwrap().waiters.is_empty());
    let retried = state.apply(Command::Acquire(queued.clone()), 0);
    assert_eq!(retried.outcome, Ok(Reply::Queued { position: 1 }));
    assert_eq!(state.lock(&name("x")).unwrap().waiters.len(), 1);
    // Once granted, a retry hears the grant with the token it got.
    release(&mut state, a, "x", token);
    let after_grant = state.apply(Command::Acquire(queued), 0);
    assert!(matches!(
        after_grant.outcome,
        Ok(Reply::Acquired { already_held: true, token: t }) if t > token
    ));
    state.check_invariants().unwrap();
}

#[test]
fn acquire_limits_name_the_limit() {
    let mut state = State::default();
    let a = grant(&mut state);
    let mut too_long = args(a, "x", limits::WAIT_MS_MAX + 1);
    let applied = state.apply(Command::Acquire(too_long.clone()), 0);
    assert!(
        matches!(applied.outcome, Err(LockError::InvalidArgument { ref field, ref reason, .. }) if field == "wait_ms" && reason.contains("WAIT_MS_MAX"))
    );
    too_long.wait_ms = 0;
    too_long.lock_delay_ms = limits::LOCK_DELAY_MS_MAX + 1;
    let applied = state.apply(Command::Acquire(too_long), 0);
    assert!(
        matches!(applied.outcome, Err(LockError::InvalidArgument { ref field, .. }) if field == "lock_delay_ms")
    );
    for i in 0..limits::LOCKS_PER_LEASE_MAX {
        hold(&mut state, a, &format!("l/{i}"));
    }
    let applied = acquire(&mut state, a, "one-more", 0);
    assert!(
        matches!(applied.outcome, Err(LockError::ResourceExhausted { ref limit, .. }) if limit.as_str() == "LOCKS_PER_LEASE_MAX")
    );
    assert_eq!(applied.revision, state.revision());
}

#[test]
fn waiters_per_lock_is_bounded() {
    let mut state = State::default();
    let holder = grant(&mut state);
    hold(&mut state, holder, "x");
    for _ in 0..limits::WAITERS_PER_LOCK_MAX {
        let lease = grant(&mut state);
        assert!(matches!(
            acquire(&mut state, lease, "x", 10).outcome,
            Ok(Reply::Queued { .. })
        ));
    }
    let late = grant(&mut state);
    let applied = acquire(&mut state, late, "x", 10);
    assert!(
        matches!(applied.outcome, Err(LockError::ResourceExhausted { ref limit, .. }) if limit.as_str() == "WAITERS_PER_LOCK_MAX")
    );
    state.check_invariants().unwrap();
}

#[test]
fn a_decoded_state_shares_each_held_name_between_table_and_lease() {
    let mut state = State::default();
    let (a, b) = (grant(&mut state), grant(&mut state));
    hold(&mut state, a, "jobs/held");
    hold(&mut state, b, "jobs/busy");
    assert!(matches!(
        acquire(&mut state, a, "jobs/busy", 10_000).outcome,
        Ok(Reply::Queued { .. })
    ));
    let bytes = postcard::to_allocvec(&state).expect("encodes");
    let mut decoded: State = postcard::from_bytes(&bytes).expect("decodes");
    assert_eq!(decoded, state);
    let shared = |state: &State| {
        let lease = state.lease(a).expect("live");
        let held = lease.holds.iter().next().expect("holds one");
        let waited = lease.waits.iter().next().expect("waits for one");
        let key_of = |n| state.lock(n).expect("in the table").name;
        held.shares_text_with(key_of(held)) && waited.shares_text_with(key_of(waited))
    };
    assert!(!shared(&decoded), "decoding gives each name its own text");
    decoded.settle_decoded();
    assert!(shared(&decoded));
    assert_eq!(decoded, state);
}

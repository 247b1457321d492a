//! Unit tests of the commands that end a hold or a wait without a release:
//! lock delay after expiry, max hold, and leaving a queue.

use super::test_support::*;
use crate::outcome::{FreeCause, WaitEndCause};
use crate::{Command, Effect, LockDelay, LockError, Reply, State, Token};

#[test]
fn lock_delay_keeps_an_expired_holders_lock_unavailable() {
    let mut state = State::default();
    let (a, b, c) = (grant(&mut state), grant(&mut state), grant(&mut state));
    let mut delayed = args(a, "x", 0);
    delayed.lock_delay_ms = 5_000;
    state.apply(Command::Acquire(delayed), 0);
    let token = state
        .lock(&name("x"))
        .unwrap()
        .holder
        .as_ref()
        .unwrap()
        .token;
    acquire(&mut state, b, "x", 1_000);
    let expired = state.apply(
        Command::ExpireLease {
            lease: a,
            renewals: 0,
        },
        42,
    );
    assert!(expired.effects.contains(&Effect::LockDelayStarted {
        name: name("x"),
        token,
        delay_ms: 5_000
    }));
    assert!(!expired
        .effects
        .iter()
        .any(|e| matches!(e, Effect::LockGranted { .. })));
    let lock = state.lock(&name("x")).unwrap();
    let delay = LockDelay {
        token,
        delay_ms: 5_000,
        since_unix_ms: 42,
    };
    assert_eq!(
        (lock.holder.clone(), lock.delay.clone()),
        (None, Some(Box::new(delay)))
    );
    assert_eq!(state.delayed_locks().count(), 1);
    delayed_lock_is_busy_but_queues_then_goes_to_the_head(&mut state, b, c, token);
}

/// Second half of the test above: `x` is delayed with `b` queued behind it.
fn delayed_lock_is_busy_but_queues_then_goes_to_the_head(
    state: &mut State,
    b: crate::LeaseId,
    c: crate::LeaseId,
    token: Token,
) {
    let busy = acquire(state, c, "x", 0);
    let expected = LockError::Busy {
        name: name("x"),
        holder_token: None,
    };
    assert_eq!(busy.outcome, Err(expected));
    assert_eq!(
        acquire(state, c, "x", 1_000).outcome,
        Ok(Reply::Queued { position: 2 })
    );
    let revision = state.revision();
    let wrong = state.apply(
        Command::EndLockDelay {
            name: name("x"),
            token: Token(99),
        },
        0,
    );
    assert_eq!(
        (wrong.outcome, wrong.revision),
        (Ok(Reply::TimerApplied), revision)
    );
    let ended = state.apply(
        Command::EndLockDelay {
            name: name("x"),
            token,
        },
        0,
    );
    let granted = Effect::LockGranted {
        name: name("x"),
        lease: b,
        token: Token(ended.revision.0),
        from_queue: true,
        max_hold_ms: 0,
        owner: String::new(),
        value: None,
    };
    assert_eq!(ended.effects, vec![granted]);
    assert_eq!(state.delayed_locks().count(), 0);
    state.check_invariants().unwrap();
}

#[test]
fn lock_delay_applies_only_to_expiry_and_ends_by_removing_an_idle_lock() {
    let mut state = State::default();
    let (a, b) = (grant(&mut state), grant(&mut state));
    for lease in [a, b] {
        let mut delayed = args(lease, &format!("l{}", lease.0), 0);
        delayed.lock_delay_ms = 1_000;
        state.apply(Command::Acquire(delayed), 0);
    }
    state.apply(
        Command::RevokeLease {
            lease: a,
            request_id: None,
        },
        0,
    );
    assert!(state.lock(&name("l1")).is_none());
    state.apply(
        Command::ExpireLease {
            lease: b,
            renewals: 0,
        },
        0,
    );
    let token = state
        .lock(&name("l2"))
        .unwrap()
        .delay
        .as_ref()
        .unwrap()
        .token;
    let ended = state.apply(
        Command::EndLockDelay {
            name: name("l2"),
            token,
        },
        0,
    );
    assert_eq!(
        (ended.outcome, ended.effects),
        (Ok(Reply::TimerApplied), vec![])
    );
    assert_eq!(state.lock_count(), 0);
}

#[test]
fn end_hold_frees_only_the_named_holder() {
    let mut state = State::default();
    let (a, b) = (grant(&mut state), grant(&mut state));
    let mut limited = args(a, "x", 0);
    limited.max_hold_ms = 2_000;
    let applied = state.apply(Command::Acquire(limited), 0);
    assert!(matches!(
        applied.effects[0],
        Effect::LockGranted {
            max_hold_ms: 2_000,
            ..
        }
    ));
    let token = Token(applied.revision.0);
    acquire(&mut state, b, "x", 1_000);
    let revision = state.revision();
    let stale = state.apply(
        Command::EndHold {
            name: name("x"),
            token: Token(1),
        },
        0,
    );
    assert_eq!(
        (stale.outcome, stale.revision),
        (Ok(Reply::TimerApplied), revision)
    );
    let ended = state.apply(
        Command::EndHold {
            name: name("x"),
            token,
        },
        0,
    );
    assert_eq!(ended.revision.0, revision.0 + 1);
    assert_eq!(
        ended.effects[0],
        Effect::LockFreed {
            name: name("x"),
            lease: a,
            token,
            acquired_unix_ms: 0,
            cause: FreeCause::MaxHoldExceeded,
            forced: None,
            owner: "".into(),
        }
    );
    assert!(
        matches!(ended.effects[1], Effect::LockGranted { lease, from_queue: true, .. } if lease == b)
    );
    assert!(state.lease(a).unwrap().holds.is_empty());
}

#[test]
fn cancel_wait_leaves_the_queue_or_reports_the_hold() {
    let mut state = State::default();
    let (a, b) = (grant(&mut state), grant(&mut state));
    let token = hold(&mut state, a, "x");
    acquire(&mut state, b, "x", 1_000);
    let cancel = |state: &mut State, lease| {
        state.apply(
            Command::CancelWait {
                lease,
                name: name("x"),
                timed_out: true,
            },
            0,
        )
    };
    let revision = state.revision();
    let left = cancel(&mut state, b);
    assert_eq!(left.outcome, Ok(Reply::WaitEnded { holder_token: None }));
    assert_eq!(left.revision.0, revision.0 + 1);
    let removed = Effect::WaiterRemoved {
        name: name("x"),
        lease: b,
        cause: WaitEndCause::TimedOut,
        owner: String::new(),
    };
    assert_eq!(left.effects, vec![removed]);
    assert!(state.lease(b).unwrap().waits.is_empty());
    let not_queued = cancel(&mut state, b);
    assert_eq!(
        (not_queued.outcome, not_queued.revision),
        (Ok(Reply::WaitEnded { holder_token: None }), left.revision)
    );
    let holder = cancel(&mut state, a);
    assert_eq!(
        holder.outcome,
        Ok(Reply::WaitEnded {
            holder_token: Some(token)
        })
    );
    state.check_invariants().unwrap();
}

#[test]
fn an_expiry_decided_before_a_renewal_changes_nothing() {
    let mut state = State::default();
    let lease = grant(&mut state);
    state.apply(Command::KeepAlive { lease }, 1);
    let before = state.clone();
    let stale = state.apply(Command::ExpireLease { lease, renewals: 0 }, 2);
    assert_eq!(stale.outcome, Ok(crate::Reply::TimerApplied));
    assert_eq!(state, before);
    let current = state.apply(Command::ExpireLease { lease, renewals: 1 }, 3);
    assert!(matches!(
        current.outcome,
        Ok(crate::Reply::LeaseEnded { .. })
    ));
    assert!(state.lease(lease).is_none());
}

#[test]
fn waits_timed_out_together_leave_their_queues_under_one_revision() {
    let mut state = State::default();
    let (a, b, c) = (grant(&mut state), grant(&mut state), grant(&mut state));
    hold(&mut state, a, "x");
    hold(&mut state, a, "y");
    acquire(&mut state, b, "x", 1_000);
    acquire(&mut state, c, "x", 1_000);
    acquire(&mut state, b, "y", 1_000);
    let time_out = |state: &mut State, waits: &[(crate::LeaseId, &str)]| {
        let waits = waits.iter().map(|(l, n)| (*l, name(n))).collect();
        state.apply(Command::TimeOutWaits { waits }, 0)
    };
    let revision = state.revision();
    // c's wait on y never was: skipped, as a granted or ended wait is.
    let applied = time_out(&mut state, &[(b, "x"), (c, "y"), (b, "y")]);
    assert_eq!(applied.outcome, Ok(Reply::TimerApplied));
    assert_eq!(applied.revision.0, revision.0 + 1, "one revision for all");
    let removed: Vec<_> = applied
        .effects
        .iter()
        .map(|effect| match effect {
            Effect::WaiterRemoved {
                name, lease, cause, ..
            } => (*lease, name.as_str().to_owned(), *cause),
            other => panic!("unexpected effect {other:?}"),
        })
        .collect();
    let timed_out = WaitEndCause::TimedOut;
    let expected = vec![
        (b, "x".to_owned(), timed_out),
        (b, "y".to_owned(), timed_out),
    ];
    assert_eq!(removed, expected);
    assert!(state.lease(b).unwrap().waits.is_empty());
    assert_eq!(
        state.lock(&name("x")).unwrap().waiters.len(),
        1,
        "c still waits"
    );
    let moot = time_out(&mut state, &[(b, "x")]);
    assert_eq!((moot.revision, moot.effects), (applied.revision, vec![]));
    state.check_invariants().unwrap();
}

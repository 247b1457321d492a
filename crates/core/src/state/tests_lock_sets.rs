//! Unit tests of several locks at once: all or nothing, a set waits as
//! one waiter in each queue and keeps the free locks it heads, opposite
//! orders do not deadlock, and a set that stops waiting leaves every queue.

use super::test_support::*;
use crate::{
    AcquireAll, Applied, Command, Effect, LeaseId, LockError, Reply, RequestId, State, Token,
};

fn ask_all(state: &mut State, lease: LeaseId, locks: &[&str], wait_ms: u64) -> Applied {
    let acquire = AcquireAll {
        lease,
        names: locks.iter().map(|l| name(l)).collect(),
        wait_ms,
        request_id: None,
        fenced: true,
    };
    state.apply(Command::AcquireAll(acquire), 5)
}

/// Who holds `lock` now.
fn holder(state: &State, lock: &str) -> Option<(LeaseId, Token)> {
    let lock = state.lock(&name(lock))?;
    lock.holder.as_ref().map(|h| (h.lease, h.token))
}

fn grants(applied: &Applied) -> Vec<(String, LeaseId)> {
    let granted = applied.effects.iter().filter_map(|effect| match effect {
        Effect::LockGranted { name, lease, .. } => Some((name.to_string(), *lease)),
        _ => None,
    });
    granted.collect()
}

#[test]
fn free_locks_are_granted_together_each_with_a_token() {
    let mut state = State::default();
    let a = grant(&mut state);
    let applied = ask_all(&mut state, a, &["b", "a"], 0);
    let token = Token(applied.revision.0);
    assert_eq!(
        applied.outcome,
        Ok(Reply::AcquiredAll {
            tokens: vec![token, token],
            already_held: false
        })
    );
    assert_eq!(grants(&applied), [("b".into(), a), ("a".into(), a)]);
    assert_eq!(holder(&state, "a"), Some((a, token)));
    state.check_invariants().unwrap();
}

#[test]
fn a_set_waits_whole_keeps_what_it_heads_and_is_granted_in_one_command() {
    let mut state = State::default();
    let (x, y, z) = (grant(&mut state), grant(&mut state), grant(&mut state));
    let held = hold(&mut state, x, "a");
    assert!(matches!(
        ask_all(&mut state, y, &["a", "b"], 0).outcome,
        Err(LockError::Busy { .. })
    ));
    assert_eq!(
        state.lock(&name("b")).map(|l| l.waiters.len()),
        None,
        "a refusal keeps nothing"
    );
    assert_eq!(
        ask_all(&mut state, y, &["a", "b"], 60_000).outcome,
        Ok(Reply::Queued { position: 1 })
    );
    state.check_invariants().unwrap();
    // b is free, but kept for the set: z waits behind it.
    assert_eq!(holder(&state, "b"), None);
    assert!(matches!(
        acquire(&mut state, z, "b", 0).outcome,
        Err(LockError::Busy { .. })
    ));
    assert_eq!(
        acquire(&mut state, z, "b", 60_000).outcome,
        Ok(Reply::Queued { position: 2 })
    );

    let released = release(&mut state, x, "a", held);
    let token = Token(released.revision.0);
    assert_eq!(grants(&released), [("a".into(), y), ("b".into(), y)]);
    assert_eq!(
        (holder(&state, "a"), holder(&state, "b")),
        (Some((y, token)), Some((y, token)))
    );
    state.check_invariants().unwrap();
    let next = release(&mut state, y, "b", token);
    assert_eq!(grants(&next), [("b".into(), z)]);
    state.check_invariants().unwrap();
}

#[test]
fn opposite_orders_do_not_deadlock() {
    let mut state = State::default();
    let (x, y, z) = (grant(&mut state), grant(&mut state), grant(&mut state));
    let held = hold(&mut state, x, "a");
    ask_all(&mut state, y, &["a", "b"], 60_000);
    ask_all(&mut state, z, &["b", "a"], 60_000);
    state.check_invariants().unwrap();
    let first = release(&mut state, x, "a", held);
    assert_eq!(grants(&first), [("a".into(), y), ("b".into(), y)]);
    let token = Token(first.revision.0);
    release(&mut state, y, "a", token);
    let second = release(&mut state, y, "b", token);
    assert_eq!(grants(&second), [("b".into(), z), ("a".into(), z)]);
    state.check_invariants().unwrap();
}

#[test]
fn a_set_that_stops_waiting_leaves_every_queue_and_hands_on_what_it_kept() {
    let mut state = State::default();
    let (x, y, z) = (grant(&mut state), grant(&mut state), grant(&mut state));
    hold(&mut state, x, "a");
    ask_all(&mut state, y, &["a", "b"], 60_000);
    acquire(&mut state, z, "b", 60_000);
    // Its wait on a ran out: it leaves b too, and z, behind it there, gets b.
    let timed_out = state.apply(
        Command::TimeOutWaits {
            waits: vec![(y, name("a"))],
        },
        6,
    );
    assert_eq!(grants(&timed_out), [("b".into(), z)]);
    assert_eq!(state.lease(y).map(|l| l.waits.len()), Some(0));
    state.check_invariants().unwrap();

    // A set whose lease ends leaves the same way; a kept lock nobody else
    // wants goes from the table.
    ask_all(&mut state, y, &["a", "c"], 60_000);
    assert!(state.lock(&name("c")).is_some());
    state.apply(
        Command::RevokeLease {
            lease: y,
            request_id: None,
        },
        7,
    );
    assert!(state.lock(&name("c")).is_none());
    state.check_invariants().unwrap();
}

#[test]
fn a_set_is_one_per_lease_named_once_and_of_locks_only() {
    let mut state = State::default();
    let (x, y) = (grant(&mut state), grant(&mut state));
    let refused = |applied: Applied| match applied.outcome {
        Err(error) => error.to_string(),
        other => panic!("{other:?}"),
    };
    assert!(refused(ask_all(&mut state, x, &["a"], 0)).contains("at least two"));
    assert!(refused(ask_all(&mut state, x, &["a", "a"], 0)).contains("named twice"));
    hold(&mut state, x, "a");
    assert!(
        refused(ask_all(&mut state, x, &["a", "b"], 0)).contains("already holds or waits for a")
    );
    ask_all(&mut state, y, &["a", "b"], 60_000);
    assert!(refused(ask_all(&mut state, y, &["c", "d"], 60_000)).contains("one set at a time"));

    // A retry while queued, and after the grant, hears where it stands.
    let retry = AcquireAll {
        lease: x,
        names: vec![name("c"), name("d")],
        wait_ms: 0,
        request_id: RequestId::parse("set-1").unwrap(),
        fenced: false,
    };
    let first = state.apply(Command::AcquireAll(retry.clone()), 8);
    assert_eq!(
        state.apply(Command::AcquireAll(retry), 9).outcome,
        first.outcome
    );
}

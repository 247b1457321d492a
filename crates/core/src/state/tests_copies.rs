//! Copies of the state are snapshots: the big tables are persistent maps,
//! so a clone shares their nodes with the original, and the server encodes
//! a snapshot from such a copy while it goes on applying. What is applied
//! after the copy must never show in it, whichever table it touches.

use super::test_support::*;
use crate::{Command, State};

/// The snapshot encoding of `state`.
fn encoded(state: &State) -> Vec<u8> {
    postcard::to_allocvec(state).expect("the state encodes")
}

#[test]
fn a_copy_keeps_the_state_of_its_instant_while_the_original_moves_on() {
    let mut state = State::default();
    let leases: Vec<_> = (0..40).map(|_| grant(&mut state)).collect();
    let mut tokens = Vec::new();
    for (i, &lease) in leases.iter().enumerate() {
        for k in 0..25 {
            let lock = format!("jobs/{i}/{k}");
            tokens.push((lease, lock.clone(), hold(&mut state, lease, &lock)));
        }
    }
    let copy = state.clone();
    let at_copy = encoded(&state);

    // Every table changes: releases, a queued waiter, a new lease and
    // lock, a renewal, an expiry that frees a lease's locks.
    for (lease, lock, token) in tokens.iter().step_by(3) {
        release(&mut state, *lease, lock, *token);
    }
    let late = grant(&mut state);
    hold(&mut state, late, "jobs/new");
    acquire(&mut state, late, "jobs/1/1", 60_000);
    state.apply(Command::KeepAlive { lease: leases[2] }, 9);
    let expire = Command::ExpireLease {
        lease: leases[5],
        renewals: 0,
    };
    state.apply(expire, 9);

    assert_ne!(encoded(&state), at_copy, "the original moved on");
    assert_eq!(encoded(&copy), at_copy, "the copy did not");
    state
        .check_invariants()
        .expect("the original is consistent");
    copy.check_invariants().expect("the copy is consistent");
    assert_eq!(copy.lock_count(), 1_000);
}

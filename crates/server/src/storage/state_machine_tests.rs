use super::*;
use leasehold_core::{AcquireAll, AcquirePermits, Command, LockName, OwnerInfo, PermitAsk, Reply};

fn meta() -> Meta {
    Meta {
        last_log_id: None,
        last_membership: StoredMembership::default(),
        snapshot_id: "test".into(),
    }
}

/// A state with a lease that holds one permit of `s` and one that waits.
fn state_with_a_semaphore() -> State {
    let mut state = State::default();
    let mut lease = || {
        let grant = Command::GrantLease {
            ttl_ms: 10_000,
            owner: OwnerInfo::default(),
            request_id: None,
        };
        match state.apply(grant, 1).outcome {
            Ok(Reply::LeaseGranted { lease, .. }) => lease,
            other => panic!("{other:?}"),
        }
    };
    let (holder, waiter) = (lease(), lease());
    for (lease, wait_ms) in [(holder, 0), (waiter, 5_000)] {
        let ask = AcquirePermits {
            lease,
            name: LockName::parse("s").unwrap(),
            ask: PermitAsk::Semaphore {
                permits: 1,
                count: 1,
            },
            wait_ms,
            request_id: None,
            fenced: true,
        };
        assert!(state.apply(Command::AcquirePermits(ask), 2).outcome.is_ok());
    }
    state
}

#[test]
fn a_snapshot_carries_the_semaphores_and_read_write_locks() {
    let applied = AppliedState {
        state: state_with_a_semaphore(),
        ..AppliedState::default()
    };
    let read = decode(&meta(), &encode(&applied).unwrap()).unwrap();
    assert_eq!(read.state, applied.state);
    assert!(read.state.pool(&LockName::parse("s").unwrap()).is_some());
    read.state.check_invariants().unwrap();
}

#[test]
fn a_snapshot_carries_the_sets_of_locks_waited_for() {
    let mut state = state_with_a_semaphore();
    // Lease 2 waits for s's permit; lease 3 holds a; lease 2 waits for the set {a, b}.
    let grant = Command::GrantLease {
        ttl_ms: 10_000,
        owner: OwnerInfo::default(),
        request_id: None,
    };
    let Ok(Reply::LeaseGranted { lease: third, .. }) = state.apply(grant.clone(), 3).outcome else {
        panic!("a lease");
    };
    let Ok(Reply::LeaseGranted { lease: fourth, .. }) = state.apply(grant, 3).outcome else {
        panic!("a lease");
    };
    let name = |raw: &str| LockName::parse(raw).unwrap();
    let set = |lease, wait_ms| {
        Command::AcquireAll(AcquireAll {
            lease,
            names: vec![name("a"), name("b")],
            wait_ms,
            request_id: None,
            fenced: true,
        })
    };
    assert!(state.apply(set(third, 0), 4).outcome.is_ok());
    assert_eq!(
        state.apply(set(fourth, 5_000), 5).outcome,
        Ok(Reply::Queued { position: 1 })
    );
    let applied = AppliedState {
        state,
        ..AppliedState::default()
    };
    let read = decode(&meta(), &encode(&applied).unwrap()).unwrap();
    assert_eq!(read.state, applied.state);
    assert_eq!(read.state.stored_lock_sets().len(), 1);
    read.state.check_invariants().unwrap();
}

#[test]
fn a_snapshot_written_before_lock_sets_existed_reads_as_having_none() {
    let applied = AppliedState {
        state: state_with_a_semaphore(),
        ..AppliedState::default()
    };
    let older = postcard::to_allocvec(&(
        &applied.state,
        &applied.last_applied,
        &applied.last_membership,
        applied.state.stored_pools(),
    ))
    .unwrap();
    let read = decode(&meta(), &older).unwrap();
    assert_eq!(read.state, applied.state);
}

#[test]
fn a_snapshot_written_before_pools_existed_reads_as_having_none() {
    let applied = AppliedState::default();
    let older = postcard::to_allocvec(&(
        &applied.state,
        &applied.last_applied,
        &applied.last_membership,
    ))
    .unwrap();
    let read = decode(&meta(), &older).unwrap();
    assert_eq!(read.state.pools().count(), 0);
    assert_eq!(read.state, applied.state);
}

//! Core commands for the server's unit tests that build a `State` by hand
//! (the lessor's rebuild, a retried wait's standing).

use leasehold_core::{Acquire, Command, LeaseId, LockName, OwnerInfo, Reply, State};

/// Grants a lease of `ttl_ms` in `state`; its id.
pub fn grant(state: &mut State, ttl_ms: u64) -> LeaseId {
    let owner = OwnerInfo::default();
    let command = Command::GrantLease {
        ttl_ms,
        owner,
        request_id: None,
    };
    match state.apply(command, 0).outcome {
        Ok(Reply::LeaseGranted { lease, .. }) => lease,
        other => panic!("grant: {other:?}"),
    }
}

/// An acquire of `name` by `lease`, waiting `wait_ms`, held at most
/// `max_hold_ms` (0: no bound).
pub fn acquire(lease: LeaseId, name: &LockName, wait_ms: u64, max_hold_ms: u64) -> Command {
    Command::Acquire(Acquire {
        lease,
        name: name.clone(),
        wait_ms,
        request_id: None,
        fenced: false,
        lock_delay_ms: 0,
        max_hold_ms,
        metadata: Default::default(),
    })
}

//! Helpers shared by the state's unit tests: terse builders for commands.

use crate::{Acquire, Applied, Command, LeaseId, LockName, OwnerInfo, Reply, State, Token};

/// A lock name from a literal.
pub(super) fn name(raw: &str) -> LockName {
    LockName::parse(raw).unwrap()
}

/// Acquire arguments with defaults: no request id, unfenced, no delay, no max hold.
pub(super) fn args(lease: LeaseId, lock: &str, wait_ms: u64) -> Acquire {
    Acquire {
        lease,
        name: name(lock),
        wait_ms,
        request_id: None,
        fenced: false,
        lock_delay_ms: 0,
        max_hold_ms: 0,
        metadata: Default::default(),
    }
}

/// Grants a 10 s lease and returns its id.
pub(super) fn grant(state: &mut State) -> LeaseId {
    let applied = state.apply(
        Command::GrantLease {
            ttl_ms: 10_000,
            owner: OwnerInfo::default(),
            request_id: None,
        },
        1,
    );
    let Ok(Reply::LeaseGranted { lease, .. }) = applied.outcome else {
        panic!("grant failed: {applied:?}");
    };
    lease
}

/// Applies an acquire.
pub(super) fn acquire(state: &mut State, lease: LeaseId, lock: &str, wait_ms: u64) -> Applied {
    state.apply(Command::Acquire(args(lease, lock, wait_ms)), 2)
}

/// Acquires a free lock and returns its token.
pub(super) fn hold(state: &mut State, lease: LeaseId, lock: &str) -> Token {
    match acquire(state, lease, lock, 0).outcome {
        Ok(Reply::Acquired { token, .. }) => token,
        other => panic!("acquire failed: {other:?}"),
    }
}

/// Applies a release without a request id.
pub(super) fn release(state: &mut State, lease: LeaseId, lock: &str, token: Token) -> Applied {
    state.apply(
        Command::Release {
            lease,
            name: name(lock),
            token,
            request_id: None,
        },
        3,
    )
}

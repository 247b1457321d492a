//! The hook through which the server sees applied effects in log order.
//!
//! The state machine calls the listener while it still holds the state's
//! write lock, so a waiter registry or timer layer never observes a state
//! newer than the effects it has been told about.

use leasehold_core::{Applied, State};

/// Receives every applied entry's effects, in log order.
///
/// Both methods run under the state's write lock: they must be quick, must
/// not block, and must not call [`SharedState::read`](super::SharedState::read)
/// (the lock is not reentrant). Use the `state` argument instead.
pub trait ApplyListener: Send + Sync + 'static {
    /// A normal entry at log `index`, proposed at wall time `at_unix_ms`
    /// (display only), was applied; `applied` holds one element per
    /// command, in order. `state` is the state after the whole entry.
    fn applied(&self, state: &State, index: u64, at_unix_ms: u64, applied: &[Applied]);

    /// The state was replaced wholesale (snapshot installed, or loaded from a
    /// snapshot at open): rebuild everything derived from it, e.g. timers.
    fn reset(&self, state: &State);
}

/// A listener that ignores everything, for tests and tools.
#[derive(Clone, Copy, Debug, Default)]
pub struct NoopListener;

impl ApplyListener for NoopListener {
    fn applied(&self, _state: &State, _index: u64, _at_unix_ms: u64, _applied: &[Applied]) {}

    fn reset(&self, _state: &State) {}
}

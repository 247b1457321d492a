//! The lock table's row: holder, FIFO queue, lock delay.

use crate::{LeaseId, LockName, Token};
use serde::{Deserialize, Serialize};
use std::collections::{BTreeMap, VecDeque};

/// A lock that is held, waited for, or in its lock delay. A lock with none of
/// these is removed from the table.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Lock {
    /// The lock's name.
    pub name: LockName,
    /// The current holder, if any.
    pub holder: Option<Holder>,
    /// Waiters in FIFO order; only the head is granted next.
    pub waiters: VecDeque<Waiter>,
    /// Set while the lock is unavailable after its holder's lease expired.
    pub delay: Option<LockDelay>,
}

/// Who holds a lock and on what terms.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Holder {
    pub lease: LeaseId,
    /// Fencing token (revision of this grant).
    pub token: Token,
    /// Proposer's wall time of the grant (display only).
    pub acquired_unix_ms: u64,
    pub fenced: bool,
    pub lock_delay_ms: u64,
    pub max_hold_ms: u64,
    pub metadata: BTreeMap<String, String>,
}

/// A queued acquire, granted with the terms it asked for.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Waiter {
    pub lease: LeaseId,
    /// Proposer's wall time of the enqueue (display only).
    pub since_unix_ms: u64,
    pub wait_ms: u64,
    pub fenced: bool,
    pub lock_delay_ms: u64,
    pub max_hold_ms: u64,
    pub metadata: BTreeMap<String, String>,
}

/// The lock is unavailable until `EndLockDelay { token }` applies.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct LockDelay {
    /// Token of the holder whose expiry started the delay.
    pub token: Token,
    pub delay_ms: u64,
    /// Proposer's wall time when the delay began (display only).
    pub since_unix_ms: u64,
}

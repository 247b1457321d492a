//! Per-principal quotas and the usage they are checked against, so one
//! tenant cannot exhaust `LEASES_MAX` (or a lock's queue) for everyone.
//! Usage is counted in apply, in step with every lease and lock change
//! (see `state/auth_apply.rs`), and checked before a grant or a queue.

use serde::{Deserialize, Serialize};
use std::fmt;

/// Upper bounds for one principal; `None`: only the global limits apply.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Quota {
    /// Live leases granted by the principal.
    pub leases: Option<u64>,
    /// Locks held by the principal's leases, counting queued waits too (a
    /// waiter becomes a holder without asking again).
    pub held: Option<u64>,
    /// Waits queued by the principal's leases.
    pub waiters: Option<u64>,
}

/// What a principal's leases use now.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Usage {
    /// Live leases.
    pub leases: u64,
    /// Locks held.
    pub held: u64,
    /// Waits queued.
    pub waiters: u64,
}

impl Usage {
    /// Whether nothing is in use (the row can go).
    pub fn is_zero(&self) -> bool {
        *self == Usage::default()
    }
}

/// Which quota a refusal hit.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum QuotaKind {
    /// [`Quota::leases`].
    Leases,
    /// [`Quota::held`].
    Held,
    /// [`Quota::waiters`].
    Waiters,
}

impl QuotaKind {
    /// The quota's word, as `leasehold user quota` spells its flag.
    pub fn as_str(self) -> &'static str {
        match self {
            QuotaKind::Leases => "leases",
            QuotaKind::Held => "held",
            QuotaKind::Waiters => "waiters",
        }
    }
}

impl fmt::Display for QuotaKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

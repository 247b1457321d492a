//! Loss of ownership, as a value: why a lease (and with it every lock it
//! holds) stopped being ours. Once lost, always lost: a later successful
//! renewal does not bring ownership back, because the guarded work was
//! already told to stop and another holder may already have written.

use leasehold_core::{LeaseId, LockName};
use std::fmt;
use std::time::Duration;

/// Why ownership was lost.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum LossCause {
    /// The server said the lease expired: it was not renewed in time.
    LeaseExpired,
    /// The server does not know the lease: it was revoked (by an operator
    /// or another process) or ended long ago.
    LeaseNotFound,
    /// No keep-alive was acknowledged in time: the local deadline (send time
    /// of the last acknowledged keep-alive + ttl − margin) passed. The
    /// server, a partition or a pause of this process stopped renewal.
    DeadlineReached {
        /// How long since the send time of the last acknowledged keep-alive.
        since_last_ack: Duration,
    },
    /// The lock's own `max_hold` ran out (on the local clock, minus margin);
    /// the server releases it at about this moment.
    MaxHoldReached,
    /// This process ended the lease (revoke, or the last handle dropped)
    /// while a guard still existed.
    Revoked,
    /// This process released the lock (a copy of its handle asked after).
    Released,
    /// The server ended this hold while the lease lived (an operator's
    /// force release, the lock's max hold): the lock may already be
    /// someone else's. Seen in the first keep-alive reply after it.
    ReleasedByServer {
        /// How, as the server tells it ("force-released by alice@host: …").
        how: String,
    },
    /// The server refused renewal with another definite error.
    Refused {
        /// The server's reason.
        reason: String,
    },
}

impl LossCause {
    /// Whether this process ended ownership itself (revoke, release): the
    /// work is over, nothing was taken away.
    pub fn is_voluntary(&self) -> bool {
        matches!(self, LossCause::Revoked | LossCause::Released)
    }

    /// A short label for metrics and logs.
    pub fn label(&self) -> &'static str {
        match self {
            LossCause::LeaseExpired => "lease_expired",
            LossCause::LeaseNotFound => "lease_not_found",
            LossCause::DeadlineReached { .. } => "deadline_reached",
            LossCause::MaxHoldReached => "max_hold_reached",
            LossCause::Revoked => "revoked",
            LossCause::Released => "released",
            LossCause::ReleasedByServer { .. } => "released_by_server",
            LossCause::Refused { .. } => "refused",
        }
    }
}

impl fmt::Display for LossCause {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            LossCause::LeaseExpired => {
                write!(
                    f,
                    "the server expired the lease (renewals stopped reaching it in time)"
                )
            }
            LossCause::LeaseNotFound => {
                write!(
                    f,
                    "the server no longer knows the lease (revoked, or ended earlier)"
                )
            }
            LossCause::DeadlineReached { since_last_ack } => write!(
                f,
                "no keep-alive was acknowledged for {} ms, past the lease's local deadline \
                 (server unreachable, partitioned, or this process was paused)",
                since_last_ack.as_millis()
            ),
            LossCause::MaxHoldReached => write!(f, "the lock's max hold time ran out"),
            LossCause::Revoked => write!(f, "this process revoked the lease"),
            LossCause::Released => write!(f, "this process released the lock"),
            LossCause::ReleasedByServer { how } => {
                write!(f, "the server took it away while the lease lived ({how})")
            }
            LossCause::Refused { reason } => write!(f, "the server refused renewal ({reason})"),
        }
    }
}

/// Ownership was lost: the lock may already belong to someone else. Stop
/// writing; the protected resource will reject this token once a newer
/// holder has written.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub struct LockLost {
    /// The lease that held the lock.
    pub lease: LeaseId,
    /// The lock, when the loss is reported through its guard.
    pub lock: Option<LockName>,
    /// Why.
    pub cause: LossCause,
}

impl fmt::Display for LockLost {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.lock {
            Some(lock) => write!(
                f,
                "lock {lock} (lease {}) was lost: {}",
                self.lease, self.cause
            ),
            None => write!(f, "lease {} was lost: {}", self.lease, self.cause),
        }
    }
}

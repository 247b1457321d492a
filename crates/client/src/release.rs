//! Release and its typed outcome. A release names (lock, lease, token) and
//! the server says exactly what happened (docs/DESIGN.md guarantee 7), so the
//! caller learns whether its critical section really ended under its own
//! ownership or the lock had already moved on.

use crate::error::Error;
use crate::session::SessionSlot;
use crate::Client;
use leasehold_core::{LeaseId, LockName, Token};

/// What a release found.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ReleaseOutcome {
    /// The lock was ours and is now free (or handed to the next waiter).
    Released,
    /// The lease had already ended (expired, or revoked), which freed the
    /// lock earlier: anything written after that was unprotected.
    AlreadyExpired,
    /// The lock is held under another token: someone else owns it now.
    HeldByAnother {
        /// The current holder's token, if any.
        holder_token: Option<Token>,
    },
    /// No such lock exists (freed and gone); `nearby` lists names that look
    /// like it, in case the name was mistyped.
    NoSuchLock {
        /// Existing names close to this one.
        nearby: Vec<String>,
    },
}

impl ReleaseOutcome {
    /// Whether the lock was still ours when released.
    pub fn was_held(&self) -> bool {
        matches!(self, ReleaseOutcome::Released)
    }
}

/// Sends one release (on `session`'s stream while it is open, else unary:
/// [`Client::release_via`]) and maps the server's refusals to outcomes.
/// `Err` only when the service could not be reached.
pub(crate) async fn send_release(
    client: &Client,
    session: Option<&SessionSlot>,
    lease: LeaseId,
    name: &LockName,
    token: Token,
) -> Result<ReleaseOutcome, Error> {
    match client.release_via(session, lease, name, token).await {
        Ok(_) => Ok(ReleaseOutcome::Released),
        Err(Error::LeaseExpired { .. } | Error::LeaseNotFound { .. }) => {
            Ok(ReleaseOutcome::AlreadyExpired)
        }
        Err(Error::NotHolder { holder_token, .. }) => {
            Ok(ReleaseOutcome::HeldByAnother { holder_token })
        }
        Err(Error::NoSuchLock { nearby, .. }) => Ok(ReleaseOutcome::NoSuchLock { nearby }),
        Err(other) => Err(other),
    }
}

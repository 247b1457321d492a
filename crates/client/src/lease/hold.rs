//! One held lock's own state, shared by its guard, the guard's handles and
//! the lease's registry (so the keeper can end it): the token, the loss
//! (first cause stands), the cancellation fired at the loss, the local end
//! of its max hold, and its claim on the lease's renewal.
//!
//! Why the claim lives here: a lease is renewed while something still needs
//! it — the `Lease` handle, or a hold whose lock is still ours. A hold the
//! server ended (a force release, the lock's max hold) gives up its claim at
//! once, so a process that keeps the lost guard around does not keep
//! renewing a lease that holds nothing (seed 003, "renewing past work").

use super::RenewalClaim;
use crate::clock::BootInstant;
use crate::loss::LossCause;
use leasehold_core::Token;
use std::sync::{Arc, Mutex, OnceLock};
use tokio_util::sync::CancellationToken;

/// A held lock's state.
#[derive(Debug)]
pub(crate) struct Hold {
    /// The fencing token the lock was granted under.
    pub token: Token,
    /// Fires at the loss of this lock (a child of the lease's token).
    pub cancel: CancellationToken,
    /// Local end of `max_hold`: acquire send time + max_hold − margin.
    pub hold_deadline: Option<BootInstant>,
    /// Why this lock (not the whole lease) ended; set once.
    loss: OnceLock<LossCause>,
    /// Keeps the lease renewed while the hold is ours.
    claim: Mutex<Option<Arc<RenewalClaim>>>,
}

impl Hold {
    /// A hold of a lock granted under `token`.
    pub fn new(
        token: Token,
        cancel: CancellationToken,
        hold_deadline: Option<BootInstant>,
        claim: Arc<RenewalClaim>,
    ) -> Hold {
        Hold {
            token,
            cancel,
            hold_deadline,
            loss: OnceLock::new(),
            claim: Mutex::new(Some(claim)),
        }
    }

    /// Why this lock ended, if it did. Whoever sees the loss also fires the
    /// token, so nobody learns of it before the token says so.
    pub fn loss(&self) -> Option<LossCause> {
        let cause = self.loss.get().cloned();
        if cause.is_some() {
            self.cancel.cancel();
        }
        cause
    }

    /// Ends the hold for `cause` unless it already ended; returns the cause
    /// that stands and fires the token. An involuntary first cause is
    /// counted in the metrics.
    pub fn end(&self, cause: LossCause) -> LossCause {
        let standing = self.loss.get_or_init(|| {
            if !cause.is_voluntary() {
                crate::metrics::lost(&cause);
            }
            cause
        });
        self.cancel.cancel();
        standing.clone()
    }

    /// Gives up the claim on the lease's renewal; the caller drops it when
    /// it no longer needs the lease (after sending its release, say).
    pub fn give_up_claim(&self) -> Option<Arc<RenewalClaim>> {
        self.claim.lock().expect("claim lock").take()
    }

    /// Whether the server ended this hold: nothing is left to release.
    pub fn ended_by_server(&self) -> bool {
        matches!(self.loss.get(), Some(LossCause::ReleasedByServer { .. }))
    }
}

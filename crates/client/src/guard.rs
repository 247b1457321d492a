//! Holding a lock: [`LockGuard`] (owns the lock: dropping it releases) and
//! [`LockHandle`] (a cheap copy for the work, which can check ownership but
//! keeps nothing alive). Both answer "is it still mine?" by reading the
//! clock against the lease's deadline at the moment of asking.

use crate::clock::{sleep_until, BootInstant};
use crate::error::Error;
use crate::lease::{LeaseInner, LeaseState};
use crate::loss::{LockLost, LossCause};
use crate::release::{send_release, ReleaseOutcome};
use leasehold_core::{LeaseId, LockName, Token};
use std::ops::Deref;
use std::sync::{Arc, OnceLock};
use tokio_util::sync::CancellationToken;

/// What a guard adds to its lease's state.
#[derive(Debug)]
struct GuardState {
    /// Fires at the loss of this lock (a child of the lease's token).
    cancel: CancellationToken,
    /// Why this lock (not the whole lease) ended; set once.
    loss: OnceLock<LossCause>,
    /// Local end of `max_hold`: acquire send time + max_hold − margin.
    hold_deadline: Option<BootInstant>,
}

/// A view of a held lock for the work done under it: the token, and
/// whether ownership still holds. Clone it freely; it does not keep the
/// lease renewed (only the [`LockGuard`] does), so a copy that outlives
/// the guard simply reports the lock lost.
#[derive(Clone, Debug)]
pub struct LockHandle {
    lease: Arc<LeaseState>,
    guard: Arc<GuardState>,
    name: LockName,
    token: Token,
}

impl LockHandle {
    /// The lock.
    pub fn name(&self) -> &LockName {
        &self.name
    }

    /// The lease holding it.
    pub fn lease_id(&self) -> LeaseId {
        self.lease.id
    }

    /// The fencing token: pass it with every write to the protected
    /// resource, which rejects tokens lower than the highest it has seen.
    pub fn token(&self) -> Token {
        self.token
    }

    /// The token if the lock is still ours *now*, else why it is not.
    /// Call it right before each protected write; a paused process that
    /// wakes up past its deadline gets `Err` here, before it writes.
    pub fn fence(&self) -> Result<Token, LockLost> {
        if let Some(cause) = self.guard.loss.get() {
            // Fire the token before reporting (see `LeaseState::loss`).
            self.guard.cancel.cancel();
            return Err(self.error(cause.clone()));
        }
        if let Err(cause) = self.lease.check() {
            return Err(self.error(cause));
        }
        if let Some(deadline) = self.guard.hold_deadline {
            if self.lease.clock.now() >= deadline {
                return Err(self.end(LossCause::MaxHoldReached));
            }
        }
        Ok(self.token)
    }

    /// Resolves when ownership is lost, with why. The
    /// [`cancellation`](Self::cancellation) token is cancelled at the same moment.
    pub async fn lost(&self) -> LockLost {
        loop {
            let hold = async {
                match self.guard.hold_deadline {
                    Some(deadline) => sleep_until(self.lease.clock.as_ref(), deadline).await,
                    None => std::future::pending().await,
                }
            };
            tokio::select! {
                () = self.guard.cancel.cancelled() => {}
                () = hold => {}
            }
            if let Err(lost) = self.fence() {
                return lost;
            }
        }
    }

    /// A token cancelled the moment ownership is lost: hand it to work that
    /// should stop then (`tokio::select!` on `cancelled()`).
    pub fn cancellation(&self) -> CancellationToken {
        self.guard.cancel.clone()
    }

    /// Ends this lock's ownership for `cause` (first cause stands).
    fn end(&self, cause: LossCause) -> LockLost {
        let standing = self.guard.loss.get_or_init(|| {
            if !cause.is_voluntary() {
                crate::metrics::lost(&cause);
            }
            cause
        });
        self.guard.cancel.cancel();
        self.error(standing.clone())
    }

    fn error(&self, cause: LossCause) -> LockLost {
        self.lease.lost_error(Some(&self.name), cause)
    }
}

/// A held lock. Check [`fence`](LockHandle::fence) before each protected
/// write; [`release`](Self::release) when done. Dropping the guard releases
/// the lock in the background and ends its claim on the lease's renewal.
#[derive(Debug)]
pub struct LockGuard {
    handle: LockHandle,
    /// Keeps the lease renewed while the guard lives.
    lease: Arc<LeaseInner>,
    /// Released explicitly: nothing to do on drop.
    released: bool,
}

impl LockGuard {
    /// A guard for `name`, granted `token`, on `lease`.
    pub(crate) fn new(
        lease: Arc<LeaseInner>,
        name: LockName,
        token: Token,
        hold_deadline: Option<BootInstant>,
    ) -> LockGuard {
        let guard = Arc::new(GuardState {
            cancel: lease.state.cancellation().child_token(),
            loss: OnceLock::new(),
            hold_deadline,
        });
        let handle = LockHandle {
            lease: lease.state.clone(),
            guard,
            name,
            token,
        };
        if hold_deadline.is_some() {
            // Fire the cancellation at the max-hold deadline even if nobody
            // is asking; ends with the guard.
            let watcher = handle.clone();
            tokio::spawn(async move {
                watcher.lost().await;
            });
        }
        LockGuard {
            handle,
            lease,
            released: false,
        }
    }

    /// A copy for the work (see [`LockHandle`]).
    pub fn handle(&self) -> LockHandle {
        self.handle.clone()
    }

    /// Releases the lock and says what the server found. `Err` only if the
    /// service could not be reached; the lease's reconciliation then
    /// releases the lock once it can.
    pub async fn release(mut self) -> Result<ReleaseOutcome, Error> {
        self.released = true;
        self.handle.end(LossCause::Released);
        let state = &self.lease.state;
        state.forget(&self.handle.name, false);
        let outcome = send_release(
            &self.lease.client,
            state.id,
            &self.handle.name,
            self.handle.token,
        )
        .await;
        if outcome.is_err() {
            state.want_reconcile();
        }
        outcome
    }
}

impl Deref for LockGuard {
    type Target = LockHandle;

    fn deref(&self) -> &LockHandle {
        &self.handle
    }
}

impl Drop for LockGuard {
    fn drop(&mut self) {
        if self.released {
            return;
        }
        self.handle.end(LossCause::Released);
        let state = self.lease.state.clone();
        state.forget(&self.handle.name, false);
        let Ok(runtime) = tokio::runtime::Handle::try_current() else {
            // No runtime to release on: the lease's end frees the lock.
            return;
        };
        let lease = self.lease.clone();
        let (name, token) = (self.handle.name.clone(), self.handle.token);
        runtime.spawn(async move {
            if send_release(&lease.client, state.id, &name, token)
                .await
                .is_err()
            {
                state.want_reconcile();
            }
            // `lease` drops here: if this guard was the last handle, the
            // keeper stops and revokes the lease.
        });
    }
}

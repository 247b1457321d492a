//! Holding a lock: [`LockGuard`] (owns the lock: dropping it releases) and
//! [`LockHandle`] (a cheap copy for the work, which can check ownership but
//! keeps nothing alive). Both answer "is it still mine?" by reading the
//! clock against the lease's deadline at the moment of asking.

use crate::clock::{sleep_until, BootInstant};
use crate::error::Error;
use crate::lease::{Hold, Lease, LeaseInner, LeaseState};
use crate::loss::{LockLost, LossCause};
use crate::release::{send_release, ReleaseOutcome};
use leasehold_core::{LeaseId, LockName, Revision, Token};
use std::ops::Deref;
use std::sync::Arc;
use tokio_util::sync::CancellationToken;

/// A view of a held lock for the work done under it: the token, and
/// whether ownership still holds. Clone it freely; it does not keep the
/// lease renewed (only the [`LockGuard`] does), so a copy that outlives
/// the guard simply reports the lock lost.
#[derive(Clone, Debug)]
pub struct LockHandle {
    lease: Arc<LeaseState>,
    hold: Arc<Hold>,
    name: LockName,
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
        self.hold.token
    }

    /// The token if the lock is still ours *now*, else why it is not.
    /// Call it right before each protected write; a paused process that
    /// wakes up past its deadline gets `Err` here, before it writes.
    pub fn fence(&self) -> Result<Token, LockLost> {
        if let Some(cause) = self.hold.loss() {
            return Err(self.error(cause));
        }
        if let Err(cause) = self.lease.check() {
            return Err(self.error(cause));
        }
        if let Some(deadline) = self.hold.hold_deadline {
            if self.lease.clock.now() >= deadline {
                return Err(self.end(LossCause::MaxHoldReached));
            }
        }
        Ok(self.hold.token)
    }

    /// Resolves when ownership is lost, with why. The
    /// [`cancellation`](Self::cancellation) token is cancelled at the same moment.
    pub async fn lost(&self) -> LockLost {
        loop {
            let hold = async {
                match self.hold.hold_deadline {
                    Some(deadline) => sleep_until(self.lease.clock.as_ref(), deadline).await,
                    None => std::future::pending().await,
                }
            };
            tokio::select! {
                () = self.hold.cancel.cancelled() => {}
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
        self.hold.cancel.clone()
    }

    /// Ends this lock's ownership for `cause` (first cause stands).
    fn end(&self, cause: LossCause) -> LockLost {
        let standing = self.hold.end(cause);
        self.error(standing)
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
    /// A guard for `name`, granted `token`, on `lease`: registered with
    /// the lease (the keeper renews for it, and ends it if the server
    /// stops listing it).
    pub(crate) fn new(
        lease: &Lease,
        name: LockName,
        token: Token,
        hold_deadline: Option<BootInstant>,
    ) -> LockGuard {
        let inner = lease.inner();
        let cancel = inner.state.cancellation().child_token();
        let hold = Arc::new(Hold::new(token, cancel, hold_deadline, lease.claim()));
        inner.state.acquired(&name, hold.clone());
        let handle = LockHandle {
            lease: inner.state.clone(),
            hold,
            name,
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
            lease: inner,
            released: false,
        }
    }

    /// A copy for the work (see [`LockHandle`]).
    pub fn handle(&self) -> LockHandle {
        self.handle.clone()
    }

    /// Leading an election (the lock was acquired as a campaign,
    /// [`Lease::campaign`]): sets its value, which observers see. Fails
    /// with [`Error::Lost`] if the lead is already lost here, and with
    /// `NotHolder` if the server says another leads.
    pub async fn proclaim(&self, value: &str) -> Result<Revision, Error> {
        let token = self.fence()?;
        let client = &self.lease.client;
        client
            .proclaim(self.lease.state.id, &self.handle.name, token, value)
            .await
    }

    /// Releases the lock and says what the server found. `Err` only if the
    /// service could not be reached; the lease's reconciliation then
    /// releases the lock once it can.
    pub async fn release(mut self) -> Result<ReleaseOutcome, Error> {
        self.released = true;
        self.handle.end(LossCause::Released);
        // Renewal goes on until the release is sent.
        let _claim = self.handle.hold.give_up_claim();
        let state = &self.lease.state;
        state.forget(&self.handle.name, false);
        let outcome = send_release(
            &self.lease.client,
            self.lease.calls_session(),
            state.id,
            &self.handle.name,
            self.handle.token(),
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
        let claim = self.handle.hold.give_up_claim();
        let state = self.lease.state.clone();
        state.forget(&self.handle.name, false);
        if self.handle.hold.ended_by_server() {
            // The server already freed it: nothing to release.
            return;
        }
        let Ok(runtime) = tokio::runtime::Handle::try_current() else {
            // No runtime to release on: the lease's end frees the lock.
            return;
        };
        let lease = self.lease.clone();
        let (name, token) = (self.handle.name.clone(), self.handle.token());
        runtime.spawn(async move {
            let session = lease.calls_session();
            if send_release(&lease.client, session, state.id, &name, token)
                .await
                .is_err()
            {
                state.want_reconcile();
            }
            // `claim` drops here: if it was the last, the keeper stops and
            // revokes the lease.
            drop(claim);
        });
    }
}

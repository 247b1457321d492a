//! Acquiring a lock: [`LockOptions`] (how), [`LockRequest`] (the builder
//! `lease.lock(name).wait(d).fenced(true).acquire()`). A permit of a
//! semaphore or a hold of a read-write lock is acquired the same way
//! (`.semaphore(n, k)`, `.shared()`, `.exclusive()`) and held by the same
//! guard: the server keeps it among what the lease holds, so renewal,
//! loss and release treat it as a lock.
//!
//! While an acquire is in flight its name is registered with the lease as
//! "acquiring", so reconciliation does not release a grant that is about to
//! be claimed; if the acquire fails in a way that leaves its outcome unknown
//! (the service became unreachable, the caller dropped the future, the lease
//! was lost meanwhile), reconciliation is asked to release whatever the
//! server may have granted.

use crate::error::Error;
use crate::guard::LockGuard;
use crate::lease::{Lease, LeaseState};
use crate::name::IntoLockName;
use leasehold_core::{LockName, PermitAsk};
use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

/// How to acquire (and, for [`Client::with_lock`](crate::Client::with_lock),
/// hold) a lock. Built with chained setters from `LockOptions::default()`.
#[derive(Clone, Debug, Default)]
pub struct LockOptions {
    pub(crate) ttl: Option<Duration>,
    pub(crate) wait: Duration,
    pub(crate) fenced: bool,
    pub(crate) lock_delay: Duration,
    pub(crate) max_hold: Option<Duration>,
    pub(crate) metadata: BTreeMap<String, String>,
    pub(crate) deadline: Option<Duration>,
    pub(crate) owner: Option<String>,
    pub(crate) permits: Option<PermitAsk>,
}

impl LockOptions {
    /// Lease ttl for `with_lock`, which grants a lease of its own (default 10 s).
    pub fn ttl(mut self, ttl: Duration) -> Self {
        self.ttl = Some(ttl);
        self
    }

    /// Wait up to `wait` in the lock's FIFO queue (default: fail at once if busy).
    pub fn wait(mut self, wait: Duration) -> Self {
        self.wait = wait;
        self
    }

    /// Declare that the protected resource checks fencing tokens.
    pub fn fenced(mut self, fenced: bool) -> Self {
        self.fenced = fenced;
        self
    }

    /// If this holder's lease expires, keep the lock unavailable this long
    /// (time for a stalled holder's in-flight writes to land or fail).
    pub fn lock_delay(mut self, delay: Duration) -> Self {
        self.lock_delay = delay;
        self
    }

    /// Release the lock after this long however it is renewed; the guard
    /// reports it lost at that moment (minus the lease's margin).
    pub fn max_hold(mut self, max_hold: Duration) -> Self {
        self.max_hold = Some(max_hold);
        self
    }

    /// Free-form metadata shown to operators with the holder.
    pub fn metadata(mut self, key: impl Into<String>, value: impl Into<String>) -> Self {
        self.metadata.insert(key.into(), value.into());
        self
    }

    /// Take `count` of the `permits` permits of a semaphore instead of a
    /// lock (the first acquirer of the name sets `permits`; asking with
    /// another number while anyone holds or waits is refused). Asks are
    /// granted first come, first served: a big ask is never overtaken by
    /// later small ones. Lock delay, max hold and metadata apply to locks
    /// only.
    pub fn semaphore(mut self, permits: u32, count: u32) -> Self {
        self.permits = Some(PermitAsk::Semaphore { permits, count });
        self
    }

    /// Hold the name as a read-write lock, shared with other readers
    /// (`LockOptions::exclusive` for the writer). A writer that waits holds
    /// back the readers that come after it; consecutive readers are
    /// granted together.
    pub fn shared(mut self) -> Self {
        self.permits = Some(PermitAsk::Shared);
        self
    }

    /// Hold the name as a read-write lock, alone (the writer): no reader
    /// and no other writer holds it meanwhile, and its token is above
    /// every earlier holder's.
    pub fn exclusive(mut self) -> Self {
        self.permits = Some(PermitAsk::Exclusive);
        self
    }

    /// For `with_lock`: the longest the work may run.
    pub fn deadline(mut self, deadline: Duration) -> Self {
        self.deadline = Some(deadline);
        self
    }

    /// For `with_lock`: the owner name of its lease.
    pub fn owner(mut self, owner: impl Into<String>) -> Self {
        self.owner = Some(owner.into());
        self
    }
}

/// An acquire being set up: `lease.lock(name)`, then options, then
/// [`acquire`](Self::acquire).
#[must_use = "call .acquire().await to acquire the lock"]
#[derive(Debug)]
pub struct LockRequest {
    lease: Lease,
    name: Result<LockName, Error>,
    options: LockOptions,
}

impl LockRequest {
    pub(crate) fn new(lease: Lease, name: impl IntoLockName) -> LockRequest {
        LockRequest {
            lease,
            name: name.into_lock_name(),
            options: LockOptions::default(),
        }
    }

    /// Replaces every option at once.
    pub fn options(mut self, options: LockOptions) -> Self {
        self.options = options;
        self
    }

    /// See [`LockOptions::wait`].
    pub fn wait(mut self, wait: Duration) -> Self {
        self.options = self.options.wait(wait);
        self
    }

    /// See [`LockOptions::fenced`].
    pub fn fenced(mut self, fenced: bool) -> Self {
        self.options = self.options.fenced(fenced);
        self
    }

    /// See [`LockOptions::lock_delay`].
    pub fn lock_delay(mut self, delay: Duration) -> Self {
        self.options = self.options.lock_delay(delay);
        self
    }

    /// See [`LockOptions::max_hold`].
    pub fn max_hold(mut self, max_hold: Duration) -> Self {
        self.options = self.options.max_hold(max_hold);
        self
    }

    /// See [`LockOptions::metadata`].
    pub fn metadata(mut self, key: impl Into<String>, value: impl Into<String>) -> Self {
        self.options = self.options.metadata(key, value);
        self
    }

    /// See [`LockOptions::semaphore`].
    pub fn semaphore(mut self, permits: u32, count: u32) -> Self {
        self.options = self.options.semaphore(permits, count);
        self
    }

    /// See [`LockOptions::shared`].
    pub fn shared(mut self) -> Self {
        self.options = self.options.shared();
        self
    }

    /// See [`LockOptions::exclusive`].
    pub fn exclusive(mut self) -> Self {
        self.options = self.options.exclusive();
        self
    }

    /// Acquires the lock (waiting in its queue up to the wait, if set).
    /// Fails with `Busy` or `WaitTimeout` if it is not had, with `Lost` if
    /// the lease is lost first, with `AlreadyHeld` if a live guard of this
    /// lease already has it.
    pub async fn acquire(self) -> Result<LockGuard, Error> {
        let name = self.name?;
        let inner = self.lease.inner();
        let state = inner.state.clone();
        if let Err(cause) = state.check() {
            return Err(Error::Lost(state.lost_error(Some(&name), cause)));
        }
        let mut pending = Pending::begin(&state, &name)?;
        let options = self.options;
        let sent = state.clock.now();
        let outcome = tokio::select! {
            biased;
            () = state.cancellation().cancelled() => {
                let cause = state.loss().expect("cancelled at the loss");
                Err(Error::Lost(state.lost_error(Some(&name), cause)))
            }
            granted = inner.client.acquire_via(inner.calls_session(), state.id, &name, &options) => granted.map(|a| a.token),
        };
        let token = match outcome {
            Ok(token) => token,
            Err(error) => {
                pending.settle(may_have_been_granted(&error));
                return Err(error.about(name.as_str()));
            }
        };
        pending.settled = true;
        let hold_deadline = options
            .max_hold
            .map(|max_hold| sent + max_hold.saturating_sub(inner.timing.margin));
        let guard = LockGuard::new(&self.lease, name, token, hold_deadline);
        // Granted, but the lease may have lapsed while the reply travelled.
        guard.fence().map_err(Error::Lost)?;
        Ok(guard)
    }
}

/// Whether an acquire that failed with `error` may still have been granted
/// (the server's answer was lost, or the lease was lost meanwhile): then
/// reconciliation releases what the server may hold for it.
pub(crate) fn may_have_been_granted(error: &Error) -> bool {
    !matches!(
        error,
        Error::Busy { .. } | Error::WaitTimeout { .. } | Error::InvalidArgument { .. }
    )
}

/// An acquire's registration; if the acquire ends without a guard, the
/// name is forgotten (and, if the server may have granted it,
/// reconciliation is asked for).
pub(crate) struct Pending {
    state: Arc<LeaseState>,
    name: LockName,
    pub(crate) settled: bool,
}

impl Pending {
    /// Registers the acquire of `name` with the lease (`AlreadyHeld` if a
    /// guard of it holds or acquires it).
    pub(crate) fn begin(state: &Arc<LeaseState>, name: &LockName) -> Result<Pending, Error> {
        state.begin_acquire(name)?;
        Ok(Pending {
            state: state.clone(),
            name: name.clone(),
            settled: false,
        })
    }

    /// The acquire ended without a guard; `uncertain`: the server may
    /// have granted it.
    pub(crate) fn settle(&mut self, uncertain: bool) {
        self.settled = true;
        self.state.forget(&self.name, uncertain);
    }
}

impl Drop for Pending {
    fn drop(&mut self) {
        if !self.settled {
            // The caller dropped the acquire mid-flight.
            self.state.forget(&self.name, true);
        }
    }
}

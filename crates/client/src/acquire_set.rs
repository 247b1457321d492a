//! Acquiring several locks at once, all or none: [`LockSetRequest`] (the
//! builder `lease.lock_all(["a", "b"]).wait(d).acquire()`), which gives a
//! guard per lock (each releases on its own, each reports its loss).

use crate::acquire::{may_have_been_granted, Pending};
use crate::error::Error;
use crate::guard::LockGuard;
use crate::lease::Lease;
use crate::name::IntoLockName;
use leasehold_core::LockName;
use std::time::Duration;

/// Several locks to acquire together: set the wait and fencing, then
/// [`acquire`](Self::acquire).
#[must_use = "call .acquire().await to acquire the locks"]
#[derive(Debug)]
pub struct LockSetRequest {
    lease: Lease,
    names: Result<Vec<LockName>, Error>,
    wait: Duration,
    fenced: bool,
}

impl LockSetRequest {
    pub(crate) fn new<N: IntoLockName>(
        lease: Lease,
        names: impl IntoIterator<Item = N>,
    ) -> LockSetRequest {
        let names = names
            .into_iter()
            .map(IntoLockName::into_lock_name)
            .collect();
        LockSetRequest {
            lease,
            names,
            wait: Duration::ZERO,
            fenced: false,
        }
    }

    /// Wait up to this long for all of them (default: none, `Busy` if any
    /// is taken).
    pub fn wait(mut self, wait: Duration) -> Self {
        self.wait = wait;
        self
    }

    /// The protected resources check the tokens.
    pub fn fenced(mut self, fenced: bool) -> Self {
        self.fenced = fenced;
        self
    }

    /// Acquires them all, or none: the guards in the order of the names.
    /// Fails with `Busy` or `WaitTimeout` if they are not had, with `Lost`
    /// if the lease is lost first, with `AlreadyHeld` if a guard of this
    /// lease already has one of them.
    pub async fn acquire(self) -> Result<Vec<LockGuard>, Error> {
        let names = self.names?;
        // Refused here, before any name is registered with the lease.
        leasehold_core::lock_set::check_names(&names)?;
        let inner = self.lease.inner();
        let state = inner.state.clone();
        if let Err(cause) = state.check() {
            return Err(Error::Lost(state.lost_error(names.first(), cause)));
        }
        let mut pending = Vec::with_capacity(names.len());
        for name in &names {
            pending.push(Pending::begin(&state, name)?);
        }
        let outcome = tokio::select! {
            biased;
            () = state.cancellation().cancelled() => {
                let cause = state.loss().expect("cancelled at the loss");
                Err(Error::Lost(state.lost_error(names.first(), cause)))
            }
            granted = inner.client.acquire_all(state.id, &names, self.wait, self.fenced) => granted,
        };
        let acquired = match outcome {
            Ok(acquired) => acquired,
            Err(error) => {
                let uncertain = may_have_been_granted(&error);
                pending.iter_mut().for_each(|p| p.settle(uncertain));
                return Err(error);
            }
        };
        pending.iter_mut().for_each(|p| p.settled = true);
        let guards: Vec<LockGuard> = names
            .into_iter()
            .zip(acquired.tokens)
            .map(|(name, token)| LockGuard::new(&self.lease, name, token, None))
            .collect();
        // Granted, but the lease may have lapsed while the reply travelled.
        for guard in &guards {
            guard.fence().map_err(Error::Lost)?;
        }
        Ok(guards)
    }
}

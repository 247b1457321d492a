//! Renewing a lease granted elsewhere (`client.keep_alive(id)…start()`): a
//! sidecar, or `leasehold lease keepalive`, keeps a script's lease alive.
//! The same keeper as for a granted lease does the work — the boot-clock
//! deadline, failover, renewal inside the validity window, loss on a
//! definite answer — so a renewer of a lease id rides through restarts and
//! leader changes exactly as the library does. What differs: the lease is
//! not ours to end, so dropping the handle stops renewing without revoking,
//! and locks held under it are never released as orphans (they belong to
//! whoever acquired them).

use super::keeper::Ownership;
use super::state::LeaseState;
use super::timing::LeaseTiming;
use super::Lease;
use crate::error::Error;
use crate::Client;
use leasehold_core::LeaseId;
use std::sync::Arc;
use std::time::Duration;

/// A renewer of an existing lease being set up: `client.keep_alive(id)`,
/// then options, then [`start`](Self::start).
#[must_use = "call .start().await to begin renewing"]
#[derive(Debug)]
pub struct KeepAliveBuilder {
    client: Client,
    lease: LeaseId,
    interval: Option<Duration>,
    margin: Option<Duration>,
}

impl KeepAliveBuilder {
    pub(crate) fn new(client: Client, lease: LeaseId) -> KeepAliveBuilder {
        KeepAliveBuilder {
            client,
            lease,
            interval: None,
            margin: None,
        }
    }

    /// Time between keep-alives (default ttl/3; at most ttl/2).
    pub fn keep_alive_interval(mut self, interval: Duration) -> Self {
        self.interval = Some(interval);
        self
    }

    /// How much before `send time + ttl` the lease counts as lost (default ttl/10).
    pub fn margin(mut self, margin: Duration) -> Self {
        self.margin = Some(margin);
        self
    }

    /// Renews the lease once now (its ttl comes from the answer; a lease
    /// that is gone is `LeaseNotFound`/`LeaseExpired`), then keeps renewing
    /// it in the background until the returned handle is dropped or the
    /// lease is lost.
    pub async fn start(self) -> Result<Lease, Error> {
        let clock = self.client.options().clock.clone();
        // The first attempt's send time: a retry renews no earlier.
        let sent = clock.now();
        let renewal = self.client.renew_lease(self.lease).await?;
        let timing = LeaseTiming::new(renewal.ttl, self.interval, self.margin)?;
        let state = Arc::new(LeaseState::new(
            self.lease,
            clock,
            sent,
            timing.ttl,
            timing.margin,
        ));
        state.renewed(renewal.revision.0);
        Ok(Lease::start(
            self.client,
            state,
            timing,
            Ownership::Attached,
        ))
    }
}

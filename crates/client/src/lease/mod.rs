//! Leases: [`Lease`] (the handle), [`LeaseBuilder`] (`client.lease(ttl)…grant()`),
//! [`KeepAliveBuilder`] (`client.keep_alive(id)…start()`, renewing a lease
//! granted elsewhere), and the parts behind them: [`timing`] (validated ttl,
//! interval, margin), [`validity`] (the deadline arithmetic), `state` (what
//! handle, guards and keeper share), `hold` (one held lock's loss and claim
//! on renewal), `keeper` (the renewal task, which keeps the lease's session
//! stream open), `renewal` (judging a renewal's answer: the deadline, and
//! ending holds the server took away), `reconcile` (releasing orphans after
//! a reconnect).

mod attach;
mod hold;
mod keeper;
mod reconcile;
mod renewal;
mod state;
pub mod timing;
pub mod validity;

pub use attach::KeepAliveBuilder;
pub(crate) use hold::Hold;
pub(crate) use keeper::Ownership;
pub use reconcile::ORPHANS_RELEASED_TOTAL;
pub(crate) use state::LeaseState;
pub use state::Renewed;
use timing::LeaseTiming;

use crate::acquire::LockRequest;
use crate::acquire_set::LockSetRequest;
use crate::error::Error;
use crate::loss::{LockLost, LossCause};
use crate::name::IntoLockName;
use crate::options::Transport;
use crate::session::SessionSlot;
use crate::Client;
use leasehold_core::LeaseId;
use leasehold_proto::v1::KeepAliveRequest;
use std::sync::Arc;
use std::time::Duration;
use tokio_util::sync::CancellationToken;

/// What the lease handle and its guards share.
#[derive(Debug)]
pub(crate) struct LeaseInner {
    /// For acquires, releases and the revoke.
    pub client: Client,
    /// Validity, loss, registry.
    pub state: Arc<LeaseState>,
    /// ttl, interval, margin.
    pub timing: LeaseTiming,
    /// Granted here, or attached to.
    pub ownership: Ownership,
    /// The session stream the keeper keeps open, for renewals and (with
    /// [`Transport::Session`]) acquires and releases.
    pub session: SessionSlot,
    /// Stops the keeper.
    stop: CancellationToken,
}

impl LeaseInner {
    /// Where acquires, releases and one-off renewals go: the session
    /// stream, or (with [`Transport::Unary`]) none.
    pub fn calls_session(&self) -> Option<&SessionSlot> {
        match self.client.options().transport {
            Transport::Session => Some(&self.session),
            Transport::Unary => None,
        }
    }
}

/// A claim on the lease's renewal. The `Lease` handles share one, and each
/// hold whose lock is still ours keeps a reference (see [`Hold`]); when the
/// last reference goes, the keeper stops (and revokes a lease this process
/// granted). So the renewer never outlives what needs it: not the guards,
/// and not a lock the server took away.
#[derive(Debug)]
pub(crate) struct RenewalClaim {
    stop: CancellationToken,
}

impl RenewalClaim {
    /// A claim that stops the keeper through `stop` when dropped.
    pub fn new(stop: CancellationToken) -> RenewalClaim {
        RenewalClaim { stop }
    }
}

impl Drop for RenewalClaim {
    fn drop(&mut self) {
        self.stop.cancel();
    }
}

/// A lease: time-bound ownership, renewed in the background while this
/// handle or any guard whose lock is still ours lives, and lost — for
/// good — at the first definite renewal failure or when its local deadline
/// passes.
#[derive(Clone, Debug)]
pub struct Lease {
    inner: Arc<LeaseInner>,
    claim: Arc<RenewalClaim>,
}

impl Lease {
    /// The lease id.
    pub fn id(&self) -> LeaseId {
        self.inner.state.id
    }

    /// The lease's timing (ttl, keep-alive interval, margin).
    pub fn timing(&self) -> LeaseTiming {
        self.inner.timing
    }

    /// Time left until the local deadline, or why the lease is lost.
    pub fn check(&self) -> Result<Duration, LockLost> {
        self.handle().check()
    }

    /// A view for watching the lease that does not keep it renewed.
    pub fn handle(&self) -> LeaseHandle {
        LeaseHandle {
            state: self.inner.state.clone(),
        }
    }

    /// Follows the acknowledged renewals: the receiver changes after each
    /// one (a sidecar can print them, as `leasehold lease keepalive` does).
    pub fn renewals(&self) -> tokio::sync::watch::Receiver<Renewed> {
        self.inner.state.renewals()
    }

    /// Resolves when the lease is lost, with why.
    pub async fn lost(&self) -> LockLost {
        self.handle().lost().await
    }

    /// A token cancelled the moment the lease is lost.
    pub fn cancellation(&self) -> CancellationToken {
        self.inner.state.cancellation().child_token()
    }

    /// Starts acquiring several locks at once under this lease, all or
    /// none (no order of names can deadlock): set the wait, then
    /// `.acquire().await` for a guard per lock.
    pub fn lock_all<N: IntoLockName>(&self, names: impl IntoIterator<Item = N>) -> LockSetRequest {
        LockSetRequest::new(self.clone(), names)
    }

    /// The client the lease was granted through.
    pub fn client(&self) -> &Client {
        &self.inner.client
    }

    /// Starts acquiring `name` under this lease: set options, then `.acquire().await`.
    pub fn lock(&self, name: impl IntoLockName) -> LockRequest {
        LockRequest::new(self.clone(), name)
    }

    /// Starts a campaign to lead `election` with `value` (what observers
    /// read: an address, an id): an acquire that carries the value. Set
    /// how long to wait (`.wait(..)`: campaigns queue first come, first
    /// served), then `.acquire().await`; the guard leads, its token is the
    /// epoch, [`LockGuard::proclaim`] changes the value, releasing resigns.
    pub fn campaign(&self, election: impl IntoLockName, value: impl Into<String>) -> LockRequest {
        self.lock(election)
            .metadata(leasehold_core::election::VALUE_KEY, value)
    }

    /// Ends the lease now, releasing every lock it holds; returns their
    /// names. Guards still alive report the loss (`Revoked`).
    pub async fn revoke(self) -> Result<Vec<String>, Error> {
        let state = &self.inner.state;
        state.lose(LossCause::Revoked);
        self.inner.stop.cancel();
        self.inner.client.revoke_lease(state.id).await
    }

    /// Renews the lease once, now, and returns when the renewal is
    /// acknowledged, with the time then left until the local deadline (etcd's
    /// `KeepAliveOnce`). The background renewals go on as before; this one
    /// counts like them (the deadline, the holdings it lists). The server
    /// saying the lease is gone (`LeaseNotFound`, `LeaseExpired`) loses it,
    /// as a refused background renewal does; other errors (after the
    /// client's retries) leave the lease as it was.
    pub async fn keep_alive_once(&self) -> Result<Duration, Error> {
        let inner = &self.inner;
        let state = &inner.state;
        let lost = |cause| Error::Lost(state.lost_error(None, cause));
        state.check().map_err(lost)?;
        let sent = renewal::Sent::now(state);
        let request = KeepAliveRequest {
            lease: state.id.0,
            seq: 0,
            holdings_digest: state.holdings_digest(),
        };
        let session = inner.calls_session();
        let reply = inner.client.send(session, Duration::ZERO, || request).await;
        match reply {
            Ok(reply) => {
                renewal::acknowledged(&self.inner, &reply, sent).map_err(lost)?;
                state.check().map_err(lost)
            }
            Err(error @ (Error::LeaseNotFound { .. } | Error::LeaseExpired { .. })) => {
                Err(lost(renewal::refused(state, &error)))
            }
            Err(error) => Err(error),
        }
    }

    pub(crate) fn inner(&self) -> Arc<LeaseInner> {
        self.inner.clone()
    }

    /// Another reference to the claim on renewal, for a new hold.
    pub(crate) fn claim(&self) -> Arc<RenewalClaim> {
        self.claim.clone()
    }

    /// Starts renewing lease `state.id` and returns its handle.
    pub(crate) fn start(
        client: Client,
        state: Arc<LeaseState>,
        timing: LeaseTiming,
        ownership: Ownership,
    ) -> Lease {
        let stop = CancellationToken::new();
        let inner = Arc::new(LeaseInner {
            client,
            state,
            timing,
            ownership,
            session: SessionSlot::default(),
            stop: stop.clone(),
        });
        keeper::spawn(inner.clone());
        Lease {
            inner,
            claim: Arc::new(RenewalClaim::new(stop)),
        }
    }
}

/// A view of a [`Lease`] for watching it: its id, the time it has left,
/// and its loss. Unlike the lease it does not keep renewal going, so a
/// copy held by a watcher (a loss callback, another language's binding)
/// never keeps a lease alive that its owner has dropped: dropping the last
/// [`Lease`] and guard revokes it as before, and the handle reports the
/// lease lost (`Revoked`).
#[derive(Clone, Debug)]
pub struct LeaseHandle {
    state: Arc<LeaseState>,
}

impl LeaseHandle {
    /// The lease id.
    pub fn id(&self) -> LeaseId {
        self.state.id
    }

    /// Time left until the local deadline, or why the lease is lost.
    pub fn check(&self) -> Result<Duration, LockLost> {
        let state = &self.state;
        state.check().map_err(|cause| state.lost_error(None, cause))
    }

    /// Resolves when the lease is lost, with why.
    pub async fn lost(&self) -> LockLost {
        let state = &self.state;
        state.cancellation().cancelled().await;
        let cause = state.loss().expect("cancelled at the loss");
        state.lost_error(None, cause)
    }
}

/// A lease being set up: `client.lease(ttl)`, then options, then
/// [`grant`](Self::grant).
#[must_use = "call .grant().await to get the lease"]
#[derive(Debug)]
pub struct LeaseBuilder {
    client: Client,
    ttl: Duration,
    interval: Option<Duration>,
    margin: Option<Duration>,
    owner: Option<String>,
    labels: Vec<(String, String)>,
}

impl LeaseBuilder {
    pub(crate) fn new(client: Client, ttl: Duration) -> LeaseBuilder {
        LeaseBuilder {
            client,
            ttl,
            interval: None,
            margin: None,
            owner: None,
            labels: Vec::new(),
        }
    }

    /// The owner name operators see (default `user@host:program`); host,
    /// pid and process start time are always filled in.
    pub fn owner(mut self, owner: impl Into<String>) -> Self {
        self.owner = Some(owner.into());
        self
    }

    /// A free label operators see with the owner.
    pub fn label(mut self, key: impl Into<String>, value: impl Into<String>) -> Self {
        self.labels.push((key.into(), value.into()));
        self
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

    /// Grants the lease and starts renewing it.
    pub async fn grant(self) -> Result<Lease, Error> {
        let timing = LeaseTiming::new(self.ttl, self.interval, self.margin)?;
        let owner = crate::owner::owner_info(self.owner, self.labels);
        let clock = self.client.options().clock.clone();
        // The first attempt's send time: a retry may be answered with a
        // lease the first attempt created, which started no earlier.
        let sent = clock.now();
        let granted = self.client.grant_lease(timing.ttl, owner).await?;
        let state = Arc::new(LeaseState::new(
            granted.lease,
            clock,
            sent,
            timing.ttl,
            timing.margin,
        ));
        Ok(Lease::start(self.client, state, timing, Ownership::Owned))
    }
}

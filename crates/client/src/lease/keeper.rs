//! The keeper: one task per lease that renews it over one keep-alive stream
//! and turns every way renewal can fail into either a retry (inside the
//! validity window) or the loss of ownership.
//!
//! - A keep-alive goes out every interval (ttl/3 by default), one at a
//!   time; its send time, once acknowledged, moves the local deadline.
//! - A definite answer (`LeaseNotFound`, `LeaseExpired`) ends the lease at once.
//! - Every acknowledgement lists what the lease holds on the server; a lock
//!   a guard holds that is missing there was taken away while the lease
//!   lived (force release, max hold), so that guard's loss fires at once,
//!   saying how, and it stops keeping the lease renewed.
//! - A broken stream, a follower, or a reply that does not come within the
//!   interval is transient: the keeper fails over to another endpoint and
//!   reopens the stream after a jittered backoff, renewing at once, then
//!   reconciles (releases locks the server says we hold but no guard knows).
//! - Throughout, a watch on the boot clock declares the lease lost the
//!   moment the local deadline passes, whatever the network is doing.
//!
//! The keeper stops when the last claim on renewal is gone (the `Lease`
//! handles, and the guards whose locks are still ours), and revokes a lease
//! this process granted on the way out: the renewer never outlives what
//! needs it. A lease attached to (granted elsewhere, [`Ownership::Attached`])
//! is only renewed: never revoked, its locks never reconciled away.

use super::reconcile;
use super::state::LeaseState;
use super::timing::LeaseTiming;
use crate::clock::{sleep_until, BootInstant};
use crate::endpoints::Moved;
use crate::error::{Error, Retry};
use crate::loss::LossCause;
use crate::{metrics, Client};
use leasehold_proto::v1::lease_client::LeaseClient;
use leasehold_proto::v1::{KeepAliveRequest, KeepAliveResponse, LeaseHoldings, RevokeRequest};
use std::collections::HashSet;
use std::sync::Arc;
use std::time::Duration;
use tokio::sync::mpsc;
use tokio::time::Instant;
use tokio_stream::wrappers::ReceiverStream;
use tokio_util::sync::CancellationToken;

/// Whose lease the keeper renews.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Ownership {
    /// Granted by this process: revoked when the last claim goes, and
    /// locks no guard knows of are released after a reconnect.
    Owned,
    /// Granted elsewhere (`Client::keep_alive`): only renewed; its locks
    /// belong to whoever acquired them, and its end to whoever granted it.
    Attached,
}

/// Starts the keeper of `state`; it runs until `stop` fires or the lease is lost.
pub(crate) fn spawn(
    client: Client,
    state: Arc<LeaseState>,
    timing: LeaseTiming,
    stop: CancellationToken,
    ownership: Ownership,
) {
    tokio::spawn(run(client, state, timing, stop, ownership));
}

/// How one stream ended.
enum End {
    /// Every handle is gone.
    Stopped,
    /// Ownership is lost.
    Lost,
    /// The stream failed; another may work.
    Broken {
        /// For the metrics.
        reason: &'static str,
        /// The endpoint generation that failed.
        generation: u64,
        /// Where the leader is, if a follower said.
        leader_addr: Option<String>,
        /// A renewal was acknowledged on this stream.
        renewed: bool,
    },
}

async fn run(
    client: Client,
    state: Arc<LeaseState>,
    timing: LeaseTiming,
    stop: CancellationToken,
    ownership: Ownership,
) {
    let keeper = Keeper {
        client,
        state,
        timing,
        ownership,
    };
    let mut backoff = keeper.client.backoff();
    let mut reopened = false;
    loop {
        let state = &keeper.state;
        let end = tokio::select! {
            biased;
            () = stop.cancelled() => End::Stopped,
            () = state.cancellation().cancelled() => End::Lost,
            () = watch_deadline(state) => End::Lost,
            end = keeper.stream(reopened) => end,
        };
        let (reason, generation, leader_addr, renewed) = match end {
            End::Stopped => return keeper.stopped().await,
            End::Lost => return keeper.lost().await,
            End::Broken {
                reason,
                generation,
                leader_addr,
                renewed,
            } => (reason, generation, leader_addr, renewed),
        };
        metrics::renewal_failed(reason);
        tracing::info!(lease = %state.id, reason, "keep-alive stream broken; reconnecting");
        if renewed {
            backoff.reset();
        }
        let moved = keeper
            .client
            .endpoints()
            .fail_over(generation, leader_addr.as_deref());
        reopened = true;
        // Replies lost with the connection may have left the server
        // holding locks for us that no guard knows of: reconcile
        // after the next acknowledged renewal (see `reconcile`).
        state.want_reconcile();
        // A follower named the leader: go there at once.
        let pause = if moved == Moved::ToLeader {
            Duration::ZERO
        } else {
            backoff.next_delay()
        };
        tokio::select! {
            biased;
            () = stop.cancelled() => return keeper.stopped().await,
            () = state.cancellation().cancelled() => return keeper.lost().await,
            () = watch_deadline(state) => return keeper.lost().await,
            () = tokio::time::sleep(pause) => {}
        }
    }
}

/// Resolves when the local deadline passes (declaring the loss).
async fn watch_deadline(state: &LeaseState) {
    loop {
        sleep_until(state.clock.as_ref(), state.deadline()).await;
        if state.check().is_err() {
            return;
        }
    }
}

/// What the keeper of one lease works with.
struct Keeper {
    client: Client,
    state: Arc<LeaseState>,
    timing: LeaseTiming,
    ownership: Ownership,
}

/// A keep-alive on its way: what its reply is matched and judged against.
#[derive(Clone, Copy)]
struct InFlight {
    seq: u64,
    /// Send time on the boot clock: an acknowledgement moves the deadline
    /// to it + ttl − margin.
    sent: BootInstant,
    /// Send time on tokio's clock, for the reply bound and the metrics.
    started: Instant,
    /// The lease's guard registrations at send time: the reply must list
    /// every lock registered by then that is still ours.
    registered: u64,
}

impl Keeper {
    /// Every claim is gone: end a lease we granted now rather than let it
    /// expire; an attached lease is simply no longer renewed.
    async fn stopped(&self) {
        if self.ownership == Ownership::Attached || self.state.loss().is_some() {
            return;
        }
        self.state.lose(LossCause::Revoked);
        self.revoke_once().await;
    }

    /// Ownership is lost. If only this side knows (the deadline passed), tell
    /// the server, so waiters get the locks now instead of at its expiry.
    async fn lost(&self) {
        let lapsed = matches!(self.state.loss(), Some(LossCause::DeadlineReached { .. }));
        if lapsed && self.ownership == Ownership::Owned {
            self.revoke_once().await;
        }
    }

    /// One bounded attempt to revoke; failure is fine (the server expires it).
    async fn revoke_once(&self) {
        let request = RevokeRequest {
            lease: self.state.id.0,
            request_id: crate::request_id::new_request_id(),
        };
        let mut leases = LeaseClient::new(self.client.endpoints().in_use().channel);
        let bound = self.client.options().call_timeout;
        let outcome = tokio::time::timeout(bound, leases.revoke(request)).await;
        let ok = matches!(outcome, Ok(Ok(_)));
        tracing::debug!(lease = %self.state.id, ok, "revoked on the way out");
    }

    /// One keep-alive stream, until it breaks.
    async fn stream(&self, reopened: bool) -> End {
        let state = &self.state;
        let interval = self.timing.interval;
        let in_use = self.client.endpoints().in_use();
        let generation = in_use.generation;
        let (sender, receiver) = mpsc::channel(4);
        let mut leases = LeaseClient::new(in_use.channel);
        let bound = self.client.options().call_timeout;
        let opened = tokio::time::timeout(
            bound,
            leases.keep_alive_stream(ReceiverStream::new(receiver)),
        )
        .await;
        let mut replies = match opened {
            Ok(Ok(replies)) => replies.into_inner(),
            Ok(Err(status)) => {
                return failed(state, Error::from_status(&status), generation, false)
            }
            Err(_) => return broken("timeout", generation, false),
        };
        // After a reconnect, renew at once: the old stream may have lost a reply.
        let first = if reopened {
            Instant::now()
        } else {
            Instant::now() + interval
        };
        let mut ticker = tokio::time::interval_at(first, interval);
        ticker.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        // A reply slower than half the ttl leaves too little of the validity
        // window to be worth waiting for: treat the stream as broken (a dead
        // connection looks like this) and try another. A merely slow server
        // still answers within it, and each answer counts from its send time.
        let reply_bound = bound.min(self.timing.ttl / 2);
        let mut seq = 0;
        let mut in_flight: Option<InFlight> = None;
        let mut renewed = false;
        loop {
            let reply_due = in_flight.map_or_else(Instant::now, |f| f.started + reply_bound);
            tokio::select! {
                _ = ticker.tick(), if in_flight.is_none() => {
                    seq += 1;
                    let request = KeepAliveRequest { lease: state.id.0, seq };
                    let registered = state.registered();
                    let sent = state.clock.now();
                    if sender.send(request).await.is_err() {
                        return broken("unavailable", generation, renewed);
                    }
                    in_flight = Some(InFlight { seq, sent, started: Instant::now(), registered });
                }
                () = tokio::time::sleep_until(reply_due), if in_flight.is_some() => {
                    return broken("timeout", generation, renewed);
                }
                reply = replies.message() => {
                    let reply = match reply {
                        Ok(Some(reply)) => reply,
                        Ok(None) => return broken("unavailable", generation, renewed),
                        Err(status) => return failed(state, Error::from_status(&status), generation, renewed),
                    };
                    let Some(sent) = in_flight.filter(|f| f.seq == reply.seq) else { continue };
                    in_flight = None;
                    match self.renewal(reply, sent) {
                        Renewal::Renewed => renewed = true,
                        Renewal::Lost => return End::Lost,
                        Renewal::Failed(error) => return failed(state, error, generation, renewed),
                    }
                }
            }
        }
    }

    /// Judges one reply: an error, a renewal too late to count, or a
    /// renewal — after which holds the server no longer lists are ended.
    fn renewal(&self, reply: KeepAliveResponse, sent: InFlight) -> Renewal {
        let state = &self.state;
        if let Some(error) = reply.error {
            return Renewal::Failed(Error::from_detail(&error));
        }
        match state.acknowledged(sent.sent) {
            Ok(left) => metrics::renewed(sent.started.elapsed(), left),
            Err(_) => return Renewal::Lost,
        }
        let revision = reply.header.map_or(0, |h| h.revision);
        state.renewed(revision);
        if let Some(holdings) = reply.holdings {
            end_taken_holds(state, sent.registered, &holdings);
        }
        let reconcile = state.take_reconcile();
        if reconcile && self.ownership == Ownership::Owned {
            tokio::spawn(reconcile::run(self.client.clone(), state.clone()));
        }
        Renewal::Renewed
    }
}

/// Ends every hold of this lease that was registered before the keep-alive
/// was sent and that the server no longer lists: the server took it away
/// while the lease lived. Its loss fires now, saying how when the server
/// said, and it stops keeping the lease renewed.
fn end_taken_holds(state: &LeaseState, registered: u64, holdings: &LeaseHoldings) {
    let held: HashSet<(&str, u64)> = holdings
        .held
        .iter()
        .map(|lock| (lock.name.as_str(), lock.token))
        .collect();
    let taken = state.holds_missing_from(registered, |name, token| {
        held.contains(&(name.as_str(), token.0))
    });
    for (name, hold) in taken {
        let token = hold.token.0;
        let how = holdings
            .ended
            .iter()
            .find(|ended| ended.name == name.as_str() && ended.token == token)
            .map_or_else(
                || {
                    "it is no longer held under this lease; `leasehold events` shows who freed it"
                        .to_owned()
                },
                |ended| ended.how.clone(),
            );
        tracing::warn!(lease = %state.id, lock = %name, token, how, "the server took the lock away");
        hold.end(LossCause::ReleasedByServer { how });
        drop(hold.give_up_claim());
    }
}

/// What one reply meant.
enum Renewal {
    Renewed,
    Lost,
    Failed((Error, Retry)),
}

fn broken(reason: &'static str, generation: u64, renewed: bool) -> End {
    End::Broken {
        reason,
        generation,
        leader_addr: None,
        renewed,
    }
}

/// A failed renewal: definite errors end the lease, others break the stream.
fn failed(
    state: &LeaseState,
    (error, retry): (Error, Retry),
    generation: u64,
    renewed: bool,
) -> End {
    let leader_addr = match retry {
        Retry::Failover { leader_addr } => leader_addr,
        Retry::No => {
            let cause = match &error {
                Error::LeaseExpired { .. } => LossCause::LeaseExpired,
                Error::LeaseNotFound { .. } => LossCause::LeaseNotFound,
                other => LossCause::Refused {
                    reason: other.to_string(),
                },
            };
            metrics::renewal_failed(cause.label());
            state.lose(cause);
            return End::Lost;
        }
    };
    End::Broken {
        reason: if leader_addr.is_some() {
            "not_leader"
        } else {
            "unavailable"
        },
        generation,
        leader_addr,
        renewed,
    }
}

//! The keeper: one task per lease that renews it over one keep-alive stream
//! and turns every way renewal can fail into either a retry (inside the
//! validity window) or the loss of ownership.
//!
//! - A keep-alive goes out every interval (ttl/3 by default), one at a
//!   time; its send time, once acknowledged, moves the local deadline.
//! - A definite answer (`LeaseNotFound`, `LeaseExpired`) ends the lease at once.
//! - A broken stream, a follower, or a reply that does not come within the
//!   interval is transient: the keeper fails over to another endpoint and
//!   reopens the stream after a jittered backoff, renewing at once, then
//!   reconciles (releases locks the server says we hold but no guard knows).
//! - Throughout, a watch on the boot clock declares the lease lost the
//!   moment the local deadline passes, whatever the network is doing.
//!
//! The keeper stops when the last handle to the lease (the `Lease` and its
//! guards) is dropped, and revokes the lease on the way out: the renewer
//! never outlives the guards.

use super::reconcile;
use super::state::LeaseState;
use super::timing::LeaseTiming;
use crate::clock::{sleep_until, BootInstant};
use crate::endpoints::Moved;
use crate::error::{Error, Retry};
use crate::loss::LossCause;
use crate::{metrics, Client};
use leasehold_proto::v1::lease_client::LeaseClient;
use leasehold_proto::v1::{KeepAliveRequest, KeepAliveResponse, RevokeRequest};
use std::sync::Arc;
use std::time::Duration;
use tokio::sync::mpsc;
use tokio::time::Instant;
use tokio_stream::wrappers::ReceiverStream;
use tokio_util::sync::CancellationToken;

/// Starts the keeper of `state`; it runs until `stop` fires or the lease is lost.
pub(crate) fn spawn(
    client: Client,
    state: Arc<LeaseState>,
    timing: LeaseTiming,
    stop: CancellationToken,
) {
    tokio::spawn(run(client, state, timing, stop));
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

async fn run(client: Client, state: Arc<LeaseState>, timing: LeaseTiming, stop: CancellationToken) {
    let mut backoff = client.backoff();
    let mut reopened = false;
    loop {
        let end = tokio::select! {
            biased;
            () = stop.cancelled() => End::Stopped,
            () = state.cancellation().cancelled() => End::Lost,
            () = watch_deadline(&state) => End::Lost,
            end = stream(&client, &state, timing, reopened) => end,
        };
        match end {
            End::Stopped => return stopped(&client, &state).await,
            End::Lost => return lost(&client, &state).await,
            End::Broken {
                reason,
                generation,
                leader_addr,
                renewed,
            } => {
                metrics::renewal_failed(reason);
                tracing::info!(lease = %state.id, reason, "keep-alive stream broken; reconnecting");
                if renewed {
                    backoff.reset();
                }
                let moved = client
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
                    () = stop.cancelled() => return stopped(&client, &state).await,
                    () = state.cancellation().cancelled() => return lost(&client, &state).await,
                    () = watch_deadline(&state) => return lost(&client, &state).await,
                    () = tokio::time::sleep(pause) => {}
                }
            }
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

/// Every handle is gone: end the lease now rather than let it expire.
async fn stopped(client: &Client, state: &LeaseState) {
    if state.loss().is_none() {
        state.lose(LossCause::Revoked);
        revoke_once(client, state).await;
    }
}

/// Ownership is lost. If only this side knows (the deadline passed), tell
/// the server, so waiters get the locks now instead of at its expiry.
async fn lost(client: &Client, state: &LeaseState) {
    if matches!(state.loss(), Some(LossCause::DeadlineReached { .. })) {
        revoke_once(client, state).await;
    }
}

/// One bounded attempt to revoke; failure is fine (the server expires it).
async fn revoke_once(client: &Client, state: &LeaseState) {
    let request = RevokeRequest {
        lease: state.id.0,
        request_id: crate::request_id::new_request_id(),
    };
    let mut leases = LeaseClient::new(client.endpoints().in_use().channel);
    let bound = client.options().call_timeout;
    let outcome = tokio::time::timeout(bound, leases.revoke(request)).await;
    tracing::debug!(lease = %state.id, ok = matches!(outcome, Ok(Ok(_))), "revoked on the way out");
}

/// One keep-alive stream, until it breaks.
async fn stream(
    client: &Client,
    state: &Arc<LeaseState>,
    timing: LeaseTiming,
    reopened: bool,
) -> End {
    let interval = timing.interval;
    let in_use = client.endpoints().in_use();
    let generation = in_use.generation;
    let (sender, receiver) = mpsc::channel(4);
    let mut leases = LeaseClient::new(in_use.channel);
    let bound = client.options().call_timeout;
    let opened = tokio::time::timeout(
        bound,
        leases.keep_alive_stream(ReceiverStream::new(receiver)),
    )
    .await;
    let mut replies = match opened {
        Ok(Ok(replies)) => replies.into_inner(),
        Ok(Err(status)) => return failed(state, Error::from_status(&status), generation, false),
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
    let reply_bound = bound.min(timing.ttl / 2);
    let mut seq = 0;
    let mut in_flight: Option<(u64, BootInstant, Instant)> = None;
    let mut renewed = false;
    loop {
        let reply_due =
            in_flight.map_or_else(Instant::now, |(_, _, started)| started + reply_bound);
        tokio::select! {
            _ = ticker.tick(), if in_flight.is_none() => {
                seq += 1;
                let request = KeepAliveRequest { lease: state.id.0, seq };
                let sent = state.clock.now();
                if sender.send(request).await.is_err() {
                    return broken("unavailable", generation, renewed);
                }
                in_flight = Some((seq, sent, Instant::now()));
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
                let Some((want, sent, started)) = in_flight else { continue };
                if reply.seq != want {
                    continue;
                }
                in_flight = None;
                match renewal(client, state, reply, sent, started) {
                    Renewal::Renewed => renewed = true,
                    Renewal::Lost => return End::Lost,
                    Renewal::Failed(error) => return failed(state, error, generation, renewed),
                }
            }
        }
    }
}

/// What one reply meant.
enum Renewal {
    Renewed,
    Lost,
    Failed((Error, Retry)),
}

fn renewal(
    client: &Client,
    state: &Arc<LeaseState>,
    reply: KeepAliveResponse,
    sent: BootInstant,
    started: Instant,
) -> Renewal {
    if let Some(error) = reply.error {
        return Renewal::Failed(Error::from_detail(&error));
    }
    match state.acknowledged(sent) {
        Ok(left) => metrics::renewed(started.elapsed(), left),
        Err(_) => return Renewal::Lost,
    }
    if state.take_reconcile() {
        tokio::spawn(reconcile::run(client.clone(), state.clone()));
    }
    Renewal::Renewed
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

//! The keeper: one task per lease that keeps the lease's `Lock.Session`
//! stream open (see `session`), renews the lease over it, and turns every
//! way renewal can fail into either a retry (inside the validity window) or
//! the loss of ownership. The stream it opens also carries the lease's
//! acquires and releases; while it is down, those go unary.
//!
//! - A keep-alive goes out every interval (ttl/3 by default), one at a
//!   time; its answer is judged by `renewal` (the deadline, the holdings,
//!   a definite answer such as `LeaseNotFound` ending the lease at once).
//! - A broken stream, a follower, or a reply that does not come within the
//!   interval is transient: the keeper fails over to another endpoint and
//!   reopens the stream after a jittered backoff, renewing at once, then
//!   reconciles (releases locks the server says we hold but no guard knows).
//!   A call of the lease that fails on the stream ends it the same way. A
//!   stream closed on purpose (an abandoned acquire) is reopened at once.
//! - Throughout, a watch on the boot clock declares the lease lost the
//!   moment the local deadline passes, whatever the network is doing.
//!
//! The keeper stops when the last claim on renewal is gone (the `Lease`
//! handles, and the guards whose locks are still ours), and revokes a lease
//! this process granted on the way out: the renewer never outlives what
//! needs it. A lease attached to (granted elsewhere, [`Ownership::Attached`])
//! is only renewed: never revoked, its locks never reconciled away.

use super::renewal::{self, Sent};
use super::LeaseInner;
use crate::clock::sleep_until;
use crate::endpoints::Moved;
use crate::error::{Error, Retry};
use crate::loss::LossCause;
use crate::metrics;
use crate::session::{self, Ending, SessionStream};
use leasehold_proto::v1::lease_client::LeaseClient;
use leasehold_proto::v1::{KeepAliveRequest, RevokeRequest};
use std::sync::Arc;
use std::time::Duration;
use tokio::time::Instant;

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

/// Starts the keeper of `lease`; it runs until the lease's stop fires or
/// the lease is lost.
pub(crate) fn spawn(lease: Arc<LeaseInner>) {
    tokio::spawn(run(lease));
}

/// How one stream ended.
enum End {
    /// Every handle is gone.
    Stopped,
    /// Ownership is lost.
    Lost,
    /// Closed on purpose: reopen at once.
    Closed,
    /// The stream failed; another may work.
    Broken {
        /// For the metrics.
        reason: &'static str,
        /// Retry at once: the client moved to the leader a follower named.
        at_once: bool,
        /// A renewal was acknowledged on this stream.
        renewed: bool,
    },
}

async fn run(lease: Arc<LeaseInner>) {
    let keeper = Keeper { lease };
    let lease = &keeper.lease;
    let (state, stop) = (&lease.state, &lease.stop);
    let mut backoff = lease.client.backoff();
    let mut reopened = false;
    loop {
        let end = tokio::select! {
            biased;
            () = stop.cancelled() => End::Stopped,
            () = state.cancellation().cancelled() => End::Lost,
            () = watch_deadline(state) => End::Lost,
            end = keeper.session(reopened) => end,
        };
        lease.session.take_down();
        let pause = match end {
            End::Stopped => return keeper.stopped().await,
            End::Lost => return keeper.lost().await,
            End::Closed => Duration::ZERO,
            End::Broken {
                reason,
                at_once,
                renewed,
            } => {
                metrics::renewal_failed(reason);
                tracing::info!(lease = %state.id, reason, "session stream broken; reconnecting");
                if renewed {
                    backoff.reset();
                }
                // Replies lost with the connection may have left the server
                // holding locks for us that no guard knows of: reconcile
                // after the next acknowledged renewal (see `reconcile`).
                state.want_reconcile();
                // A follower named the leader: go there at once.
                if at_once {
                    Duration::ZERO
                } else {
                    backoff.next_delay()
                }
            }
        };
        reopened = true;
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
async fn watch_deadline(state: &super::LeaseState) {
    loop {
        sleep_until(state.clock.as_ref(), state.deadline()).await;
        if state.check().is_err() {
            return;
        }
    }
}

/// What the keeper of one lease works with.
struct Keeper {
    lease: Arc<LeaseInner>,
}

impl Keeper {
    /// Every claim is gone: end a lease we granted now rather than let it
    /// expire; an attached lease is simply no longer renewed.
    async fn stopped(&self) {
        let state = &self.lease.state;
        if self.lease.ownership == Ownership::Attached || state.loss().is_some() {
            return;
        }
        state.lose(LossCause::Revoked);
        self.revoke_once().await;
    }

    /// Ownership is lost. If only this side knows (the deadline passed), tell
    /// the server, so waiters get the locks now instead of at its expiry.
    async fn lost(&self) {
        let state = &self.lease.state;
        let lapsed = matches!(state.loss(), Some(LossCause::DeadlineReached { .. }));
        if lapsed && self.lease.ownership == Ownership::Owned {
            self.revoke_once().await;
        }
    }

    /// One bounded attempt to revoke; failure is fine (the server expires it).
    async fn revoke_once(&self) {
        let client = &self.lease.client;
        let request = RevokeRequest {
            lease: self.lease.state.id.0,
            request_id: crate::request_id::new_request_id(),
        };
        let mut leases = LeaseClient::new(client.endpoints().in_use().channel);
        let bound = client.options().call_timeout;
        let outcome = tokio::time::timeout(bound, leases.revoke(request)).await;
        let ok = matches!(outcome, Ok(Ok(_)));
        tracing::debug!(lease = %self.lease.state.id, ok, "revoked on the way out");
    }

    /// Opens a session stream, publishes it for the lease's calls, and
    /// renews over it until it ends.
    async fn session(&self, reopened: bool) -> End {
        let client = &self.lease.client;
        let in_use = client.endpoints().in_use();
        let generation = in_use.generation;
        let stream = match SessionStream::open(client, in_use).await {
            Ok(stream) => stream,
            Err((error, Retry::No)) => return self.refused(&error),
            Err((error, Retry::Failover { leader_addr })) => {
                let leader_addr = leader_addr.as_deref();
                let moved = client.endpoints().fail_over(generation, leader_addr);
                return End::Broken {
                    reason: session::failure_reason(&error, leader_addr),
                    at_once: moved == Moved::ToLeader,
                    renewed: false,
                };
            }
        };
        self.lease.session.publish(stream.clone());
        self.renew_on(&stream, reopened).await
    }

    /// Renews every interval over `stream`, one keep-alive at a time, until
    /// the stream ends or the lease is lost.
    async fn renew_on(&self, stream: &SessionStream, reopened: bool) -> End {
        let (state, timing) = (&self.lease.state, &self.lease.timing);
        let interval = timing.interval;
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
        let reply_bound = self.lease.client.options().call_timeout.min(timing.ttl / 2);
        let mut renewed = false;
        loop {
            tokio::select! {
                _ = ticker.tick() => {}
                () = stream.ended() => return self.ended(stream, renewed),
            }
            let sent = Sent::now(state);
            let request = KeepAliveRequest {
                lease: state.id.0,
                seq: 0,
                holdings_digest: state.holdings_digest(),
            };
            let reply = tokio::time::timeout(reply_bound, stream.send(request)).await;
            let failure = match reply {
                Ok(Ok(reply)) => match renewal::acknowledged(&self.lease, &reply, sent) {
                    Ok(()) => {
                        renewed = true;
                        continue;
                    }
                    Err(_) => return End::Lost,
                },
                Ok(Err((error, Retry::No))) => return self.refused(&error),
                Ok(Err(failure)) => failure,
                Err(_) => {
                    let error = Error::Timeout {
                        what: "KeepAlive",
                        after: reply_bound,
                    };
                    (error, Retry::Failover { leader_addr: None })
                }
            };
            stream.fail(failure);
            return self.ended(stream, renewed);
        }
    }

    /// What the end of `stream` means for the keeper.
    fn ended(&self, stream: &SessionStream, renewed: bool) -> End {
        match stream.ending() {
            None | Some(Ending::Closed) => End::Closed,
            Some(Ending::Failed {
                error,
                definite: true,
                ..
            }) => self.refused(&error),
            Some(Ending::Failed {
                reason, at_once, ..
            }) => End::Broken {
                reason,
                at_once,
                renewed,
            },
        }
    }

    /// A definite refusal: the lease is lost.
    fn refused(&self, error: &Error) -> End {
        renewal::refused(&self.lease.state, error);
        End::Lost
    }
}

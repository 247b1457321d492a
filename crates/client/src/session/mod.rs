//! A lease's `Lock.Session` stream: the client's fast path. One stream per
//! lease carries its keep-alives (sent by the keeper) and, with
//! [`Transport::Session`](crate::options::Transport), its acquires, releases
//! and one-off renewals, so each costs a message instead of an RPC.
//!
//! - [`SessionStream`] (this file): one open stream. Calls are multiplexed
//!   by `seq`; a reader task hands each answer to the call waiting for it
//!   (answers come in completion order). The stream ends once, for one
//!   [`Ending`]: closed on purpose, or failed (then the client fails over
//!   off its endpoint, once); every call still waiting gets that ending as
//!   its error and retries like a unary call would, with the same request id.
//! - `slot` ([`SessionSlot`]): where the keeper publishes the open stream,
//!   and the choice of route for one attempt ([`Via`]).
//! - `op` ([`SessionOp`]): the three operations, each sendable either way.
//!
//! An acquire abandoned while in flight (its caller dropped the future)
//! closes the stream: the server then drops the request — a queued acquire
//! leaves the queue — exactly as it does for a cancelled unary call. Other
//! calls on the stream retry; the keeper reopens it at once.

mod op;
mod slot;

pub(crate) use op::SessionOp;
pub(crate) use slot::{SessionSlot, Via};

use crate::endpoints::{InUse, Moved};
use crate::error::{Error, Retry};
use crate::Client;
use leasehold_proto::v1::lock_client::LockClient;
use leasehold_proto::v1::session_request::Op;
use leasehold_proto::v1::session_response::Result as Answer;
use leasehold_proto::v1::{SessionRequest, SessionResponse};
use std::collections::HashMap;
use std::sync::{Arc, Mutex, MutexGuard};
use tokio::sync::{mpsc, oneshot};
use tokio_stream::wrappers::ReceiverStream;
use tokio_util::sync::CancellationToken;
use tonic::Streaming;

/// Requests queued for the stream's request half, at most; a caller beyond
/// it waits for room (backpressure, as the server applies past its own
/// in-flight bound).
const QUEUED_MAX: usize = 64;

/// How a stream ended.
#[derive(Clone, Debug)]
pub(crate) enum Ending {
    /// Closed on purpose (an acquire was abandoned mid-flight, or the
    /// keeper stopped): nothing is wrong with the endpoint; reopen at once.
    Closed,
    /// The stream, or a call on it, failed.
    Failed {
        /// For the renewal metrics: `unavailable`, `timeout`, `not_leader`.
        reason: &'static str,
        /// What the calls still waiting are told.
        error: Error,
        /// A definite refusal (not worth retrying anywhere).
        definite: bool,
        /// The client moved to a leader a follower named: retry at once.
        at_once: bool,
    },
}

impl Ending {
    /// Whether a retry should go at once rather than after a backoff.
    fn at_once(&self) -> bool {
        match self {
            Ending::Closed => true,
            Ending::Failed { at_once, .. } => *at_once,
        }
    }

    /// The error a call caught by this ending returns.
    fn failure(&self) -> (Error, Retry) {
        match self {
            Ending::Closed => (
                Error::Unavailable {
                    message: "the session stream was closed under the call".into(),
                },
                Retry::Failover { leader_addr: None },
            ),
            Ending::Failed {
                error, definite, ..
            } => {
                let retry = if *definite {
                    Retry::No
                } else {
                    Retry::Failover { leader_addr: None }
                };
                (error.clone(), retry)
            }
        }
    }
}

/// One open `Lock.Session` stream.
#[derive(Debug)]
pub(crate) struct SessionStream {
    /// The calls waiting for answers, the request half, and the ending.
    calls: Mutex<Calls>,
    /// Fired at the ending: the reader stops and drops the response half.
    ended: CancellationToken,
    /// For failing over off the endpoint when the stream fails.
    client: Client,
    /// The endpoint generation it was opened on: a failure moves the
    /// client once, however many calls report it.
    generation: u64,
    /// The endpoint's URL, for messages.
    url: String,
}

#[derive(Debug)]
struct Calls {
    /// Feeds the request half; dropped at the ending, which (with the
    /// response half dropped) resets the stream, so the server drops what
    /// it still works on for us — a queued acquire leaves the queue.
    requests: Option<mpsc::Sender<SessionRequest>>,
    /// The seq of the latest request.
    seq: u64,
    /// Calls waiting for their answers, by seq.
    waiting: HashMap<u64, oneshot::Sender<Answer>>,
    /// Set once.
    ending: Option<Ending>,
}

impl SessionStream {
    /// Opens a stream on `in_use` (bounded by the call timeout) and starts
    /// its reader.
    pub async fn open(
        client: &Client,
        in_use: InUse,
    ) -> Result<Arc<SessionStream>, (Error, Retry)> {
        let (requests, outgoing) = mpsc::channel(QUEUED_MAX);
        let bound = client.options().call_timeout;
        let mut locks = LockClient::new(in_use.channel);
        let opening = locks.session(ReceiverStream::new(outgoing));
        let responses = match tokio::time::timeout(bound, opening).await {
            Ok(Ok(responses)) => responses.into_inner(),
            Ok(Err(status)) => return Err(Error::from_status(&status)),
            Err(_) => {
                let error = Error::Timeout {
                    what: "Session",
                    after: bound,
                };
                return Err((error, Retry::Failover { leader_addr: None }));
            }
        };
        let calls = Calls {
            requests: Some(requests),
            seq: 0,
            waiting: HashMap::new(),
            ending: None,
        };
        let stream = Arc::new(SessionStream {
            calls: Mutex::new(calls),
            ended: CancellationToken::new(),
            client: client.clone(),
            generation: in_use.generation,
            url: in_use.url,
        });
        tokio::spawn(read(stream.clone(), responses));
        Ok(stream)
    }

    /// Sends `request` and waits for its answer: the reply, the server's
    /// refusal (in-band, mapped as a unary status would be), or the ending
    /// that caught it.
    pub async fn send<R: SessionOp>(&self, request: R) -> Result<R::Reply, (Error, Retry)> {
        let answer = self.call(request.into_op()).await?;
        R::reply(answer).ok_or_else(|| {
            let message = format!("the session answered {} with another kind", R::WHAT);
            (
                Error::Unavailable { message },
                Retry::Failover { leader_addr: None },
            )
        })
    }

    async fn call(&self, op: Op) -> Result<Answer, (Error, Retry)> {
        let closes_if_left = matches!(op, Op::Acquire(_));
        let (seq, answer, requests) = {
            let mut calls = self.calls();
            let requests = match (&calls.ending, &calls.requests) {
                (None, Some(requests)) => requests.clone(),
                (ending, _) => return Err(ending.as_ref().map_or_else(closed, Ending::failure)),
            };
            calls.seq += 1;
            let seq = calls.seq;
            let (sender, answer) = oneshot::channel();
            calls.waiting.insert(seq, sender);
            (seq, answer, requests)
        };
        let mut waiting = Waiting {
            stream: self,
            seq,
            closes_if_left,
            done: false,
        };
        let request = SessionRequest { seq, op: Some(op) };
        let exchange = async {
            requests.send(request).await.ok()?;
            drop(requests);
            answer.await.ok()
        };
        // An answer that came before the ending is still taken.
        let answer = tokio::select! {
            biased;
            answer = exchange => answer,
            () = self.ended() => None,
        };
        waiting.done = true;
        match answer {
            Some(Answer::Error(detail)) => Err(Error::from_detail(&detail)),
            Some(answer) => Ok(answer),
            None => Err(self.failure()),
        }
    }

    /// The stream failed with `failure` (unless it already ended): moves
    /// the client off the endpoint for a transient one, ends the stream,
    /// and says whether to retry at once (the client moved to a leader a
    /// follower named, or the stream was only closed).
    pub fn fail(&self, (error, retry): (Error, Retry)) -> bool {
        let calls = self.calls();
        if let Some(ending) = &calls.ending {
            return ending.at_once();
        }
        let (definite, leader_addr) = match retry {
            Retry::No => (true, None),
            Retry::Failover { leader_addr } => (false, leader_addr),
        };
        let reason = failure_reason(&error, leader_addr.as_deref());
        let at_once = !definite
            && self
                .client
                .endpoints()
                .fail_over(self.generation, leader_addr.as_deref())
                == Moved::ToLeader;
        tracing::debug!(url = %self.url, %error, reason, "session stream failed");
        let ending = Ending::Failed {
            reason,
            error,
            definite,
            at_once,
        };
        self.end(calls, ending);
        at_once
    }

    /// Closes the stream on purpose (if it is still open).
    pub fn close(&self) {
        let calls = self.calls();
        if calls.ending.is_none() {
            self.end(calls, Ending::Closed);
        }
    }

    /// How the stream ended, if it did.
    pub fn ending(&self) -> Option<Ending> {
        self.calls().ending.clone()
    }

    /// Whether the stream ended.
    pub fn is_ended(&self) -> bool {
        self.ended.is_cancelled()
    }

    /// Resolves when the stream ends.
    pub async fn ended(&self) {
        self.ended.cancelled().await;
    }

    /// The endpoint's URL.
    pub fn url(&self) -> &str {
        &self.url
    }

    /// Records `ending` and wakes every waiting call (their answers will
    /// not come).
    fn end(&self, mut calls: MutexGuard<'_, Calls>, ending: Ending) {
        calls.ending = Some(ending);
        let waiting = std::mem::take(&mut calls.waiting);
        let requests = calls.requests.take();
        drop(calls);
        drop((waiting, requests));
        self.ended.cancel();
    }

    /// What a call that will get no answer returns.
    fn failure(&self) -> (Error, Retry) {
        match &self.calls().ending {
            Some(ending) => ending.failure(),
            None => {
                let message = format!("the session stream to {} closed", self.url);
                (
                    Error::Unavailable { message },
                    Retry::Failover { leader_addr: None },
                )
            }
        }
    }

    /// Hands an answer to its call (if it is still waiting).
    fn answer(&self, response: SessionResponse) {
        let waiter = self.calls().waiting.remove(&response.seq);
        if let (Some(waiter), Some(answer)) = (waiter, response.result) {
            let _ = waiter.send(answer);
        }
    }

    fn calls(&self) -> MutexGuard<'_, Calls> {
        self.calls.lock().expect("session calls lock")
    }
}

/// What a call on a stream whose request half closed unexpectedly returns.
fn closed() -> (Error, Retry) {
    let message = "the session stream closed".to_owned();
    (
        Error::Unavailable { message },
        Retry::Failover { leader_addr: None },
    )
}

/// The renewal-metrics label of a transient failure.
pub(crate) fn failure_reason(error: &Error, leader_addr: Option<&str>) -> &'static str {
    match (error, leader_addr) {
        (Error::Timeout { .. }, _) => "timeout",
        (_, Some(_)) => "not_leader",
        _ => "unavailable",
    }
}

/// A call in flight; if its caller leaves before the answer, it stops
/// waiting, and an acquire closes the stream so the server drops it.
struct Waiting<'a> {
    stream: &'a SessionStream,
    seq: u64,
    closes_if_left: bool,
    done: bool,
}

impl Drop for Waiting<'_> {
    fn drop(&mut self) {
        if self.done {
            return;
        }
        let left = self.stream.calls().waiting.remove(&self.seq).is_some();
        if left && self.closes_if_left {
            tracing::debug!(url = %self.stream.url, "an acquire was abandoned; closing its session stream");
            self.stream.close();
        }
    }
}

/// The reader: hands answers to calls until the stream ends or breaks.
async fn read(stream: Arc<SessionStream>, mut responses: Streaming<SessionResponse>) {
    loop {
        let next = tokio::select! {
            biased;
            () = stream.ended() => return,
            next = responses.message() => next,
        };
        match next {
            Ok(Some(response)) => stream.answer(response),
            Ok(None) => {
                let message = format!("the server ended the session stream ({})", stream.url);
                let error = Error::Unavailable { message };
                stream.fail((error, Retry::Failover { leader_addr: None }));
                return;
            }
            Err(status) => {
                stream.fail(Error::from_status(&status));
                return;
            }
        }
    }
}

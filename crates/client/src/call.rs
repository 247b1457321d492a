//! One call with the client's retry rules: each attempt is bounded by the
//! call timeout; a transient failure (unreachable endpoint, no leader, no
//! answer, a broken session stream) moves to another endpoint and retries
//! after a jittered backoff — at once when a follower named the leader —
//! until the retry budget (or the retry count, if capped) is spent; a
//! definite error returns at once. The
//! caller builds the same request for every attempt (same request id), so
//! a retry after a lost reply is answered with the first outcome.
//!
//! Two entry points share the loop: [`Client::call`] for unary-only RPCs,
//! and [`Client::send`] for the operations a lease's session stream
//! carries, whose every attempt takes the stream while it is open and the
//! unary RPC otherwise (see `session`).

use crate::endpoints::Channel;
use crate::endpoints::{Endpoints, InUse, Moved};
use crate::error::{Error, Retry};
use crate::from_status::NOT_LEASEHOLD;
use crate::session::{SessionOp, SessionSlot, Via};
use crate::Client;
use std::future::Future;
use std::time::Duration;
use tokio::time::Instant;

/// Where one attempt went, and how to move off it when it fails.
trait Route {
    /// The endpoint's URL, for messages.
    fn url(&self) -> &str;

    /// The attempt failed transiently: moves the client off the endpoint
    /// (once per failure, however many calls report it). True to retry at
    /// once (the client moved to a leader a follower named).
    fn failed(&self, endpoints: &Endpoints, error: &Error, leader_addr: Option<&str>) -> bool;
}

impl Route for InUse {
    fn url(&self) -> &str {
        &self.url
    }

    fn failed(&self, endpoints: &Endpoints, _error: &Error, leader_addr: Option<&str>) -> bool {
        endpoints.fail_over(self.generation, leader_addr) == Moved::ToLeader
    }
}

impl Route for Via {
    fn url(&self) -> &str {
        match self {
            Via::Unary(in_use) => &in_use.url,
            Via::Session(stream) => stream.url(),
        }
    }

    fn failed(&self, endpoints: &Endpoints, error: &Error, leader_addr: Option<&str>) -> bool {
        match self {
            Via::Unary(in_use) => in_use.failed(endpoints, error, leader_addr),
            Via::Session(stream) => {
                let leader_addr = leader_addr.map(str::to_owned);
                stream.fail((error.clone(), Retry::Failover { leader_addr }))
            }
        }
    }
}

/// A definite failure as the caller sees it: an endpoint that is not a
/// Leasehold server is named ("not a Leasehold server at URL (…)"), since
/// the fix is to the endpoint list.
fn definite(error: Error, url: &str) -> Error {
    match error {
        Error::Unavailable { message } if message.starts_with(NOT_LEASEHOLD) => {
            let why = &message[NOT_LEASEHOLD.len()..];
            Error::Unavailable {
                message: format!("{NOT_LEASEHOLD} at {url}{why}; check --endpoints"),
            }
        }
        other => other,
    }
}

/// Whether a failed attempt may still have taken effect: every transient
/// failure but a follower's "not the leader" (which proposed nothing). An
/// attempt that timed out, whose session stream broke under it, or whose
/// leader lost its quorum mid-write may have been applied all the same
/// (the chaos harness caught a queued acquire granted after its stream to
/// a paused leader broke, while the retry was told "lease expired").
fn may_have_taken_effect(error: &Error) -> bool {
    !matches!(error, Error::NotLeader { .. })
}

/// A refusal that depends on the state (the lease, the holder, the
/// token), returned by a retry after an attempt that got no answer: that
/// attempt may have taken effect (and changed the state the retry was
/// refused on), and the server's memory of the request id that would have
/// replayed its outcome goes with the lease. So the call's outcome is
/// unknown, and the caller is told so rather than given a "no" that may be
/// false (a fenced put refused as "not holder" that was in fact written).
fn after_unanswered(what: &str, refused: Error, unanswered: Option<&Error>) -> Error {
    let state_dependent = matches!(
        refused,
        Error::LeaseNotFound { .. }
            | Error::LeaseExpired { .. }
            | Error::NotHolder { .. }
            | Error::NoSuchLock { .. }
            | Error::StaleToken { .. }
            | Error::Busy { .. }
            | Error::AlreadyHeld { .. }
    );
    match unanswered {
        Some(first) if state_dependent => Error::Unavailable {
            message: format!(
                "{what}: an earlier attempt got no answer ({first}) and may have taken effect; \
                 the retry was then refused ({refused}); check the lock or key before repeating it"
            ),
        },
        _ => refused,
    }
}

impl Client {
    /// Runs the unary `attempt` until it succeeds, fails definitely, or the
    /// budget is spent. `extra` lengthens each attempt's bound (a blocking
    /// acquire's wait).
    pub(crate) async fn call<T, F, Fut>(
        &self,
        what: &'static str,
        extra: Duration,
        mut attempt: F,
    ) -> Result<T, Error>
    where
        F: FnMut(Channel) -> Fut,
        Fut: Future<Output = Result<tonic::Response<T>, tonic::Status>>,
    {
        let pick = || self.endpoints().in_use();
        let unary = |in_use: &InUse| {
            let reply = attempt(in_use.channel.clone());
            async move {
                match reply.await {
                    Ok(reply) => Ok(reply.into_inner()),
                    Err(status) => Err(Error::from_status(&status)),
                }
            }
        };
        self.retrying(what, extra, pick, unary).await
    }

    /// Sends the request `request()` builds (each attempt's copy) over
    /// `session`'s stream while it is open, else as a unary RPC (always, with
    /// no session), with the retry rules of [`Client::call`].
    pub(crate) async fn send<R, F>(
        &self,
        session: Option<&SessionSlot>,
        extra: Duration,
        mut request: F,
    ) -> Result<R::Reply, Error>
    where
        R: SessionOp,
        F: FnMut() -> R,
    {
        let pick = || Via::pick(self, session);
        let attempt = |via: &Via| {
            crate::metrics::attempt(R::WHAT, via.name());
            request().send(via.clone())
        };
        self.retrying(R::WHAT, extra, pick, attempt).await
    }

    /// The retry loop: `pick` chooses each attempt's route, `attempt` makes it.
    async fn retrying<R, T, Fut>(
        &self,
        what: &'static str,
        extra: Duration,
        mut pick: impl FnMut() -> R,
        mut attempt: impl FnMut(&R) -> Fut,
    ) -> Result<T, Error>
    where
        R: Route,
        Fut: Future<Output = Result<T, (Error, Retry)>>,
    {
        let options = self.options();
        let give_up_at = Instant::now() + options.retry_budget + extra;
        let bound = options.call_timeout + extra;
        let mut backoff = self.backoff();
        let mut retries = 0u32;
        // An attempt that got no answer may still take effect.
        let mut unanswered: Option<Error> = None;
        loop {
            let route = pick();
            let (error, at_once) = {
                let trying = attempt(&route);
                tokio::pin!(trying);
                let (error, leader_addr) = tokio::select! {
                    biased;
                    outcome = &mut trying => match outcome {
                        Ok(reply) => {
                            crate::answered::note(route.url());
                            return Ok(reply);
                        }
                        Err((error, Retry::No)) => {
                            crate::answered::note(route.url());
                            let error = after_unanswered(what, error, unanswered.as_ref());
                            return Err(definite(error, route.url()));
                        }
                        Err((error, Retry::Failover { leader_addr })) => (error, leader_addr),
                    },
                    () = tokio::time::sleep(bound) => (Error::Timeout { what, after: bound }, None),
                };
                tracing::debug!(%error, url = %route.url(), what, "call failed; failing over");
                if may_have_taken_effect(&error) {
                    unanswered = Some(error.clone());
                }
                // Before the attempt is dropped (at the end of this block): a
                // session call dropped first would close its stream as
                // abandoned, not as failed.
                let at_once = route.failed(self.endpoints(), &error, leader_addr.as_deref());
                (error, at_once)
            };
            let delay = if at_once {
                Duration::ZERO
            } else {
                backoff.next_delay()
            };
            let spent = options.retries_max.is_some_and(|max| retries >= max);
            if spent || Instant::now() + delay >= give_up_at {
                // Out of budget, a follower's NotLeader means no leader
                // could be reached: the service is unavailable to us.
                return Err(match error {
                    Error::Unavailable { message } | Error::NotLeader { message, .. } => {
                        Error::Unavailable {
                            message: format!("{what}: {message} (last tried {})", route.url()),
                        }
                    }
                    other => other,
                });
            }
            tokio::time::sleep(delay).await;
            retries += 1;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn not_holder() -> Error {
        Error::NotHolder {
            name: "jobs/a".into(),
            holder_token: Some(leasehold_core::Token(9)),
            lease: None,
            token: Some(leasehold_core::Token(7)),
        }
    }

    #[test]
    fn a_refusal_after_an_unanswered_attempt_is_an_unknown_outcome() {
        let timeout = Error::Timeout {
            what: "FencedPut",
            after: Duration::from_secs(2),
        };
        let said = after_unanswered("FencedPut", not_holder(), Some(&timeout));
        let Error::Unavailable { message } = said else {
            panic!("an unknown outcome is Unavailable: {said:?}");
        };
        assert!(message.contains("may have taken effect"), "{message}");
        assert!(message.contains("not held with token 7"), "{message}");
        // Without an unanswered attempt, or for a refusal the state does
        // not decide, the server's answer stands.
        assert_eq!(
            after_unanswered("FencedPut", not_holder(), None),
            not_holder()
        );
        let invalid = Error::InvalidArgument {
            field: "key".into(),
            reason: "is empty".into(),
        };
        assert_eq!(
            after_unanswered("FencedPut", invalid.clone(), Some(&timeout)),
            invalid
        );
    }

    #[test]
    fn only_a_followers_not_leader_proposed_nothing() {
        let broken = Error::Unavailable {
            message: "the session stream to http://127.0.0.1:1 closed".into(),
        };
        assert!(may_have_taken_effect(&broken));
        let timeout = Error::Timeout {
            what: "Acquire",
            after: Duration::from_secs(2),
        };
        assert!(may_have_taken_effect(&timeout));
        let follower = Error::NotLeader {
            leader: Some(2),
            leader_addr: None,
            message: "this node is not the leader".into(),
        };
        assert!(!may_have_taken_effect(&follower));
    }
}

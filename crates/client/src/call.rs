//! One unary call with the client's retry rules: each attempt is bounded by
//! the call timeout; a transient failure (unreachable endpoint, no leader,
//! no answer) moves to another endpoint and retries after a jittered
//! backoff, until the retry budget (or the retry count, if capped) is
//! spent; a definite error returns at once. The caller builds the same request for every attempt (same request
//! id), so a retry after a lost reply is answered with the first outcome.

use crate::endpoints::Moved;
use crate::error::{Error, Retry};
use crate::Client;
use std::future::Future;
use std::time::Duration;
use tokio::time::Instant;
use tonic::transport::Channel;

impl Client {
    /// Runs `attempt` until it succeeds, fails definitely, or the budget is
    /// spent. `extra` lengthens each attempt's bound (a blocking acquire's wait).
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
        let options = self.options();
        let give_up_at = Instant::now() + options.retry_budget + extra;
        let bound = options.call_timeout + extra;
        let mut backoff = self.backoff();
        let mut retries = 0u32;
        loop {
            let in_use = self.endpoints().in_use();
            let (error, leader_addr) =
                match tokio::time::timeout(bound, attempt(in_use.channel)).await {
                    Ok(Ok(reply)) => return Ok(reply.into_inner()),
                    Ok(Err(status)) => match Error::from_status(&status) {
                        (error, Retry::No) => return Err(error),
                        (error, Retry::Failover { leader_addr }) => (error, leader_addr),
                    },
                    Err(_) => (Error::Timeout { what, after: bound }, None),
                };
            tracing::debug!(%error, url = %in_use.url, what, "call failed; failing over");
            let moved = self
                .endpoints()
                .fail_over(in_use.generation, leader_addr.as_deref());
            let delay = if moved == Moved::ToLeader {
                Duration::ZERO
            } else {
                backoff.next_delay()
            };
            let spent = options.retries_max.is_some_and(|max| retries >= max);
            if spent || Instant::now() + delay >= give_up_at {
                return Err(match error {
                    Error::Unavailable { message } => Error::Unavailable {
                        message: format!("{what}: {message} (last tried {})", in_use.url),
                    },
                    other => other,
                });
            }
            tokio::time::sleep(delay).await;
            retries += 1;
        }
    }
}

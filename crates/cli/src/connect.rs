//! Endpoint handling: `--endpoints` is a comma-separated list tried in order.
//! A connection failure moves on to the next endpoint; a `NotLeader` answer
//! that names the leader's address moves there. Every call is bounded by
//! `--timeout` (plus, for a blocking acquire, its wait), and a call answered
//! `Unavailable` is retried once with the same request (and so the same
//! request id: mutations are idempotent, docs/DESIGN.md §2.8).

use crate::error::{self, CliError};
use crate::exit::Exit;
use std::future::Future;
use std::time::Duration;
use tonic::transport::{Channel, Endpoint};

/// A connection to one reachable endpoint of the cluster.
pub struct Conn {
    /// Every endpoint the user gave, in order.
    urls: Vec<String>,
    /// Index in `urls` of the endpoint `channel` talks to (or `usize::MAX`
    /// once a leader address outside the list is in use).
    current: usize,
    /// The endpoint currently in use, for messages.
    url: String,
    /// The open channel.
    channel: Channel,
    /// Bound on each call (`--timeout`).
    timeout: Duration,
}

impl Conn {
    /// Connects to the first reachable endpoint of `endpoints` (comma-separated).
    pub async fn open(endpoints: &str, timeout: Duration) -> Result<Conn, CliError> {
        let urls: Vec<String> = endpoints
            .split(',')
            .map(str::trim)
            .filter(|u| !u.is_empty())
            .map(normalize)
            .collect();
        if urls.is_empty() {
            return Err(CliError::usage(
                "--endpoints is empty: pass e.g. --endpoints http://127.0.0.1:7420",
            ));
        }
        let (current, channel) = connect_first(&urls, 0, timeout).await?;
        Ok(Conn {
            url: urls[current].clone(),
            urls,
            current,
            channel,
            timeout,
        })
    }

    /// The `--timeout` bound on each call.
    pub fn timeout(&self) -> Duration {
        self.timeout
    }

    /// Runs one call, bounded by `--timeout` + `extra`. On `Unavailable`
    /// (transport failure or the server's reason) it reconnects, to the next
    /// endpoint if the current one is gone, and retries once; on `NotLeader`
    /// with a leader address it moves to the leader and retries once.
    /// `call` must build the same request both times (same request id).
    pub async fn call<T, F, Fut>(&mut self, extra: Duration, mut call: F) -> Result<T, CliError>
    where
        F: FnMut(Channel) -> Fut,
        Fut: Future<Output = Result<tonic::Response<T>, tonic::Status>>,
    {
        let first = self.attempt(extra, &mut call).await;
        let status = match first {
            Ok(reply) => return Ok(reply),
            Err(Attempt::Timeout) => return Err(self.timed_out(extra)),
            Err(Attempt::Status(status)) => status,
        };
        let reason = CliError::reason_of(&status);
        let leader_addr = error::detail(&status)
            .map(|d| d.leader_addr)
            .filter(|a| !a.is_empty());
        match (reason.as_deref(), status.code()) {
            (Some("NotLeader"), _) if leader_addr.is_some() => {
                let url = normalize(&leader_addr.unwrap_or_default());
                let channel = endpoint(&url, self.timeout)?
                    .connect()
                    .await
                    .map_err(|e| unreachable_leader(&url, &e))?;
                self.channel = channel;
                self.url = url;
                self.current = usize::MAX;
            }
            (Some("Unavailable" | "NotLeader"), _) | (None, tonic::Code::Unavailable) => {
                // The server may be restarting, gone, or a node that knows
                // no leader (an election, or it was removed): go on to the
                // next endpoint.
                let start = if reason.as_deref() == Some("NotLeader") {
                    (self.current.min(self.urls.len() - 1) + 1) % self.urls.len()
                } else {
                    self.current.min(self.urls.len() - 1)
                };
                let (current, channel) = connect_first(&self.urls, start, self.timeout).await?;
                self.current = current;
                self.url = self.urls[current].clone();
                self.channel = channel;
            }
            _ => return Err(CliError::from_status(&status)),
        }
        match self.attempt(extra, &mut call).await {
            Ok(reply) => Ok(reply),
            Err(Attempt::Timeout) => Err(self.timed_out(extra)),
            Err(Attempt::Status(status)) => Err(CliError::from_status(&status)),
        }
    }

    async fn attempt<T, F, Fut>(&self, extra: Duration, call: &mut F) -> Result<T, Attempt>
    where
        F: FnMut(Channel) -> Fut,
        Fut: Future<Output = Result<tonic::Response<T>, tonic::Status>>,
    {
        match tokio::time::timeout(self.timeout + extra, call(self.channel.clone())).await {
            Ok(Ok(reply)) => Ok(reply.into_inner()),
            Ok(Err(status)) => Err(Attempt::Status(status)),
            Err(_) => Err(Attempt::Timeout),
        }
    }

    fn timed_out(&self, extra: Duration) -> CliError {
        CliError::new(
            Exit::Unavailable,
            format!(
                "no reply from {} within {} (--timeout {}); the server may be overloaded or without a leader",
                self.url,
                crate::duration::human(crate::duration::ms(self.timeout + extra)),
                crate::duration::human(crate::duration::ms(self.timeout)),
            ),
        )
    }
}

enum Attempt {
    Status(tonic::Status),
    Timeout,
}

/// Accepts `host:port` as shorthand for `http://host:port`.
fn normalize(url: &str) -> String {
    if url.contains("://") {
        url.to_owned()
    } else {
        format!("http://{url}")
    }
}

/// How often a connection with nothing to send pings the server, and how
/// long a ping may go unanswered before the connection counts as dead. A
/// long-lived call (`events --follow`) to a server that vanished without
/// closing the connection (host down, partition, SIGSTOP) then fails within
/// about 10 s instead of waiting for TCP to notice.
const KEEPALIVE_INTERVAL: Duration = Duration::from_secs(5);
const KEEPALIVE_TIMEOUT: Duration = Duration::from_secs(5);

fn endpoint(url: &str, timeout: Duration) -> Result<Endpoint, CliError> {
    Endpoint::from_shared(url.to_owned())
        .map(|e| {
            e.connect_timeout(timeout)
                .tcp_nodelay(true)
                .http2_keep_alive_interval(KEEPALIVE_INTERVAL)
                .keep_alive_timeout(KEEPALIVE_TIMEOUT)
                .keep_alive_while_idle(true)
        })
        .map_err(|e| CliError::usage(format!("--endpoints: {url:?} is not a valid URL: {e}")))
}

/// Connects to the first reachable of `urls`, starting at `start` and
/// wrapping around; the error lists every endpoint tried.
async fn connect_first(
    urls: &[String],
    start: usize,
    timeout: Duration,
) -> Result<(usize, Channel), CliError> {
    let mut failures = Vec::new();
    for offset in 0..urls.len() {
        let i = (start + offset) % urls.len();
        match endpoint(&urls[i], timeout)?.connect().await {
            Ok(channel) => return Ok((i, channel)),
            Err(e) => failures.push(format!("{} ({})", urls[i], root_cause(&e))),
        }
    }
    Err(CliError::new(
        Exit::Unavailable,
        format!(
            "cannot reach a leasehold server: tried {}; start one with `leasehold serve` or pass --endpoints",
            failures.join(", ")
        ),
    ))
}

fn unreachable_leader(url: &str, e: &tonic::transport::Error) -> CliError {
    CliError::new(
        Exit::Unavailable,
        format!(
            "the server is not the leader and the leader at {url} is unreachable ({})",
            root_cause(e)
        ),
    )
}

/// The innermost error's text ("Connection refused (os error 111)").
fn root_cause(e: &(dyn std::error::Error + 'static)) -> String {
    let mut cause: &dyn std::error::Error = e;
    while let Some(next) = cause.source() {
        cause = next;
    }
    cause.to_string()
}

/// A fresh request id (the client library's: one scheme for every caller).
pub use leasehold_client::new_request_id as request_id;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bare_host_port_gets_a_scheme() {
        assert_eq!(normalize("127.0.0.1:7420"), "http://127.0.0.1:7420");
        assert_eq!(normalize("https://h:1"), "https://h:1");
    }
}

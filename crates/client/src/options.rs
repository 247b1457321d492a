//! Client settings, validated once at `Client::connect` so that only
//! consistent settings reach the code that uses them (STYLE.md rule 6).

use crate::backoff::BackoffPolicy;
use crate::clock::{BootClock, Clock};
use crate::error::Error;
use crate::tls::TlsOptions;
use std::sync::Arc;
use std::time::Duration;

/// How a [`Client`](crate::Client) talks to the service.
#[derive(Clone, Debug)]
pub struct ClientOptions {
    /// Bound on each attempt of a call (a blocking acquire adds its wait).
    pub call_timeout: Duration,
    /// Bound on connecting to one endpoint.
    pub connect_timeout: Duration,
    /// How long a call keeps retrying transient failures (unreachable
    /// endpoint, no leader) before it reports `Unavailable`.
    pub retry_budget: Duration,
    /// At most this many retries of one call, within the budget (`None`:
    /// as many as the budget allows). A command-line tool that should fail
    /// fast and let its caller decide sets `Some(1)`: one more try, on the
    /// leader a follower named or on the next endpoint, then the error.
    pub retries_max: Option<u32>,
    /// How often a connection pings the server, even while idle; a ping
    /// unanswered for as long again counts the connection as dead. A
    /// long-lived stream (events, keep-alives) to a server that vanished
    /// without closing the connection (host down, partition, SIGSTOP) then
    /// fails within twice this instead of waiting for TCP. `None`: no pings.
    pub keep_alive_interval: Option<Duration>,
    /// Growth of the delays between retries and reconnects.
    pub backoff: BackoffPolicy,
    /// Seed of the jitter in those delays; `None` seeds from the pid and the
    /// time. Fix it to make a test or simulation repeatable.
    pub seed: Option<u64>,
    /// The clock lease validity is measured on.
    pub clock: Arc<dyn Clock>,
    /// How a lease's acquires, releases and one-off renewals travel.
    pub transport: Transport,
    /// The bearer token (`lh_<id>_<secret>`, from `leasehold token create`)
    /// sent with every call, for servers with auth enabled. `None`:
    /// anonymous (or the client certificate names the caller).
    pub auth_token: Option<String>,
    /// TLS for `https://` endpoints: the CA to trust, and a client
    /// certificate for servers that require one. Checked at connect.
    pub tls: TlsOptions,
}

/// How a lease's acquires, releases and [`keep_alive_once`](crate::Lease::keep_alive_once)
/// travel. Either way the background renewals ride the lease's `Lock.Session`
/// stream, and the answers, retries and errors are the same.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Transport {
    /// On the lease's `Lock.Session` stream, one message each (unary while
    /// the stream is being opened or reopened).
    #[default]
    Session,
    /// One unary RPC each.
    Unary,
}

impl Default for ClientOptions {
    fn default() -> Self {
        ClientOptions {
            call_timeout: Duration::from_secs(5),
            connect_timeout: Duration::from_secs(2),
            retry_budget: Duration::from_secs(10),
            retries_max: None,
            keep_alive_interval: Some(Duration::from_secs(5)),
            backoff: BackoffPolicy::default(),
            seed: None,
            clock: Arc::new(BootClock),
            transport: Transport::default(),
            auth_token: None,
            tls: TlsOptions::default(),
        }
    }
}

impl ClientOptions {
    /// Rejects settings that cannot work together.
    pub fn validate(&self) -> Result<(), Error> {
        let invalid = |field: &str, reason: &str| {
            Err(Error::InvalidArgument {
                field: field.to_owned(),
                reason: reason.to_owned(),
            })
        };
        if self.call_timeout.is_zero() {
            return invalid("call_timeout", "must be positive");
        }
        if self.connect_timeout.is_zero() {
            return invalid("connect_timeout", "must be positive");
        }
        if self.keep_alive_interval.is_some_and(|d| d.is_zero()) {
            return invalid(
                "keep_alive_interval",
                "must be positive (None turns pings off)",
            );
        }
        if self.backoff.initial.is_zero() || self.backoff.initial > self.backoff.max {
            return invalid("backoff", "initial must be positive and at most max");
        }
        Ok(())
    }

    /// The jitter seed to use.
    pub(crate) fn seed_or_random(&self) -> u64 {
        self.seed.unwrap_or_else(|| {
            let nanos = std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map_or(0, |d| d.as_nanos() as u64);
            nanos ^ (u64::from(std::process::id()) << 32)
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn defaults_are_valid_and_inconsistent_settings_are_named() {
        assert!(ClientOptions::default().validate().is_ok());
        let mut options = ClientOptions::default();
        options.backoff.initial = Duration::from_secs(10);
        assert!(matches!(
            options.validate(),
            Err(Error::InvalidArgument { field, .. }) if field == "backoff"
        ));
        let options = ClientOptions {
            call_timeout: Duration::ZERO,
            ..Default::default()
        };
        assert!(options.validate().is_err());
    }
}

//! [`Client`]: the connection to a Leasehold service — endpoints with
//! failover, the retry rules, the clock and the jitter source — shared by
//! every lease made from it. Cheap to clone.

use crate::backoff::{Backoff, Jitter};
use crate::endpoints::{Bearer, Dial, Endpoints};
use crate::error::Error;
use crate::lease::{KeepAliveBuilder, LeaseBuilder};
use crate::options::ClientOptions;
use leasehold_core::LeaseId;
use std::sync::Arc;
use std::time::Duration;

/// A client of one Leasehold cluster.
#[derive(Clone, Debug)]
pub struct Client {
    inner: Arc<ClientInner>,
}

#[derive(Debug)]
struct ClientInner {
    endpoints: Endpoints,
    options: ClientOptions,
    jitter: Jitter,
}

impl Client {
    /// Connects with default options to the first reachable of `endpoints`
    /// (`http://host:port` or `host:port`; `https://host:port` needs
    /// [`ClientOptions::tls`]); the others are failover targets.
    pub async fn connect<I, S>(endpoints: I) -> Result<Client, Error>
    where
        I: IntoIterator<Item = S>,
        S: AsRef<str>,
    {
        Client::connect_with(endpoints, ClientOptions::default()).await
    }

    /// Connects with `options` (validated first).
    pub async fn connect_with<I, S>(endpoints: I, options: ClientOptions) -> Result<Client, Error>
    where
        I: IntoIterator<Item = S>,
        S: AsRef<str>,
    {
        options.validate()?;
        let dial = Dial {
            connect_timeout: options.connect_timeout,
            keep_alive_interval: options.keep_alive_interval,
            tls: options.tls.configs()?,
        };
        let bearer = Bearer::new(options.auth_token.as_deref())?;
        let endpoints = Endpoints::connect(endpoints, dial)
            .await?
            .with_bearer(bearer);
        let jitter = Jitter::seeded(options.seed_or_random());
        Ok(Client {
            inner: Arc::new(ClientInner {
                endpoints,
                options,
                jitter,
            }),
        })
    }

    /// Starts setting up a lease with time to live `ttl`; finish with
    /// `.grant().await`.
    pub fn lease(&self, ttl: Duration) -> LeaseBuilder {
        LeaseBuilder::new(self.clone(), ttl)
    }

    /// Starts renewing lease `lease`, granted elsewhere (by a script, or
    /// another process), with the same keeper as a granted lease; finish
    /// with `.start().await`. Dropping the handle stops renewing without
    /// revoking the lease.
    pub fn keep_alive(&self, lease: LeaseId) -> KeepAliveBuilder {
        KeepAliveBuilder::new(self.clone(), lease)
    }

    /// The URL of the endpoint in use.
    pub fn endpoint(&self) -> String {
        self.inner.endpoints.in_use().url
    }

    pub(crate) fn endpoints(&self) -> &Endpoints {
        &self.inner.endpoints
    }

    pub(crate) fn options(&self) -> &ClientOptions {
        &self.inner.options
    }

    /// A fresh retry sequence drawing from the client's jitter source.
    pub(crate) fn backoff(&self) -> Backoff {
        Backoff::new(self.inner.options.backoff, self.inner.jitter.clone())
    }
}

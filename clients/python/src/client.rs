//! `_native.Client`: one connection to a Leasehold cluster (endpoints with
//! failover, retries, TLS and token), shared by every lease made from it.

use crate::call::{deliver, plain, spawn, Call};
use crate::convert::{optional_seconds, seconds};
use crate::lease::Lease;
use leasehold_client::{ClientOptions, Consistency, Error, LockName, TlsOptions};
use pyo3::prelude::*;
use std::path::PathBuf;

/// A connected client.
#[pyclass(frozen, module = "leasehold._native")]
pub struct Client {
    client: leasehold_client::Client,
}

/// How to reach the cluster, as the Python `Client(...)` takes it.
#[derive(FromPyObject)]
#[pyo3(from_item_all)]
pub struct Connect {
    endpoints: Vec<String>,
    cacert: Option<PathBuf>,
    cert: Option<PathBuf>,
    key: Option<PathBuf>,
    auth_token: Option<String>,
    call_timeout: Option<f64>,
    connect_timeout: Option<f64>,
    retry_budget: Option<f64>,
}

impl Connect {
    fn options(&self) -> PyResult<Result<ClientOptions, Error>> {
        let mut options = ClientOptions::default();
        if let Some(timeout) = optional_seconds("call_timeout", self.call_timeout)? {
            options.call_timeout = timeout;
        }
        if let Some(timeout) = optional_seconds("connect_timeout", self.connect_timeout)? {
            options.connect_timeout = timeout;
        }
        if let Some(budget) = optional_seconds("retry_budget", self.retry_budget)? {
            options.retry_budget = budget;
        }
        options.auth_token = self.auth_token.clone();
        let tls = TlsOptions::from_files(
            self.cacert.as_deref(),
            self.cert.as_deref(),
            self.key.as_deref(),
        );
        Ok(tls.map(|tls| {
            options.tls = tls;
            options
        }))
    }
}

#[pymethods]
impl Client {
    /// Connects to the first reachable endpoint; the others are failover
    /// targets. Delivers a `Client`.
    #[staticmethod]
    fn connect(how: Connect) -> PyResult<Call> {
        let options = how.options()?;
        let endpoints = how.endpoints;
        Ok(spawn(async move {
            let connected = match options {
                Ok(options) => leasehold_client::Client::connect_with(endpoints, options).await,
                Err(error) => Err(error),
            };
            deliver(connected, |py, client| plain(py, Client { client }))
        }))
    }

    /// Grants a lease of `ttl` seconds and starts renewing it on the
    /// runtime. Delivers a `Lease`.
    #[pyo3(signature = (ttl, owner=None, labels=Vec::new(), keep_alive_interval=None, margin=None))]
    fn grant(
        &self,
        ttl: f64,
        owner: Option<String>,
        labels: Vec<(String, String)>,
        keep_alive_interval: Option<f64>,
        margin: Option<f64>,
    ) -> PyResult<Call> {
        let mut builder = self.client.lease(seconds("ttl")(ttl)?);
        if let Some(owner) = owner {
            builder = builder.owner(owner);
        }
        for (key, value) in labels {
            builder = builder.label(key, value);
        }
        if let Some(interval) = optional_seconds("keep_alive_interval", keep_alive_interval)? {
            builder = builder.keep_alive_interval(interval);
        }
        if let Some(margin) = optional_seconds("margin", margin)? {
            builder = builder.margin(margin);
        }
        Ok(spawn(async move {
            deliver(builder.grant().await, |py, lease| {
                plain(py, Lease::new(lease))
            })
        }))
    }

    /// The current holder of `name` as `(lease, token)`, or `None` while
    /// nobody holds it. Delivers that.
    fn holder(&self, name: String) -> Call {
        let client = self.client.clone();
        spawn(async move {
            let found = async {
                let name = LockName::parse(&name).map_err(Error::from)?;
                match client.get_lock(&name, Consistency::Linearizable).await {
                    Ok(reply) => Ok(reply
                        .lock
                        .and_then(|lock| lock.holder)
                        .map(|holder| (holder.lease, holder.token))),
                    Err(Error::NoSuchLock { .. }) => Ok(None),
                    Err(error) => Err(error),
                }
            }
            .await;
            deliver(found, plain)
        })
    }

    /// The leader of election `name` as `(lease, token, owner, value)`, or
    /// `None`. Delivers that.
    fn leader(&self, name: String) -> Call {
        crate::election::leader(self.client.clone(), name)
    }

    /// Follows election `name`. Delivers an `Observer`.
    fn observe(&self, name: String) -> Call {
        crate::election::observe(self.client.clone(), name)
    }

    /// The endpoint in use now.
    fn endpoint(&self) -> String {
        self.client.endpoint()
    }
}

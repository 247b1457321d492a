//! # leasehold-server
//!
//! The Leasehold server. A single node is a one-member Raft cluster on the
//! same code path a cluster uses.

pub mod api;
pub mod clock;
mod config;
mod connections;
mod http;
mod hub;
mod metrics;
pub mod proposer;
pub mod raft;
mod serve;
pub mod storage;
pub mod timers;
pub mod waiters;

pub use config::ServeConfig;

use std::future::Future;

/// Why the server could not start or stopped with an error.
#[derive(Debug, thiserror::Error)]
pub enum ServeError {
    /// The configuration is inconsistent.
    #[error("invalid configuration: {0}")]
    Config(String),
    /// The listen address could not be bound.
    #[error("cannot listen on {addr}: {source}; is another server using this port? pass --listen HOST:PORT")]
    Bind {
        addr: std::net::SocketAddr,
        source: std::io::Error,
    },
    /// Storage could not be opened or failed.
    #[error("storage: {0}")]
    Storage(String),
    /// Raft failed fatally.
    #[error("raft: {0}")]
    Raft(String),
    /// Serving failed.
    #[error("transport: {0}")]
    Transport(String),
}

/// Runs one node until `shutdown` resolves: opens storage, starts Raft
/// (initializing a one-member cluster on first start), and serves gRPC and
/// HTTP on `config.listen`. Prints nothing; logs through `tracing`.
pub async fn serve(
    config: ServeConfig,
    shutdown: impl Future<Output = ()> + Send + 'static,
) -> Result<(), ServeError> {
    config.validate()?;
    let listener = tokio::net::TcpListener::bind(config.listen)
        .await
        .map_err(|source| ServeError::Bind {
            addr: config.listen,
            source,
        })?;
    tracing::info!(addr = %config.listen, data_dir = %config.data_dir.display(), "serving");
    serve::serve_on(config, listener, shutdown).await
}

pub use serve::serve_on;

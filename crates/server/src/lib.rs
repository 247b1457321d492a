//! # leasehold-server
//!
//! The Leasehold server. A single node is a one-member Raft cluster on the
//! same code path a cluster uses.
//!
//! How a write travels: a gRPC handler in [`api`] (one file per operation)
//! validates the request and turns it into a typed proposal of a core
//! command; the [`proposer`] batches every command that arrives while the
//! previous log write is in flight into one entry (group commit) and hands
//! it to openraft ([`raft`]); [`storage`] appends the entry to a write-ahead
//! log and fsyncs it, then applies it to the pure state machine of
//! `leasehold-core`; the apply [`hub`] routes each command's effects to the
//! [`sinks`] that act on them: blocked acquires ([`waiters`]), metrics and
//! logs, the event log, hold statistics, and the leader's [`timers`] (lease
//! expiry, lock delay, max-hold, the wait of a queued acquire: the core's
//! lessor), which propose their own commands through the same log. Only the
//! timers and the waits read a clock ([`clock`]).
//!
//! ```
//! # #[tokio::main(flavor = "current_thread")]
//! # async fn main() -> Result<(), Box<dyn std::error::Error>> {
//! use leasehold_server::{serve_on, ServeConfig};
//!
//! let data = tempfile::tempdir()?;
//! let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
//! let config = ServeConfig::single_node(data.path().to_path_buf(), listener.local_addr()?);
//! // Serve until the shutdown future resolves (here: at once).
//! serve_on(config, listener, async {}).await?;
//! # Ok(())
//! # }
//! ```

pub mod api;
pub mod auth;
pub mod backup;
pub mod clock;
mod config;
pub mod connections;
pub mod ended_holds;
pub mod events;
mod health;
pub mod held;
pub mod hold_stats;
mod http;
pub mod hub;
pub mod identity;
pub mod leaders;
pub mod log_lines;
mod metrics;
pub mod open_files;
mod page;
pub mod proposer;
pub mod raft;
mod reflection;
pub mod restore;
pub mod samples;
mod serve;
pub mod sinks;
pub mod storage;
#[cfg(test)]
mod test_commands;
pub mod timers;
pub mod tls;
pub mod waiters;

pub use config::ServeConfig;

use std::future::Future;

/// Why the server could not start or stopped with an error.
#[derive(Debug, thiserror::Error)]
pub enum ServeError {
    /// The configuration is inconsistent.
    #[error("invalid configuration: {0}")]
    Config(String),
    /// Starting as configured would be unsafe: a member that lost its data
    /// would form the cluster again, or the peers belong to another cluster.
    /// The text says what happened and what to do.
    #[error("{0}")]
    Formation(String),
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

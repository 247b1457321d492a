//! The client commands, one file per command group. Each exposes an
//! `Args` struct (clap derive) and `run(args, global)`; `main.rs` only
//! parses and dispatches.

pub mod acquire;
pub mod diagnose;
pub mod events;
pub mod fenced;
pub mod force_release;
pub mod get;
pub mod lease;
pub mod lock;
pub mod ls;
pub mod member;
pub mod release;
pub mod serve;
pub mod status;

use crate::connect::Conn;
use crate::error::CliError;
use std::time::Duration;

/// Options every client command takes.
#[derive(clap::Args, Debug, Clone)]
pub struct Global {
    /// Server endpoints, comma-separated, tried in order on connection failure.
    #[arg(
        long,
        global = true,
        env = "LEASEHOLD_ENDPOINTS",
        default_value = "http://127.0.0.1:7420",
        value_name = "URLS"
    )]
    pub endpoints: String,
    /// Bound on each call to the server (500ms, 2s, 1m, ...).
    #[arg(long, global = true, default_value = "5s", value_parser = crate::duration::parse, value_name = "DURATION")]
    pub timeout: Duration,
}

impl Global {
    /// Connects to the first reachable endpoint.
    pub async fn connect(&self) -> Result<Conn, CliError> {
        Conn::open(&self.endpoints, self.timeout).await
    }
}

/// The revision in a reply header (0 if the header is missing).
pub fn revision(header: Option<&leasehold_proto::v1::ResponseHeader>) -> u64 {
    header.map(|h| h.revision).unwrap_or(0)
}

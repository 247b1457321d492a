//! The gRPC services of `leasehold.v1`: one file per operation, and the
//! service impls (`services.rs`) that dispatch to them. Each operation
//! validates its request at the boundary (every limit named in its error),
//! builds its typed [`propose::Proposal`], proposes it, and maps its own
//! reply type to the wire.

mod acquire;
mod acquire_all;
pub(crate) mod auth;
pub(crate) mod cluster;
pub(crate) mod convert;
mod error;
pub(crate) mod events;
mod fenced_get;
mod fenced_put;
mod force_release;
mod get_lease;
mod get_lock;
mod grant;
pub(crate) mod incidents;
mod keep_alive;
mod keepalive_stream;
pub(crate) mod list;
mod list_leases;
mod observe;
mod proclaim;
pub mod propose;
mod read;
mod release;
mod revoke;
mod services;
mod session;
mod stream;
mod wait;
pub mod wait_cancels;

pub use auth::AuthApi;
pub use cluster::ClusterApi;
pub use error::ApiError;
pub use services::{FencedApi, LeaseApi, LockApi, WatchApi};

use crate::clock::wall_unix_ms;
use crate::identity::Identity;
use crate::proposer::Proposer;
use crate::raft::quorum::QuorumMonitor;
use crate::raft::types::Raft;
use crate::sinks::Sinks;
use crate::storage::{DiskHealth, SharedState};
use leasehold_core::{limits, LockError, Revision};
use leasehold_proto::v1::ResponseHeader;
use std::sync::Arc;

/// Everything a handler needs; shared by all services.
pub struct Node {
    /// This node's Raft id.
    pub node_id: u64,
    /// The Raft handle (reads, status).
    pub raft: Raft,
    /// Group-committing proposer: handlers write through [`Node::propose`],
    /// which types each command's reply.
    pub(crate) proposer: Proposer,
    /// Where a queued wait whose caller went away sends its cancel.
    pub(crate) wait_cancels: wait_cancels::WaitCancels,
    /// Whether this node has its quorum, and who it last heard from when.
    pub quorum: Arc<QuorumMonitor>,
    /// Whether this node's disk takes writes (a failed fsync, a full disk).
    pub disk: Arc<DiskHealth>,
    /// The applied state, for reads.
    pub state: SharedState,
    /// What applied effects feed: blocked acquires, deadlines (remaining
    /// times in replies), holders' hold times, events, hold statistics by
    /// prefix, ended holds.
    pub sinks: Sinks,
    /// The cluster this node belongs to (status, and probing new members).
    pub identity: Arc<Identity>,
    /// The Raft protocol this node speaks and what it heard its peers speak.
    pub protocols: Arc<crate::raft::protocol::Protocols>,
    /// Refused requests on their way to the audit trail, rate-bounded.
    pub refusals: Arc<crate::auth::Refusals>,
    /// How this node calls other nodes (probing new members): plaintext or TLS.
    pub dialer: crate::tls::PeerDialer,
    /// How the port is protected (status and the live page show it).
    pub transport_security: crate::tls::TransportSecurity,
    /// The last log id this node's log held when it started: a leader
    /// restarted in the same term serves reads only once it has applied
    /// up to here (see `read.rs`).
    pub restart_floor: Option<crate::raft::types::LogId>,
}

impl Node {
    /// A reply header at `revision`.
    pub fn header(&self, revision: Revision) -> Option<ResponseHeader> {
        Some(ResponseHeader {
            revision: revision.0,
            server_time_unix_ms: wall_unix_ms() as i64,
            node_id: self.node_id,
            removed: crate::raft::membership::removed(&self.raft.metrics().borrow()),
        })
    }
}

/// Rejects a request larger than [`limits::REQUEST_BYTES_MAX`].
pub fn check_request_size(message: &impl prost::Message) -> Result<(), ApiError> {
    let size = message.encoded_len();
    if size > limits::REQUEST_BYTES_MAX {
        return Err(ApiError::Core(LockError::over_limit(
            "request",
            limits::Limit::RequestBytesMax,
            format!(
                "is {size} bytes; the limit REQUEST_BYTES_MAX is {}",
                limits::REQUEST_BYTES_MAX
            ),
        )));
    }
    Ok(())
}

/// Rejects lease id 0 (never a valid lease).
pub fn check_lease_id(lease: u64) -> Result<leasehold_core::LeaseId, ApiError> {
    if lease == 0 {
        return Err(ApiError::invalid("lease", "must be a lease id (not 0)"));
    }
    Ok(leasehold_core::LeaseId(lease))
}

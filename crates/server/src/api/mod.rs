//! The gRPC services of `leasehold.v1`. Each handler validates its request at
//! the boundary (every limit named in its error), turns it into a core
//! [`leasehold_core::Command`], proposes it, and maps the outcome.

mod acquire;
mod cluster;
pub(crate) mod convert;
mod error;
mod events;
mod fenced;
mod force;
mod incidents;
mod keepalive_stream;
mod lease;
mod lock;
mod session;
mod stream;
mod wait;

pub use cluster::ClusterApi;
pub use error::ApiError;
pub use events::WatchApi;
pub use fenced::FencedApi;
pub use lease::LeaseApi;
pub use lock::LockApi;

use crate::clock::wall_unix_ms;
use crate::hub::ApplyHub;
use crate::identity::Identity;
use crate::proposer::Proposer;
use crate::raft::types::Raft;
use crate::storage::SharedState;
use crate::timers::Timers;
use crate::waiters::Waiters;
use leasehold_core::{limits, Applied, Command, Outcome, Revision};
use leasehold_proto::v1::ResponseHeader;
use std::sync::Arc;

/// Everything a handler needs; shared by all services.
pub struct Node {
    /// This node's Raft id.
    pub node_id: u64,
    /// The Raft handle (reads, status).
    pub raft: Raft,
    /// Group-committing proposer (writes).
    pub proposer: Proposer,
    /// The applied state, for reads.
    pub state: SharedState,
    /// Blocked acquires.
    pub waiters: Arc<Waiters>,
    /// Lease deadlines (for remaining time in replies).
    pub timers: Arc<Timers>,
    /// Applied effects: recent events and their followers, hold times by
    /// prefix, how long each holder has held its lock.
    pub hub: Arc<ApplyHub>,
    /// The cluster this node belongs to (status, and probing new members).
    pub identity: Arc<Identity>,
}

impl Node {
    /// A reply header at `revision`.
    pub fn header(&self, revision: Revision) -> Option<ResponseHeader> {
        Some(ResponseHeader {
            revision: revision.0,
            server_time_unix_ms: wall_unix_ms() as i64,
            node_id: self.node_id,
        })
    }

    /// Proposes `command` and returns its outcome with the revision after it.
    pub async fn propose(&self, command: Command) -> Result<(Outcome, Revision), ApiError> {
        let Applied {
            revision, outcome, ..
        } = self.proposer.propose(command).await?;
        Ok((outcome, revision))
    }

    /// Waits until this node has applied everything committed before now
    /// and is still the leader (a linearizable read).
    pub async fn read_barrier(&self) -> Result<(), ApiError> {
        self.raft
            .ensure_linearizable()
            .await
            .map_err(|error| match error.forward_to_leader() {
                Some(forward) => crate::proposer::ProposeError::from(forward.clone()).into(),
                None => ApiError::Unavailable(error.to_string()),
            })?;
        Ok(())
    }
}

/// Rejects a request larger than [`limits::REQUEST_BYTES_MAX`].
pub fn check_request_size(message: &impl prost::Message) -> Result<(), ApiError> {
    let size = message.encoded_len();
    if size > limits::REQUEST_BYTES_MAX {
        return Err(ApiError::invalid(
            "request",
            format!(
                "is {size} bytes; the limit REQUEST_BYTES_MAX is {}",
                limits::REQUEST_BYTES_MAX
            ),
        ));
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

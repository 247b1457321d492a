//! The openraft type configuration: what a log entry carries and what
//! applying it returns.
//!
//! One log entry carries a *batch* of commands (group commit): openraft 0.9
//! flushes one append at a time, so the proposer coalesces every command that
//! arrives while a write is in flight into one entry.

use leasehold_core::{Applied, Command};
use serde::{Deserialize, Serialize};
use std::io::Cursor;

/// The payload of one log entry.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Batch {
    /// The proposer's wall time, Unix ms: display only, never lease arithmetic.
    pub at_unix_ms: u64,
    /// Commands applied in order.
    pub commands: Vec<Command>,
}

/// What applying one entry produced: one [`Applied`] per command, in order.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct BatchOutcome {
    pub applied: Vec<Applied>,
}

openraft::declare_raft_types!(
    /// Leasehold's Raft types: u64 node ids, `BasicNode` addresses, in-memory
    /// snapshot buffers, tokio runtime.
    pub TypeConfig:
        D = Batch,
        R = BatchOutcome,
        NodeId = u64,
        Node = openraft::BasicNode,
        Entry = openraft::Entry<TypeConfig>,
        SnapshotData = Cursor<Vec<u8>>,
        AsyncRuntime = openraft::TokioRuntime,
);

/// The openraft handle for this configuration.
pub type Raft = openraft::Raft<TypeConfig>;
/// A log id.
pub type LogId = openraft::LogId<u64>;

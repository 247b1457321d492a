//! Group commit. openraft 0.9 flushes one log append at a time, so one
//! command per entry caps a node near the disk's fsync rate. The proposer is
//! one task that drains every command queued while the previous write was in
//! flight into one log entry (a [`Batch`]) and routes each command's outcome
//! back to its caller. Keep-alives ride in the same batches, so renewing
//! thousands of leases costs one fsync.
//!
//! On a leader without a quorum nothing can commit, and openraft would hold
//! each proposal until the quorum returns, for as long as that takes. So a
//! batch fails at once with [`ProposeError::NoQuorum`] when the
//! [`QuorumMonitor`] says the quorum is gone, and a batch in flight stops
//! waiting when it goes (its entry may still commit later; request ids make
//! the callers' retries idempotent). A leader that removes itself stops
//! waiting likewise: the remaining members no longer tell it what committed.

use crate::clock::wall_unix_ms;
use crate::raft::commit_thread::CommitThread;
use crate::raft::protocol::{OlderMember, Protocols};
use crate::raft::quorum::{NoQuorum, QuorumMonitor};
use crate::raft::types::{Batch, Raft};
use crate::storage::{DiskFault, DiskHealth};
use crate::timers::Timers;
use leasehold_core::{Applied, Command};
use openraft::error::{ClientWriteError, RaftError};
use std::sync::Arc;
use tokio::sync::{mpsc, oneshot};

/// Commands in one log entry, at most.
pub const BATCH_COMMANDS_MAX: usize = 4_096;
/// Proposals queued before callers wait for room (backpressure).
pub const QUEUE_MAX: usize = 65_536;

/// Why a proposal did not apply.
#[derive(Clone, Debug, thiserror::Error)]
pub enum ProposeError {
    /// This node is not the leader.
    #[error("this node is not the leader (leader: {leader:?})")]
    NotLeader {
        leader: Option<u64>,
        leader_addr: Option<String>,
    },
    /// Raft is shutting down or failed.
    #[error("the replicated log is unavailable: {0}")]
    Unavailable(String),
    /// This node leads without a quorum: nothing can commit now.
    #[error("no quorum: {0}")]
    NoQuorum(NoQuorum),
    /// This node was removed from the cluster.
    #[error("{}", crate::raft::membership::refusal(*.node_id))]
    Removed { node_id: u64 },
    /// This node's disk takes no writes (a failed fsync, a full disk).
    #[error(transparent)]
    Disk(DiskFault),
    /// The command needs a protocol a member does not speak yet (a rolling
    /// upgrade is under way).
    #[error(transparent)]
    OlderMember(OlderMember),
}

struct Proposal {
    command: Command,
    reply: oneshot::Sender<Result<Applied, ProposeError>>,
}

/// Handle to the proposer task; cheap to clone.
#[derive(Clone)]
pub struct Proposer {
    queue: mpsc::Sender<Proposal>,
    /// Refuses a command some member cannot decode yet.
    protocols: Arc<Protocols>,
    /// Whose members `protocols` judges.
    raft: Raft,
}

impl Proposer {
    /// Starts the proposer task for `raft`, failing batches fast while
    /// `quorum` says this node leads without one or `disk` takes no writes.
    /// It stops when every handle is dropped.
    /// Each batch formed is told to `timers` (a wait is counted from then).
    /// It runs on `commit`, beside openraft's tasks it hands batches to.
    /// A command that a member's protocol cannot carry yet is refused
    /// before it is queued (see [`Protocols::admit`]).
    pub fn spawn(
        raft: Raft,
        quorum: Arc<QuorumMonitor>,
        disk: Arc<DiskHealth>,
        timers: Arc<Timers>,
        protocols: Arc<Protocols>,
        commit: &CommitThread,
    ) -> Proposer {
        let (queue, receiver) = mpsc::channel(QUEUE_MAX);
        commit.spawn(run(raft.clone(), quorum, disk, timers, receiver));
        Proposer {
            queue,
            protocols,
            raft,
        }
    }

    /// Proposes `command` and waits until it is committed (fsynced) and applied.
    pub async fn propose(&self, command: Command) -> Result<Applied, ProposeError> {
        self.protocols
            .admit(&self.raft, &command)
            .map_err(ProposeError::OlderMember)?;
        let (reply, outcome) = oneshot::channel();
        self.queue
            .send(Proposal { command, reply })
            .await
            .map_err(|_| ProposeError::Unavailable("the proposer has stopped".into()))?;
        outcome
            .await
            .map_err(|_| ProposeError::Unavailable("the proposer dropped the command".into()))?
    }
}

async fn run(
    raft: Raft,
    quorum: Arc<QuorumMonitor>,
    disk: Arc<DiskHealth>,
    timers: Arc<Timers>,
    mut receiver: mpsc::Receiver<Proposal>,
) {
    let mut proposals = Vec::with_capacity(BATCH_COMMANDS_MAX);
    loop {
        if receiver.recv_many(&mut proposals, BATCH_COMMANDS_MAX).await == 0 {
            return;
        }
        let (commands, replies): (Vec<_>, Vec<_>) = proposals
            .drain(..)
            .map(|proposal| (proposal.command, proposal.reply))
            .unzip();
        if let Err(fault) = disk.check() {
            fail_all(replies, ProposeError::Disk(fault));
            continue;
        }
        if let Err(why) = quorum.check() {
            fail_all(replies, ProposeError::NoQuorum(why));
            continue;
        }
        metrics::histogram!("leasehold_batch_commands").record(commands.len() as f64);
        let batch = Batch {
            at_unix_ms: wall_unix_ms(),
            commands,
        };
        timers.batch_formed(batch.at_unix_ms);
        let started = std::time::Instant::now();
        let written = tokio::select! {
            biased;
            written = raft.client_write(batch) => written,
            why = quorum.lost() => {
                fail_all(replies, ProposeError::NoQuorum(why));
                continue;
            }
            node_id = crate::raft::membership::removal(&raft) => {
                fail_all(replies, ProposeError::Removed { node_id });
                continue;
            }
        };
        metrics::histogram!("leasehold_batch_commit_seconds")
            .record(started.elapsed().as_secs_f64());
        match written {
            Ok(response) => {
                let applied = response.data.applied;
                assert_eq!(applied.len(), replies.len(), "one outcome per command");
                for (reply, outcome) in replies.into_iter().zip(applied) {
                    let _ = reply.send(Ok(outcome));
                }
            }
            Err(error) => fail_all(replies, classify(&raft, &disk, error)),
        }
    }
}

/// Sends every caller of a batch the same failure.
fn fail_all(replies: Vec<oneshot::Sender<Result<Applied, ProposeError>>>, error: ProposeError) {
    for reply in replies {
        let _ = reply.send(Err(error.clone()));
    }
}

/// A failed write's error; a Raft stopped by a failed fsync says so.
fn classify(
    raft: &Raft,
    disk: &DiskHealth,
    error: RaftError<u64, ClientWriteError<u64, openraft::BasicNode>>,
) -> ProposeError {
    match error {
        RaftError::APIError(ClientWriteError::ForwardToLeader(forward)) => {
            not_leader(raft, forward)
        }
        other => match disk.check_poisoned() {
            Err(fault) => ProposeError::Disk(fault),
            Ok(()) => ProposeError::Unavailable(other.to_string()),
        },
    }
}

/// "Not the leader", or "not a member any more" on a removed node.
pub fn not_leader(
    raft: &Raft,
    forward: openraft::error::ForwardToLeader<u64, openraft::BasicNode>,
) -> ProposeError {
    // Read in place: cloning the whole metrics (membership, replication
    // map) for one yes/no is waste; the borrow ends before returning.
    let removed = {
        let metrics = raft.metrics();
        let metrics = metrics.borrow();
        crate::raft::membership::removed(&metrics).then_some(metrics.id)
    };
    if let Some(node_id) = removed {
        return ProposeError::Removed { node_id };
    }
    forward.into()
}

/// The one mapping of openraft's "not the leader" (writes, reads and
/// membership changes all meet it) to who the leader is.
impl From<openraft::error::ForwardToLeader<u64, openraft::BasicNode>> for ProposeError {
    fn from(forward: openraft::error::ForwardToLeader<u64, openraft::BasicNode>) -> ProposeError {
        ProposeError::NotLeader {
            leader: forward.leader_id,
            leader_addr: forward.leader_node.map(|node| node.addr),
        }
    }
}

//! Linearizable reads: a read is answered from this node's applied state
//! once this node has confirmed it still leads (a round of heartbeats to a
//! quorum) and has applied everything committed before the read began.
//!
//! **Why a restart floor**: openraft takes "everything committed" to be
//! the larger of its commit index and the first entry its leader proposed
//! in its term. A leader that restarts *in the same term* (openraft 0.9
//! resumes leadership from a committed vote of its own) reuses that first
//! entry of its earlier life, and its commit index was read back from the
//! `committed` file, which is never fsynced: after a power cut both may lie
//! well behind entries it had committed, applied and acknowledged before
//! the crash. Such a leader's reads would show a state from before writes
//! it acknowledged (the fault harness found this: `power-loss-all`). Every
//! entry this leader committed in its term is in its own log, so it reads
//! only once it has applied up to the last entry its log held at start
//! ([`Node::restart_floor`]); a leader of a newer term proposes a fresh
//! first entry after all of those, and openraft's own rule covers it.

use super::{ApiError, Node};
use crate::raft::types::LogId;
use openraft::error::{CheckIsLeaderError, RaftError};
use std::time::Duration;

impl Node {
    /// Waits until this node has applied everything committed before now
    /// and is still the leader (a linearizable read). A leader without a
    /// quorum fails at once, or as soon as the quorum goes while waiting,
    /// with the no-quorum sentence (never openraft's own text).
    pub async fn read_barrier(&self) -> Result<(), ApiError> {
        if let Err(fault) = self.disk.check_poisoned() {
            return self.read_after_poison(fault);
        }
        self.quorum.check().map_err(ApiError::NoQuorum)?;
        tokio::select! {
            biased;
            confirmed = self.confirm_read() => confirmed,
            why = self.quorum.lost() => Err(ApiError::NoQuorum(why)),
        }
    }

    /// A failed fsync stopped this node's Raft (openraft treats a storage
    /// error as fatal), so no read can be confirmed through it. A node that
    /// is the only voter still answers from its applied state: nothing can
    /// commit without it, so that state is the last there is (every
    /// acknowledged write was applied before its reply). A member of a
    /// larger cluster refuses: the others go on without it.
    fn read_after_poison(&self, fault: crate::storage::DiskFault) -> Result<(), ApiError> {
        let sole_voter = {
            let metrics = self.raft.metrics();
            let metrics = metrics.borrow();
            let mut voters = metrics.membership_config.membership().voter_ids();
            voters.next() == Some(self.node_id) && voters.next().is_none()
        };
        if sole_voter {
            Ok(())
        } else {
            Err(ApiError::Disk(fault))
        }
    }

    /// openraft confirms a read with one round of heartbeats on fresh
    /// connections, each given one heartbeat interval: on a loaded machine
    /// a round can miss while replication keeps the quorum acknowledging
    /// this leader. So a missed round is tried again, for up to
    /// the leader lease; a quorum really gone ends it sooner (see
    /// [`read_barrier`](Self::read_barrier)).
    async fn confirm_read(&self) -> Result<(), ApiError> {
        // The leader lease, after which a real loss shows anyway; between
        // rounds, half a heartbeat interval.
        let timings = self.quorum.timings();
        let (read_confirm_max, read_confirm_pause) =
            (timings.leader_lease, timings.heartbeat_interval / 2);
        let mut acked = 1;
        let rounds = async {
            loop {
                match self.raft.ensure_linearizable().await {
                    Err(RaftError::APIError(CheckIsLeaderError::QuorumNotEnough(short))) => {
                        acked = short.got.len();
                        tokio::time::sleep(read_confirm_pause).await;
                    }
                    confirmed => return confirmed,
                }
            }
        };
        let confirmed = match tokio::time::timeout(read_confirm_max, rounds).await {
            Ok(confirmed) => confirmed,
            Err(_) => return Err(ApiError::NoQuorum(self.quorum.unconfirmed(acked))),
        };
        let read_log_id = confirmed.map_err(|error| match error {
            RaftError::APIError(CheckIsLeaderError::ForwardToLeader(forward)) => {
                crate::proposer::not_leader(&self.raft, forward).into()
            }
            RaftError::APIError(CheckIsLeaderError::QuorumNotEnough(short)) => {
                ApiError::NoQuorum(self.quorum.unconfirmed(short.got.len()))
            }
            RaftError::Fatal(fatal) => {
                ApiError::Unavailable(format!("the replicated log stopped: {fatal}"))
            }
        })?;
        self.past_restart_floor(read_log_id, read_confirm_max).await
    }

    /// Once openraft confirmed `read_log_id`: a leader restarted in the
    /// term of its log's last entry at start also waits, up to `bound`,
    /// until it has applied that entry (see the module doc).
    async fn past_restart_floor(
        &self,
        read_log_id: Option<LogId>,
        bound: Duration,
    ) -> Result<(), ApiError> {
        let Some(floor) = self
            .restart_floor
            .filter(|f| behind_in_its_term(read_log_id, *f))
        else {
            return Ok(());
        };
        let applied = self
            .raft
            .wait(Some(bound))
            .applied_index_at_least(Some(floor.index), "a restarted leader's own entries")
            .await;
        applied.map(|_| ()).map_err(|_| {
            ApiError::Unavailable(format!(
                "this leader restarted and has not yet applied its log up to index {} again, \
                 so it cannot answer a read consistently yet: retry in a moment",
                floor.index
            ))
        })
    }
}

/// Whether openraft's `read` point lies before `floor` in the same term:
/// the leader then resumed its term after a restart (see the module doc).
fn behind_in_its_term(read: Option<LogId>, floor: LogId) -> bool {
    read.is_some_and(|read| read.leader_id == floor.leader_id && read.index < floor.index)
}

#[cfg(test)]
mod tests {
    use super::*;
    use openraft::testing::log_id;

    #[test]
    fn only_a_leader_resuming_its_term_waits_for_its_floor() {
        let floor = log_id(4, 3, 1_070);
        // Restarted in term 4: openraft reads from its first entry of term 4.
        assert!(behind_in_its_term(Some(log_id(4, 3, 20)), floor));
        // A new term's leader proposed a fresh first entry after the floor.
        assert!(!behind_in_its_term(Some(log_id(5, 1, 1_071)), floor));
        // Past the floor already.
        assert!(!behind_in_its_term(Some(log_id(4, 3, 1_070)), floor));
        assert!(!behind_in_its_term(None, floor));
    }
}

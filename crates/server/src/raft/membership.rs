//! Whether this node was removed from its cluster. openraft keeps a removed
//! node running: it still answers, from a state frozen at its removal, and
//! forwards writes to a leader that no longer replicates to it. Leasehold
//! says so instead: `status` reports it, every answer's header carries it,
//! and writes and linearizable reads are refused with a sentence naming it.

use openraft::RaftMetrics;

/// Whether the node of `metrics` is no longer a member: its membership has
/// members, and it is not among them. A node waiting to be added
/// (`--join`) has no membership yet, so it is not "removed".
pub fn removed(metrics: &RaftMetrics<u64, openraft::BasicNode>) -> bool {
    let membership = metrics.membership_config.membership();
    let mut members = membership.nodes().map(|(id, _)| *id).peekable();
    members.peek().is_some() && !members.any(|id| id == metrics.id)
}

/// Resolves with this node's id once it is removed from the cluster; never,
/// if it stays a member or Raft stops. A write in flight on a leader that
/// removes itself can wait for ever: its entry commits (or not) on the
/// remaining members, which no longer replicate to this node, so openraft
/// here never learns the outcome. The proposer stops waiting at this.
pub async fn removal(raft: &crate::raft::types::Raft) -> u64 {
    let mut metrics = raft.metrics();
    let removed_id = metrics.wait_for(removed).await.map(|m| m.id);
    match removed_id {
        Ok(id) => id,
        Err(_stopped) => std::future::pending().await,
    }
}

/// The refusal a removed node gives writes and linearizable reads.
pub fn refusal(node_id: u64) -> String {
    format!(
        "node {node_id} was removed from the cluster: it takes no writes and its state is frozen \
         at its removal; send requests to the cluster's members (`leasehold status` on one of \
         them lists them), or add this node back with `leasehold member add`"
    )
}

//! `Status`: the answering node's view of the cluster, and the member list
//! that membership replies share with it. On the leader every member also
//! carries replication progress (matched index and lag), which is how an
//! operator sees a new node catch up before it is made a voter. Every
//! member carries whether the answering node reaches it and when it last
//! heard from it, and the reply says whether the node has its quorum
//! (see [`crate::raft::quorum`]).

use crate::api::Node;
use crate::raft::quorum::QuorumReport;
use leasehold_proto::v1::{Member, StatusResponse};
use openraft::{BasicNode, LogId, Membership, ServerState};
use std::collections::BTreeMap;

/// A member's role as the answering node knows it.
pub const ROLE_LEADER: &str = "Leader";
/// A voter that does not lead.
pub const ROLE_FOLLOWER: &str = "Follower";
/// A member that receives the log but does not vote.
pub const ROLE_LEARNER: &str = "Learner";

/// What a reply needs from openraft's metrics, copied out so that no borrow
/// of the metrics channel is held across an await (it would block Raft's
/// metrics sender).
pub struct View {
    /// The leader's id, if one is known.
    pub leader: Option<u64>,
    pub term: u64,
    /// `Leader`, `Follower`, `Candidate`, `Learner` or `Shutdown`.
    pub state: String,
    pub last_log_index: u64,
    pub applied_index: u64,
    pub snapshot_index: u64,
    pub purged_index: u64,
    pub members: Vec<Member>,
    /// The quorum assessment the member contacts come from.
    pub quorum: QuorumReport,
}

impl View {
    /// This node's view now, listing `membership` if given (a membership
    /// just committed) or else the one in the metrics.
    pub fn read(node: &Node, membership: Option<&Membership<u64, BasicNode>>) -> View {
        // Before borrowing the metrics: the report borrows them too.
        let quorum = node.quorum.report();
        let metrics = node.raft.metrics();
        let m = metrics.borrow();
        let last_log_index = m.last_log_index.unwrap_or(0);
        let membership = membership.unwrap_or_else(|| m.membership_config.membership());
        // A leader that stepped down (it removed itself) keeps its own vote,
        // so openraft still names it; it leads nothing any more.
        let leader = m
            .current_leader
            .filter(|id| *id != m.id || m.state == ServerState::Leader);
        let mut members = members(membership, leader, m.replication.as_ref(), last_log_index);
        with_contacts(&mut members, &quorum);
        for member in &mut members {
            member.protocol = node.protocols.heard_of(member.id);
        }
        View {
            leader,
            term: m.current_term,
            state: format!("{:?}", m.state),
            last_log_index,
            applied_index: index(m.last_applied),
            snapshot_index: index(m.snapshot),
            purged_index: index(m.purged),
            members,
            quorum,
        }
    }
}

fn index(log_id: Option<LogId<u64>>) -> u64 {
    log_id.map_or(0, |log_id| log_id.index)
}

/// Every member of `membership` with its role; with `replication` (this
/// node leads) also how far the log reached it and how far behind
/// `last_log_index` it is.
pub fn members(
    membership: &Membership<u64, BasicNode>,
    leader: Option<u64>,
    replication: Option<&BTreeMap<u64, Option<LogId<u64>>>>,
    last_log_index: u64,
) -> Vec<Member> {
    let voters: Vec<u64> = membership.voter_ids().collect();
    membership
        .nodes()
        .map(|(id, node)| {
            let voter = voters.contains(id);
            let role = if leader == Some(*id) {
                ROLE_LEADER
            } else if voter {
                ROLE_FOLLOWER
            } else {
                ROLE_LEARNER
            };
            let matched = replication.map(|progress| index(progress.get(id).copied().flatten()));
            Member {
                id: *id,
                addr: node.addr.clone(),
                voter,
                role: role.into(),
                matched_index: matched.unwrap_or(0),
                lag: matched.map_or(0, |matched| last_log_index.saturating_sub(matched)),
                reachable: None,
                last_contact_ms: None,
                protocol: None,
            }
        })
        .collect()
}

/// Fills in each member's reachability and last contact from `quorum`
/// (left absent for a member it does not list, e.g. one just added).
fn with_contacts(members: &mut [Member], quorum: &QuorumReport) {
    for member in members {
        if let Some(contact) = quorum.contacts.get(&member.id) {
            member.reachable = contact.reachable;
            member.last_contact_ms = contact.last_contact.map(|age| age.as_millis() as u64);
        }
    }
}

/// Builds the `Status` reply.
pub async fn status(node: &Node) -> StatusResponse {
    // Raft's own committed index (metrics do not carry it). A node that is
    // shutting down reports 0 here; its state says `Shutdown`.
    // (A failed fsync stopped Raft: asking would only log an error.)
    let committed = match node.disk.check_poisoned() {
        Err(_) => 0,
        Ok(()) => node
            .raft
            .with_raft_state(|state| index(state.committed))
            .await
            .unwrap_or(0),
    };
    let view = View::read(node, None);
    let (revision, leases, locks) = node.state.read(|state| {
        (
            state.revision(),
            state.lease_count() as u64,
            state.lock_count() as u64,
        )
    });
    StatusResponse {
        header: node.header(revision),
        node_id: node.node_id,
        leader: view.leader.unwrap_or(0),
        term: view.term,
        revision: revision.0,
        // Read after `committed`: whatever applied since is committed too.
        commit_index: committed.max(view.applied_index),
        applied_index: view.applied_index,
        last_log_index: view.last_log_index,
        members: view.members,
        state: view.state,
        leases,
        locks,
        version: env!("CARGO_PKG_VERSION").into(),
        snapshot_index: view.snapshot_index,
        purged_index: view.purged_index,
        cluster_id: node.identity.cluster_id_text(),
        quorum: view.quorum.quorum(),
        quorum_problem: view.quorum.problem(),
        transport_security: node.transport_security.as_str().into(),
        removed: crate::raft::membership::removed(&node.raft.metrics().borrow()),
        protocol: node.protocols.own(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use openraft::CommittedLeaderId;
    use std::collections::BTreeSet;

    fn log_id(index: u64) -> Option<LogId<u64>> {
        Some(LogId::new(CommittedLeaderId::new(1, 1), index))
    }

    fn three_and_a_learner() -> Membership<u64, BasicNode> {
        let nodes = (1..=4)
            .map(|id| (id, BasicNode::new(format!("127.0.0.1:{}", 7420 + id))))
            .collect::<BTreeMap<_, _>>();
        Membership::new(vec![BTreeSet::from([1, 2, 3])], nodes)
    }

    #[test]
    fn leader_sees_roles_matched_index_and_lag() {
        let progress =
            BTreeMap::from([(1, log_id(50)), (2, log_id(48)), (3, None), (4, log_id(7))]);
        let members = members(&three_and_a_learner(), Some(1), Some(&progress), 50);
        let seen: Vec<_> = members
            .iter()
            .map(|m| (m.id, m.role.as_str(), m.voter, m.matched_index, m.lag))
            .collect();
        assert_eq!(
            seen,
            [
                (1, ROLE_LEADER, true, 50, 0),
                (2, ROLE_FOLLOWER, true, 48, 2),
                (3, ROLE_FOLLOWER, true, 0, 50),
                (4, ROLE_LEARNER, false, 7, 43),
            ]
        );
        assert_eq!(members[3].addr, "127.0.0.1:7424");
    }

    #[test]
    fn follower_reports_no_progress() {
        let members = members(&three_and_a_learner(), Some(2), None, 50);
        assert!(members.iter().all(|m| m.matched_index == 0 && m.lag == 0));
        assert_eq!(members[1].role, ROLE_LEADER);
        assert_eq!(members[0].role, ROLE_FOLLOWER);
    }

    #[test]
    fn no_known_leader_marks_nobody_leader() {
        let members = members(&three_and_a_learner(), None, None, 0);
        assert!(members.iter().all(|m| m.role != ROLE_LEADER));
    }
}

//! `AddMember` and `RemoveMember`, answered by the leader only.
//!
//! Adding is two steps: the node joins as a learner and the leader waits
//! until the log reached it up to the entry that added it (by snapshot when
//! that part of the log is purged), then it becomes a voter. openraft's own
//! "caught up" test accepts any learner within `replication_lag_threshold`
//! entries, which on a short log means "nothing received yet", so the wait
//! here is on the matched index itself. Removing is one joint-consensus
//! change; removing the leader works: it steps down once the change commits
//! and the others elect a new leader.
//!
//! Before Raft hears of a new node, the leader asks it for its status (see
//! [`super::probe`]).
//!
//! A change runs in its own task: a client that gives up (a timeout, Ctrl-C)
//! must not leave the cluster in a joint configuration between openraft's
//! two steps.

use super::probe::probe;
use super::status::View;
use crate::api::{check_request_size, ApiError, Node};
use leasehold_proto::v1::{AddMemberRequest, MembershipResponse, RemoveMemberRequest};
use openraft::error::{ChangeMembershipError, ClientWriteError, RaftError};
use openraft::metrics::WaitError;
use openraft::{BasicNode, ChangeMembers, Membership};
use std::collections::BTreeSet;
use std::future::Future;
use std::sync::Arc;
use std::time::{Duration, Instant};

/// How long `AddMember` waits for a new node to catch up before it gives up
/// on making it a voter. The node stays a learner and keeps catching up;
/// asking again finishes the job.
pub const LEARNER_CATCH_UP_MAX: Duration = Duration::from_secs(60);

/// A cluster membership as openraft keeps it.
pub type Members = Membership<u64, BasicNode>;

/// Adds node `id` at `addr` as a voter (a no-op if it already is one).
pub async fn add(
    node: Arc<Node>,
    request: AddMemberRequest,
) -> Result<MembershipResponse, ApiError> {
    check_request_size(&request)?;
    let id = check_id(request.id)?;
    let addr = check_addr(&request.addr)?;
    // Followers answer NotLeader here; on the leader this also makes the
    // membership read below current.
    node.read_barrier().await?;
    if plan_addition(&current(&node), id, &addr)? == Addition::AlreadyVoter {
        return Ok(reply(&node, None));
    }
    let cluster_id = node.identity.cluster_id();
    probe(
        &node.dialer,
        &current(&node),
        cluster_id.as_ref(),
        id,
        &addr,
    )
    .await?;
    let raft = node.raft.clone();
    let membership = in_own_task(async move {
        let started = Instant::now();
        let added = raft
            .add_learner(id, BasicNode::new(&addr), false)
            .await
            .map_err(raft_error)?;
        wait_caught_up(&raft, id, added.log_id.index).await?;
        tracing::info!(
            id,
            %addr,
            caught_up_ms = started.elapsed().as_millis() as u64,
            "new member caught up; making it a voter"
        );
        let promoted = raft
            .change_membership(ChangeMembers::AddVoterIds(BTreeSet::from([id])), false)
            .await
            .map_err(raft_error)?;
        Ok(promoted.membership)
    })
    .await?;
    Ok(reply(&node, membership.as_ref()))
}

/// Removes node `id` from the cluster (from the voters, and as a node).
pub async fn remove(
    node: Arc<Node>,
    request: RemoveMemberRequest,
) -> Result<MembershipResponse, ApiError> {
    check_request_size(&request)?;
    let id = check_id(request.id)?;
    node.read_barrier().await?;
    let change = plan_removal(&current(&node), id)?;
    let raft = node.raft.clone();
    let membership = in_own_task(async move {
        let changed = raft
            .change_membership(change, false)
            .await
            .map_err(raft_error)?;
        tracing::info!(id, "removed a member");
        Ok(changed.membership)
    })
    .await?;
    Ok(reply(&node, membership.as_ref()))
}

/// Waits until the log reached learner `id` up to `index`, at most
/// [`LEARNER_CATCH_UP_MAX`]. Returns early if this node stops leading (the
/// promotion that follows then answers NotLeader).
async fn wait_caught_up(
    raft: &crate::raft::types::Raft,
    id: u64,
    index: u64,
) -> Result<(), ApiError> {
    let waited = raft
        .wait(Some(LEARNER_CATCH_UP_MAX))
        .metrics(
            |m| match &m.replication {
                None => true,
                Some(progress) => progress
                    .get(&id)
                    .copied()
                    .flatten()
                    .is_some_and(|matched| matched.index >= index),
            },
            "a new member to catch up",
        )
        .await;
    match waited {
        Ok(_) => Ok(()),
        Err(WaitError::Timeout(..)) => Err(ApiError::Unavailable(format!(
            "node {id} joined as a learner but did not catch up within {}s (is it running and \
             reachable at the address given?); it stays a learner: add it again to make it a voter",
            LEARNER_CATCH_UP_MAX.as_secs()
        ))),
        Err(WaitError::ShuttingDown) => Err(ApiError::Unavailable("raft is shutting down".into())),
    }
}

/// Runs a membership change to completion even if the caller goes away.
async fn in_own_task<T: Send + 'static>(
    change: impl Future<Output = Result<T, ApiError>> + Send + 'static,
) -> Result<T, ApiError> {
    tokio::spawn(change)
        .await
        .map_err(|error| ApiError::Unavailable(format!("the membership change failed: {error}")))?
}

/// The membership this node knows (current after a read barrier).
fn current(node: &Node) -> Members {
    node.raft
        .metrics()
        .borrow()
        .membership_config
        .membership()
        .clone()
}

fn reply(node: &Node, membership: Option<&Members>) -> MembershipResponse {
    let revision = node.state.read(|state| state.revision());
    MembershipResponse {
        header: node.header(revision),
        members: View::read(node, membership).members,
    }
}

fn check_id(id: u64) -> Result<u64, ApiError> {
    if id == 0 {
        return Err(ApiError::invalid(
            "id",
            "must be a node id (1 or higher), not 0",
        ));
    }
    Ok(id)
}

/// Accepts `HOST:PORT` (an IPv6 host in brackets), the form `--peers` and
/// `--listen` use, and other nodes dial.
fn check_addr(addr: &str) -> Result<String, ApiError> {
    let addr = addr.trim();
    let valid = addr.rsplit_once(':').is_some_and(|(host, port)| {
        !host.is_empty()
            && !host.contains(|c: char| c.is_whitespace() || c == '/')
            && port.parse::<u16>().is_ok_and(|port| port != 0)
    });
    if !valid {
        return Err(ApiError::invalid(
            "addr",
            format!("{addr:?} is not HOST:PORT (e.g. 10.0.0.4:7420): the address other nodes reach the new node at"),
        ));
    }
    Ok(addr.to_owned())
}

/// What adding a node to `members` takes.
#[derive(Debug, PartialEq, Eq)]
enum Addition {
    /// It already is a voter at that address: nothing to do.
    AlreadyVoter,
    /// Add it as a learner (again, if it already is one), then promote it.
    AddAndPromote,
}

fn plan_addition(members: &Members, id: u64, addr: &str) -> Result<Addition, ApiError> {
    let Some(known) = members.get_node(&id) else {
        return Ok(Addition::AddAndPromote);
    };
    if known.addr != addr {
        return Err(ApiError::invalid(
            "addr",
            format!(
                "node {id} is already a member at {}; remove it first to give it another address",
                known.addr
            ),
        ));
    }
    if members.voter_ids().any(|voter| voter == id) {
        Ok(Addition::AlreadyVoter)
    } else {
        Ok(Addition::AddAndPromote)
    }
}

fn plan_removal(members: &Members, id: u64) -> Result<ChangeMembers<u64, BasicNode>, ApiError> {
    if members.get_node(&id).is_none() {
        let known: Vec<String> = members.nodes().map(|(id, _)| id.to_string()).collect();
        return Err(ApiError::invalid(
            "id",
            format!(
                "node {id} is not a member; the members are {}",
                known.join(", ")
            ),
        ));
    }
    let voters: BTreeSet<u64> = members.voter_ids().collect();
    if !voters.contains(&id) {
        return Ok(ChangeMembers::RemoveNodes(BTreeSet::from([id])));
    }
    if voters.len() == 1 {
        return Err(ApiError::invalid(
            "id",
            format!("node {id} is the last voter: removing it would leave no cluster; add another member first"),
        ));
    }
    Ok(ChangeMembers::RemoveVoters(BTreeSet::from([id])))
}

/// openraft's answer to a membership change, as the API's error.
fn raft_error(error: RaftError<u64, ClientWriteError<u64, BasicNode>>) -> ApiError {
    match error {
        RaftError::APIError(ClientWriteError::ForwardToLeader(forward)) => {
            crate::proposer::ProposeError::from(forward).into()
        }
        RaftError::APIError(ClientWriteError::ChangeMembershipError(
            ChangeMembershipError::InProgress(_),
        )) => ApiError::Unavailable("a membership change is in progress".into()),
        RaftError::APIError(ClientWriteError::ChangeMembershipError(refused)) => {
            ApiError::Unavailable(format!("the membership change was refused: {refused}"))
        }
        RaftError::Fatal(fatal) => ApiError::Unavailable(format!("raft has stopped: {fatal}")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::api::cluster::test_support::{members, reason};
    use openraft::error::{ForwardToLeader, InProgress};
    use tonic::{Code, Status};

    #[test]
    fn addresses_must_be_host_and_port() {
        for good in ["10.0.0.4:7420", "node-4.example:1", "[::1]:7420", " h:2 "] {
            assert!(check_addr(good).is_ok(), "{good}");
        }
        for bad in [
            "",
            "10.0.0.4",
            ":7420",
            "h:0",
            "h:99999",
            "http://h:1",
            "a b:1",
        ] {
            let (code, message) = reason(check_addr(bad).unwrap_err());
            assert_eq!(code, Code::InvalidArgument, "{bad}");
            assert!(message.contains("addr"), "{message}");
        }
        assert!(check_id(0).is_err());
    }

    #[test]
    fn adding_a_voter_again_is_a_no_op_but_not_at_another_address() {
        let cluster = members(&[1, 2, 3], &[4]);
        assert_eq!(
            plan_addition(&cluster, 2, "10.0.0.2:7420").unwrap(),
            Addition::AlreadyVoter
        );
        assert_eq!(
            plan_addition(&cluster, 4, "10.0.0.4:7420").unwrap(),
            Addition::AddAndPromote
        );
        assert_eq!(
            plan_addition(&cluster, 5, "10.0.0.5:7420").unwrap(),
            Addition::AddAndPromote
        );
        let (code, message) = reason(plan_addition(&cluster, 2, "10.0.0.9:7420").unwrap_err());
        assert_eq!(code, Code::InvalidArgument);
        assert!(
            message.contains("already a member at 10.0.0.2:7420"),
            "{message}"
        );
    }

    #[test]
    fn removal_refuses_unknown_nodes_and_the_last_voter() {
        let cluster = members(&[1, 2, 3], &[4]);
        assert_eq!(
            plan_removal(&cluster, 2).unwrap(),
            ChangeMembers::RemoveVoters(BTreeSet::from([2]))
        );
        assert_eq!(
            plan_removal(&cluster, 4).unwrap(),
            ChangeMembers::RemoveNodes(BTreeSet::from([4]))
        );
        let (code, message) = reason(plan_removal(&cluster, 9).unwrap_err());
        assert_eq!(code, Code::InvalidArgument);
        assert!(
            message.contains("not a member; the members are 1, 2, 3, 4"),
            "{message}"
        );
        let (_, message) = reason(plan_removal(&members(&[1], &[]), 1).unwrap_err());
        assert!(message.contains("last voter"), "{message}");
    }

    #[test]
    fn openraft_errors_map_to_not_leader_and_unavailable() {
        let forward = RaftError::APIError(ClientWriteError::ForwardToLeader(ForwardToLeader {
            leader_id: Some(2),
            leader_node: Some(BasicNode::new("10.0.0.2:7420")),
        }));
        let status = Status::from(raft_error(forward));
        let detail = leasehold_proto::status::error_detail(&status).unwrap();
        assert_eq!(
            (
                detail.reason.as_str(),
                detail.leader_hint,
                detail.leader_addr.as_str()
            ),
            ("NotLeader", 2, "10.0.0.2:7420")
        );
        let busy = RaftError::APIError(ClientWriteError::ChangeMembershipError(
            ChangeMembershipError::InProgress(InProgress {
                committed: None,
                membership_log_id: None,
            }),
        ));
        let (code, message) = reason(raft_error(busy));
        assert_eq!(code, Code::Unavailable);
        assert!(
            message.contains("membership change is in progress"),
            "{message}"
        );
    }
}

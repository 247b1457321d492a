//! The cluster: the answering node's status (its view of the leader,
//! terms, indexes, quorum and members) and membership changes, which go to
//! the leader (a follower's `NotLeader` is followed) and answer once the
//! change has committed.

use crate::error::Error;
use crate::wire::{MembershipResponse, StatusResponse};
use crate::Client;
use leasehold_proto::v1::cluster_client::ClusterClient;
use leasehold_proto::v1::{AddMemberRequest, RemoveMemberRequest, StatusRequest};
use std::time::Duration;

/// Longest a new member may take to catch up: the server's bound
/// (`LEARNER_CATCH_UP_MAX`, 60 s) plus room for the promotion to commit.
/// An add's call may take this much longer than the call timeout.
pub const ADD_MEMBER_WAIT_MAX: Duration = Duration::from_secs(65);

/// Room for a removal's two commits (joint, then final configuration).
pub const REMOVE_MEMBER_WAIT_MAX: Duration = Duration::from_secs(10);

impl Client {
    /// The status of the node the client talks to (any node answers; only
    /// a leader's answer knows how far the log reached each member).
    pub async fn status(&self) -> Result<StatusResponse, Error> {
        self.call("Status", Duration::ZERO, |channel| async move {
            ClusterClient::new(channel).status(StatusRequest {}).await
        })
        .await
    }

    /// Adds node `id`, reachable at `addr` (`HOST:PORT`), as a voter, once
    /// it caught up (by snapshot if it is far behind). Start the node first
    /// (`leasehold serve --join`). Returns the new membership.
    pub async fn add_member(&self, id: u64, addr: &str) -> Result<MembershipResponse, Error> {
        let request = AddMemberRequest {
            id,
            addr: addr.to_owned(),
        };
        self.call("AddMember", ADD_MEMBER_WAIT_MAX, |channel| {
            let request = request.clone();
            async move { ClusterClient::new(channel).add_member(request).await }
        })
        .await
    }

    /// Removes node `id`. Removing the leader is allowed: it steps down and
    /// the others elect a new one. Returns the new membership.
    pub async fn remove_member(&self, id: u64) -> Result<MembershipResponse, Error> {
        self.call(
            "RemoveMember",
            REMOVE_MEMBER_WAIT_MAX,
            |channel| async move {
                ClusterClient::new(channel)
                    .remove_member(RemoveMemberRequest { id })
                    .await
            },
        )
        .await
    }
}

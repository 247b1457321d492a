//! `leasehold.v1.Cluster`: status of this node and its view of the cluster.

use super::Node;
use leasehold_proto::v1::cluster_server::Cluster;
use leasehold_proto::v1::{
    AddMemberRequest, Member, MembershipResponse, RemoveMemberRequest, StatusRequest,
    StatusResponse,
};
use std::sync::Arc;
use tonic::{Request, Response, Status};

/// The Cluster service.
pub struct ClusterApi {
    node: Arc<Node>,
}

impl ClusterApi {
    /// The service over `node`.
    pub fn new(node: Arc<Node>) -> ClusterApi {
        ClusterApi { node }
    }
}

#[tonic::async_trait]
impl Cluster for ClusterApi {
    async fn status(
        &self,
        _request: Request<StatusRequest>,
    ) -> Result<Response<StatusResponse>, Status> {
        // Copy what we need out of the metrics: holding the borrow across an
        // await would block openraft's metrics sender.
        let (leader, term, applied_index, state, members, snapshot_index, purged_index) = {
            let metrics = self.node.raft.metrics();
            let m = metrics.borrow();
            let membership = m.membership_config.membership();
            let voters: Vec<u64> = membership.voter_ids().collect();
            let members = membership
                .nodes()
                .map(|(id, node)| Member {
                    id: *id,
                    addr: node.addr.clone(),
                    voter: voters.contains(id),
                    ..Member::default()
                })
                .collect::<Vec<_>>();
            (
                m.current_leader.unwrap_or(0),
                m.current_term,
                m.last_applied.map_or(0, |log_id| log_id.index),
                format!("{:?}", m.state),
                members,
                m.snapshot.map_or(0, |log_id| log_id.index),
                m.purged.map_or(0, |log_id| log_id.index),
            )
        };
        let (revision, leases, locks) = self.node.state.read(|state| {
            (
                state.revision(),
                state.lease_count() as u64,
                state.lock_count() as u64,
            )
        });
        Ok(Response::new(StatusResponse {
            header: self.node.header(revision),
            node_id: self.node.node_id,
            leader,
            term,
            revision: revision.0,
            applied_index,
            members,
            state,
            leases,
            locks,
            version: env!("CARGO_PKG_VERSION").into(),
            snapshot_index,
            purged_index,
            ..StatusResponse::default()
        }))
    }

    async fn add_member(
        &self,
        _request: Request<AddMemberRequest>,
    ) -> Result<Response<MembershipResponse>, Status> {
        Err(Status::unimplemented(
            "membership changes are not built yet",
        ))
    }

    async fn remove_member(
        &self,
        _request: Request<RemoveMemberRequest>,
    ) -> Result<Response<MembershipResponse>, Status> {
        Err(Status::unimplemented(
            "membership changes are not built yet",
        ))
    }
}

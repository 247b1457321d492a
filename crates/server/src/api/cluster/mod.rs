//! `leasehold.v1.Cluster`: this node's view of the cluster ([`status`]) and
//! membership changes on the leader ([`membership`], checking a new node
//! first with [`probe`]).

mod membership;
mod probe;
mod status;
#[cfg(test)]
mod test_support;

pub(crate) use status::View;

use super::Node;
use leasehold_proto::v1::cluster_server::Cluster;
use leasehold_proto::v1::{
    AddMemberRequest, MembershipResponse, RemoveMemberRequest, StatusRequest, StatusResponse,
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
        Ok(Response::new(status::status(&self.node).await))
    }

    async fn add_member(
        &self,
        request: Request<AddMemberRequest>,
    ) -> Result<Response<MembershipResponse>, Status> {
        Ok(Response::new(
            membership::add(self.node.clone(), request.into_inner()).await?,
        ))
    }

    async fn remove_member(
        &self,
        request: Request<RemoveMemberRequest>,
    ) -> Result<Response<MembershipResponse>, Status> {
        Ok(Response::new(
            membership::remove(self.node.clone(), request.into_inner()).await?,
        ))
    }
}

//! `leasehold.v1.Cluster`: this node's view of the cluster ([`status`]),
//! membership changes on the leader ([`membership`], checking a new node
//! first with [`probe`]), and backups ([`backup`]).

mod backup;
mod membership;
mod probe;
mod status;
#[cfg(test)]
mod test_support;

pub(crate) use status::View;

use super::Node;
use crate::auth::Caller;
use leasehold_core::auth::{AuditEntry, AuditKind, Verb};
use leasehold_proto::v1::cluster_server::Cluster;
use leasehold_proto::v1::{
    AddMemberRequest, BackupRequest, MembershipResponse, RemoveMemberRequest, StatusRequest,
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
        Ok(Response::new(status::status(&self.node).await))
    }

    async fn add_member(
        &self,
        request: Request<AddMemberRequest>,
    ) -> Result<Response<MembershipResponse>, Status> {
        let caller = Caller::identify(&self.node, request.metadata(), request.extensions())?;
        caller.check(&self.node, Verb::Admin, "")?;
        let request = request.into_inner();
        let what = format!("add node {} at {}", request.id, request.addr);
        let response = membership::add(self.node.clone(), request).await?;
        audit_membership(&self.node, &caller, what);
        Ok(Response::new(response))
    }

    type BackupStream = backup::BackupStream;

    async fn backup(
        &self,
        request: Request<BackupRequest>,
    ) -> Result<Response<Self::BackupStream>, Status> {
        let caller = Caller::identify(&self.node, request.metadata(), request.extensions())?;
        caller.check(&self.node, Verb::Admin, "")?;
        Ok(Response::new(backup::backup(&self.node).await?))
    }

    async fn remove_member(
        &self,
        request: Request<RemoveMemberRequest>,
    ) -> Result<Response<MembershipResponse>, Status> {
        let caller = Caller::identify(&self.node, request.metadata(), request.extensions())?;
        caller.check(&self.node, Verb::Admin, "")?;
        let request = request.into_inner();
        let what = format!("remove node {}", request.id);
        let response = membership::remove(self.node.clone(), request).await?;
        audit_membership(&self.node, &caller, what);
        Ok(Response::new(response))
    }
}

/// Records an applied membership change in the audit trail (in the
/// background: the change itself is done).
fn audit_membership(node: &Arc<Node>, caller: &Caller, detail: String) {
    let entry = AuditEntry {
        kind: AuditKind::Membership,
        principal: caller.name().to_owned(),
        verb: Some(Verb::Admin),
        name: String::new(),
        detail,
    };
    let proposer = node.proposer.clone();
    tokio::spawn(async move {
        let audited = proposer
            .propose(leasehold_core::Command::Audit(entry))
            .await;
        if let Err(error) = audited {
            tracing::warn!(%error, "a membership change did not reach the audit trail");
        }
    });
}

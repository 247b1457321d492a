//! `Lease.Revoke`: ends a lease and releases everything it holds.

use super::propose::Proposal;
use super::{check_lease_id, ApiError, Node};
use leasehold_core::RequestId;
use leasehold_proto::v1::{RevokeRequest, RevokeResponse};

/// Validates and performs one revoke.
pub async fn revoke(node: &Node, request: RevokeRequest) -> Result<RevokeResponse, ApiError> {
    let lease = check_lease_id(request.lease)?;
    let request_id = RequestId::parse(&request.request_id)?;
    let (revoked, revision) = node.propose(Proposal::revoke(lease, request_id)).await?;
    Ok(RevokeResponse {
        header: node.header(revision),
        released: revoked.released.iter().map(|n| n.to_string()).collect(),
    })
}

//! `Lease.Revoke`: ends a lease and releases everything it holds.

use super::propose::Proposal;
use super::{check_lease_id, ApiError, Node};
use crate::auth::Caller;
use leasehold_core::RequestId;
use leasehold_proto::v1::{RevokeRequest, RevokeResponse};

/// Validates and performs one revoke.
pub async fn revoke(
    node: &Node,
    caller: &Caller,
    request: RevokeRequest,
) -> Result<RevokeResponse, ApiError> {
    let lease = check_lease_id(request.lease)?;
    let request_id = RequestId::parse(&request.request_id)?;
    let proposal = caller.authorize(node, Proposal::revoke(lease, request_id))?;
    let (revoked, revision) = node.propose(proposal).await?;
    Ok(RevokeResponse {
        header: node.header(revision),
        released: revoked.released.iter().map(|n| n.to_string()).collect(),
    })
}

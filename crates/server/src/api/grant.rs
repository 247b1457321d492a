//! `Lease.Grant`: validates the ttl, owner and request id, and grants a lease.

use super::convert::owner_from_wire;
use super::propose::Proposal;
use super::{check_request_size, ApiError, Node};
use crate::auth::Caller;
use leasehold_core::{command, RequestId};
use leasehold_proto::v1::{GrantRequest, GrantResponse};

/// Validates and performs one grant.
pub async fn grant(
    node: &Node,
    caller: &Caller,
    request: GrantRequest,
) -> Result<GrantResponse, ApiError> {
    check_request_size(&request)?;
    command::check_ttl(request.ttl_ms)?;
    let proposal = Proposal::grant(
        request.ttl_ms,
        owner_from_wire(request.owner),
        RequestId::parse(&request.request_id)?,
    )?;
    let proposal = caller.authorize(node, proposal)?;
    let (granted, revision) = node.propose(proposal).await?;
    Ok(GrantResponse {
        header: node.header(revision),
        lease: granted.lease.0,
        ttl_ms: granted.ttl_ms,
    })
}

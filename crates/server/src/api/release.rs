//! `Lock.Release`: releases a lock held by (lease, token); shared by the
//! unary form and the session stream.

use super::propose::Proposal;
use super::{check_lease_id, check_request_size, ApiError, Node};
use crate::auth::Caller;
use leasehold_core::{LockName, RequestId, Token};
use leasehold_proto::v1::{ReleaseRequest, ReleaseResponse};

/// Validates and performs one release.
pub async fn release(
    node: &Node,
    caller: &Caller,
    request: ReleaseRequest,
) -> Result<ReleaseResponse, ApiError> {
    check_request_size(&request)?;
    let proposal = Proposal::release(
        check_lease_id(request.lease)?,
        LockName::parse(&request.name)?,
        Token(request.token),
        RequestId::parse(&request.request_id)?,
    );
    let proposal = caller.authorize(node, proposal)?;
    let ((), revision) = node.propose(proposal).await?;
    Ok(ReleaseResponse {
        header: node.header(revision),
    })
}

//! `Lock.Proclaim`: an election's leader sets its value.

use super::propose::Proposal;
use super::{check_lease_id, check_request_size, ApiError, Node};
use crate::auth::Caller;
use leasehold_core::{LockName, Proclaim, RequestId, Token};
use leasehold_proto::v1::{ProclaimRequest, ProclaimResponse};

/// Validates and performs one proclaim.
pub async fn proclaim(
    node: &Node,
    caller: &Caller,
    request: ProclaimRequest,
) -> Result<ProclaimResponse, ApiError> {
    check_request_size(&request)?;
    let proclaim = Proclaim {
        lease: check_lease_id(request.lease)?,
        name: LockName::parse(&request.name)?,
        token: Token(request.token),
        value: request.value,
        request_id: RequestId::parse(&request.request_id)?,
    };
    proclaim.validate()?;
    let proposal = caller.authorize(node, Proposal::proclaim(proclaim))?;
    let (_token, revision) = node.propose(proposal).await?;
    Ok(ProclaimResponse {
        header: node.header(revision),
    })
}

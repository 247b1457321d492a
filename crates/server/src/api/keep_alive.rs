//! `Lease.KeepAlive`: renews a lease; shared by the unary form, the
//! keep-alive stream and the session stream. The reply lists what the lease
//! holds, and how the server ended its other holds, unless the holder's
//! digest of its holds says it knows them already.

use super::convert::holdings_if_changed;
use super::propose::Proposal;
use super::{check_lease_id, ApiError, Node};
use crate::auth::Caller;
use leasehold_proto::v1::{KeepAliveRequest, KeepAliveResponse};

/// Proposes one keep-alive.
pub async fn keep_alive(
    node: &Node,
    caller: &Caller,
    request: &KeepAliveRequest,
) -> Result<KeepAliveResponse, ApiError> {
    let lease = check_lease_id(request.lease)?;
    let proposal = caller.authorize(node, Proposal::keep_alive(lease))?;
    let (kept, revision) = node.propose(proposal).await?;
    Ok(KeepAliveResponse {
        header: node.header(revision),
        lease: kept.lease.0,
        ttl_ms: kept.ttl_ms,
        seq: request.seq,
        error: None,
        // Read after the renewal applied: includes every grant the
        // holder had heard of when it sent this keep-alive.
        holdings: holdings_if_changed(node, kept.lease, request.holdings_digest),
    })
}

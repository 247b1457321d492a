//! `Lease.Get`: one lease, after a read barrier.

use super::convert::lease_to_wire;
use super::{check_lease_id, ApiError, Node};
use crate::auth::Caller;
use leasehold_core::auth::Verb;
use leasehold_core::LockError;
use leasehold_proto::v1::{GetLeaseRequest, GetLeaseResponse};

/// Reads one lease.
pub async fn get_lease(
    node: &Node,
    caller: &Caller,
    request: GetLeaseRequest,
) -> Result<GetLeaseResponse, ApiError> {
    let lease = check_lease_id(request.lease)?;
    // A lease is not under a name: reading one needs observe on everything.
    caller.check(node, Verb::Observe, "")?;
    node.read_barrier().await?;
    let found = node.state.read(|state| {
        state
            .lease(lease)
            .map(|l| (lease_to_wire(node, state, l), state.revision()))
    });
    match found {
        Some((info, revision)) => Ok(GetLeaseResponse {
            header: node.header(revision),
            lease: Some(info),
        }),
        None => Err(LockError::LeaseNotFound { lease }.into()),
    }
}

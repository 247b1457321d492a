//! `Lease.List`: the live leases in id order, at most
//! [`limits::LIST_LEASES_MAX`], after a read barrier unless the request asks
//! for a stale read (etcd's `lease list`).

use super::convert::lease_to_wire;
use super::{ApiError, Node};
use crate::auth::Caller;
use leasehold_core::auth::Verb;
use leasehold_core::limits;
use leasehold_proto::v1::{ListLeasesRequest, ListLeasesResponse};

/// Lists leases.
pub async fn list_leases(
    node: &Node,
    caller: &Caller,
    request: ListLeasesRequest,
) -> Result<ListLeasesResponse, ApiError> {
    // Leases are not under names: listing them needs observe on everything.
    caller.check(node, Verb::Observe, "")?;
    let limit = match request.limit as usize {
        0 => limits::LIST_LEASES_MAX,
        n => n.min(limits::LIST_LEASES_MAX),
    };
    if !request.stale {
        node.read_barrier().await?;
    }
    let (leases, truncated, revision) = node.state.read(|state| {
        let mut live = state.leases();
        let leases: Vec<_> = live
            .by_ref()
            .take(limit)
            .map(|lease| lease_to_wire(node, state, lease))
            .collect();
        (leases, live.next().is_some(), state.revision())
    });
    Ok(ListLeasesResponse {
        header: node.header(revision),
        leases,
        truncated,
    })
}

//! `Lock.List`: the locks under a prefix, at most [`limits::LIST_LOCKS_MAX`],
//! after a read barrier unless the request asks for a stale read.

use super::convert::lock_to_wire;
use super::{check_request_size, ApiError, Node};
use leasehold_core::limits;
use leasehold_proto::v1::{ListLocksRequest, ListLocksResponse};

/// Lists locks.
pub async fn list(node: &Node, request: ListLocksRequest) -> Result<ListLocksResponse, ApiError> {
    check_request_size(&request)?;
    let limit = match request.limit as usize {
        0 => limits::LIST_LOCKS_MAX,
        n => n.min(limits::LIST_LOCKS_MAX),
    };
    // A stale read answers from this node's applied state: may be behind.
    if !request.stale {
        node.read_barrier().await?;
    }
    let (locks, truncated, revision) = node.state.read(|state| {
        let mut matching = state.locks_with_prefix(&request.prefix);
        let locks: Vec<_> = matching
            .by_ref()
            .take(limit)
            .map(|lock| lock_to_wire(node, state, lock))
            .collect();
        (locks, matching.next().is_some(), state.revision())
    });
    Ok(ListLocksResponse {
        header: node.header(revision),
        locks,
        truncated,
    })
}

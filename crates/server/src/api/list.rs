//! `Lock.List`: the locks under a prefix, at most [`limits::LIST_LOCKS_MAX`],
//! after a read barrier unless the request asks for a stale read.

use super::convert::lock_to_wire;
use super::{check_request_size, ApiError, Node};
use crate::auth::Caller;
use leasehold_core::auth::Verb;
use leasehold_core::limits;
use leasehold_proto::v1::{ListLocksRequest, ListLocksResponse};

/// Lists locks.
pub async fn list(
    node: &Node,
    caller: &Caller,
    request: ListLocksRequest,
) -> Result<ListLocksResponse, ApiError> {
    check_request_size(&request)?;
    // Listing under a prefix needs observe on that prefix (all: on "").
    caller.check(node, Verb::Observe, &request.prefix)?;
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

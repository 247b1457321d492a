//! `Lock.List`: the locks, semaphores and read-write locks under a prefix,
//! in name order, at most [`limits::LIST_LOCKS_MAX`], after a read barrier
//! unless the request asks for a stale read.

use super::convert::{lock_to_wire, pool_to_wire};
use super::{check_request_size, ApiError, Node};
use crate::auth::Caller;
use leasehold_core::auth::Verb;
use leasehold_core::{limits, LockName, LockView, PoolView, State};
use leasehold_proto::v1::{ListLocksRequest, ListLocksResponse, LockInfo};

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
        let (locks, truncated) = under_prefix(node, state, &request.prefix, limit);
        (locks, truncated, state.revision())
    });
    Ok(ListLocksResponse {
        header: node.header(revision),
        locks,
        truncated,
    })
}

/// The locks, semaphores and read-write locks whose names start with
/// `prefix`, in name order, at most `limit`, as the wire shows them; and
/// whether more matched. Shared by `Lock.List` and the live page.
pub fn under_prefix(
    node: &Node,
    state: &State,
    prefix: &str,
    limit: usize,
) -> (Vec<LockInfo>, bool) {
    // Locks and pools never share a name; each comes in name order.
    let locks = state.locks_with_prefix(prefix).take(limit + 1);
    let pools = state.pools_with_prefix(prefix).take(limit + 1);
    let mut listed: Vec<Listed> = locks
        .map(Listed::Lock)
        .chain(pools.map(Listed::Pool))
        .collect();
    listed.sort_by(|a, b| a.name().cmp(b.name()));
    let truncated = listed.len() > limit;
    listed.truncate(limit);
    let wire = listed.into_iter().map(|listed| match listed {
        Listed::Lock(lock) => lock_to_wire(node, state, lock),
        Listed::Pool(pool) => pool_to_wire(node, state, pool),
    });
    (wire.collect(), truncated)
}

/// A name under the prefix: a lock, or a semaphore or read-write lock.
enum Listed<'a> {
    Lock(LockView<'a>),
    Pool(PoolView<'a>),
}

impl Listed<'_> {
    fn name(&self) -> &LockName {
        match self {
            Listed::Lock(lock) => lock.name,
            Listed::Pool(pool) => pool.name,
        }
    }
}

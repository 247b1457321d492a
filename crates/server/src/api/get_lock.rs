//! `Lock.Get`: one lock, semaphore or read-write lock, after a read
//! barrier unless the request asks for a stale read; a name that does not
//! exist is answered with the names that look like it.

use super::convert::{lock_to_wire, pool_to_wire};
use super::{ApiError, Node};
use crate::auth::Caller;
use leasehold_core::auth::Verb;
use leasehold_core::{LockError, LockName};
use leasehold_proto::v1::{GetLockRequest, GetLockResponse};

/// Reads one lock.
pub async fn get_lock(
    node: &Node,
    caller: &Caller,
    request: GetLockRequest,
) -> Result<GetLockResponse, ApiError> {
    let name = LockName::parse(&request.name)?;
    caller.check(node, Verb::Observe, name.as_str())?;
    // A stale read answers from this node's applied state: may be behind.
    if !request.stale {
        node.read_barrier().await?;
    }
    let found = node.state.read(|state| {
        let lock = state
            .lock(&name)
            .map(|lock| lock_to_wire(node, state, lock));
        let pool = || {
            state
                .pool(&name)
                .map(|pool| pool_to_wire(node, state, pool))
        };
        (lock.or_else(pool), state.revision())
    });
    match found {
        (Some(lock), revision) => Ok(GetLockResponse {
            header: node.header(revision),
            lock: Some(lock),
        }),
        (None, _) => {
            let nearby = node.state.read(|state| state.nearby_names(&name));
            Err(LockError::NoSuchLock { name, nearby }.into())
        }
    }
}

//! `FencedStore.Get`: reads one key of the fenced store from this node's
//! applied state, after a read barrier unless the request asks for a stale
//! read.

use super::{check_request_size, ApiError, Node};
use crate::auth::Caller;
use leasehold_core::auth::Verb;
use leasehold_core::FencedKey;
use leasehold_proto::v1::{FencedGetRequest, FencedGetResponse};

/// Reads one key.
pub async fn fenced_get(
    node: &Node,
    caller: &Caller,
    request: FencedGetRequest,
) -> Result<FencedGetResponse, ApiError> {
    check_request_size(&request)?;
    let key = FencedKey::parse(&request.key)?;
    // Keys are named like locks, and permissions apply to them alike.
    caller.check(node, Verb::Observe, key.as_str())?;
    // A stale read answers from this node's applied state: may be behind.
    if !request.stale {
        node.read_barrier().await?;
    }
    Ok(node.state.read(|state| {
        let header = node.header(state.revision());
        match state.fenced_get(&key) {
            Some(entry) => FencedGetResponse {
                header,
                key: key.to_string(),
                value: entry.value.clone(),
                token: entry.token.0,
                lock: entry.lock.to_string(),
                found: true,
            },
            None => FencedGetResponse {
                header,
                key: key.to_string(),
                ..Default::default()
            },
        }
    }))
}

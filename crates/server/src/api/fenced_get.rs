//! `FencedStore.Get`: reads one key of the fenced store from this node's
//! applied state, after a read barrier unless the request asks for a stale
//! read.

use super::{check_request_size, ApiError, Node};
use leasehold_core::FencedKey;
use leasehold_proto::v1::{FencedGetRequest, FencedGetResponse};

/// Reads one key.
pub async fn fenced_get(
    node: &Node,
    request: FencedGetRequest,
) -> Result<FencedGetResponse, ApiError> {
    check_request_size(&request)?;
    let key = FencedKey::parse(&request.key)?;
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

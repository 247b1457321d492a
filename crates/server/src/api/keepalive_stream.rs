//! The bidirectional keep-alive stream: the client's hot path for renewals.
//! Each renewal is acknowledged only after it is committed; a definite
//! failure comes back as a response with `error` set, and the stream stays
//! open.

use super::keep_alive::keep_alive;
use super::stream::{answering, AnswerStream};
use super::Node;
use crate::auth::Caller;
use leasehold_proto::v1::{ErrorDetail, KeepAliveRequest, KeepAliveResponse};
use std::sync::Arc;
use tonic::Streaming;

/// Serves a keep-alive stream for `caller` (authenticated at open; each
/// renewal re-checks its bearer token, so a revoked one stops renewing).
pub fn serve(
    node: Arc<Node>,
    caller: Caller,
    requests: Streaming<KeepAliveRequest>,
) -> AnswerStream<KeepAliveResponse> {
    let caller = Arc::new(caller);
    answering(requests, move |request| {
        let (node, caller) = (node.clone(), caller.clone());
        async move { answer(&node, &caller, request).await }
    })
}

async fn answer(node: &Node, caller: &Caller, request: KeepAliveRequest) -> KeepAliveResponse {
    let renewed = match caller.still_authenticated(node) {
        Ok(()) => keep_alive(node, caller, &request).await,
        Err(error) => Err(error),
    };
    match renewed {
        Ok(response) => response,
        Err(error) => KeepAliveResponse {
            header: node.header(node.state.read(|state| state.revision())),
            lease: request.lease,
            ttl_ms: 0,
            seq: request.seq,
            error: Some(ErrorDetail::from(error)),
            holdings: None,
        },
    }
}

//! The bidirectional keep-alive stream: the client's hot path for renewals.
//! Each renewal is acknowledged only after it is committed; a definite
//! failure comes back as a response with `error` set, and the stream stays
//! open.

use super::keep_alive::keep_alive;
use super::stream::{spawn_answering, AnswerStream};
use super::Node;
use leasehold_proto::v1::{ErrorDetail, KeepAliveRequest, KeepAliveResponse};
use std::sync::Arc;
use tonic::Streaming;

/// Serves a keep-alive stream.
pub fn spawn(
    node: Arc<Node>,
    requests: Streaming<KeepAliveRequest>,
) -> AnswerStream<KeepAliveResponse> {
    spawn_answering(requests, move |request| {
        let node = node.clone();
        async move { answer(&node, request).await }
    })
}

async fn answer(node: &Node, request: KeepAliveRequest) -> KeepAliveResponse {
    match keep_alive(node, &request).await {
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

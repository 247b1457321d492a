//! The bidirectional keep-alive stream: the client's hot path. Requests are
//! proposed as they arrive (several in flight per stream, each acknowledged
//! only after its renewal is committed), and answered by `seq`. A definite
//! failure comes back as a response with `error` set; the stream stays open.

use super::lease::keep_alive;
use super::{ApiError, Node};
use futures::stream::{FuturesUnordered, StreamExt};
use leasehold_proto::v1::{ErrorDetail, KeepAliveRequest, KeepAliveResponse};
use prost::Message;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};
use tokio::sync::mpsc;
use tonic::{Status, Streaming};

/// Renewals in flight on one stream, at most; beyond it the stream stops
/// reading requests until one completes (backpressure, not an error).
pub const IN_FLIGHT_PER_STREAM_MAX: usize = 256;

/// The response half of a keep-alive stream.
pub struct KeepAliveStream {
    responses: mpsc::Receiver<Result<KeepAliveResponse, Status>>,
}

impl KeepAliveStream {
    /// Serves `requests` on a task of its own.
    pub fn spawn(node: Arc<Node>, requests: Streaming<KeepAliveRequest>) -> KeepAliveStream {
        let (sender, responses) = mpsc::channel(IN_FLIGHT_PER_STREAM_MAX);
        tokio::spawn(serve(node, requests, sender));
        KeepAliveStream { responses }
    }
}

impl futures::Stream for KeepAliveStream {
    type Item = Result<KeepAliveResponse, Status>;

    fn poll_next(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Self::Item>> {
        self.responses.poll_recv(cx)
    }
}

async fn serve(
    node: Arc<Node>,
    mut requests: Streaming<KeepAliveRequest>,
    sender: mpsc::Sender<Result<KeepAliveResponse, Status>>,
) {
    let mut in_flight = FuturesUnordered::new();
    let mut open = true;
    while open || !in_flight.is_empty() {
        tokio::select! {
            next = requests.next(), if open && in_flight.len() < IN_FLIGHT_PER_STREAM_MAX => {
                match next {
                    Some(Ok(request)) => {
                        let node = node.clone();
                        in_flight.push(async move { answer(&node, request).await });
                    }
                    Some(Err(_)) | None => open = false,
                }
            }
            Some(response) = in_flight.next(), if !in_flight.is_empty() => {
                if sender.send(Ok(response)).await.is_err() {
                    return;
                }
            }
        }
    }
}

async fn answer(node: &Node, request: KeepAliveRequest) -> KeepAliveResponse {
    match keep_alive(node, &request).await {
        Ok(response) => response,
        Err(error) => KeepAliveResponse {
            header: node.header(node.state.read(|state| state.revision())),
            lease: request.lease,
            ttl_ms: 0,
            seq: request.seq,
            error: Some(error_detail(error)),
        },
    }
}

fn error_detail(error: ApiError) -> ErrorDetail {
    let status = Status::from(error);
    ErrorDetail::decode(status.details()).unwrap_or_default()
}

//! Serving a bidirectional stream of requests: each request is answered as
//! soon as its own work completes (several in flight per stream, bounded),
//! and answers are matched to requests by the `seq` the client chose. Used
//! by `Lease.KeepAliveStream` and `Lock.Session`.
//!
//! When the client closes the stream, work in flight is finished and
//! answered; when the client goes away, the work is dropped, which runs its
//! guards (a queued acquire leaves its queue).

use futures::stream::{FuturesUnordered, StreamExt};
use std::future::Future;
use std::pin::Pin;
use std::task::{Context, Poll};
use tokio::sync::mpsc;
use tonic::{Status, Streaming};

/// Requests in flight on one stream, at most; beyond it the stream stops
/// reading requests until one completes (backpressure, not an error).
pub const IN_FLIGHT_PER_STREAM_MAX: usize = 256;

/// The response half of a served stream.
pub struct AnswerStream<T> {
    responses: mpsc::Receiver<Result<T, Status>>,
}

impl<T> futures::Stream for AnswerStream<T> {
    type Item = Result<T, Status>;

    fn poll_next(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Self::Item>> {
        self.responses.poll_recv(cx)
    }
}

/// Serves `requests` on a task of its own, answering each with `answer`.
pub fn spawn_answering<Req, Resp, F, Fut>(requests: Streaming<Req>, answer: F) -> AnswerStream<Resp>
where
    Req: Send + 'static,
    Resp: Send + 'static,
    F: Fn(Req) -> Fut + Send + 'static,
    Fut: Future<Output = Resp> + Send + 'static,
{
    let (sender, responses) = mpsc::channel(IN_FLIGHT_PER_STREAM_MAX);
    tokio::spawn(serve(requests, answer, sender));
    AnswerStream { responses }
}

async fn serve<Req, Resp, F, Fut>(
    mut requests: Streaming<Req>,
    answer: F,
    sender: mpsc::Sender<Result<Resp, Status>>,
) where
    F: Fn(Req) -> Fut,
    Fut: Future<Output = Resp>,
{
    let mut in_flight = FuturesUnordered::new();
    let mut open = true;
    while open || !in_flight.is_empty() {
        tokio::select! {
            next = requests.next(), if open && in_flight.len() < IN_FLIGHT_PER_STREAM_MAX => {
                match next {
                    Some(Ok(request)) => in_flight.push(answer(request)),
                    Some(Err(_)) | None => open = false,
                }
            }
            Some(response) = in_flight.next(), if !in_flight.is_empty() => {
                if sender.send(Ok(response)).await.is_err() {
                    return;
                }
            }
            // The client went away: drop the work in flight.
            () = sender.closed() => return,
        }
    }
}

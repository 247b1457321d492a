//! Serving a bidirectional stream of requests: each request is answered as
//! soon as its own work completes (several in flight per stream, bounded),
//! and answers are matched to requests by the `seq` the client chose. Used
//! by `Lease.KeepAliveStream` and `Lock.Session`.
//!
//! When the client closes the stream, work in flight is finished and
//! answered; when the client goes away, the work is dropped, which runs its
//! guards (a queued acquire leaves its queue).
//!
//! **Why answers and work are boxed.** A stream lives as long as its
//! lease, so what it holds while idle is multiplied by every lease kept:
//! tokio's channel allocates its first block of 32 slots when created, and
//! `FuturesUnordered` a stub slot as large as one piece of work. With
//! answers and work inline that was about 14 KB per idle stream (a heap
//! profile of 5,000 kept leases: 11.5 KB of channel block, 2.7 KB of stub);
//! boxed, a slot is a pointer, at the price of one small allocation per
//! answer.

use futures::future::BoxFuture;
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
    responses: mpsc::Receiver<Box<T>>,
}

impl<T> futures::Stream for AnswerStream<T> {
    type Item = Result<T, Status>;

    fn poll_next(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Self::Item>> {
        self.responses
            .poll_recv(cx)
            .map(|answer| answer.map(|answer| Ok(*answer)))
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
    let answer = move |request| -> BoxFuture<'static, Resp> { Box::pin(answer(request)) };
    tokio::spawn(serve(requests, answer, sender));
    AnswerStream { responses }
}

async fn serve<Req, Resp, F>(
    mut requests: Streaming<Req>,
    answer: F,
    sender: mpsc::Sender<Box<Resp>>,
) where
    F: Fn(Req) -> BoxFuture<'static, Resp>,
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
                if sender.send(Box::new(response)).await.is_err() {
                    return;
                }
            }
            // The client went away: drop the work in flight.
            () = sender.closed() => return,
        }
    }
}

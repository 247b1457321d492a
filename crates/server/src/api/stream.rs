//! Serving a bidirectional stream of requests: each request is answered as
//! soon as its own work completes (several in flight per stream, bounded),
//! and answers are matched to requests by the `seq` the client chose. Used
//! by `Lease.KeepAliveStream` and `Lock.Session`.
//!
//! **Why the response stream does the work.** The [`AnswerStream`] handed
//! to tonic reads the requests and polls their work itself, on the task
//! hyper runs for the HTTP/2 stream, instead of a task of its own feeding a
//! channel: an answer then goes from the work that produced it straight
//! into the stream's encoder, one task wake-up and one channel hop fewer
//! each way, and an idle stream holds no channel block (tokio's first block
//! of 32 slots was most of an idle stream's memory).
//!
//! When the client closes its half of the stream, work in flight is
//! finished and answered; when its half fails (a message that does not
//! decode: `INVALID_ARGUMENT` naming its type), work in flight is answered
//! and the stream then ends with that status; when the client goes away, hyper drops the
//! response stream and with it the work, which runs its guards (a queued
//! acquire leaves its queue).
//!
//! **Why work is boxed.** A stream lives as long as its lease, so what it
//! holds while idle is multiplied by every lease kept, and
//! `FuturesUnordered` keeps a stub slot as large as one piece of work; boxed,
//! it is a pointer.

use futures::future::BoxFuture;
use futures::stream::{FuturesUnordered, Stream, StreamExt};
use std::future::Future;
use std::pin::Pin;
use std::task::{Context, Poll};
use tonic::{Status, Streaming};

/// Requests in flight on one stream, at most; beyond it the stream stops
/// reading requests until one completes (backpressure, not an error).
pub const IN_FLIGHT_PER_STREAM_MAX: usize = 256;

/// The response half of a served stream: polling it reads requests, starts
/// their work and yields each answer as its work completes.
pub struct AnswerStream<Resp> {
    answers: Pin<Box<dyn Stream<Item = Result<Resp, Status>> + Send>>,
}

impl<Resp> Stream for AnswerStream<Resp> {
    type Item = Result<Resp, Status>;

    fn poll_next(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Self::Item>> {
        self.answers.as_mut().poll_next(cx)
    }
}

/// Answers each of `requests` with `answer`, as the returned stream is
/// polled.
pub fn answering<Req, Resp, F, Fut>(requests: Streaming<Req>, answer: F) -> AnswerStream<Resp>
where
    Req: Send + 'static,
    Resp: Send + 'static,
    F: Fn(Req) -> Fut + Send + Unpin + 'static,
    Fut: Future<Output = Resp> + Send + 'static,
{
    let answer = move |request| -> BoxFuture<'static, Resp> { Box::pin(answer(request)) };
    let answers = Answers {
        requests,
        answer,
        in_flight: FuturesUnordered::new(),
        open: true,
        failed: None,
    };
    AnswerStream {
        answers: Box::pin(answers),
    }
}

/// The state behind an [`AnswerStream`].
struct Answers<Req, Resp, F> {
    requests: Streaming<Req>,
    answer: F,
    in_flight: FuturesUnordered<BoxFuture<'static, Resp>>,
    /// False once the client closed its half (or it failed): no more
    /// requests, but the work in flight is still answered.
    open: bool,
    /// Why the client's half failed, told once the work in flight is
    /// answered.
    failed: Option<Status>,
}

impl<Req, Resp, F> Answers<Req, Resp, F>
where
    F: Fn(Req) -> BoxFuture<'static, Resp>,
{
    /// Starts the work of every request already arrived, up to the bound.
    fn take_requests(&mut self, cx: &mut Context<'_>) {
        while self.open && self.in_flight.len() < IN_FLIGHT_PER_STREAM_MAX {
            match self.requests.poll_next_unpin(cx) {
                Poll::Ready(Some(Ok(request))) => self.in_flight.push((self.answer)(request)),
                Poll::Ready(Some(Err(status))) => {
                    self.open = false;
                    self.failed = Some(status);
                }
                Poll::Ready(None) => self.open = false,
                Poll::Pending => return,
            }
        }
    }
}

impl<Req, Resp, F> Stream for Answers<Req, Resp, F>
where
    F: Fn(Req) -> BoxFuture<'static, Resp> + Unpin,
{
    type Item = Result<Resp, Status>;

    fn poll_next(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Self::Item>> {
        let this = &mut *self;
        this.take_requests(cx);
        match this.in_flight.poll_next_unpin(cx) {
            Poll::Ready(Some(answer)) => Poll::Ready(Some(Ok(answer))),
            // Nothing in flight: done once the client closed its half,
            // with the reason its half failed, if it did.
            Poll::Ready(None) if !this.open => Poll::Ready(this.failed.take().map(Err)),
            Poll::Ready(None) | Poll::Pending => Poll::Pending,
        }
    }
}

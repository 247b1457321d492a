//! A request body that must keep pace: a sender that starts a message and
//! then trickles it (slowloris) holds a call, its buffers and its place in
//! the bounds for as long as it likes. Here each gRPC message must arrive
//! whole within [`limits::REQUEST_RECEIVE_MS_MAX`] of its first byte; a
//! unary call's one message, and any other request's whole body (a page),
//! within that of the call's start. A body past its deadline fails with
//! `DEADLINE_EXCEEDED` saying so (tonic hands the status to the caller),
//! and the call ends. A stream that sends nothing between messages is
//! idle, not slow: that is allowed. A body that is not gRPC (a page's)
//! is also bounded in size, by `REQUEST_BYTES_MAX` like a gRPC message.
//!

use axum::body::{Body, Bytes};
use http_body::{Frame, SizeHint};
use leasehold_core::limits;
use prost::bytes::Buf;
use std::future::Future;
use std::pin::Pin;
use std::task::{Context, Poll};
use std::time::Duration;
use tokio::time::{Instant, Sleep};

/// Bytes before each gRPC message: a compression flag and a `u32` length.
const PREFIX: usize = 5;

/// How a request's body is paced.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Pace {
    /// gRPC messages, the first due from the start (a unary call).
    First,
    /// gRPC messages, each due once it starts (a client stream).
    EachMessage,
    /// The whole body, due from the start (HTTP).
    Whole,
}

/// A request body with a deadline on each message.
pub struct Paced {
    body: Body,
    pace: Pace,
    limit: Duration,
    /// Where the message being received stands.
    message: Message,
    /// Set while a message (or the whole body) is due.
    due: Option<Pin<Box<Sleep>>>,
    /// Bytes a whole (non-gRPC) body may still bring.
    bytes_left: usize,
}

/// Progress through the current message: its prefix, then its payload.
#[derive(Default)]
struct Message {
    prefix: [u8; PREFIX],
    prefix_have: usize,
    payload_left: usize,
}

impl Message {
    /// Whether part of a message has arrived and the rest has not.
    fn partial(&self) -> bool {
        self.prefix_have > 0
    }

    /// Takes `bytes`; returns how many messages completed.
    fn take(&mut self, mut bytes: &[u8]) -> usize {
        let mut completed = 0;
        while !bytes.is_empty() {
            if self.prefix_have < PREFIX {
                let n = (PREFIX - self.prefix_have).min(bytes.len());
                self.prefix[self.prefix_have..self.prefix_have + n].copy_from_slice(&bytes[..n]);
                self.prefix_have += n;
                bytes = &bytes[n..];
                if self.prefix_have == PREFIX {
                    let len = &self.prefix[1..];
                    self.payload_left =
                        u32::from_be_bytes([len[0], len[1], len[2], len[3]]) as usize;
                }
            } else {
                let n = self.payload_left.min(bytes.len());
                self.payload_left -= n;
                bytes = &bytes[n..];
            }
            if self.prefix_have == PREFIX && self.payload_left == 0 {
                *self = Message::default();
                completed += 1;
            }
        }
        completed
    }
}

impl Paced {
    /// `body`, paced as `pace` says, each part due within `limit`.
    pub fn new(body: Body, pace: Pace, limit: Duration) -> Paced {
        let due = match pace {
            Pace::First | Pace::Whole => Some(Box::pin(tokio::time::sleep(limit))),
            Pace::EachMessage => None,
        };
        Paced {
            body,
            pace,
            limit,
            message: Message::default(),
            due,
            bytes_left: limits::REQUEST_BYTES_MAX,
        }
    }

    /// Moves the deadline along after `data` arrived; `Err` for a whole
    /// body past its size.
    fn received(&mut self, data: &Bytes) -> Result<(), axum::BoxError> {
        if self.pace == Pace::Whole {
            self.bytes_left = self.bytes_left.checked_sub(data.len()).ok_or_else(|| {
                format!(
                    "the request body is larger than REQUEST_BYTES_MAX ({} bytes)",
                    limits::REQUEST_BYTES_MAX
                )
            })?;
            return Ok(());
        }
        let started = !self.message.partial();
        let completed = self.message.take(data.chunk());
        if self.message.partial() {
            if self.pace == Pace::EachMessage && (started || completed > 0) {
                let deadline = Instant::now() + self.limit;
                self.due = Some(Box::pin(tokio::time::sleep_until(deadline)));
            }
        } else if completed > 0 {
            // Between messages: a stream may be idle.
            self.due = None;
            if self.pace == Pace::First {
                self.pace = Pace::EachMessage;
            }
        }
        Ok(())
    }

    fn too_slow(&self) -> tonic::Status {
        metrics::counter!("leasehold_calls_refused_total", "cause" => "request_receive_deadline")
            .increment(1);
        tonic::Status::deadline_exceeded(format!(
            "the request did not arrive within REQUEST_RECEIVE_MS_MAX ({} ms) of its start: \
             send each message whole, without pausing inside it",
            self.limit.as_millis()
        ))
    }
}

impl http_body::Body for Paced {
    type Data = Bytes;
    type Error = axum::BoxError;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, Self::Error>>> {
        let this = &mut *self;
        match Pin::new(&mut this.body).poll_frame(cx) {
            Poll::Ready(Some(Ok(frame))) => {
                match frame.data_ref().map(|data| this.received(data)) {
                    Some(Err(too_large)) => Poll::Ready(Some(Err(too_large))),
                    _ => Poll::Ready(Some(Ok(frame))),
                }
            }
            Poll::Ready(Some(Err(error))) => Poll::Ready(Some(Err(error.into()))),
            Poll::Ready(None) => {
                this.due = None;
                Poll::Ready(None)
            }
            Poll::Pending => match this.due.as_mut().map(|due| due.as_mut().poll(cx)) {
                Some(Poll::Ready(())) => {
                    this.due = None;
                    Poll::Ready(Some(Err(Box::new(this.too_slow()))))
                }
                _ => Poll::Pending,
            },
        }
    }

    fn is_end_stream(&self) -> bool {
        self.body.is_end_stream()
    }

    fn size_hint(&self) -> SizeHint {
        self.body.size_hint()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn messages_are_counted_across_chunks() {
        let mut message = Message::default();
        // A 3-byte message, then the first 2 bytes of a 4-byte one.
        let bytes = [0, 0, 0, 0, 3, 1, 2, 3, 0, 0, 0, 0, 4, 9, 9];
        assert_eq!(message.take(&bytes[..2]), 0);
        assert!(message.partial());
        assert_eq!(message.take(&bytes[2..8]), 1);
        assert!(!message.partial());
        assert_eq!(message.take(&bytes[8..]), 0);
        assert!(message.partial());
        assert_eq!(message.take(&[9, 9]), 1);
        assert!(!message.partial());
        assert_eq!(message.take(&[0, 0, 0, 0, 0]), 1, "an empty message");
    }

    /// `chunks`, then nothing more, ever (a sender that went quiet).
    fn quiet_after(chunks: &[&'static [u8]]) -> Body {
        use futures::StreamExt as _;
        let chunks: Vec<Result<Bytes, std::io::Error>> =
            chunks.iter().map(|c| Ok(Bytes::from_static(c))).collect();
        Body::from_stream(futures::stream::iter(chunks).chain(futures::stream::pending()))
    }

    async fn next(paced: &mut Paced) -> Option<Result<Frame<Bytes>, axum::BoxError>> {
        use http_body::Body as _;
        std::future::poll_fn(|cx| Pin::new(&mut *paced).poll_frame(cx)).await
    }

    #[tokio::test(start_paused = true)]
    async fn a_message_that_stalls_midway_is_cut_at_its_deadline() {
        let limit = Duration::from_secs(10);
        let mut paced = Paced::new(
            quiet_after(&[&[0, 0, 0, 0, 9, 1]]),
            Pace::EachMessage,
            limit,
        );
        assert!(next(&mut paced).await.unwrap().is_ok());
        let started = Instant::now();
        let cut = next(&mut paced).await.unwrap().unwrap_err();
        assert_eq!(started.elapsed(), limit);
        let status = cut.downcast::<tonic::Status>().expect("a status");
        assert_eq!(status.code(), tonic::Code::DeadlineExceeded);
        assert!(status
            .message()
            .contains("REQUEST_RECEIVE_MS_MAX (10000 ms)"));
    }

    #[tokio::test(start_paused = true)]
    async fn a_stream_quiet_between_messages_is_not_cut_but_a_unary_call_is() {
        let limit = Duration::from_secs(10);
        let whole = &[0, 0, 0, 0, 1, 7][..];
        let mut stream = Paced::new(quiet_after(&[whole]), Pace::EachMessage, limit);
        assert!(next(&mut stream).await.unwrap().is_ok());
        let waited = tokio::time::timeout(limit * 10, next(&mut stream)).await;
        assert!(waited.is_err(), "an idle stream is left alone");

        let mut unary = Paced::new(quiet_after(&[]), Pace::First, limit);
        let cut = next(&mut unary).await.unwrap().unwrap_err();
        assert!(cut.downcast::<tonic::Status>().is_ok());
    }
}

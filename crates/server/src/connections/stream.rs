//! An admitted connection: its socket, its place in the bounds, and the
//! two deadlines that keep an idle socket from holding a slot.
//!
//! - **Handshake**: the first [`PREFACE_BYTES`] bytes (the HTTP/2 preface;
//!   an HTTP/1 request line and its `Host` header are longer) must arrive
//!   within [`Deadlines::handshake`] of the accept. A socket that sends
//!   nothing, as a port scanner's or a leaking client's does, is closed.
//! - **Idle**: a connection with no call or stream open that has received
//!   nothing (not a request, not a ping) for [`Deadlines::idle`] is
//!   closed. An open stream, such as a watch that only receives, keeps its
//!   connection.
//!
//! Both are enforced where hyper reads the socket: a read that would wait
//! past a deadline fails instead, and hyper closes the connection. No
//! task or timer per connection is added beyond the one sleep here.

use super::principals::PrincipalSlot;
use super::registry::{Activity, Connection};
use leasehold_proto::tls_mismatch::H2_PREFACE;
use std::future::Future;
use std::io;
use std::pin::Pin;
use std::task::{Context, Poll};
use std::time::Duration;
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::net::TcpStream;
use tokio::sync::OwnedSemaphorePermit;
use tokio::time::{Instant, Sleep};
use tonic::transport::server::{Connected, TcpConnectInfo};

/// Bytes a connection must send within the handshake deadline.
pub const PREFACE_BYTES: usize = H2_PREFACE.len();

/// How long a connection may take to start, and stay idle.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Deadlines {
    /// From accept to the first [`PREFACE_BYTES`] bytes.
    pub handshake: Duration,
    /// With nothing open and nothing received.
    pub idle: Duration,
}

/// Why a connection was closed by a deadline (the metric's `cause`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Expired {
    Handshake,
    Idle,
}

impl Expired {
    fn cause(self) -> &'static str {
        match self {
            Expired::Handshake => "handshake_deadline",
            Expired::Idle => "idle",
        }
    }
}

/// An admitted connection; its slots come back when it closes.
pub struct LimitedStream {
    stream: TcpStream,
    _permit: OwnedSemaphorePermit,
    connection: Connection,
    watch: Watch,
    /// Its place in its certificate principal's share (TLS only).
    principal: Option<PrincipalSlot>,
}

impl LimitedStream {
    pub(super) fn new(
        stream: TcpStream,
        permit: OwnedSemaphorePermit,
        connection: Connection,
        deadlines: Deadlines,
    ) -> LimitedStream {
        LimitedStream {
            stream,
            _permit: permit,
            connection,
            watch: Watch::new(deadlines),
            principal: None,
        }
    }

    /// Holds `slot` (the connection's place in its principal's share)
    /// until the connection closes.
    pub fn hold(&mut self, slot: PrincipalSlot) {
        self.principal = Some(slot);
    }

    /// Reads the first bytes without consuming them (how the TLS acceptor
    /// tells a ClientHello from plaintext).
    pub async fn peek(&self, buf: &mut [u8]) -> io::Result<usize> {
        self.stream.peek(buf).await
    }

    /// The client's address, if the socket still knows it.
    pub fn peer_addr(&self) -> Option<std::net::SocketAddr> {
        self.stream.peer_addr().ok()
    }

    /// The address the client reached this server at.
    pub fn local_addr(&self) -> Option<std::net::SocketAddr> {
        self.stream.local_addr().ok()
    }
}

/// The deadlines' clock: one sleep, re-armed as the connection moves.
struct Watch {
    deadlines: Deadlines,
    /// Bytes of the preface still to come.
    preface_left: usize,
    /// When something was last received, or a call last seen open.
    last_activity: Instant,
    timer: Pin<Box<Sleep>>,
}

impl Watch {
    fn new(deadlines: Deadlines) -> Watch {
        Watch {
            deadlines,
            preface_left: PREFACE_BYTES,
            last_activity: Instant::now(),
            timer: Box::pin(tokio::time::sleep(deadlines.handshake)),
        }
    }

    fn received(&mut self, bytes: usize) {
        self.preface_left = self.preface_left.saturating_sub(bytes);
        self.last_activity = Instant::now();
    }

    /// Polls the deadline: `Some` once the connection is past one.
    fn poll_expired(&mut self, cx: &mut Context<'_>, activity: &Activity) -> Option<Expired> {
        loop {
            if self.timer.as_mut().poll(cx).is_pending() {
                return None;
            }
            if self.preface_left > 0 {
                return Some(Expired::Handshake);
            }
            let now = Instant::now();
            if activity.busy() {
                self.last_activity = now;
            }
            let idle_until = self.last_activity + self.deadlines.idle;
            if idle_until <= now {
                return Some(Expired::Idle);
            }
            self.timer.as_mut().reset(idle_until);
        }
    }
}

impl Connected for LimitedStream {
    type ConnectInfo = TcpConnectInfo;

    fn connect_info(&self) -> TcpConnectInfo {
        self.stream.connect_info()
    }
}

impl AsyncRead for LimitedStream {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        let this = &mut *self;
        let before = buf.filled().len();
        match Pin::new(&mut this.stream).poll_read(cx, buf) {
            Poll::Ready(Ok(())) => {
                this.watch.received(buf.filled().len() - before);
                Poll::Ready(Ok(()))
            }
            Poll::Ready(Err(error)) => Poll::Ready(Err(error)),
            Poll::Pending => match this.watch.poll_expired(cx, &this.connection.activity) {
                None => Poll::Pending,
                Some(expired) => {
                    metrics::counter!("leasehold_connections_closed_total", "cause" => expired.cause())
                        .increment(1);
                    tracing::debug!(peer = ?this.peer_addr(), cause = expired.cause(), "connection closed");
                    Poll::Ready(Err(io::Error::new(
                        io::ErrorKind::TimedOut,
                        format!("connection closed: {}", expired.cause()),
                    )))
                }
            },
        }
    }
}

impl AsyncWrite for LimitedStream {
    fn poll_write(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        Pin::new(&mut self.stream).poll_write(cx, buf)
    }

    fn poll_write_vectored(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[io::IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        Pin::new(&mut self.stream).poll_write_vectored(cx, bufs)
    }

    fn is_write_vectored(&self) -> bool {
        self.stream.is_write_vectored()
    }

    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.stream).poll_flush(cx)
    }

    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.stream).poll_shutdown(cx)
    }
}

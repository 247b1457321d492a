//! The bound on open client connections ([`limits::CONNECTIONS_MAX`]). Each
//! accepted socket carries a permit; past the bound a new connection is
//! closed at once (and counted), so a connection storm cannot exhaust the
//! server's file descriptors or memory while existing clients keep working.
//!
//! The bound is also kept [`FDS_RESERVED`] below the process's open-files
//! limit (`serve` raises its soft limit to the hard one first): otherwise
//! `accept` would fail with `EMFILE` before the bound is reached, and the
//! data directory's files, Raft peers and metrics scrapes would fail with
//! it.

use leasehold_core::limits;
use std::io;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::net::TcpStream;
use tokio::sync::{OwnedSemaphorePermit, Semaphore};
use tonic::transport::server::{Connected, TcpConnectInfo};

/// File descriptors kept out of the connection bound: the data directory's
/// files, connections to Raft peers, metrics scrapes, the process's own.
pub const FDS_RESERVED: usize = 256;

/// Hands out one permit per open connection.
#[derive(Clone)]
pub struct ConnectionLimit {
    permits: Arc<Semaphore>,
    /// The bound, for the refusal's log line.
    max: usize,
}

impl ConnectionLimit {
    /// At most `max` connections open at once.
    pub fn new(max: usize) -> ConnectionLimit {
        ConnectionLimit {
            permits: Arc::new(Semaphore::new(max)),
            max,
        }
    }

    /// The server's bound: [`limits::CONNECTIONS_MAX`], or less when the
    /// open-files limit leaves less room (logged, with what to raise).
    pub fn server_default() -> ConnectionLimit {
        let open_files = crate::open_files::soft_limit();
        let max = bound(limits::CONNECTIONS_MAX, open_files);
        if max < limits::CONNECTIONS_MAX {
            tracing::warn!(
                connections_max = max,
                open_files_limit = open_files,
                "client connections bounded below CONNECTIONS_MAX ({}) by the open-files \
                 limit; raise it (ulimit -n, LimitNOFILE=) to admit more",
                limits::CONNECTIONS_MAX
            );
        }
        ConnectionLimit::new(max)
    }

    /// Admits `stream` (with TCP_NODELAY set), or `None` when the bound is
    /// reached: the caller drops the stream, which closes it.
    pub fn admit(&self, stream: TcpStream) -> io::Result<Option<LimitedStream>> {
        let Ok(permit) = self.permits.clone().try_acquire_owned() else {
            metrics::counter!("leasehold_connections_refused_total").increment(1);
            tracing::warn!(
                limit = self.max,
                "connection refused: the bound on open connections is reached"
            );
            return Ok(None);
        };
        // Without TCP_NODELAY a small reply can sit ~40 ms behind Nagle's
        // algorithm and a delayed ACK.
        stream.set_nodelay(true)?;
        Ok(Some(LimitedStream {
            stream,
            _permit: permit,
        }))
    }
}

/// `max` connections, or fewer when `open_files` minus [`FDS_RESERVED`]
/// is smaller (at least one).
fn bound(max: usize, open_files: Option<u64>) -> usize {
    let Some(open_files) = open_files else {
        return max;
    };
    let room = usize::try_from(open_files).unwrap_or(usize::MAX);
    max.min(room.saturating_sub(FDS_RESERVED).max(1))
}

/// An admitted connection; its permit returns when it closes.
pub struct LimitedStream {
    stream: TcpStream,
    _permit: OwnedSemaphorePermit,
}

impl LimitedStream {
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
        Pin::new(&mut self.stream).poll_read(cx, buf)
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_bound_stays_below_the_open_files_limit() {
        assert_eq!(bound(16_384, None), 16_384);
        assert_eq!(bound(16_384, Some(1_048_576)), 16_384);
        assert_eq!(bound(16_384, Some(1_024)), 1_024 - FDS_RESERVED);
        assert_eq!(bound(16_384, Some(100)), 1, "always one");
    }

    #[tokio::test]
    async fn refuses_past_the_bound_and_frees_the_slot_on_close() {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        let limit = ConnectionLimit::new(1);
        let accept = || async {
            let (_client, server) = tokio::join!(TcpStream::connect(addr), listener.accept());
            server.unwrap().0
        };
        let first = limit.admit(accept().await).unwrap();
        assert!(first.is_some());
        assert!(
            limit.admit(accept().await).unwrap().is_none(),
            "over the bound"
        );
        drop(first);
        assert!(limit.admit(accept().await).unwrap().is_some(), "slot freed");
    }
}

//! The bound on open client connections ([`limits::CONNECTIONS_MAX`]). Each
//! accepted socket carries a permit; past the bound a new connection is
//! closed at once (and counted), so a connection storm cannot exhaust the
//! server's file descriptors or memory while existing clients keep working.

use leasehold_core::limits;
use std::io;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::net::TcpStream;
use tokio::sync::{OwnedSemaphorePermit, Semaphore};
use tonic::transport::server::{Connected, TcpConnectInfo};

/// Hands out one permit per open connection.
#[derive(Clone)]
pub struct ConnectionLimit {
    permits: Arc<Semaphore>,
}

impl ConnectionLimit {
    /// At most `max` connections open at once.
    pub fn new(max: usize) -> ConnectionLimit {
        ConnectionLimit {
            permits: Arc::new(Semaphore::new(max)),
        }
    }

    /// The server's bound, [`limits::CONNECTIONS_MAX`].
    pub fn server_default() -> ConnectionLimit {
        ConnectionLimit::new(limits::CONNECTIONS_MAX)
    }

    /// Admits `stream` (with TCP_NODELAY set), or `None` when the bound is
    /// reached: the caller drops the stream, which closes it.
    pub fn admit(&self, stream: TcpStream) -> io::Result<Option<LimitedStream>> {
        let Ok(permit) = self.permits.clone().try_acquire_owned() else {
            metrics::counter!("leasehold_connections_refused_total").increment(1);
            tracing::warn!(
                limit = limits::CONNECTIONS_MAX,
                "connection refused: CONNECTIONS_MAX open connections"
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

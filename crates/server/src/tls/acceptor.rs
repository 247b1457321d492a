//! The TLS accept loop in front of gRPC + HTTP. The loop only accepts and
//! admits sockets ([`ConnectionLimit`]); each handshake runs in its own task,
//! bounded by [`limits::TLS_HANDSHAKE_MS_MAX`], so one slow or silent client
//! cannot stall accepting. Finished handshakes are handed to the server in
//! the order they finish.
//!
//! A connection's first byte tells a TLS ClientHello (0x16) from plaintext.
//! A plaintext client gets, in plaintext, a sentence saying the server
//! speaks TLS: inside an HTTP/2 GOAWAY for a gRPC client (whose library
//! shows its debug data, where `leasehold-client` finds the sentence), as an
//! HTTP/1.1 400 for anything else (a browser, curl).

use super::Tls;
use crate::connections::{ConnectionLimit, LimitedStream};
use futures::Stream;
use leasehold_core::limits;
use leasehold_proto::tls_mismatch::{speaks_tls_sentence, H2_PREFACE};
use std::io;
use std::sync::Arc;
use std::time::Duration;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpListener;
use tokio::sync::mpsc;
use tokio_rustls::server::TlsStream;
use tokio_stream::wrappers::ReceiverStream;

/// A connection after its handshake.
pub type Accepted = TlsStream<LimitedStream>;

/// The first byte of a TLS record carrying a handshake message.
const TLS_HANDSHAKE_RECORD: u8 = 0x16;

/// How long a plaintext client is given to read the sentence and close.
const MISMATCH_LINGER: Duration = Duration::from_secs(1);

/// Handshakes finished but not yet taken by the server.
const ACCEPTED_QUEUE: usize = 64;

/// Accepts on `listener` until the returned stream is dropped, yielding each
/// connection whose TLS handshake (with the config `tls` has at that moment)
/// succeeded.
pub fn incoming(
    listener: TcpListener,
    limit: ConnectionLimit,
    tls: Arc<Tls>,
) -> impl Stream<Item = io::Result<Accepted>> {
    let (accepted, taken) = mpsc::channel(ACCEPTED_QUEUE);
    tokio::spawn(async move {
        loop {
            let stream = tokio::select! {
                () = accepted.closed() => return,
                stream = listener.accept() => stream,
            };
            let admitted = stream.and_then(|(stream, _)| limit.admit(stream));
            match admitted {
                Ok(Some(stream)) => {
                    tokio::spawn(handshake(stream, tls.clone(), accepted.clone()));
                }
                Ok(None) => {}
                // The server logs it and goes on (or stops, as it would
                // without TLS).
                Err(error) => {
                    if accepted.send(Err(error)).await.is_err() {
                        return;
                    }
                }
            }
        }
    });
    ReceiverStream::new(taken)
}

/// One connection's handshake, within the bound.
async fn handshake(
    stream: LimitedStream,
    tls: Arc<Tls>,
    accepted: mpsc::Sender<io::Result<Accepted>>,
) {
    let peer = stream.peer_addr();
    let bound = Duration::from_millis(limits::TLS_HANDSHAKE_MS_MAX);
    let outcome = tokio::time::timeout(bound, accept(stream, &tls)).await;
    let failure = match outcome {
        Ok(Ok(Some(stream))) => {
            let _ = accepted.send(Ok(stream)).await;
            return;
        }
        Ok(Ok(None)) => return,
        Ok(Err(error)) => error.to_string(),
        Err(_) => format!("no handshake within TLS_HANDSHAKE_MS_MAX ({bound:?})"),
    };
    metrics::counter!("leasehold_tls_handshake_failures_total").increment(1);
    tracing::info!(peer = ?peer, "TLS handshake failed: {failure}");
}

/// Tells TLS from plaintext by the first byte; a TLS client is handshaken,
/// a plaintext one is told to use TLS (`None`).
async fn accept(stream: LimitedStream, tls: &Tls) -> io::Result<Option<Accepted>> {
    let mut first = [0u8; 1];
    if stream.peek(&mut first).await? == 0 {
        return Ok(None);
    }
    if first[0] != TLS_HANDSHAKE_RECORD {
        metrics::counter!("leasehold_tls_plaintext_refused_total").increment(1);
        tell_plaintext_client(stream).await;
        return Ok(None);
    }
    let acceptor = tokio_rustls::TlsAcceptor::from(tls.current().server.clone());
    acceptor.accept(stream).await.map(Some)
}

/// Answers a plaintext client in its own protocol, then closes once it has
/// read the answer (or after [`MISMATCH_LINGER`]).
async fn tell_plaintext_client(mut stream: LimitedStream) {
    let Some(addr) = stream.local_addr() else {
        return;
    };
    let sentence = speaks_tls_sentence(addr);
    let mut start = [0u8; H2_PREFACE.len()];
    let read = stream.read_exact(&mut start).await;
    let answer = if read.is_ok() && start == *H2_PREFACE {
        // Answered once the client sent its request: a GOAWAY that comes
        // before it closes an idle connection, which the client reports as
        // a cancelled call, without the sentence.
        if first_request(&mut stream).await.is_err() {
            return;
        }
        goaway(&sentence)
    } else {
        http1_bad_request(&sentence)
    };
    if stream.write_all(&answer).await.is_err() || stream.flush().await.is_err() {
        return;
    }
    let mut drain = [0u8; 1024];
    let _ = tokio::time::timeout(MISMATCH_LINGER, async {
        while matches!(stream.read(&mut drain).await, Ok(n) if n > 0) {}
    })
    .await;
}

/// Reads HTTP/2 frames until the first HEADERS frame (a request).
async fn first_request(stream: &mut LimitedStream) -> io::Result<()> {
    const HEADERS: u8 = 0x1;
    let mut header = [0u8; 9];
    let mut skipped = vec![0u8; 16 * 1024];
    loop {
        stream.read_exact(&mut header).await?;
        if header[3] == HEADERS {
            return Ok(());
        }
        let mut left = u32::from_be_bytes([0, header[0], header[1], header[2]]) as usize;
        while left > 0 {
            let chunk = left.min(skipped.len());
            stream.read_exact(&mut skipped[..chunk]).await?;
            left -= chunk;
        }
    }
}

/// An HTTP/2 server preface (empty SETTINGS) and a GOAWAY (no stream
/// processed, INADEQUATE_SECURITY) carrying `sentence` as its debug data.
fn goaway(sentence: &str) -> Vec<u8> {
    const SETTINGS: u8 = 0x4;
    const GOAWAY: u8 = 0x7;
    const INADEQUATE_SECURITY: u32 = 0xc;
    let frame = |kind: u8, payload: &[u8]| {
        let length = (payload.len() as u32).to_be_bytes();
        let mut frame = vec![length[1], length[2], length[3], kind, 0, 0, 0, 0, 0];
        frame.extend_from_slice(payload);
        frame
    };
    let mut payload = 0u32.to_be_bytes().to_vec();
    payload.extend_from_slice(&INADEQUATE_SECURITY.to_be_bytes());
    payload.extend_from_slice(sentence.as_bytes());
    let mut answer = frame(SETTINGS, &[]);
    answer.extend(frame(GOAWAY, &payload));
    answer
}

fn http1_bad_request(sentence: &str) -> Vec<u8> {
    let body = format!("{sentence}\n");
    format!(
        "HTTP/1.1 400 Bad Request\r\ncontent-type: text/plain; charset=utf-8\r\n\
         content-length: {}\r\nconnection: close\r\n\r\n{body}",
        body.len()
    )
    .into_bytes()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_goaway_frame_carries_the_sentence() {
        let answer = goaway("s");
        // SETTINGS: 9-byte header, empty; GOAWAY: 8 bytes + "s".
        assert_eq!(&answer[..9], &[0, 0, 0, 4, 0, 0, 0, 0, 0]);
        assert_eq!(&answer[9..18], &[0, 0, 9, 7, 0, 0, 0, 0, 0]);
        assert_eq!(&answer[18..26], &[0, 0, 0, 0, 0, 0, 0, 0xc]);
        assert_eq!(&answer[26..], b"s");
    }
}

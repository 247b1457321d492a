//! The TLS accept loop in front of gRPC + HTTP. The loop only accepts and
//! admits sockets ([`ConnectionLimit`]); each handshake runs in its own task,
//! bounded by [`limits::TLS_HANDSHAKE_MS_MAX`], so one slow or silent client
//! cannot stall accepting. Finished handshakes are handed to the server in
//! the order they finish.
//!
//! A connection's first byte tells a TLS ClientHello (0x16) from plaintext.
//! A plaintext client gets, in plaintext, a sentence saying the server
//! speaks TLS ([`refusal::answer`]). A connection past a bound is told why
//! after its TLS handshake, by a bounded number of tasks; so is one whose
//! client certificate names a principal past its share of connections
//! ([`ConnectionLimit::admit_principal`]), by its handshake's task.

use super::Tls;
use crate::connections::{refusal, Admission, ConnectionLimit, LimitedStream};
use futures::Stream;
use leasehold_core::limits;
use leasehold_proto::tls_mismatch::speaks_tls_sentence;
use std::io;
use std::sync::Arc;
use std::time::Duration;
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::{mpsc, OwnedSemaphorePermit, Semaphore};
use tokio_rustls::server::TlsStream;
use tokio_stream::wrappers::ReceiverStream;

/// A connection after its handshake.
pub type Accepted = TlsStream<LimitedStream>;

/// The first byte of a TLS record carrying a handshake message.
const TLS_HANDSHAKE_RECORD: u8 = 0x16;

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
    let refusing = Arc::new(Semaphore::new(refusal::REFUSALS_TOLD_MAX));
    tokio::spawn(async move {
        loop {
            let stream = tokio::select! {
                () = accepted.closed() => return,
                stream = listener.accept() => stream,
            };
            let admitted = stream.and_then(|(stream, _)| limit.admit(stream));
            match admitted {
                Ok(Admission::Admitted(stream)) => {
                    let limit = limit.clone();
                    tokio::spawn(handshake(stream, tls.clone(), limit, accepted.clone()));
                }
                Ok(Admission::Refused { stream, why }) => {
                    if let Ok(slot) = refusing.clone().try_acquire_owned() {
                        tokio::spawn(tell_refused(stream, why, tls.clone(), slot));
                    }
                }
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
    limit: ConnectionLimit,
    accepted: mpsc::Sender<io::Result<Accepted>>,
) {
    let peer = stream.peer_addr();
    let bound = Duration::from_millis(limits::TLS_HANDSHAKE_MS_MAX);
    let outcome = tokio::time::timeout(bound, accept(stream, &tls)).await;
    let failure = match outcome {
        Ok(Ok(Some(stream))) => {
            if let Some(stream) = within_principal_share(stream, &limit).await {
                let _ = accepted.send(Ok(stream)).await;
            }
            return;
        }
        Ok(Ok(None)) => return,
        Ok(Err(error)) => error.to_string(),
        Err(_) => format!("no handshake within TLS_HANDSHAKE_MS_MAX ({bound:?})"),
    };
    metrics::counter!("leasehold_tls_handshake_failures_total").increment(1);
    tracing::info!(peer = ?peer, "TLS handshake failed: {failure}");
}

/// Counts a connection whose client certificate names a principal in that
/// principal's share; past it, tells the client why and closes it (`None`).
/// A connection without a certificate is counted by its address only.
async fn within_principal_share(mut stream: Accepted, limit: &ConnectionLimit) -> Option<Accepted> {
    let chain = stream.get_ref().1.peer_certificates();
    let Some(principal) = chain.and_then(crate::tls::chain_principal) else {
        return Some(stream);
    };
    match limit.admit_principal(&principal) {
        Ok(slot) => {
            stream.get_mut().0.hold(slot);
            Some(stream)
        }
        Err(why) => {
            let addr = stream.get_ref().0.local_addr()?;
            let sentence = leasehold_proto::refusal::refusal_sentence(addr, &why);
            let told = refusal::answer(&mut stream, &sentence, refusal::REFUSED);
            let _ =
                tokio::time::timeout(Duration::from_millis(refusal::REFUSAL_MS_MAX), told).await;
            None
        }
    }
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

/// Answers a plaintext client in its own protocol that this port speaks
/// TLS, then closes.
async fn tell_plaintext_client(mut stream: LimitedStream) {
    let Some(addr) = stream.local_addr() else {
        return;
    };
    refusal::answer(&mut stream, &speaks_tls_sentence(addr), refusal::SPEAKS_TLS).await;
}

/// Tells the client of a refused connection why, once its TLS handshake is
/// done (bounded like any handshake; at most `REFUSALS_TOLD_MAX` at once).
async fn tell_refused(stream: TcpStream, why: String, tls: Arc<Tls>, slot: OwnedSemaphorePermit) {
    let _slot = slot;
    let Ok(addr) = stream.local_addr() else {
        return;
    };
    let acceptor = tokio_rustls::TlsAcceptor::from(tls.current().server.clone());
    let bound = Duration::from_millis(limits::TLS_HANDSHAKE_MS_MAX);
    if let Ok(Ok(mut stream)) = tokio::time::timeout(bound, acceptor.accept(stream)).await {
        let sentence = leasehold_proto::refusal::refusal_sentence(addr, &why);
        let told = refusal::answer(&mut stream, &sentence, refusal::REFUSED);
        let _ = tokio::time::timeout(Duration::from_millis(refusal::REFUSAL_MS_MAX), told).await;
    }
}

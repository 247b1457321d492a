//! Telling a client, in its own protocol, why the server will not serve its
//! connection, then closing it: a gRPC client gets an HTTP/2 GOAWAY whose
//! debug data is the sentence (its library shows the debug data, where
//! `leasehold-client` finds the sentence), anything else (a browser, curl)
//! an HTTP/1.1 answer with the sentence as its body.
//!
//! Used for a connection past a bound (`leasehold_proto::refusal`'s words,
//! GOAWAY `ENHANCE_YOUR_CALM`, HTTP 503) and for a plaintext client on a
//! TLS port (`leasehold_proto::tls_mismatch`'s, `INADEQUATE_SECURITY`,
//! HTTP 400). Refusals are told by at most [`REFUSALS_TOLD_MAX`] tasks at
//! once, each within [`REFUSAL_MS_MAX`]; past that a refused connection is
//! just closed, so a flood costs the server no more than that.

use leasehold_proto::refusal::refusal_sentence;
use leasehold_proto::tls_mismatch::H2_PREFACE;
use std::io;
use std::sync::Arc;
use std::time::Duration;
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt};
use tokio::net::TcpStream;
use tokio::sync::Semaphore;

/// Refused connections being told why at once, at most.
pub const REFUSALS_TOLD_MAX: usize = 64;
/// Longest the telling of one refusal may take.
pub const REFUSAL_MS_MAX: u64 = 2_000;
/// How long a told client is given to read the answer and close.
const LINGER: Duration = Duration::from_secs(1);

/// How an answer is worded in each protocol.
#[derive(Clone, Copy, Debug)]
pub struct Answer {
    /// The GOAWAY's HTTP/2 error code.
    pub h2_error: u32,
    /// The HTTP/1.1 status line's code and text.
    pub http1_status: &'static str,
}

/// Past a bound: `ENHANCE_YOUR_CALM`, 503.
pub const REFUSED: Answer = Answer {
    h2_error: 0xb,
    http1_status: "503 Service Unavailable",
};

/// A plaintext client on a TLS port: `INADEQUATE_SECURITY`, 400.
pub const SPEAKS_TLS: Answer = Answer {
    h2_error: 0xc,
    http1_status: "400 Bad Request",
};

/// Tells refused connections why, a bounded number at once.
#[derive(Clone)]
pub struct Refusals {
    slots: Arc<Semaphore>,
}

impl Default for Refusals {
    fn default() -> Refusals {
        Refusals {
            slots: Arc::new(Semaphore::new(REFUSALS_TOLD_MAX)),
        }
    }
}

impl Refusals {
    /// Tells the plaintext client of `stream` `why` its connection is
    /// refused, in a task of its own; closes it at once if too many are
    /// being told already.
    pub fn tell(&self, stream: TcpStream, why: String) {
        let Ok(slot) = self.slots.clone().try_acquire_owned() else {
            return;
        };
        tokio::spawn(async move {
            let _slot = slot;
            let Ok(addr) = stream.local_addr() else {
                return;
            };
            let sentence = refusal_sentence(addr, &why);
            let mut stream = stream;
            let bound = Duration::from_millis(REFUSAL_MS_MAX);
            let _ = tokio::time::timeout(bound, answer(&mut stream, &sentence, REFUSED)).await;
        });
    }
}

/// Answers the client of `stream` with `sentence` in its own protocol,
/// then lets it read the answer (or [`LINGER`] pass) before returning.
pub async fn answer<S>(stream: &mut S, sentence: &str, kind: Answer)
where
    S: AsyncRead + AsyncWrite + Unpin,
{
    let mut start = [0u8; H2_PREFACE.len()];
    let read = stream.read_exact(&mut start).await;
    let answer = if read.is_ok() && start == *H2_PREFACE {
        // Answered once the client sent its request: a GOAWAY that comes
        // before it closes an idle connection, which the client reports as
        // a cancelled call, without the sentence.
        if first_request(stream).await.is_err() {
            return;
        }
        goaway(sentence, kind.h2_error)
    } else {
        http1_answer(sentence, kind.http1_status)
    };
    if stream.write_all(&answer).await.is_err() || stream.flush().await.is_err() {
        return;
    }
    let mut drain = [0u8; 1024];
    let _ = tokio::time::timeout(LINGER, async {
        while matches!(stream.read(&mut drain).await, Ok(n) if n > 0) {}
    })
    .await;
}

/// Reads HTTP/2 frames until the first HEADERS frame (a request).
async fn first_request<S: AsyncRead + Unpin>(stream: &mut S) -> io::Result<()> {
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
/// processed, `error`) carrying `sentence` as its debug data.
fn goaway(sentence: &str, error: u32) -> Vec<u8> {
    const SETTINGS: u8 = 0x4;
    const GOAWAY: u8 = 0x7;
    let frame = |kind: u8, payload: &[u8]| {
        let length = (payload.len() as u32).to_be_bytes();
        let mut frame = vec![length[1], length[2], length[3], kind, 0, 0, 0, 0, 0];
        frame.extend_from_slice(payload);
        frame
    };
    let mut payload = 0u32.to_be_bytes().to_vec();
    payload.extend_from_slice(&error.to_be_bytes());
    payload.extend_from_slice(sentence.as_bytes());
    let mut answer = frame(SETTINGS, &[]);
    answer.extend(frame(GOAWAY, &payload));
    answer
}

fn http1_answer(sentence: &str, status: &str) -> Vec<u8> {
    let body = format!("{sentence}\n");
    format!(
        "HTTP/1.1 {status}\r\ncontent-type: text/plain; charset=utf-8\r\n\
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
        let answer = goaway("s", SPEAKS_TLS.h2_error);
        // SETTINGS: 9-byte header, empty; GOAWAY: 8 bytes + "s".
        assert_eq!(&answer[..9], &[0, 0, 0, 4, 0, 0, 0, 0, 0]);
        assert_eq!(&answer[9..18], &[0, 0, 9, 7, 0, 0, 0, 0, 0]);
        assert_eq!(&answer[18..26], &[0, 0, 0, 0, 0, 0, 0, 0xc]);
        assert_eq!(&answer[26..], b"s");
    }

    #[test]
    fn an_http1_client_gets_the_sentence_as_the_body() {
        let answer = String::from_utf8(http1_answer("no", REFUSED.http1_status)).unwrap();
        assert!(
            answer.starts_with("HTTP/1.1 503 Service Unavailable\r\n"),
            "{answer}"
        );
        assert!(answer.ends_with("\r\n\r\nno\n"), "{answer}");
    }
}

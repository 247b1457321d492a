//! What a connection may cost the server (issue 20), against a real port:
//!
//! - a socket that never sends the HTTP/2 preface is closed at
//!   `HANDSHAKE_MS_MAX`;
//! - an established connection with nothing open and nothing sent is
//!   closed at the idle timeout, while one with an open stream is kept;
//! - a unary call whose message stalls midway (slowloris) is answered
//!   `DEADLINE_EXCEEDED` at `REQUEST_RECEIVE_MS_MAX`, naming the limit;
//! - an HTTP/1 request head sent a byte at a time is cut at hyper's head
//!   deadline (30 s), and headers past `HEADER_LIST_BYTES_MAX` are refused
//!   on HTTP/2 and HTTP/1 alike (431 naming the limit).
//!
//! Raw HTTP/2 (the `h2` crate) plays the misbehaving client, since no
//! well-behaved library sends half a message.

use h2::client::SendRequest;
use leasehold_core::limits::{HANDSHAKE_MS_MAX, REQUEST_RECEIVE_MS_MAX};
use leasehold_testkit::TestServer;
use prost::bytes::Bytes;
use std::net::SocketAddr;
use std::time::{Duration, Instant};
use tokio::io::AsyncReadExt;
use tokio::net::TcpStream;
use tonic::codegen::http;

/// Slack on a deadline for a busy two-core machine.
const SLACK: Duration = Duration::from_secs(5);

/// An HTTP/2 connection to `addr`; the returned task ends when the server
/// closes it.
async fn h2_connection(addr: SocketAddr) -> (SendRequest<Bytes>, tokio::task::JoinHandle<()>) {
    let tcp = TcpStream::connect(addr).await.expect("connect");
    let (client, connection) = h2::client::handshake(tcp).await.expect("h2 handshake");
    let driven = tokio::spawn(async move {
        let _ = connection.await;
    });
    (client, driven)
}

/// A gRPC request to `method` with its body still to be sent.
fn grpc_request(addr: SocketAddr, method: &str) -> http::Request<()> {
    http::Request::post(format!("http://{addr}{method}"))
        .header("content-type", "application/grpc")
        .header("te", "trailers")
        .body(())
        .expect("request")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_socket_that_never_speaks_is_closed_at_the_handshake_deadline() {
    let server = TestServer::start().await;
    let mut silent = TcpStream::connect(server.addr).await.expect("connect");
    let started = Instant::now();
    let bound = Duration::from_millis(HANDSHAKE_MS_MAX) + SLACK;
    let mut byte = [0u8; 1];
    let read = tokio::time::timeout(bound, silent.read(&mut byte)).await;
    let closed = matches!(read, Ok(Ok(0)) | Ok(Err(_)));
    assert!(
        closed,
        "still open {:?} after the accept: {read:?}",
        started.elapsed()
    );
    assert!(
        started.elapsed() >= Duration::from_millis(HANDSHAKE_MS_MAX) - Duration::from_millis(100),
        "closed after {:?}, before the deadline",
        started.elapsed()
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_idle_connection_is_closed_and_one_with_an_open_stream_kept() {
    let idle = Duration::from_secs(1);
    let dir = tempfile::tempdir().expect("tempdir");
    let server = TestServer::start_with(dir, |config| {
        config.connection_limits.deadlines.idle = idle;
    })
    .await;

    let (_quiet, quiet_ends) = h2_connection(server.addr).await;
    let started = Instant::now();
    tokio::time::timeout(idle + SLACK, quiet_ends)
        .await
        .expect("the idle connection is closed")
        .expect("driven");
    assert!(started.elapsed() >= idle - Duration::from_millis(100));

    // A connection with a watch open (it only receives) is kept past the
    // idle timeout, and serves another call afterwards.
    let (mut busy, busy_ends) = h2_connection(server.addr).await;
    let request = grpc_request(server.addr, "/leasehold.v1.Watch/Events");
    let (_watch, mut body) = busy.send_request(request, false).expect("watch sent");
    body.send_data(Bytes::from_static(&[0, 0, 0, 0, 0]), false)
        .expect("an empty EventsRequest");
    tokio::time::sleep(idle * 3).await;
    assert!(
        !busy_ends.is_finished(),
        "a connection with a stream open was closed"
    );
    let status = grpc_request(server.addr, "/leasehold.v1.Cluster/Status");
    let busy = busy.ready().await.expect("the connection still serves");
    let (answer, mut body) = { busy }.send_request(status, false).expect("sent");
    body.send_data(Bytes::from_static(&[0, 0, 0, 0, 0]), true)
        .expect("StatusRequest");
    let answer = answer.await.expect("answered");
    assert_eq!(answer.status(), http::StatusCode::OK);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_message_that_stalls_midway_is_cut_at_its_deadline_naming_the_limit() {
    let server = TestServer::start().await;
    let (client, _driven) = h2_connection(server.addr).await;
    let mut client = client.ready().await.expect("ready");
    let request = grpc_request(server.addr, "/leasehold.v1.Lease/Grant");
    let (response, mut body) = client.send_request(request, false).expect("sent");
    // A 20-byte GrantRequest, of which one byte ever arrives.
    body.send_data(Bytes::from_static(&[0, 0, 0, 0, 20, 0x08]), false)
        .expect("the first bytes");
    let started = Instant::now();
    let limit = Duration::from_millis(REQUEST_RECEIVE_MS_MAX);
    let response = tokio::time::timeout(limit + SLACK, response)
        .await
        .expect("an answer before the deadline's slack")
        .expect("a response");
    let waited = started.elapsed();
    let (parts, mut answer) = response.into_parts();
    let trailers = match parts.headers.get("grpc-status") {
        Some(_) => parts.headers,
        None => {
            while answer.data().await.is_some() {}
            answer
                .trailers()
                .await
                .expect("trailers")
                .expect("trailers")
        }
    };
    let code = trailers.get("grpc-status").expect("grpc-status");
    assert_eq!(code, "4", "DEADLINE_EXCEEDED; trailers {trailers:?}");
    let message = trailers.get("grpc-message").expect("grpc-message");
    let message = percent_decoded(message.to_str().expect("ascii"));
    assert!(message.contains("REQUEST_RECEIVE_MS_MAX"), "{message}");
    assert!(
        waited >= limit - Duration::from_millis(100),
        "cut after {waited:?}"
    );
}

/// A `grpc-message` value with its percent-encoding undone.
fn percent_decoded(value: &str) -> String {
    let bytes = value.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut at = 0;
    while at < bytes.len() {
        let hex = bytes
            .get(at + 1..at + 3)
            .and_then(|h| std::str::from_utf8(h).ok());
        match (bytes[at], hex.and_then(|h| u8::from_str_radix(h, 16).ok())) {
            (b'%', Some(byte)) => {
                out.push(byte);
                at += 3;
            }
            (byte, _) => {
                out.push(byte);
                at += 1;
            }
        }
    }
    String::from_utf8_lossy(&out).into_owned()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn headers_and_page_bodies_past_their_limits_are_refused() {
    use leasehold_core::limits::{HEADER_LIST_BYTES_MAX, REQUEST_BYTES_MAX};
    let server = TestServer::start().await;

    // HTTP/2: a header list past HEADER_LIST_BYTES_MAX is refused by the
    // server's HTTP/2 layer; one within it is served.
    let (client, _driven) = h2_connection(server.addr).await;
    let mut client = client.ready().await.expect("ready");
    let mut request = grpc_request(server.addr, "/leasehold.v1.Cluster/Status");
    let big = "x".repeat(HEADER_LIST_BYTES_MAX as usize + 1);
    request
        .headers_mut()
        .insert("x-padding", big.parse().expect("header value"));
    let refused = match client.send_request(request, true) {
        Err(error) => Some(error.to_string()),
        Ok((answer, _)) => match answer.await {
            Err(error) => Some(error.to_string()),
            Ok(answer) => {
                (answer.status() != http::StatusCode::OK).then(|| answer.status().to_string())
            }
        },
    };
    assert!(
        refused.is_some(),
        "a {HEADER_LIST_BYTES_MAX}+ byte header was served"
    );

    // HTTP/1: a page request with headers past HEADER_LIST_BYTES_MAX is 431
    // naming it.
    let head = format!(
        "GET /healthz HTTP/1.1\r\nhost: x\r\nx-padding: {big}\r\nconnection: close\r\n\r\n"
    );
    let answer = http1_exchange(server.addr, &head).await;
    assert!(
        answer.starts_with("HTTP/1.1 431") && answer.contains("HEADER_LIST_BYTES_MAX"),
        "{answer}"
    );

    // HTTP/1: a page request with a body past REQUEST_BYTES_MAX is 413.
    let head = format!(
        "POST /healthz HTTP/1.1\r\nhost: x\r\ncontent-length: {}\r\nconnection: close\r\n\r\n",
        REQUEST_BYTES_MAX + 1
    );
    let answer = http1_exchange(server.addr, &head).await;
    assert!(
        answer.starts_with("HTTP/1.1 413") && answer.contains("REQUEST_BYTES_MAX"),
        "{answer}"
    );
}

/// Sends `head` on a new HTTP/1 connection and reads the answer until the
/// server closes it (or `SLACK` passes).
async fn http1_exchange(addr: SocketAddr, head: &str) -> String {
    use tokio::io::AsyncWriteExt;
    let mut http1 = TcpStream::connect(addr).await.expect("connect");
    http1.write_all(head.as_bytes()).await.expect("sent");
    let mut answer = Vec::new();
    let _ = tokio::time::timeout(SLACK, http1.read_to_end(&mut answer)).await;
    String::from_utf8_lossy(&answer).into_owned()
}

/// How long hyper lets an HTTP/1 request head take (its
/// `header_read_timeout` default, which tonic's server turns on).
const HTTP1_HEAD_DEADLINE: Duration = Duration::from_secs(30);

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_http1_head_sent_a_byte_at_a_time_is_cut_at_its_deadline() {
    use tokio::io::AsyncWriteExt;
    let server = TestServer::start().await;
    let started = Instant::now();
    let mut slow = TcpStream::connect(server.addr).await.expect("connect");
    // Past the handshake's first bytes, so only the head's deadline is left
    // (the idle one never runs out while bytes arrive).
    let line = b"GET /healthz HTTP/1.1\r\nhost: x\r\nx-slow: ";
    slow.write_all(line).await.expect("the request line");
    let bound = HTTP1_HEAD_DEADLINE + SLACK;
    let cut = loop {
        if started.elapsed() > bound {
            break None;
        }
        if slow.write_all(b"a").await.is_err() {
            break Some(started.elapsed());
        }
        let mut byte = [0u8; 1];
        let read = tokio::time::timeout(Duration::from_millis(500), slow.read(&mut byte)).await;
        if matches!(read, Ok(Ok(_)) | Ok(Err(_))) {
            break Some(started.elapsed());
        }
    };
    let cut = cut.unwrap_or_else(|| panic!("a dribbled head still open after {bound:?}"));
    assert!(
        cut >= HTTP1_HEAD_DEADLINE - SLACK,
        "cut after {cut:?}, before the head's deadline: another bound cut it"
    );
    eprintln!("measured: a dribbled HTTP/1 head cut after {cut:?}");
}

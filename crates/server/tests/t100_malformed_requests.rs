//! Malformed requests are the caller's error (issue 20). Bytes that do not
//! decode as a method's request message are answered `INVALID_ARGUMENT`
//! naming the message type, on every method of every service, the internal
//! ones too; random and mutated messages (which sometimes decode, into
//! requests with odd fields) are never answered `INTERNAL` or `UNKNOWN`
//! (which is what a panic or a server fault looks like); and the node is
//! ready and serving afterwards.

use leasehold_testkit::raw_grpc::{call, methods};
use leasehold_testkit::TestServer;
use std::time::Duration;
use tonic::Code;

/// Random and mutated messages sent to each method.
const MESSAGES_PER_METHOD: usize = 150;
/// Bound on one call (a decoded request may wait, or open a stream).
const CALL_LIMIT: Duration = Duration::from_secs(2);

/// Bytes that no protobuf message decodes from: a field key whose varint
/// never ends, a length-delimited field longer than what follows, a
/// truncated varint, and a key of field number 0.
const UNDECODABLE: [&[u8]; 4] = [
    &[0xff; 11],
    &[0x0a, 0x05, 0x61],
    &[0x08, 0x80],
    &[0x00, 0x01],
];

/// A small seeded generator (xorshift64*), so a failure can be replayed.
struct Bytes(u64);

impl Bytes {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }

    /// Random bytes, or a valid-looking message (a name field) with a few
    /// bytes flipped, cut or appended.
    fn message(&mut self) -> Vec<u8> {
        let len = (self.next() % 64) as usize;
        if self.next().is_multiple_of(2) {
            return (0..len).map(|_| self.next() as u8).collect();
        }
        let mut bytes = vec![0x08, 0x07, 0x12, 0x04, b'n', b'a', b'm', b'e', 0x18, 0x01];
        for _ in 0..1 + self.next() % 3 {
            let at = (self.next() as usize) % bytes.len();
            match self.next() % 3 {
                0 => bytes[at] ^= 1 << (self.next() % 8),
                1 => bytes.truncate(at),
                _ => bytes.insert(at, self.next() as u8),
            }
            if bytes.is_empty() {
                bytes.push(0xff);
            }
        }
        bytes
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_method_answers_bytes_that_do_not_decode_as_the_callers_error() {
    let server = TestServer::start().await;
    let channel = server.channel().await;
    let methods = methods();
    assert!(methods.len() >= 21, "{} methods", methods.len());
    for method in &methods {
        for payload in UNDECODABLE {
            let status = call(&channel, method, payload.to_vec(), CALL_LIMIT)
                .await
                .unwrap_or_else(|| panic!("{}: no answer to {payload:?}", method.path));
            assert_eq!(
                status.code(),
                Code::InvalidArgument,
                "{} answered {payload:?} with {status:?}",
                method.path
            );
            assert!(
                status
                    .message()
                    .contains(&format!("not a valid {} (", method.input)),
                "{}: {}",
                method.path,
                status.message()
            );
        }
    }
    assert_serving(&server).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn random_and_mutated_messages_are_never_a_server_fault() {
    let server = TestServer::start().await;
    let channel = server.channel().await;
    let mut bytes = Bytes(0x5eed_1e55_0000_0020);
    let mut answered = std::collections::BTreeMap::<String, usize>::new();
    for method in &methods() {
        for _ in 0..MESSAGES_PER_METHOD {
            let payload = bytes.message();
            let Some(status) = call(&channel, method, payload.clone(), CALL_LIMIT).await else {
                continue; // decoded into a request that waits or streams
            };
            assert!(
                !matches!(status.code(), Code::Internal | Code::Unknown),
                "{} answered {payload:?} with {status:?}",
                method.path
            );
            *answered.entry(format!("{:?}", status.code())).or_default() += 1;
        }
    }
    eprintln!("measured: answers by code: {answered:?}");
    assert_serving(&server).await;
}

/// The node is ready and grants a lease.
async fn assert_serving(server: &TestServer) {
    let ready = server
        .client()
        .await
        .status()
        .await
        .expect("status answers");
    assert_eq!(ready.state, "Leader", "{ready:?}");
    let mut leases = server.leases().await;
    leasehold_testkit::grpc::grant(&mut leases, 5_000).await;
}

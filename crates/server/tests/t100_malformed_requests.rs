//! Malformed requests are the caller's error (issue 20). Bytes that do not
//! decode as a method's request message are answered `INVALID_ARGUMENT`
//! naming the message type, on every method of every service, the internal
//! ones too; random and mutated messages (which sometimes decode, into
//! requests with odd fields) are never answered `INTERNAL` or `UNKNOWN`
//! (which is what a panic or a server fault looks like); and the node is
//! ready and serving afterwards.

use leasehold_proto::FILE_DESCRIPTOR_SET;
use leasehold_testkit::TestServer;
use prost::bytes::{Buf, BufMut};
use prost::Message;
use std::time::Duration;
use tonic::codec::{Codec, DecodeBuf, Decoder, EncodeBuf, Encoder};
use tonic::transport::Channel;
use tonic::{Code, Status};

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

/// A method of the API: its gRPC path, its request type's protobuf name,
/// and whether the client streams.
struct Method {
    path: String,
    input: String,
    client_streaming: bool,
    server_streaming: bool,
}

fn methods() -> Vec<Method> {
    let set = prost_types::FileDescriptorSet::decode(FILE_DESCRIPTOR_SET).expect("descriptors");
    let mut methods = Vec::new();
    for file in &set.file {
        for service in &file.service {
            for method in &service.method {
                methods.push(Method {
                    path: format!("/{}.{}/{}", file.package(), service.name(), method.name()),
                    input: method.input_type().trim_start_matches('.').to_owned(),
                    client_streaming: method.client_streaming(),
                    server_streaming: method.server_streaming(),
                });
            }
        }
    }
    methods
}

/// Sends and receives bytes as they are.
#[derive(Clone, Copy, Default)]
struct RawCodec;

impl Codec for RawCodec {
    type Encode = Vec<u8>;
    type Decode = Vec<u8>;
    type Encoder = RawCodec;
    type Decoder = RawCodec;

    fn encoder(&mut self) -> RawCodec {
        RawCodec
    }

    fn decoder(&mut self) -> RawCodec {
        RawCodec
    }
}

impl Encoder for RawCodec {
    type Item = Vec<u8>;
    type Error = Status;

    fn encode(&mut self, item: Vec<u8>, dst: &mut EncodeBuf<'_>) -> Result<(), Status> {
        dst.put_slice(&item);
        Ok(())
    }
}

impl Decoder for RawCodec {
    type Item = Vec<u8>;
    type Error = Status;

    fn decode(&mut self, src: &mut DecodeBuf<'_>) -> Result<Option<Vec<u8>>, Status> {
        Ok(Some(src.copy_to_bytes(src.remaining()).to_vec()))
    }
}

/// Sends `payload` as the one request message of `method`; the status it
/// ends with (`Ok` when it answered or streamed a message first; `None`
/// when it was still waiting at [`CALL_LIMIT`]).
async fn call(channel: &Channel, method: &Method, payload: Vec<u8>) -> Option<Status> {
    let mut grpc = tonic::client::Grpc::new(channel.clone());
    let path: tonic::codegen::http::uri::PathAndQuery = method.path.parse().expect("path");
    let answered = async {
        grpc.ready()
            .await
            .map_err(|e| Status::unavailable(e.to_string()))?;
        if method.client_streaming {
            let messages = tokio_stream::iter(vec![payload]);
            let request = tonic::Request::new(messages);
            let mut stream = grpc.streaming(request, path, RawCodec).await?.into_inner();
            stream.message().await.map(|_| ())
        } else if method.server_streaming {
            let request = tonic::Request::new(payload);
            let mut stream = grpc
                .server_streaming(request, path, RawCodec)
                .await?
                .into_inner();
            stream.message().await.map(|_| ())
        } else {
            grpc.unary(tonic::Request::new(payload), path, RawCodec)
                .await
                .map(|_| ())
        }
    };
    match tokio::time::timeout(CALL_LIMIT, answered).await {
        Err(_) => None,
        Ok(Ok(())) => Some(Status::ok("")),
        Ok(Err(status)) => Some(status),
    }
}

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
            let status = call(&channel, method, payload.to_vec())
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
            let Some(status) = call(&channel, method, payload.clone()).await else {
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

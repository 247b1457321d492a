//! Any method of the API, called with bytes as they are: the methods come
//! from the compiled descriptor set, the bytes go out with a codec that
//! sends and receives them untouched. For the tests and fuzz targets that
//! play a client no library would be (bytes that do not decode, messages
//! with odd fields).

use leasehold_proto::FILE_DESCRIPTOR_SET;
use prost::bytes::{Buf, BufMut};
use prost::Message;
use std::time::Duration;
use tonic::codec::{Codec, DecodeBuf, Decoder, EncodeBuf, Encoder};
use tonic::transport::Channel;
use tonic::Status;

/// A method of the API: its gRPC path, its request type's protobuf name,
/// and whether each side streams.
#[derive(Clone, Debug)]
pub struct Method {
    pub path: String,
    pub input: String,
    pub client_streaming: bool,
    pub server_streaming: bool,
}

/// Every method of every service (the internal ones too), in the order the
/// descriptor set lists them.
pub fn methods() -> Vec<Method> {
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
pub struct RawCodec;

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
/// when it was still waiting after `limit`).
pub async fn call(
    channel: &Channel,
    method: &Method,
    payload: Vec<u8>,
    limit: Duration,
) -> Option<Status> {
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
    match tokio::time::timeout(limit, answered).await {
        Err(_) => None,
        Ok(Ok(())) => Some(Status::ok("")),
        Ok(Err(status)) => Some(status),
    }
}

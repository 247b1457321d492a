//! [`LeanCodec`]: prost messages with small per-call buffers, the codec of
//! every generated client and server here.
//!
//! tonic's default codec gives each call an 8 KiB encode buffer and an
//! 8 KiB decode buffer, allocated when the call starts and kept as long as
//! it lasts. A lease's session stream lasts as long as the lease, so a
//! server keeping 50,000 leases held about 800 MB in buffers for messages
//! of a few hundred bytes (`leasehold bench --workload sessions`). The
//! buffers grow on demand, so starting them at [`CODEC_BUFFER_BYTES`] costs
//! a large message one reallocation and nothing else; the size bounds
//! (`REQUEST_BYTES_MAX` and the Raft transport's) are enforced elsewhere,
//! as before.
//!
//! Its decoder is also the one place where a message that does not decode
//! becomes a status: `INVALID_ARGUMENT` naming the message type
//! ([`undecodable`]), where tonic's own codec answers `INTERNAL`, which
//! tells the caller the server is broken and makes alerting on `INTERNAL`
//! useless. A request that does not decode is the caller's error.

use std::marker::PhantomData;
use tonic::codec::{BufferSettings, Codec, DecodeBuf, Decoder};
use tonic::Status;
use tonic_prost::ProstCodec;

/// Initial size of a call's encode and decode buffers (tonic's: 8 KiB).
pub const CODEC_BUFFER_BYTES: usize = 1024;
/// Encoded bytes a stream buffers before handing them to the transport
/// (tonic's default).
const YIELD_THRESHOLD_BYTES: usize = 32 * 1024;

/// [`ProstCodec`] with buffers that start at [`CODEC_BUFFER_BYTES`].
#[derive(Debug, Clone, Copy)]
pub struct LeanCodec<T, U>(PhantomData<(T, U)>);

impl<T, U> Default for LeanCodec<T, U> {
    fn default() -> Self {
        LeanCodec(PhantomData)
    }
}

fn settings() -> BufferSettings {
    BufferSettings::new(CODEC_BUFFER_BYTES, YIELD_THRESHOLD_BYTES)
}

impl<T, U> Codec for LeanCodec<T, U>
where
    T: prost::Message + Send + 'static,
    U: prost::Message + Default + Send + 'static,
{
    type Encode = T;
    type Decode = U;
    type Encoder = <ProstCodec<T, U> as Codec>::Encoder;
    type Decoder = LeanDecoder<U>;

    fn encoder(&mut self) -> Self::Encoder {
        ProstCodec::<T, U>::raw_encoder(settings())
    }

    fn decoder(&mut self) -> Self::Decoder {
        LeanDecoder(PhantomData)
    }
}

/// Decodes a `U`; one that does not decode is [`undecodable`].
#[derive(Debug, Clone, Copy)]
pub struct LeanDecoder<U>(PhantomData<U>);

impl<U: prost::Message + Default> Decoder for LeanDecoder<U> {
    type Item = U;
    type Error = Status;

    fn decode(&mut self, src: &mut DecodeBuf<'_>) -> Result<Option<U>, Status> {
        U::decode(src)
            .map(Some)
            .map_err(|error| undecodable::<U>(&error))
    }

    fn buffer_settings(&self) -> BufferSettings {
        settings()
    }
}

/// `INVALID_ARGUMENT` for a `U` that does not decode: its protobuf name
/// (`leasehold.v1.AcquireRequest`), prost's reason, and what to do.
pub fn undecodable<U>(error: &prost::DecodeError) -> Status {
    Status::invalid_argument(format!(
        "the message is not a valid {} ({error}): send it encoded from Leasehold's protos \
         (proto/leasehold/v1), for this method",
        proto_name::<U>()
    ))
}

/// The protobuf name of a generated message type: `leasehold.v1.` and the
/// Rust type's last path segment (the generated names are the proto ones).
fn proto_name<U>() -> String {
    let rust = std::any::type_name::<U>();
    format!("leasehold.v1.{}", rust.rsplit("::").next().unwrap_or(rust))
}

#[cfg(test)]
mod tests {
    use super::*;
    use tonic::codec::Encoder as _;

    #[test]
    fn a_message_that_does_not_decode_is_invalid_argument_naming_its_type() {
        use prost::Message as _;
        let error = crate::v1::AcquireRequest::decode(&[0xff, 0xff][..]).unwrap_err();
        let status = undecodable::<crate::v1::AcquireRequest>(&error);
        assert_eq!(status.code(), tonic::Code::InvalidArgument);
        assert!(
            status
                .message()
                .starts_with("the message is not a valid leasehold.v1.AcquireRequest ("),
            "{}",
            status.message()
        );
    }

    #[test]
    fn buffers_start_small() {
        let mut codec =
            LeanCodec::<crate::v1::KeepAliveRequest, crate::v1::KeepAliveResponse>::default();
        let settings = codec.encoder().buffer_settings();
        let default =
            ProstCodec::<crate::v1::KeepAliveRequest, crate::v1::KeepAliveResponse>::default()
                .encoder()
                .buffer_settings();
        assert_ne!(format!("{settings:?}"), format!("{default:?}"));
        assert!(format!("{settings:?}").contains(&format!("buffer_size: {CODEC_BUFFER_BYTES}")));
    }
}

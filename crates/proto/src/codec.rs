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

use std::marker::PhantomData;
use tonic::codec::{BufferSettings, Codec};
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
    type Decoder = <ProstCodec<T, U> as Codec>::Decoder;

    fn encoder(&mut self) -> Self::Encoder {
        ProstCodec::<T, U>::raw_encoder(settings())
    }

    fn decoder(&mut self) -> Self::Decoder {
        ProstCodec::<T, U>::raw_decoder(settings())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use tonic::codec::Encoder as _;

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

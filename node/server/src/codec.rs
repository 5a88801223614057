//! The protobuf codec of the generated services and clients: prost's, except that a
//! message that does not decode is the sender's error (`INVALID_ARGUMENT`, `BAD_PAYLOAD`)
//! rather than gRPC's default `INTERNAL`, which would blame the node for a client's
//! bytes.

use std::marker::PhantomData;

use tonic::Status;
use tonic::codec::{BufferSettings, Codec, DecodeBuf, Decoder};
use tonic_prost::{ProstDecoder, ProstEncoder};

/// A [`Codec`] for prost messages; see the module doc.
#[derive(Debug, Clone)]
pub struct ProtoCodec<T, U> {
    _types: PhantomData<(T, U)>,
}

impl<T, U> Default for ProtoCodec<T, U> {
    fn default() -> Self {
        ProtoCodec {
            _types: PhantomData,
        }
    }
}

impl<T, U> Codec for ProtoCodec<T, U>
where
    T: prost::Message + Send + 'static,
    U: prost::Message + Default + Send + 'static,
{
    type Encode = T;
    type Decode = U;
    type Encoder = ProstEncoder<T>;
    type Decoder = MessageDecoder<U>;

    fn encoder(&mut self) -> Self::Encoder {
        ProstEncoder::default()
    }

    fn decoder(&mut self) -> Self::Decoder {
        MessageDecoder(ProstDecoder::default())
    }
}

/// Prost's decoder with the status of an undecodable message changed (module doc).
#[derive(Debug, Clone, Default)]
pub struct MessageDecoder<U>(ProstDecoder<U>);

impl<U: prost::Message + Default> Decoder for MessageDecoder<U> {
    type Item = U;
    type Error = Status;

    fn decode(&mut self, buf: &mut DecodeBuf<'_>) -> Result<Option<U>, Status> {
        self.0.decode(buf).map_err(|status| {
            super::status::error(
                tonic::Code::InvalidArgument,
                "BAD_PAYLOAD",
                format_args!("the message does not decode: {}", status.message()),
            )
        })
    }

    fn buffer_settings(&self) -> BufferSettings {
        self.0.buffer_settings()
    }
}

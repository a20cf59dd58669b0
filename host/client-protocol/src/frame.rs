//! The client protocol's framing on a byte stream (the Unix socket, the named pipe): each
//! frame is `u32 LE length` of what follows, one kind byte, then the payload. Kind 0 is a
//! JSON control message (UTF-8), kind 1 is a binary output frame (`u32 LE pane id + bytes`,
//! SPEC §8). A WebSocket carries the same two kinds as its text and binary messages, so one
//! [`WireFrame`] type serves both transports.
//!
//! Reading is a [`WireCodec`] under `tokio_util`'s `FramedRead`: its `next()` is cancel-safe,
//! so a connection reads in a `select!` beside its other work, and an output frame's bytes
//! are handed on without a copy. The reader never allocates more than [`MAX_FRAME_BYTES`]
//! for one frame: a longer length is an error before anything is read into memory.

use bytes::{Buf, BufMut, Bytes, BytesMut};
use tokio::io::{AsyncWrite, AsyncWriteExt};
use tokio_util::codec::Decoder;

use crate::hub::{MAX_MESSAGE_BYTES, output_frame_id};

/// Largest payload accepted or sent: the client protocol's cap, the WebSocket's too.
pub const MAX_FRAME_BYTES: usize = MAX_MESSAGE_BYTES;

const KIND_CONTROL: u8 = 0;
const KIND_OUTPUT: u8 = 1;
const LENGTH_BYTES: usize = 4;

/// One message of the client protocol.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum WireFrame {
    /// A JSON control message.
    Control(String),
    /// A binary output frame: `u32 LE pane id + bytes`.
    Output(Bytes),
}

/// Why a frame could not be read.
#[derive(Debug, thiserror::Error)]
pub enum FrameError {
    #[error("frame of {0} bytes is over the {MAX_FRAME_BYTES}-byte limit")]
    TooLarge(usize),
    #[error("frame of unknown kind {0}")]
    UnknownKind(u8),
    #[error("empty frame (no kind byte)")]
    Empty,
    #[error("control frame is not UTF-8")]
    NotUtf8,
    #[error(transparent)]
    Io(#[from] std::io::Error),
}

/// Splits a byte stream into [`WireFrame`]s. At the end of the stream, a frame cut short
/// is an error, not a clean end.
#[derive(Debug, Default)]
pub struct WireCodec;

impl Decoder for WireCodec {
    type Item = WireFrame;
    type Error = FrameError;

    fn decode(&mut self, buffer: &mut BytesMut) -> Result<Option<WireFrame>, FrameError> {
        let Some(length) = buffer.first_chunk::<LENGTH_BYTES>() else {
            return Ok(None);
        };
        let length = u32::from_le_bytes(*length) as usize;
        if length == 0 {
            return Err(FrameError::Empty);
        }
        if length - 1 > MAX_FRAME_BYTES {
            return Err(FrameError::TooLarge(length - 1));
        }
        if buffer.len() < LENGTH_BYTES + length {
            buffer.reserve(LENGTH_BYTES + length - buffer.len());
            return Ok(None);
        }
        buffer.advance(LENGTH_BYTES);
        let kind = buffer.get_u8();
        let payload = buffer.split_to(length - 1).freeze();
        match kind {
            KIND_CONTROL => String::from_utf8(payload.into())
                .map(|text| Some(WireFrame::Control(text)))
                .map_err(|_| FrameError::NotUtf8),
            KIND_OUTPUT => Ok(Some(WireFrame::Output(payload))),
            kind => Err(FrameError::UnknownKind(kind)),
        }
    }
}

/// Writes one frame and flushes it.
pub async fn write_frame(
    writer: &mut (impl AsyncWrite + Unpin),
    frame: &WireFrame,
) -> Result<(), FrameError> {
    match frame {
        WireFrame::Control(text) => write_control(writer, text).await,
        WireFrame::Output(bytes) => write_parts(writer, KIND_OUTPUT, &[bytes]).await,
    }
}

/// Writes one control message straight from its text, without building a frame first.
pub async fn write_control(
    writer: &mut (impl AsyncWrite + Unpin),
    text: &str,
) -> Result<(), FrameError> {
    write_parts(writer, KIND_CONTROL, &[text.as_bytes()]).await
}

/// Writes the output frame of `pane` straight from the hub's bytes: the id and the bytes are
/// copied once, into the buffer that goes to the socket, not first into a frame of their own.
pub async fn write_output(
    writer: &mut (impl AsyncWrite + Unpin),
    pane: u64,
    bytes: &[u8],
) -> Result<(), FrameError> {
    write_parts(writer, KIND_OUTPUT, &[&output_frame_id(pane), bytes]).await
}

/// One frame whose payload is `parts` one after the other, in one write, then a flush.
async fn write_parts(
    writer: &mut (impl AsyncWrite + Unpin),
    kind: u8,
    parts: &[&[u8]],
) -> Result<(), FrameError> {
    let length: usize = parts.iter().map(|part| part.len()).sum();
    if length > MAX_FRAME_BYTES {
        return Err(FrameError::TooLarge(length));
    }
    let mut buffer = BytesMut::with_capacity(LENGTH_BYTES + 1 + length);
    buffer.put_u32_le(length as u32 + 1);
    buffer.put_u8(kind);
    for part in parts {
        buffer.put_slice(part);
    }
    writer.write_all(&buffer).await?;
    writer.flush().await?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use futures::StreamExt;
    use tokio_util::codec::FramedRead;

    use super::*;
    use crate::hub::output_frame;

    /// Every frame of `bytes`, read as a connection reads them, up to the first error.
    async fn read_all(bytes: &[u8]) -> (Vec<WireFrame>, Option<FrameError>) {
        let mut reader = FramedRead::new(bytes, WireCodec);
        let mut frames = Vec::new();
        while let Some(frame) = reader.next().await {
            match frame {
                Ok(frame) => frames.push(frame),
                Err(error) => return (frames, Some(error)),
            }
        }
        (frames, None)
    }

    async fn first_error(bytes: &[u8]) -> FrameError {
        read_all(bytes).await.1.expect("an error")
    }

    #[tokio::test]
    async fn frames_round_trip_in_order() {
        let frames = [
            WireFrame::Control(r#"{"type":"hello"}"#.into()),
            WireFrame::Output(Bytes::from_static(&[7, 0, 0, 0, b'h', b'i'])),
            WireFrame::Control(String::new()),
            WireFrame::Output(Bytes::new()),
        ];
        let mut bytes = Vec::new();
        for frame in &frames {
            write_frame(&mut bytes, frame).await.unwrap();
        }
        let (read, error) = read_all(&bytes).await;
        assert_eq!(read, frames);
        assert!(error.is_none(), "{error:?}");
    }

    #[tokio::test]
    async fn a_frame_that_arrives_in_pieces_is_read_whole() {
        let mut bytes = Vec::new();
        write_output(&mut bytes, 258, &[b'x'; 3000]).await.unwrap();
        let (client, mut server) = tokio::io::duplex(64);
        let writer = tokio::spawn(async move {
            for piece in bytes.chunks(7) {
                server.write_all(piece).await.unwrap();
            }
        });
        let mut reader = FramedRead::new(client, WireCodec);
        let frame = reader.next().await.unwrap().unwrap();
        assert_eq!(
            frame,
            WireFrame::Output(output_frame(258, &[b'x'; 3000]).into())
        );
        writer.await.unwrap();
        assert!(reader.next().await.is_none(), "a clean end after the frame");
    }

    #[tokio::test]
    async fn bad_frames_are_errors_before_any_large_allocation() {
        let huge = u32::MAX.to_le_bytes();
        let error = first_error(&huge).await;
        assert!(matches!(error, FrameError::TooLarge(_)), "{error}");
        let error = first_error(&[2, 0, 0, 0, 9, b'x']).await;
        assert!(matches!(error, FrameError::UnknownKind(9)), "{error}");
        let error = first_error(&[2, 0, 0, 0, 0, 0xff]).await;
        assert!(matches!(error, FrameError::NotUtf8), "{error}");
        let error = first_error(&[0, 0, 0, 0]).await;
        assert!(matches!(error, FrameError::Empty), "{error}");
        // Cut inside a frame, or inside its length: an error, not a clean end.
        first_error(&[5, 0, 0, 0, 0, b'a']).await;
        first_error(&[5, 0]).await;
        let oversize = WireFrame::Output(vec![0; MAX_FRAME_BYTES + 1].into());
        assert!(write_frame(&mut Vec::new(), &oversize).await.is_err());
    }

    /// Feeds `bytes` to the decoder in pieces of the given sizes, as a socket would hand
    /// them over; stops at the first error.
    fn decode_in_pieces(bytes: &[u8], pieces: &[usize]) -> Result<Vec<WireFrame>, FrameError> {
        let mut codec = WireCodec;
        let mut buffer = BytesMut::new();
        let mut frames = Vec::new();
        let mut rest = bytes;
        for &size in pieces.iter().cycle().take(bytes.len() + 1) {
            let (piece, after) = rest.split_at(size.min(rest.len()));
            buffer.extend_from_slice(piece);
            rest = after;
            while let Some(frame) = codec.decode(&mut buffer)? {
                frames.push(frame);
            }
            if rest.is_empty() {
                break;
            }
        }
        if let Some(frame) = codec.decode_eof(&mut buffer)? {
            frames.push(frame);
        }
        Ok(frames)
    }

    fn wire_frame() -> impl proptest::strategy::Strategy<Value = WireFrame> {
        use proptest::prelude::*;
        prop_oneof![
            ".{0,40}".prop_map(WireFrame::Control),
            proptest::collection::vec(any::<u8>(), 0..300)
                .prop_map(|bytes| WireFrame::Output(bytes.into())),
        ]
    }

    proptest::proptest! {
        #[test]
        fn any_bytes_give_frames_within_the_cap_or_an_error(
            bytes in proptest::collection::vec(proptest::prelude::any::<u8>(), 0..400),
            pieces in proptest::collection::vec(1usize..64, 1..8),
        ) {
            if let Ok(frames) = decode_in_pieces(&bytes, &pieces) {
                for frame in frames {
                    let length = match frame {
                        WireFrame::Control(text) => text.len(),
                        WireFrame::Output(bytes) => bytes.len(),
                    };
                    proptest::prop_assert!(length <= MAX_FRAME_BYTES);
                }
            }
        }

        #[test]
        fn written_frames_read_back_whole_however_the_stream_splits_them(
            frames in proptest::collection::vec(wire_frame(), 0..6),
            pieces in proptest::collection::vec(1usize..64, 1..8),
        ) {
            let mut bytes = Vec::new();
            let runtime = tokio::runtime::Builder::new_current_thread().build().unwrap();
            for frame in &frames {
                runtime.block_on(write_frame(&mut bytes, frame)).unwrap();
            }
            proptest::prop_assert_eq!(decode_in_pieces(&bytes, &pieces).unwrap(), frames);
        }
    }
}

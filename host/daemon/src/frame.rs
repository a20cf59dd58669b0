//! The client protocol's framing on a byte stream (the Unix socket, the named pipe): each
//! frame is `u32 LE length` of what follows, one kind byte, then the payload. Kind 0 is a
//! JSON control message (UTF-8), kind 1 is a binary output frame (`u32 LE pane id + bytes`,
//! SPEC §8). A WebSocket carries the same two kinds as its text and binary messages, so one
//! [`WireFrame`] type serves both transports.
//!
//! The reader never allocates more than [`MAX_FRAME_BYTES`] for one frame: a longer length
//! is an error before anything is read into memory.

use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt};

/// Largest payload accepted or sent: the client protocol's cap, the WebSocket's too.
pub const MAX_FRAME_BYTES: usize = nightcrow_hub::MAX_MESSAGE_BYTES;

const KIND_CONTROL: u8 = 0;
const KIND_OUTPUT: u8 = 1;

/// One message of the client protocol.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum WireFrame {
    /// A JSON control message.
    Control(String),
    /// A binary output frame: `u32 LE pane id + bytes`.
    Output(Vec<u8>),
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

/// Reads the next frame; `None` at a clean end of stream (between frames).
pub async fn read_frame(
    reader: &mut (impl AsyncRead + Unpin),
) -> Result<Option<WireFrame>, FrameError> {
    let mut length = [0u8; 4];
    match reader.read_exact(&mut length).await {
        Ok(_) => {}
        Err(error) if error.kind() == std::io::ErrorKind::UnexpectedEof => return Ok(None),
        Err(error) => return Err(error.into()),
    }
    let length = u32::from_le_bytes(length) as usize;
    if length == 0 {
        return Err(FrameError::Empty);
    }
    if length - 1 > MAX_FRAME_BYTES {
        return Err(FrameError::TooLarge(length - 1));
    }
    let mut body = vec![0u8; length];
    reader.read_exact(&mut body).await?;
    let payload = body.split_off(1);
    match body[0] {
        KIND_CONTROL => String::from_utf8(payload)
            .map(|text| Some(WireFrame::Control(text)))
            .map_err(|_| FrameError::NotUtf8),
        KIND_OUTPUT => Ok(Some(WireFrame::Output(payload))),
        kind => Err(FrameError::UnknownKind(kind)),
    }
}

/// Writes one frame and flushes it.
pub async fn write_frame(
    writer: &mut (impl AsyncWrite + Unpin),
    frame: &WireFrame,
) -> Result<(), FrameError> {
    match frame {
        WireFrame::Control(text) => write_parts(writer, KIND_CONTROL, &[text.as_bytes()]).await,
        WireFrame::Output(bytes) => write_parts(writer, KIND_OUTPUT, &[bytes]).await,
    }
}

/// Writes the output frame of `pane` straight from the hub's bytes: the id and the bytes are
/// copied once, into the buffer that goes to the socket, not first into a frame of their own.
pub async fn write_output(
    writer: &mut (impl AsyncWrite + Unpin),
    pane: u64,
    bytes: &[u8],
) -> Result<(), FrameError> {
    let id = nightcrow_hub::output_frame_id(pane);
    write_parts(writer, KIND_OUTPUT, &[&id, bytes]).await
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
    let mut buffer = Vec::with_capacity(5 + length);
    buffer.extend_from_slice(&(length as u32 + 1).to_le_bytes());
    buffer.push(kind);
    for part in parts {
        buffer.extend_from_slice(part);
    }
    writer.write_all(&buffer).await?;
    writer.flush().await?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    async fn round_trip(frames: &[WireFrame]) -> Vec<WireFrame> {
        let mut bytes = Vec::new();
        for frame in frames {
            write_frame(&mut bytes, frame).await.unwrap();
        }
        let mut reader = bytes.as_slice();
        let mut out = Vec::new();
        while let Some(frame) = read_frame(&mut reader).await.unwrap() {
            out.push(frame);
        }
        out
    }

    #[tokio::test]
    async fn frames_round_trip_in_order() {
        let frames = [
            WireFrame::Control(r#"{"type":"hello"}"#.into()),
            WireFrame::Output(vec![7, 0, 0, 0, b'h', b'i']),
            WireFrame::Control(String::new()),
            WireFrame::Output(Vec::new()),
        ];
        assert_eq!(round_trip(&frames).await, frames);
    }

    #[tokio::test]
    async fn bad_frames_are_errors_before_any_large_allocation() {
        let huge = (u32::MAX).to_le_bytes();
        let error = read_frame(&mut huge.as_slice()).await.unwrap_err();
        assert!(matches!(error, FrameError::TooLarge(_)), "{error}");
        let unknown = [2, 0, 0, 0, 9, b'x'];
        let error = read_frame(&mut unknown.as_slice()).await.unwrap_err();
        assert!(matches!(error, FrameError::UnknownKind(9)), "{error}");
        let not_utf8 = [2, 0, 0, 0, 0, 0xff];
        let error = read_frame(&mut not_utf8.as_slice()).await.unwrap_err();
        assert!(matches!(error, FrameError::NotUtf8), "{error}");
        let empty = [0, 0, 0, 0];
        let error = read_frame(&mut empty.as_slice()).await.unwrap_err();
        assert!(matches!(error, FrameError::Empty), "{error}");
        // Cut inside a frame: an error, not a clean end.
        let cut = [5, 0, 0, 0, 0, b'a'];
        assert!(read_frame(&mut cut.as_slice()).await.is_err());
        let mut written = Vec::new();
        write_output(&mut written, 258, b"hi").await.unwrap();
        let read = read_frame(&mut written.as_slice()).await.unwrap();
        assert_eq!(
            read,
            Some(WireFrame::Output(nightcrow_hub::output_frame(258, b"hi")))
        );
        let oversize = WireFrame::Output(vec![0; MAX_FRAME_BYTES + 1]);
        assert!(write_frame(&mut Vec::new(), &oversize).await.is_err());
    }
}

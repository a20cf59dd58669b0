//! Any byte stream, cut into reads anywhere, gives the same frames (and then the same error,
//! if any) as when it arrives whole; no frame is over the cap, and the read buffer never
//! holds more than one frame's room beside the bytes not yet decoded.
#![no_main]

use bytes::BytesMut;
use libfuzzer_sys::fuzz_target;
use nightcrow_client_protocol::frame::{FrameError, MAX_FRAME_BYTES, WireCodec, WireFrame};
use tokio_util::codec::Decoder;

/// A length prefix, a kind byte and the largest payload.
const LARGEST_FRAME: usize = 4 + 1 + MAX_FRAME_BYTES;

/// The frames of `pieces`, fed in order, and the error that ended them, as its text.
fn decode(pieces: &[&[u8]]) -> (Vec<WireFrame>, Option<String>) {
    let mut codec = WireCodec;
    let mut buffer = BytesMut::new();
    let mut frames = Vec::new();
    let record = |result: Result<Option<WireFrame>, FrameError>, frames: &mut Vec<_>| {
        match result {
            Ok(Some(frame)) => {
                let size = match &frame {
                    WireFrame::Control(text) => text.len(),
                    WireFrame::Output(bytes) => bytes.len(),
                };
                assert!(size <= MAX_FRAME_BYTES, "a frame of {size} bytes");
                frames.push(frame);
                Ok(true)
            }
            Ok(None) => Ok(false),
            Err(error) => Err(error.to_string()),
        }
    };
    for piece in pieces {
        buffer.extend_from_slice(piece);
        loop {
            match record(codec.decode(&mut buffer), &mut frames) {
                Ok(true) => {}
                Ok(false) => break,
                Err(error) => return (frames, Some(error)),
            }
        }
        // Room for one frame beside what is buffered, however the stream claims lengths.
        assert!(
            buffer.capacity() <= 2 * (LARGEST_FRAME + buffer.len()) + piece.len(),
            "a buffer of {} bytes holding {}",
            buffer.capacity(),
            buffer.len()
        );
    }
    loop {
        match record(codec.decode_eof(&mut buffer), &mut frames) {
            Ok(true) => {}
            Ok(false) => return (frames, None),
            Err(error) => return (frames, Some(error)),
        }
    }
}

fuzz_target!(|data: &[u8]| {
    let Some((&step, stream)) = data.split_first() else {
        return;
    };
    let step = usize::from(step).max(1);
    let pieces: Vec<&[u8]> = stream.chunks(step).collect();
    assert_eq!(decode(&pieces), decode(&[stream]));
});

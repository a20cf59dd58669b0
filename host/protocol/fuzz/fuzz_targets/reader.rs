//! Any byte stream, cut into reads anywhere, must give the same frames as when fed whole,
//! and the line buffer must never grow past the cap.
#![no_main]

use libfuzzer_sys::fuzz_target;
use nightcrow_protocol::{LineItem, LineSplitter};

const CAP: usize = 64;

fn frames(pieces: &[&[u8]]) -> Vec<LineItem> {
    let mut splitter = LineSplitter::new(CAP);
    let mut frames = Vec::new();
    for piece in pieces {
        let mut rest = *piece;
        while let Some(frame) = splitter.push(&mut rest) {
            frames.push(frame);
        }
        assert!(splitter.capacity() <= CAP + 1);
    }
    frames.extend(splitter.finish());
    frames
}

fuzz_target!(|data: &[u8]| {
    let Some((&step, stream)) = data.split_first() else {
        return;
    };
    let step = usize::from(step).max(1);
    let pieces: Vec<&[u8]> = stream.chunks(step).collect();
    assert_eq!(frames(&pieces), frames(&[stream]));
});

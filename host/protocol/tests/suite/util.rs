use nightcrow_protocol::{LineItem, LineSplitter};

/// Frames of `input` fed to a fresh splitter in the given pieces, with the end-of-input
/// frame last. Asserts after every push that the buffer stayed within the cap.
pub fn frames_in_pieces<'a>(
    cap: usize,
    pieces: impl IntoIterator<Item = &'a [u8]>,
) -> Vec<LineItem> {
    let mut splitter = LineSplitter::new(cap);
    let mut frames = Vec::new();
    for piece in pieces {
        let mut rest = piece;
        while let Some(frame) = splitter.push(&mut rest) {
            frames.push(frame);
            assert_bounded(&splitter, cap);
        }
        assert!(
            rest.is_empty(),
            "push returned with input left and no frame"
        );
        assert_bounded(&splitter, cap);
    }
    frames.extend(splitter.finish());
    frames
}

pub fn frames_whole(cap: usize, input: &[u8]) -> Vec<LineItem> {
    frames_in_pieces(cap, [input])
}

pub fn frames_bytewise(cap: usize, input: &[u8]) -> Vec<LineItem> {
    frames_in_pieces(cap, input.chunks(1))
}

pub fn frames_split_at(cap: usize, input: &[u8], at: usize) -> Vec<LineItem> {
    let (head, tail) = input.split_at(at);
    frames_in_pieces(cap, [head, tail])
}

fn assert_bounded(splitter: &LineSplitter, cap: usize) {
    assert!(
        splitter.buffered() <= cap + 1 && splitter.capacity() <= cap + 1,
        "buffer grew to len {} / capacity {} with cap {cap}",
        splitter.buffered(),
        splitter.capacity()
    );
}

pub fn line(text: &str) -> LineItem {
    LineItem::Line(text.to_owned())
}

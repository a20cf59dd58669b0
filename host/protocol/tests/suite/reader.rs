use std::io;

use nightcrow_protocol::{BlockingLines, LineItem, LineSplitter, MAX_LINE_BYTES, READ_CHUNK_BYTES};

use crate::util::{frames_bytewise, frames_in_pieces, frames_split_at, frames_whole, line};

/// Checks that `input` yields `expected` however it is cut into reads.
#[track_caller]
fn check(cap: usize, input: &[u8], expected: &[LineItem]) {
    assert_eq!(frames_whole(cap, input), expected, "fed whole");
    assert_eq!(frames_bytewise(cap, input), expected, "fed byte by byte");
    for at in 0..=input.len() {
        assert_eq!(frames_split_at(cap, input, at), expected, "split at {at}");
    }
}

#[test]
fn lines_are_split_at_newlines_and_blank_lines_skipped() {
    check(16, b"a\n\nb\n  \nc\n", &[line("a"), line("b"), line("c")]);
}

#[test]
fn a_trailing_carriage_return_is_stripped_but_an_inner_one_kept() {
    check(16, b"a\r\nb\rc\n", &[line("a"), line("b\rc")]);
}

#[test]
fn a_line_of_exactly_the_cap_passes_and_one_more_byte_is_too_long() {
    let cap = 8;
    check(cap, b"12345678\nnext\n", &[line("12345678"), line("next")]);
    check(
        cap,
        b"123456789\nnext\n",
        &[LineItem::TooLong { cap }, line("next")],
    );
}

#[test]
fn crlf_at_the_cap_is_not_counted_against_it() {
    let cap = 8;
    check(
        cap,
        b"12345678\r\nnext\n",
        &[line("12345678"), line("next")],
    );
    check(
        cap,
        b"123456789\r\nnext\n",
        &[LineItem::TooLong { cap }, line("next")],
    );
}

#[test]
fn the_cap_crossed_over_three_reads_is_reported_once() {
    let cap = 10;
    let frames = frames_in_pieces(cap, [&b"1234"[..], b"5678", b"9abcdef\nok\n"]);
    assert_eq!(frames, [LineItem::TooLong { cap }, line("ok")]);
}

#[test]
fn a_newline_arriving_in_the_next_read_ends_the_line() {
    let frames = frames_in_pieces(8, [&b"abc"[..], b"\n", b"d\n"]);
    assert_eq!(frames, [line("abc"), line("d")]);
}

#[test]
fn an_over_long_line_is_dropped_whole_and_reading_resumes_after_its_newline() {
    let cap = 4;
    check(
        cap,
        b"ok\ntoo long by far\nfine\n",
        &[line("ok"), LineItem::TooLong { cap }, line("fine")],
    );
}

#[test]
fn non_utf8_lines_are_dropped_and_counted_by_length() {
    check(
        16,
        b"ok\n\xff\xfe bad\nfine\n",
        &[line("ok"), LineItem::NotUtf8 { len: 6 }, line("fine")],
    );
    // A multi-byte character split across reads is not an encoding error.
    check(16, "한국어\n".as_bytes(), &[line("한국어")]);
}

#[test]
fn an_unterminated_last_line_is_delivered_at_end_of_input() {
    check(8, b"a\nlast", &[line("a"), line("last")]);
    check(4, b"a\nlonger", &[line("a"), LineItem::TooLong { cap: 4 }]);
}

#[test]
fn ten_mebibytes_without_a_newline_stay_within_the_cap_then_a_valid_line_decodes() {
    let cap = MAX_LINE_BYTES;
    let mut splitter = LineSplitter::new(cap);
    let chunk = [b'x'; READ_CHUNK_BYTES];
    let mut frames = Vec::new();
    let mut peak_capacity = 0;
    for _ in 0..(10 << 20) / READ_CHUNK_BYTES {
        let mut input = &chunk[..];
        frames.extend(std::iter::from_fn(|| splitter.push(&mut input)));
        peak_capacity = peak_capacity.max(splitter.capacity());
    }
    assert_eq!(frames, [LineItem::TooLong { cap }]);
    assert!(
        peak_capacity <= cap + 1,
        "line buffer reached {peak_capacity} bytes"
    );
    assert!(
        splitter.capacity() <= READ_CHUNK_BYTES,
        "discarding keeps no cap-sized buffer: {}",
        splitter.capacity()
    );

    let valid = "{\"cmd\":\"log\",\"v\":3,\"level\":\"info\",\"message\":\"after\"}";
    let input = format!("tail of the long line\n{valid}\n");
    let mut rest = input.as_bytes();
    let frame = splitter.push(&mut rest).expect("the valid line");
    assert_eq!(frame, line(valid));
    assert!(nightcrow_protocol::decode_command(valid).is_ok());
}

/// A reader that hands out its data a few bytes at a time, like a pipe under load.
struct Trickle<'a> {
    data: &'a [u8],
    step: usize,
}

impl io::Read for Trickle<'_> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        let n = self.step.min(buf.len()).min(self.data.len());
        buf[..n].copy_from_slice(&self.data[..n]);
        self.data = &self.data[n..];
        Ok(n)
    }
}

#[test]
fn blocking_reader_yields_the_same_frames_as_the_splitter() {
    let input = b"one\r\n\xc3\x28\n\ntoo-long-line\nlast";
    let expected = frames_whole(8, input);
    for step in [1, 3, 7, 64] {
        let lines = BlockingLines::new(Trickle { data: input, step }, 8);
        let frames: Vec<LineItem> = lines.map(Result::unwrap).collect();
        assert_eq!(frames, expected, "step {step}");
    }
}

#[cfg(feature = "tokio")]
#[tokio::test]
async fn async_reader_yields_the_same_frames_as_the_splitter() {
    use tokio::io::AsyncWriteExt;
    let input: &[u8] = b"one\r\n\xc3\x28\n\ntoo-long-line\nlast";
    let expected = frames_whole(8, input);
    let (mut writer, reader) = tokio::io::duplex(3);
    let feed = tokio::spawn(async move {
        writer.write_all(input).await.unwrap();
    });
    let mut lines = nightcrow_protocol::AsyncLines::new(reader, 8);
    let mut frames = Vec::new();
    while let Some(frame) = lines.next_item().await.unwrap() {
        frames.push(frame);
        assert!(lines.splitter().capacity() <= 9);
    }
    feed.await.unwrap();
    assert_eq!(frames, expected);
}

//! What a pane shows now, as plain text rows: its replayed output drawn by a terminal
//! emulator at the pane's size. A program waiting at its prompt, or at a popup, says so
//! only on screen; this is what a plugin reads to tell which (SPEC §2.3 `pane_idle`).

use std::num::NonZeroU16;

use nightcrow_protocol::MAX_SCREEN_BYTES;

use crate::PaneSize;

/// The screen that `output` leaves on a terminal of `size`, rows joined by `\n` with
/// trailing blanks trimmed, cut to its bottom rows that fit [`MAX_SCREEN_BYTES`].
pub(crate) fn screen_text(output: &[u8], size: PaneSize) -> String {
    // A `PaneSize` is never zero; `MIN` only satisfies the type.
    let [rows, cols] =
        [size.rows(), size.cols()].map(|n| NonZeroU16::new(n).unwrap_or(NonZeroU16::MIN));
    let mut parser = vt100::Parser::new(rows, cols, 0);
    parser.process(output);
    let contents = parser.screen().contents();
    bottom_rows(&contents, MAX_SCREEN_BYTES).to_owned()
}

/// The last whole rows of `text` within `max` bytes (a single longer row: its end).
fn bottom_rows(text: &str, max: usize) -> &str {
    if text.len() <= max {
        return text;
    }
    let mut cut = text.len() - max;
    while !text.is_char_boundary(cut) {
        cut += 1;
    }
    let tail = &text[cut..];
    match tail.find('\n') {
        Some(newline) if newline + 1 < tail.len() => &tail[newline + 1..],
        _ => tail,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn size(rows: u16, cols: u16) -> PaneSize {
        PaneSize::new(rows, cols).expect("valid size")
    }

    #[test]
    fn a_redrawn_screen_reads_as_it_is_shown() {
        // A popup drawn at the bottom, then erased and replaced by a prompt with cursor
        // moves, as a full-screen program does it: only the prompt is left.
        let output = b"first line\r\n\x1b[3;1H  1. Switch model\x1b[4;1H  2. Keep current model\
            \x1b[3;1H\x1b[K\x1b[4;1H\x1b[K\x1b[4;1H\xe2\x80\xba Ask Codex to do anything";
        assert_eq!(
            screen_text(output, size(5, 40)).trim_end(),
            "first line\n\n\n› Ask Codex to do anything"
        );
    }

    #[test]
    fn rows_scrolled_off_are_gone_and_wide_text_stays_whole() {
        let output = "one\r\ntwo\r\nthree\r\n漢字 four".as_bytes();
        assert_eq!(
            screen_text(output, size(2, 20)).trim_end(),
            "three\n漢字 four"
        );
    }

    #[test]
    fn a_huge_screen_keeps_its_bottom_rows() {
        let text = (0..1000)
            .map(|n| format!("row {n:04}"))
            .collect::<Vec<_>>()
            .join("\n");
        let kept = bottom_rows(&text, 100);
        assert!(kept.len() <= 100 && kept.starts_with("row ") && kept.ends_with("row 0999"));
        assert_eq!(bottom_rows("short", 100), "short");
        assert_eq!(bottom_rows(&"é".repeat(100), 11), "é".repeat(5));
    }
}

//! Pane output as plugin text (SPEC §2.3), and the window title a program sets on the way
//! (OSC 0 and 2, docs/hub.md "Titles").

const ESC: u8 = 0x1b;
const BEL: u8 = 0x07;
// CAN and SUB abort any escape sequence in progress (ECMA-48, as terminals implement it).
const CAN: u8 = 0x18;
const SUB: u8 = 0x1a;

/// Most characters a program's title keeps; the rest is cut.
pub const MAX_TITLE_CHARS: usize = 128;
/// Most bytes of one OSC string kept while it arrives: `2;` and [`MAX_TITLE_CHARS`] of the
/// widest UTF-8. Longer strings are still read to their end, only not kept.
const MAX_OSC_BYTES: usize = 2 + 4 * MAX_TITLE_CHARS;

/// Where the stripper is in an escape sequence; carried from one chunk to the next.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum State {
    Ground,
    Escape,
    EscapeIntermediate,
    Csi,
    /// OSC, DCS, SOS, PM or APC: a string ended by ST (`ESC \`); OSC also by BEL.
    String {
        bel_ends: bool,
    },
    /// An ESC inside a string: `\` completes ST, anything else starts a new escape.
    StringEscape,
}

/// Turns raw PTY chunks into plain text: lossy UTF-8, escape sequences (CSI, OSC, DCS,
/// SOS/PM/APC, two-byte `ESC x`) removed, C0 and C1 controls dropped except `\r`, `\n`,
/// BS and DEL.
///
/// State carries across chunks, so an escape sequence or a UTF-8 character split over two
/// reads comes out as if it had arrived whole. A character left incomplete by an escape
/// sequence becomes U+FFFD, as it does when the chunks arrive whole.
///
/// On the way it reads the title a program sets with OSC 0 or 2 (ended by BEL or ST; one
/// cut short by CAN, SUB or another escape sets nothing): see [`take_title`](Self::take_title).
#[derive(Debug)]
pub(crate) struct Stripper {
    state: State,
    /// Text bytes that end in an incomplete UTF-8 sequence (at most 3 bytes between calls).
    pending: Vec<u8>,
    /// The OSC string being read, its first [`MAX_OSC_BYTES`]; `None` outside an OSC.
    osc: Option<Vec<u8>>,
    /// The last title set since [`take_title`](Self::take_title); empty when the program
    /// cleared it.
    title: Option<String>,
}

impl Stripper {
    pub(crate) fn new() -> Stripper {
        Stripper {
            state: State::Ground,
            pending: Vec::new(),
            osc: None,
            title: None,
        }
    }

    /// The title the program set last since the previous call, cleaned (control characters
    /// removed, blanks trimmed, at most [`MAX_TITLE_CHARS`]); an empty string when it set an
    /// empty one. `None` when it set none.
    pub(crate) fn take_title(&mut self) -> Option<String> {
        self.title.take()
    }

    pub(crate) fn push(&mut self, chunk: &[u8]) -> String {
        let mut text = String::with_capacity(chunk.len());
        let mut rest = chunk;
        while let Some((&byte, after)) = rest.split_first() {
            if self.state == State::Ground && byte != ESC {
                // Text up to the next escape is taken whole: most output is mostly text,
                // and this is the loop every byte of a pane's output goes through.
                let run = rest.iter().position(|&b| b == ESC).unwrap_or(rest.len());
                self.pending.extend_from_slice(&rest[..run]);
                rest = &rest[run..];
                continue;
            }
            self.byte(byte, &mut text);
            rest = after;
        }
        self.decode(&mut text, false);
        text
    }

    fn byte(&mut self, byte: u8, text: &mut String) {
        match self.state {
            State::Ground => {
                if byte == ESC {
                    self.enter_escape(text);
                } else {
                    self.pending.push(byte);
                }
            }
            State::Escape => match byte {
                b'[' => self.state = State::Csi,
                b']' => {
                    self.state = State::String { bel_ends: true };
                    self.osc = Some(Vec::new());
                }
                b'P' | b'X' | b'^' | b'_' => self.state = State::String { bel_ends: false },
                0x20..=0x2f => self.state = State::EscapeIntermediate,
                _ => self.control_or_final(byte, text),
            },
            State::EscapeIntermediate => match byte {
                0x20..=0x2f => {}
                _ => self.control_or_final(byte, text),
            },
            State::Csi => match byte {
                0x20..=0x3f => {}
                _ => self.control_or_final(byte, text),
            },
            State::String { bel_ends } => match byte {
                ESC => self.state = State::StringEscape,
                BEL if bel_ends => self.end_string(),
                CAN | SUB => {
                    self.osc = None;
                    self.state = State::Ground;
                }
                _ => {
                    if let Some(osc) = self.osc.as_mut().filter(|osc| osc.len() < MAX_OSC_BYTES) {
                        osc.push(byte);
                    }
                }
            },
            State::StringEscape => {
                if byte == b'\\' {
                    self.end_string();
                } else {
                    self.osc = None;
                    self.state = State::Escape;
                    self.byte(byte, text);
                }
            }
        }
    }

    /// A byte inside an escape sequence that is not part of its parameters: a C0 control is
    /// executed in place (so `\r` and `\n` survive), anything else ends the sequence.
    fn control_or_final(&mut self, byte: u8, text: &mut String) {
        match byte {
            ESC => self.enter_escape(text),
            CAN | SUB => self.state = State::Ground,
            0x00..=0x1f => push_kept(char::from(byte), text),
            // DEL is ignored inside a sequence, as terminals do.
            0x7f => {}
            _ => self.state = State::Ground,
        }
    }

    /// A string ended by its terminator: an OSC 0 or 2 sets the title.
    fn end_string(&mut self) {
        self.state = State::Ground;
        let Some(osc) = self.osc.take() else {
            return;
        };
        if let Some(title) = osc.strip_prefix(b"0;").or_else(|| osc.strip_prefix(b"2;")) {
            self.title = Some(clean_title(title, osc.len() == MAX_OSC_BYTES));
        }
    }

    fn enter_escape(&mut self, text: &mut String) {
        self.decode(text, true);
        self.state = State::Escape;
    }

    /// Decodes the pending text bytes; an incomplete character at the end is kept for the
    /// next chunk unless `flush`.
    fn decode(&mut self, text: &mut String, flush: bool) {
        let mut rest = &self.pending[..];
        loop {
            match std::str::from_utf8(rest) {
                Ok(valid) => {
                    push_all_kept(valid, text);
                    rest = &[];
                    break;
                }
                Err(error) => {
                    let (valid, after) = rest.split_at(error.valid_up_to());
                    // Checked by `from_utf8` just above.
                    let valid = std::str::from_utf8(valid).unwrap_or_default();
                    push_all_kept(valid, text);
                    match error.error_len() {
                        Some(len) => {
                            text.push(char::REPLACEMENT_CHARACTER);
                            rest = &after[len..];
                        }
                        None if flush => {
                            text.push(char::REPLACEMENT_CHARACTER);
                            rest = &[];
                            break;
                        }
                        None => {
                            rest = after;
                            break;
                        }
                    }
                }
            }
        }
        let keep = rest.len();
        let start = self.pending.len() - keep;
        self.pending.drain(..start);
    }
}

/// A title as a tab may show it: lossy UTF-8 without control characters, trimmed, at most
/// [`MAX_TITLE_CHARS`]. `cut`: the bytes were cut off, so an incomplete last character is
/// dropped rather than shown as U+FFFD.
fn clean_title(bytes: &[u8], cut: bool) -> String {
    let mut title: String = String::from_utf8_lossy(bytes)
        .chars()
        .filter(|c| !c.is_control())
        .take(MAX_TITLE_CHARS)
        .collect();
    if cut && title.ends_with(char::REPLACEMENT_CHARACTER) {
        title.pop();
    }
    title.trim().to_owned()
}

fn kept(c: char) -> bool {
    match c {
        '\r' | '\n' | '\u{8}' | '\u{7f}' => true,
        _ => !c.is_control(),
    }
}

fn push_kept(c: char, text: &mut String) {
    if kept(c) {
        text.push(c);
    }
}

/// `valid` without the controls that are dropped; copied whole when it has none, as most
/// text has not.
fn push_all_kept(valid: &str, text: &mut String) {
    match valid.find(|c| !kept(c)) {
        None => text.push_str(valid),
        Some(first) => {
            text.push_str(&valid[..first]);
            valid[first..].chars().for_each(|c| push_kept(c, text));
        }
    }
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;

    use super::*;

    fn strip(bytes: &[u8]) -> String {
        Stripper::new().push(bytes)
    }

    #[track_caller]
    fn check(input: &[u8], expected: &str) {
        assert_eq!(
            strip(input),
            expected,
            "input {:?}",
            String::from_utf8_lossy(input)
        );
    }

    #[test]
    fn escape_sequences_are_removed() {
        check(b"\x1b[1;31mred\x1b[0m", "red");
        check(b"a\x1b[?25lb\x1b[2 qc", "abc");
        check(b"\x1b]0;title\x07after", "after");
        check(b"\x1b]8;;https://x\x1b\\link\x1b]8;;\x1b\\", "link");
        check(b"\x1bPq#0;2;0;0;0\x1b\\sixel", "sixel");
        check(b"\x1b_apc\x07still\x1b\\x", "x");
        check(b"\x1b7saved\x1b8\x1b(B\x1b=", "saved");
        check(b"\x1b[31\x18plain", "plain");
    }

    #[test]
    fn only_cr_lf_bs_and_del_survive_among_controls() {
        check(b"a\r\nb\x08c\x7fd", "a\r\nb\u{8}c\u{7f}d");
        check(b"\x00\x01\x07\t\x0b\x0c\x0e\x1f.", ".");
        check("c1:\u{85}\u{9b}\u{9c}.".as_bytes(), "c1:.");
        check(b"\x1b[1\r\nm", "\r\n");
    }

    #[test]
    fn invalid_utf8_becomes_replacement_characters() {
        check(b"a\xffb", "a\u{fffd}b");
        check("é→😀".as_bytes(), "é→😀");
        check(b"\xe2\x82\x1b[mx", "\u{fffd}x");
    }

    #[test]
    fn an_incomplete_character_waits_for_the_next_chunk() {
        let mut stripper = Stripper::new();
        assert_eq!(stripper.push(&"€".as_bytes()[..1]), "");
        assert_eq!(stripper.push(&"€".as_bytes()[1..]), "€");
    }

    /// The text and the title that `chunks` leave, fed one after another.
    fn titled(chunks: &[&[u8]]) -> (String, Option<String>) {
        let mut stripper = Stripper::new();
        let text = chunks.iter().map(|chunk| stripper.push(chunk)).collect();
        (text, stripper.take_title())
    }

    #[track_caller]
    fn check_title(input: &[u8], expected: Option<&str>) {
        let (_, title) = titled(&[input]);
        assert_eq!(
            title.as_deref(),
            expected,
            "input {:?}",
            String::from_utf8_lossy(input)
        );
    }

    #[test]
    fn osc_0_and_2_set_the_title_with_either_terminator() {
        check_title(b"\x1b]0;build\x07", Some("build"));
        check_title(b"\x1b]2;build\x1b\\", Some("build"));
        check_title(b"a\x1b]2;tests \xe2\x9c\x93\x07b", Some("tests \u{2713}"));
        assert_eq!(titled(&[b"a\x1b]2;build\x07b"]).0, "ab");
        // The icon name, a hyperlink and other strings are no title.
        check_title(b"\x1b]1;icon\x07", None);
        check_title(b"\x1b]8;;https://x\x1b\\", None);
        check_title(b"\x1bP2;dcs\x1b\\\x1b_0;apc\x07", None);
        check_title(b"plain text", None);
    }

    #[test]
    fn the_last_title_wins_and_is_taken_once() {
        let mut stripper = Stripper::new();
        stripper.push(b"\x1b]2;one\x07\x1b]0;two\x1b\\");
        stripper.push(b"\x1b]2;three\x07");
        assert_eq!(stripper.take_title().as_deref(), Some("three"));
        assert_eq!(stripper.take_title(), None);
        stripper.push(b"more output");
        assert_eq!(stripper.take_title(), None);
    }

    #[test]
    fn a_title_split_across_reads_is_read_whole() {
        let input = b"x\x1b]2;long build \xe2\x9c\x93\x1b\\y";
        for at in 0..=input.len() {
            let (text, title) = titled(&[&input[..at], &input[at..]]);
            assert_eq!(text, "xy", "split at {at}");
            assert_eq!(
                title.as_deref(),
                Some("long build \u{2713}"),
                "split at {at}"
            );
        }
        let bytewise: Vec<&[u8]> = input.chunks(1).collect();
        assert_eq!(titled(&bytewise).1.as_deref(), Some("long build \u{2713}"));
    }

    #[test]
    fn an_oversized_title_is_cut_and_the_text_after_it_survives() {
        let mut input = b"\x1b]2;".to_vec();
        input.extend("é".repeat(100_000).as_bytes());
        input.extend(b"\x07after");
        let (text, title) = titled(&[&input]);
        assert_eq!(text, "after");
        assert_eq!(title, Some("é".repeat(MAX_TITLE_CHARS)));
        // The kept bytes end inside a `€`, after tabs that are dropped: the piece of a
        // character is dropped too, not shown as U+FFFD.
        let mut input = b"\x1b]2;".to_vec();
        input.extend(b"\t".repeat(MAX_OSC_BYTES - 2 - 11));
        input.extend("€".repeat(10).as_bytes());
        input.push(0x07);
        assert_eq!(titled(&[&input]).1.as_deref(), Some("€€€"));
    }

    #[test]
    fn control_characters_leave_the_title() {
        check_title(b"\x1b]2;a\tb\rc\nd\x7fe\x01f\x07", Some("abcdef"));
        check_title("\x1b]2;c1\u{85}\u{9b}x\x07".as_bytes(), Some("c1x"));
        check_title(b"\x1b]2;  padded  \x07", Some("padded"));
    }

    #[test]
    fn an_empty_title_clears_it_and_an_aborted_one_sets_nothing() {
        check_title(b"\x1b]2;\x07", Some(""));
        check_title(b"\x1b]0;\x01\x02 \x1b\\", Some(""));
        check_title(b"\x1b]2;half\x18done", None);
        check_title(b"\x1b]2;half\x1b[mdone", None);
        check_title(b"\x1b]2;never ended", None);
    }

    fn interesting_bytes() -> impl Strategy<Value = Vec<u8>> {
        let pieces = prop_oneof![
            Just(b"\x1b".to_vec()),
            Just(b"\x1b[".to_vec()),
            Just(b"\x1b]".to_vec()),
            Just(b"\x1b]2;".to_vec()),
            Just(b"\x1bP".to_vec()),
            Just(b"\x1b\\".to_vec()),
            Just(b"\x07".to_vec()),
            Just(b"\x18".to_vec()),
            Just(b";1m".to_vec()),
            Just("é€😀".as_bytes().to_vec()),
            Just("\u{9b}".as_bytes().to_vec()),
            any::<u8>().prop_map(|b| vec![b]),
            "[ -~]{0,8}".prop_map(String::into_bytes),
        ];
        prop::collection::vec(pieces, 0..24).prop_map(|pieces| pieces.concat())
    }

    proptest! {
        #[test]
        fn output_has_no_escape_or_dropped_control(input in interesting_bytes()) {
            let text = strip(&input);
            for c in text.chars() {
                prop_assert!(
                    !c.is_control() || matches!(c, '\r' | '\n' | '\u{8}' | '\u{7f}'),
                    "{c:?} in {text:?}"
                );
            }
        }

        #[test]
        fn printable_text_passes_unchanged(input in "[^\\p{Cc}]{0,64}") {
            prop_assert_eq!(strip(input.as_bytes()), input);
        }

        #[test]
        fn any_split_gives_the_same_text_and_title(input in interesting_bytes()) {
            let whole = titled(&[&input]);
            for at in 0..=input.len() {
                let split = titled(&[&input[..at], &input[at..]]);
                prop_assert_eq!(&split, &whole, "split at {}", at);
            }
            let bytewise: Vec<&[u8]> = input.chunks(1).collect();
            prop_assert_eq!(titled(&bytewise), whole);
        }
    }
}

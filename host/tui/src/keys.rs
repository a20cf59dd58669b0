//! The few keys the TUI itself reads (after the leader, in scrollback mode, in a prompt),
//! told apart in the raw bytes a terminal sends. Everything else goes to the pane as it
//! came, byte for byte, so no key a program understands is lost in translation.

/// One key press, as far as the TUI's own commands care.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Key {
    /// A printable or control byte (`c`, `?`, the leader's byte, Enter as `\r`…).
    Byte(u8),
    Escape,
    Up,
    Down,
    Left,
    Right,
    PageUp,
    PageDown,
    Home,
    End,
    /// A mouse report in the SGR encoding the TUI asks the terminal for.
    Mouse(MouseReport),
    /// A sequence the TUI has no use for (a function key…).
    Other,
}

/// `ESC [ < code ; column ; row M` (a press, a motion or a wheel notch) or `… m` (a
/// release), as a terminal in SGR mouse mode (1006) sends it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct MouseReport {
    /// Button and modifiers: the low two bits the button, 4 Shift, 8 Alt, 16 Ctrl, 32 a
    /// motion, 64 the wheel.
    pub code: u16,
    /// 1-based, on the whole terminal.
    pub column: u16,
    pub row: u16,
    pub release: bool,
}

impl MouseReport {
    /// The report `params` (what follows `ESC [`, without the final byte) and `last` make,
    /// if they are one.
    fn parse(params: &[u8], last: u8) -> Option<MouseReport> {
        let release = match last {
            b'M' => false,
            b'm' => true,
            _ => return None,
        };
        let text = std::str::from_utf8(params.strip_prefix(b"<")?).ok()?;
        let mut numbers = text.split(';').map(|n| n.parse::<u16>().ok());
        let (Some(Some(code)), Some(Some(column)), Some(Some(row)), None) = (
            numbers.next(),
            numbers.next(),
            numbers.next(),
            numbers.next(),
        ) else {
            return None;
        };
        Some(MouseReport {
            code,
            column,
            row,
            release,
        })
    }
}

/// Where the first SGR mouse report in `bytes` starts, if there is one.
pub fn mouse_report_at(bytes: &[u8]) -> Option<usize> {
    (0..bytes.len()).find(|&at| {
        bytes[at..].starts_with(b"\x1b[<") && matches!(next_key(&bytes[at..]).0, Key::Mouse(_))
    })
}

/// The first key in `bytes` and how many bytes it took (at least one). A lone ESC at the
/// end of a read is the Escape key: terminals send a whole sequence in one write.
pub fn next_key(bytes: &[u8]) -> (Key, usize) {
    match bytes {
        [] => (Key::Other, 0),
        [0x1b] => (Key::Escape, 1),
        [0x1b, b'[', rest @ ..] => {
            // CSI: parameters and intermediates, then a final byte in 0x40..=0x7e.
            let Some(end) = rest.iter().position(|b| (0x40..=0x7e).contains(b)) else {
                return (Key::Other, bytes.len());
            };
            let key = match (&rest[..end], rest[end]) {
                (b"", b'A') => Key::Up,
                (b"", b'B') => Key::Down,
                (b"", b'C') => Key::Right,
                (b"", b'D') => Key::Left,
                (b"", b'H') | (b"1" | b"7", b'~') => Key::Home,
                (b"", b'F') | (b"4" | b"8", b'~') => Key::End,
                (b"5", b'~') => Key::PageUp,
                (b"6", b'~') => Key::PageDown,
                (params, last) => MouseReport::parse(params, last).map_or(Key::Other, Key::Mouse),
            };
            (key, 2 + end + 1)
        }
        [0x1b, b'O', last, ..] => {
            let key = match last {
                b'A' => Key::Up,
                b'B' => Key::Down,
                b'C' => Key::Right,
                b'D' => Key::Left,
                b'H' => Key::Home,
                b'F' => Key::End,
                _ => Key::Other,
            };
            (key, 3)
        }
        // Alt+key and the like: ESC then one byte.
        [0x1b, _, ..] => (Key::Other, 2),
        [byte, ..] => (Key::Byte(*byte), 1),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_are_told_apart_in_raw_input() {
        #[track_caller]
        fn check(bytes: &[u8], expected: &[Key]) {
            let mut keys = Vec::new();
            let mut rest = bytes;
            while !rest.is_empty() {
                let (key, used) = next_key(rest);
                assert!(used > 0);
                keys.push(key);
                rest = &rest[used..];
            }
            assert_eq!(keys, expected, "{bytes:?}");
        }
        check(b"c", &[Key::Byte(b'c')]);
        check(b"\x06\x06", &[Key::Byte(6), Key::Byte(6)]);
        check(b"\x1b[5~\x1b[6~", &[Key::PageUp, Key::PageDown]);
        check(b"\x1b[A\x1bOB", &[Key::Up, Key::Down]);
        check(b"\x1b[C\x1bOD", &[Key::Right, Key::Left]);
        check(b"\x1b[H\x1b[4~", &[Key::Home, Key::End]);
        check(b"\x1b", &[Key::Escape]);
        check(b"\x1b[1;5Aq", &[Key::Other, Key::Byte(b'q')]);
        let report = |code, column, row, release| {
            Key::Mouse(MouseReport {
                code,
                column,
                row,
                release,
            })
        };
        check(
            b"\x1b[<0;3;4Mq\x1b[<64;120;30M\x1b[<0;3;4m",
            &[
                report(0, 3, 4, false),
                Key::Byte(b'q'),
                report(64, 120, 30, false),
                report(0, 3, 4, true),
            ],
        );
        // Not a whole report: nothing the TUI acts on.
        check(b"\x1b[<0;3M\x1b[<0;3;4;5M", &[Key::Other, Key::Other]);
        assert_eq!(mouse_report_at(b"ls\x1b[A\x1b[<2;1;1M"), Some(5));
        assert_eq!(mouse_report_at(b"ls\x1b[<2;1M\x1b[1;5A"), None);
        check(b"\x1bxq", &[Key::Other, Key::Byte(b'q')]);
        check(b"\x1b[12", &[Key::Other]);
    }
}

//! Plugin text made safe to show: a terminal acts on control characters (an `ESC ]0;…BEL`
//! retitles it, `ESC [31m` recolours it, a newline forges a log line), so every control
//! character in text from outside is written as an escape (`\u{1b}`, `\n`) instead.

use std::borrow::Cow;

/// Longest `state` of an approved status, in characters (after escaping).
pub const MAX_STATUS_STATE_CHARS: usize = 64;
/// Longest `detail` of an approved status, in characters (after escaping).
pub const MAX_STATUS_DETAIL_CHARS: usize = 256;

/// `text` with each Unicode control character (C0, DEL, C1) written as its Rust escape:
/// harmless to print or log, and still readable. Borrowed when there is none.
pub fn escape_controls(text: &str) -> Cow<'_, str> {
    if !text.chars().any(char::is_control) {
        return Cow::Borrowed(text);
    }
    let mut escaped = String::with_capacity(text.len() + 8);
    for character in text.chars() {
        if character.is_control() {
            escaped.extend(character.escape_default());
        } else {
            escaped.push(character);
        }
    }
    Cow::Owned(escaped)
}

/// `text` escaped, then cut to `max_chars` characters.
pub(crate) fn shown(text: &str, max_chars: usize) -> String {
    escape_controls(text).chars().take(max_chars).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn control_characters_become_escapes_and_the_rest_stays() {
        assert!(matches!(escape_controls("plain ⏳ text"), Cow::Borrowed(_)));
        assert_eq!(
            escape_controls("\u{1b}]0;pwned\u{7}\u{1b}[31mred\n\u{9b}x\u{7f}"),
            "\\u{1b}]0;pwned\\u{7}\\u{1b}[31mred\\n\\u{9b}x\\u{7f}"
        );
        assert_eq!(shown("\u{1b}abc", 7), "\\u{1b}a");
        assert_eq!(
            shown(&"é".repeat(300), MAX_STATUS_DETAIL_CHARS)
                .chars()
                .count(),
            256
        );
    }
}

//! Encoding events and decoding commands: shape and size checks only, no permission.

use serde::Serialize;
use serde::de::DeserializeOwned;

use crate::{Command, Event, MAX_INPUT_BYTES, MAX_LINE_BYTES, PROTOCOL_VERSION};

/// Why a line did not decode. Each variant is one class of SPEC §2.5, checked in the order
/// the variants are listed; the `Display` text names the cause and the numbers involved.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum DecodeError {
    #[error("line is {len} bytes, over the {max}-byte limit")]
    LineTooLong { len: usize, max: usize },
    #[error("blank line")]
    Blank,
    #[error("not JSON: {0}")]
    Malformed(String),
    #[error("bad message shape: {0}")]
    Shape(String),
    #[error("protocol version mismatch: line says v={found}, this side speaks v={expected}")]
    VersionMismatch { found: String, expected: u32 },
    #[error("send_input data is {len} bytes, over the {max}-byte limit")]
    InputTooLarge { len: usize, max: usize },
}

/// Why a message could not be put on the wire.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum EncodeError {
    #[error("encoded `{tag}` is {len} bytes, over the {max}-byte line limit")]
    LineTooLong {
        tag: &'static str,
        len: usize,
        max: usize,
    },
    #[error("encoded `{tag}` contains a raw newline")]
    RawNewline { tag: &'static str },
}

/// Host side: decodes one plugin line (without its `\n`) into a [`Command`].
///
/// Checks shape and size only, in the order of SPEC §2.5. A decoded command grants nothing.
pub fn decode_command(line: &str) -> Result<Command, DecodeError> {
    let command: Command = decode_line(line)?;
    if let Command::SendInput { data, .. } = &command
        && data.len() > MAX_INPUT_BYTES
    {
        return Err(DecodeError::InputTooLarge {
            len: data.len(),
            max: MAX_INPUT_BYTES,
        });
    }
    Ok(command)
}

/// Plugin side: decodes one host line (without its `\n`) into an [`Event`], with the same
/// rules as [`decode_command`]; a line of another protocol version is refused.
pub fn decode_event(line: &str) -> Result<Event, DecodeError> {
    decode_line(line)
}

/// Host side: encodes an event as one or more `\n`-terminated lines.
///
/// A `pane_output` whose line would exceed [`MAX_LINE_BYTES`] is split into several
/// `pane_output` events on character boundaries; nothing is truncated. Any other event that
/// would exceed the limit is an error.
pub fn encode_event(event: &Event) -> Result<String, EncodeError> {
    let line = encode_line(event, event.tag())?;
    if line.len() <= MAX_LINE_BYTES {
        return Ok(line + "\n");
    }
    let Event::PaneOutput {
        token,
        generation,
        text,
    } = event
    else {
        return Err(EncodeError::LineTooLong {
            tag: event.tag(),
            len: line.len(),
            max: MAX_LINE_BYTES,
        });
    };
    let piece = |text: &str| Event::PaneOutput {
        token: token.clone(),
        generation: *generation,
        text: text.to_owned(),
    };
    let overhead = encode_line(&piece(""), "pane_output")?.len();
    let budget = MAX_LINE_BYTES.saturating_sub(overhead);
    let mut lines = String::with_capacity(line.len() + line.len() / budget.max(1) * overhead);
    for chunk in split_by_escaped_len(text, budget) {
        let piece_line = encode_line(&piece(chunk), "pane_output")?;
        if piece_line.len() > MAX_LINE_BYTES {
            return Err(EncodeError::LineTooLong {
                tag: "pane_output",
                len: piece_line.len(),
                max: MAX_LINE_BYTES,
            });
        }
        lines.push_str(&piece_line);
        lines.push('\n');
    }
    Ok(lines)
}

/// Plugin side: encodes a command as one `\n`-terminated line.
pub fn encode_command(command: &Command) -> Result<String, EncodeError> {
    let line = encode_line(command, command.tag())?;
    if line.len() > MAX_LINE_BYTES {
        return Err(EncodeError::LineTooLong {
            tag: command.tag(),
            len: line.len(),
            max: MAX_LINE_BYTES,
        });
    }
    Ok(line + "\n")
}

fn decode_line<T: DeserializeOwned>(line: &str) -> Result<T, DecodeError> {
    if line.len() > MAX_LINE_BYTES {
        return Err(DecodeError::LineTooLong {
            len: line.len(),
            max: MAX_LINE_BYTES,
        });
    }
    if line.trim().is_empty() {
        return Err(DecodeError::Blank);
    }
    let parsed = serde_json::from_str::<T>(line).map_err(classify);
    // serde also accepts the fields of a message as a JSON array; the wire format does not.
    if !line.trim_start().starts_with('{') && !matches!(parsed, Err(DecodeError::Malformed(_))) {
        return Err(DecodeError::Shape(
            "a message must be a JSON object".to_owned(),
        ));
    }
    let message = parsed?;
    // The message types ignore unknown fields, `v` among them; it is read on its own so that
    // a shape error is reported before a version mismatch, as SPEC §2.5 orders them.
    #[derive(serde::Deserialize)]
    struct VersionField {
        v: Option<serde_json::Value>,
    }
    let VersionField { v } = serde_json::from_str(line).map_err(classify)?;
    match v {
        None => Err(DecodeError::Shape("missing field `v`".to_owned())),
        Some(serde_json::Value::Number(n)) if n.as_u64() == Some(u64::from(PROTOCOL_VERSION)) => {
            Ok(message)
        }
        Some(serde_json::Value::Number(n)) => Err(DecodeError::VersionMismatch {
            found: n.to_string(),
            expected: PROTOCOL_VERSION,
        }),
        Some(other) => Err(DecodeError::Shape(format!(
            "field `v` must be a number, got {other}"
        ))),
    }
}

fn classify(error: serde_json::Error) -> DecodeError {
    match error.classify() {
        serde_json::error::Category::Data => DecodeError::Shape(error.to_string()),
        _ => DecodeError::Malformed(error.to_string()),
    }
}

/// Serialises `message` and inserts `"v":3` right after the tag, where the wire examples of
/// SPEC §2.4 put it. serde writes an internally tagged enum's tag first, and tags are
/// snake_case literals that need no escaping, so the splice point is exact.
fn encode_line<T: Serialize>(message: &T, tag: &'static str) -> Result<String, EncodeError> {
    // Serialising these plain enums into a String cannot fail.
    let body = serde_json::to_string(message).expect("protocol messages always serialise");
    let tag_start = body.find("\":\"").expect("the tag is serialised first") + 3;
    let tag_end = tag_start + tag.len() + 1;
    debug_assert_eq!(&body[tag_start..tag_end], format!("{tag}\""));
    let mut line = String::with_capacity(body.len() + 8);
    line.push_str(&body[..tag_end]);
    line.push_str(VERSION_FIELD);
    line.push_str(&body[tag_end..]);
    if line.contains('\n') {
        return Err(EncodeError::RawNewline { tag });
    }
    Ok(line)
}

const VERSION_FIELD: &str = concat!(",\"v\":", 3);
const _: () = assert!(
    PROTOCOL_VERSION == 3,
    "VERSION_FIELD spells the version out"
);

/// Splits `text` into pieces whose JSON-escaped length is at most `budget`, on char
/// boundaries. The escaped length of a char mirrors serde_json's string escaping.
fn split_by_escaped_len(text: &str, budget: usize) -> impl Iterator<Item = &str> {
    let mut rest = text;
    std::iter::from_fn(move || {
        if rest.is_empty() {
            return None;
        }
        let mut used = 0;
        let mut end = 0;
        for (index, c) in rest.char_indices() {
            let cost = escaped_len(c);
            if used + cost > budget && end > 0 {
                break;
            }
            used += cost;
            end = index + c.len_utf8();
        }
        let (piece, tail) = rest.split_at(end);
        rest = tail;
        Some(piece)
    })
}

fn escaped_len(c: char) -> usize {
    match c {
        '"' | '\\' | '\n' | '\r' | '\t' | '\u{8}' | '\u{c}' => 2,
        c if c < ' ' => 6,
        c => c.len_utf8(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Token;

    fn token() -> Token {
        Token::parse("0123456789abcdef0123456789abcdef").unwrap()
    }

    #[test]
    fn escaped_len_matches_serde_json_for_every_ascii_and_some_unicode() {
        for c in (0u8..=0x7f)
            .map(char::from)
            .chain(['é', '한', '😀', '\u{9b}'])
        {
            let encoded = serde_json::to_string(&c.to_string()).unwrap();
            assert_eq!(escaped_len(c), encoded.len() - 2, "{c:?}");
        }
    }

    #[test]
    fn version_is_written_right_after_the_tag() {
        assert_eq!(
            encode_event(&Event::Shutdown).unwrap(),
            "{\"event\":\"shutdown\",\"v\":3}\n"
        );
        let line = encode_command(&Command::WatchPane { token: token() }).unwrap();
        assert!(
            line.starts_with("{\"cmd\":\"watch_pane\",\"v\":3,\"token\":"),
            "{line}"
        );
    }

    #[test]
    fn oversized_pane_output_splits_into_lines_that_each_fit() {
        let text = "한\"\u{1}".repeat(40_000);
        let event = Event::PaneOutput {
            token: token(),
            generation: 7,
            text: text.clone(),
        };
        let encoded = encode_event(&event).unwrap();
        let mut rebuilt = String::new();
        let mut lines = 0;
        for line in encoded.lines() {
            assert!(line.len() <= MAX_LINE_BYTES, "{} bytes", line.len());
            match decode_event(line).unwrap() {
                Event::PaneOutput {
                    text, generation, ..
                } => {
                    assert_eq!(generation, 7);
                    rebuilt.push_str(&text);
                }
                other => panic!("unexpected {other:?}"),
            }
            lines += 1;
        }
        assert!(lines > 1);
        assert_eq!(rebuilt, text);
    }

    #[test]
    fn oversized_other_event_is_an_error() {
        let event = Event::PaneOpened {
            token: token(),
            generation: 1,
            title: Some("x".repeat(MAX_LINE_BYTES)),
            command: None,
            cwd: "/".to_owned(),
            opened_ms: None,
        };
        assert!(matches!(
            encode_event(&event),
            Err(EncodeError::LineTooLong {
                tag: "pane_opened",
                ..
            })
        ));
    }
}

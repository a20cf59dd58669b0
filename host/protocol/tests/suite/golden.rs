//! The v3 corpus under `tests/golden/`: `v3.ndjson` holds canonical lines (what this
//! host writes), `v3-lenient.ndjson` pairs of an accepted variant and its canonical form,
//! `bad-commands.ndjson` one refused line per row as `outcome<TAB>message<TAB>line`.

use nightcrow_protocol::{
    Command, DecodeError, Event, LineItem, MAX_LINE_BYTES, decode_command, decode_event,
    encode_command, encode_event,
};

use crate::util::frames_whole;

const CANONICAL: &str = include_str!("../golden/v3.ndjson");
const LENIENT: &str = include_str!("../golden/v3-lenient.ndjson");
const BAD_COMMANDS: &[u8] = include_bytes!("../golden/bad-commands.ndjson");

enum Message {
    Event(Event),
    Command(Command),
}

/// Decodes a corpus line with the decoder of its direction and re-encodes it.
fn round_trip(line: &str) -> (Message, String) {
    if line.trim_start().starts_with("{\"event\"") || line.contains("\"event\":") {
        let event = decode_event(line).unwrap_or_else(|e| panic!("{e}: {line}"));
        let encoded = encode_event(&event).unwrap();
        (Message::Event(event), encoded)
    } else {
        let command = decode_command(line).unwrap_or_else(|e| panic!("{e}: {line}"));
        let encoded = encode_command(&command).unwrap();
        (Message::Command(command), encoded)
    }
}

#[test]
fn every_canonical_line_round_trips_byte_for_byte() {
    for line in CANONICAL.lines() {
        let (_, encoded) = round_trip(line);
        assert_eq!(encoded, format!("{line}\n"));
    }
}

#[test]
fn the_corpus_holds_every_event_and_command_of_the_spec() {
    let mut tags: Vec<&str> = CANONICAL
        .lines()
        .map(|line| match round_trip(line).0 {
            Message::Event(event) => event.tag(),
            Message::Command(command) => command.tag(),
        })
        .collect();
    tags.sort_unstable();
    tags.dedup();
    let mut expected = vec![
        "pane_opened",
        "pane_output",
        "pane_idle",
        "pane_exited",
        "pane_closed",
        "user_input",
        "shutdown",
        "send_input",
        "relaunch",
        "status",
        "watch_pane",
        "attention",
        "log",
    ];
    expected.sort_unstable();
    assert_eq!(tags, expected);
    assert!(
        CANONICAL.lines().any(|line| line.len() == MAX_LINE_BYTES),
        "a line of exactly the cap"
    );
}

#[test]
fn lenient_variants_decode_to_their_canonical_form() {
    let lines: Vec<&str> = LENIENT.lines().collect();
    assert!(!lines.is_empty() && lines.len().is_multiple_of(2));
    for pair in lines.chunks(2) {
        let (_, encoded) = round_trip(pair[0]);
        assert_eq!(encoded, format!("{}\n", pair[1]), "from {}", pair[0]);
    }
}

struct BadLine<'a> {
    outcome: &'a str,
    message: &'a str,
    raw: &'a [u8],
}

fn bad_lines() -> Vec<BadLine<'static>> {
    BAD_COMMANDS
        .split(|&b| b == b'\n')
        .filter(|row| !row.is_empty())
        .map(|row| {
            let mut fields = row.splitn(3, |&b| b == b'\t');
            let mut text = || std::str::from_utf8(fields.next().unwrap()).unwrap();
            let (outcome, message) = (text(), text());
            BadLine {
                outcome,
                message,
                raw: fields.next().expect("three fields"),
            }
        })
        .collect()
}

fn outcome_of(error: &DecodeError) -> &'static str {
    match error {
        DecodeError::LineTooLong { .. } => "too_long",
        DecodeError::Blank => "blank",
        DecodeError::Malformed(_) => "malformed",
        DecodeError::Shape(_) => "shape",
        DecodeError::VersionMismatch { .. } => "version_mismatch",
        DecodeError::InputTooLarge { .. } => "input_too_large",
    }
}

#[test]
fn every_bad_line_is_refused_with_its_own_error() {
    let bad = bad_lines();
    for case in &bad {
        let Ok(text) = std::str::from_utf8(case.raw) else {
            assert_eq!(case.outcome, "not_utf8");
            continue;
        };
        let error = decode_command(text).expect_err(text);
        assert_eq!(outcome_of(&error), case.outcome, "{text}");
        assert!(
            error.to_string().contains(case.message),
            "`{error}` does not mention `{}`",
            case.message
        );
    }
    let mut classes: Vec<&str> = bad.iter().map(|case| case.outcome).collect();
    classes.sort_unstable();
    classes.dedup();
    assert_eq!(
        classes,
        [
            "blank",
            "input_too_large",
            "malformed",
            "not_utf8",
            "shape",
            "too_long",
            "version_mismatch"
        ]
    );
}

#[test]
fn bad_lines_through_the_reader_never_become_commands_and_the_stream_goes_on() {
    let valid = r#"{"cmd":"log","v":3,"level":"info","message":"still here"}"#;
    let mut stream = Vec::new();
    for case in bad_lines() {
        stream.extend_from_slice(case.raw);
        stream.push(b'\n');
        stream.extend_from_slice(valid.as_bytes());
        stream.push(b'\n');
    }
    let mut commands = 0;
    let mut refused = 0;
    for frame in frames_whole(MAX_LINE_BYTES, &stream) {
        match frame {
            LineItem::Line(line) => match decode_command(&line) {
                Ok(command) => {
                    assert_eq!(command, decode_command(valid).unwrap());
                    commands += 1;
                }
                Err(_) => refused += 1,
            },
            LineItem::TooLong { .. } | LineItem::NotUtf8 { .. } => refused += 1,
        }
    }
    let cases = bad_lines().len();
    assert_eq!(commands, cases, "every valid line after a bad one decodes");
    // Blank lines are skipped by the reader rather than refused.
    assert_eq!(refused, cases - 1);
}

#[test]
fn events_of_another_version_are_refused_by_the_plugin_side_decoder() {
    let error = decode_event(r#"{"event":"shutdown","v":2}"#).unwrap_err();
    assert_eq!(
        error.to_string(),
        "protocol version mismatch: line says v=2, this side speaks v=3"
    );
}

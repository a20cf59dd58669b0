use nightcrow_protocol::{
    Command, Event, LineItem, LogLevel, MAX_INPUT_BYTES, MAX_LINE_BYTES, Token, decode_command,
    decode_event, encode_command, encode_event,
};
use proptest::prelude::*;

use crate::util::{frames_in_pieces, frames_whole};

fn token() -> impl Strategy<Value = Token> {
    any::<[u8; 16]>().prop_map(Token::from_bytes)
}

/// Text mixing ASCII, controls, quotes, Korean and astral characters.
fn text(max: usize) -> impl Strategy<Value = String> {
    proptest::collection::vec(
        prop_oneof![
            any::<char>(),
            Just('"'),
            Just('\\'),
            Just('\n'),
            Just('\u{1b}'),
            Just('한'),
            Just('😀'),
        ],
        0..max,
    )
    .prop_map(|chars| chars.into_iter().collect())
}

fn command() -> impl Strategy<Value = Command> {
    let level = prop_oneof![
        Just(LogLevel::Error),
        Just(LogLevel::Warn),
        Just(LogLevel::Info),
        Just(LogLevel::Debug),
    ];
    prop_oneof![
        (token(), any::<u32>(), text(64)).prop_map(|(token, generation, data)| {
            Command::SendInput {
                token,
                generation,
                data,
            }
        }),
        (
            token(),
            any::<u32>(),
            proptest::collection::vec(text(8), 0..8)
        )
            .prop_map(|(token, generation, resume_args)| Command::Relaunch {
                token,
                generation,
                resume_args,
            }),
        (
            token(),
            any::<u32>(),
            text(16),
            proptest::option::of(text(16)),
            proptest::option::of(any::<i64>()),
            any::<u32>(),
        )
            .prop_map(
                |(token, generation, state, detail, deadline_epoch, attempt)| Command::Status {
                    token,
                    generation,
                    state,
                    detail,
                    deadline_epoch,
                    attempt,
                }
            ),
        token().prop_map(|token| Command::WatchPane { token }),
        (token(), any::<u32>())
            .prop_map(|(token, generation)| Command::Attention { token, generation }),
        (level, text(64)).prop_map(|(level, message)| Command::Log { level, message }),
    ]
}

fn event() -> impl Strategy<Value = Event> {
    prop_oneof![
        (
            token(),
            any::<u32>(),
            proptest::option::of(text(16)),
            proptest::option::of(text(16)),
            text(16),
            proptest::option::of(any::<i64>()),
        )
            .prop_map(|(token, generation, title, command, cwd, opened_ms)| {
                Event::PaneOpened {
                    token,
                    generation,
                    title,
                    command,
                    cwd,
                    opened_ms,
                }
            }),
        (token(), any::<u32>(), text(256)).prop_map(|(token, generation, text)| {
            Event::PaneOutput {
                token,
                generation,
                text,
            }
        }),
        (
            token(),
            any::<u32>(),
            any::<u64>(),
            proptest::option::of(".{0,200}")
        )
            .prop_map(|(token, generation, idle_ms, screen)| {
                Event::PaneIdle {
                    token,
                    generation,
                    idle_ms,
                    screen,
                }
            }),
        (token(), any::<u32>())
            .prop_map(|(token, generation)| Event::PaneExited { token, generation }),
        (token(), any::<u32>())
            .prop_map(|(token, generation)| Event::PaneClosed { token, generation }),
        (token(), any::<u32>())
            .prop_map(|(token, generation)| Event::UserInput { token, generation }),
        Just(Event::Shutdown),
    ]
}

/// Cuts `input` at the given offsets (taken modulo its length, in order).
fn cut<'a>(input: &'a [u8], offsets: &[usize]) -> Vec<&'a [u8]> {
    let mut points: Vec<usize> = offsets
        .iter()
        .map(|offset| offset % (input.len() + 1))
        .collect();
    points.sort_unstable();
    let mut pieces = Vec::new();
    let mut start = 0;
    for point in points {
        pieces.push(&input[start..point]);
        start = point;
    }
    pieces.push(&input[start..]);
    pieces
}

proptest! {
    #[test]
    fn decoding_arbitrary_bytes_never_panics(bytes in proptest::collection::vec(any::<u8>(), 0..512)) {
        let line = String::from_utf8_lossy(&bytes);
        let _ = decode_command(&line);
        let _ = decode_event(&line);
    }

    #[test]
    fn decoding_json_like_noise_never_panics(line in r#"\{("(cmd|event|v|token|generation|data|level|message|resume_args)"|[:,\[\]{}0-9a-f"]|"[a-z_]{0,12}"|null|true|-?[0-9]{1,22}(\.[0-9])?){0,40}\}"#) {
        let _ = decode_command(&line);
        let _ = decode_event(&line);
    }

    #[test]
    fn every_command_within_bounds_round_trips(command in command()) {
        let line = encode_command(&command).unwrap();
        prop_assert!(line.ends_with('\n'));
        prop_assert_eq!(line.matches('\n').count(), 1);
        let within_bounds = match &command {
            Command::SendInput { data, .. } => data.len() <= MAX_INPUT_BYTES,
            _ => true,
        };
        prop_assume!(within_bounds);
        prop_assert_eq!(decode_command(line.trim_end_matches('\n')).unwrap(), command);
    }

    #[test]
    fn every_event_round_trips_as_one_line(event in event()) {
        let lines = encode_event(&event).unwrap();
        prop_assert_eq!(lines.matches('\n').count(), 1);
        prop_assert_eq!(decode_event(lines.trim_end_matches('\n')).unwrap(), event);
    }

    #[test]
    fn arbitrary_bytes_in_arbitrary_reads_stay_within_the_cap_and_match_the_whole_feed(
        bytes in proptest::collection::vec(prop_oneof![any::<u8>(), Just(b'\n'), Just(b'\r')], 0..2048),
        cap in 1usize..64,
        offsets in proptest::collection::vec(any::<usize>(), 0..16),
    ) {
        // `frames_in_pieces` asserts the bound after every push.
        let pieces = cut(&bytes, &offsets);
        prop_assert_eq!(frames_in_pieces(cap, pieces), frames_whole(cap, &bytes));
    }

    #[test]
    fn valid_lines_split_across_reads_decode_identically(
        commands in proptest::collection::vec(command(), 1..8),
        offsets in proptest::collection::vec(any::<usize>(), 0..32),
    ) {
        let stream: String = commands.iter().map(|c| encode_command(c).unwrap()).collect();
        let pieces = cut(stream.as_bytes(), &offsets);
        let decoded: Vec<_> = frames_in_pieces(MAX_LINE_BYTES, pieces)
            .into_iter()
            .map(|frame| match frame {
                LineItem::Line(line) => decode_command(&line),
                other => panic!("valid stream gave {other:?}"),
            })
            .collect();
        let expected: Vec<_> = stream.lines().map(decode_command).collect();
        prop_assert_eq!(decoded, expected);
    }
}

proptest! {
    // Each case encodes up to ~700 KiB; fewer cases keep the suite quick.
    #![proptest_config(ProptestConfig::with_cases(24))]

    #[test]
    fn huge_pane_output_splits_losslessly_into_lines_within_the_cap(
        unit in text(6).prop_filter("non-empty", |t| !t.is_empty()),
        repeat in 1_000usize..30_000,
    ) {
        let text = unit.repeat(repeat);
        let event = Event::PaneOutput { token: Token::from_bytes([7; 16]), generation: 2, text: text.clone() };
        let mut rebuilt = String::new();
        for line in encode_event(&event).unwrap().lines() {
            prop_assert!(line.len() <= MAX_LINE_BYTES);
            let Event::PaneOutput { text, .. } = decode_event(line).unwrap() else {
                panic!("split into another event");
            };
            rebuilt.push_str(&text);
        }
        prop_assert_eq!(rebuilt, text);
    }
}

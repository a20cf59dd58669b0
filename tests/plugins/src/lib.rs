//! Plumbing shared by the test guests in `src/bin`: one guest per file, each built for
//! `wasm32-wasip2` (a WASI command component) and for the host (a native child) from the same
//! source, by `nightcrow-test-plugin-artifacts`.
//!
//! The guests talk protocol v3 through `nightcrow-protocol`, exactly as a third-party plugin
//! would. Hostile guests misbehave first and then, where they still can, say
//! [`STILL_SPEAKING`] and fall back to [`echo_until_shutdown`], so a test can prove the host
//! resynchronised and the stream is still usable.
//!
//! **Invariant:** a guest's replies are a pure function of what it received and of its
//! arguments; tests state the expected commands themselves and compare.
#![forbid(unsafe_code)]

use std::io::{self, Write};

use nightcrow_protocol::{
    BlockingLines, Command, Event, LineItem, LogLevel, MAX_LINE_BYTES, decode_event, encode_command,
};

/// Suffix of the `log` a hostile guest sends once it is done misbehaving:
/// `"<guest>: still speaking"`.
pub const STILL_SPEAKING: &str = "still speaking";

/// What one line of stdin turned into.
#[derive(Debug)]
pub enum Incoming {
    Event(Event),
    /// A line the guest could not use (too long, not UTF-8, not a v3 event); the text says why.
    Undecodable(String),
}

/// The guest's stdin as decoded events, ending at end of input.
pub fn incoming() -> impl Iterator<Item = Incoming> {
    let mut lines = BlockingLines::new(io::stdin().lock(), MAX_LINE_BYTES);
    std::iter::from_fn(move || {
        let frame = match lines.next_item() {
            Ok(frame) => frame?,
            Err(error) => return Some(Incoming::Undecodable(format!("stdin: {error}"))),
        };
        Some(match frame {
            LineItem::Line(line) => match decode_event(&line) {
                Ok(event) => Incoming::Event(event),
                Err(error) => Incoming::Undecodable(error.to_string()),
            },
            LineItem::TooLong { cap } => Incoming::Undecodable(format!("line over {cap} bytes")),
            LineItem::NotUtf8 { len } => Incoming::Undecodable(format!("{len} bytes not UTF-8")),
        })
    })
}

/// Writes one command as a line and flushes it.
///
/// A command too large for a line is replaced by a `warn` log saying so, so the peer always
/// gets an answer. A closed stdout ends the guest quietly: there is no one left to tell.
pub fn send(command: &Command) {
    let line = encode_command(command).unwrap_or_else(|error| {
        encode_command(&Command::Log {
            level: LogLevel::Warn,
            message: format!("cannot encode reply: {error}"),
        })
        .expect("a short log always encodes")
    });
    write_raw(line.as_bytes());
}

/// Sends a `log` command.
pub fn log(level: LogLevel, message: impl Into<String>) {
    send(&Command::Log {
        level,
        message: message.into(),
    });
}

/// Writes bytes to stdout as they are (hostile guests use it for broken lines) and flushes.
pub fn write_raw(bytes: &[u8]) {
    let mut stdout = io::stdout().lock();
    if stdout
        .write_all(bytes)
        .and_then(|()| stdout.flush())
        .is_err()
    {
        std::process::exit(0);
    }
}

/// The hostile guests' sign of life after misbehaving.
pub fn still_speaking(guest: &str) {
    log(LogLevel::Info, format!("{guest}: {STILL_SPEAKING}"));
}

/// The conformance reply to one event; `None` for `shutdown`.
///
/// Pane events are answered with a `status` for the same token and generation whose `state`
/// is the event's tag, `detail` its payload (`text`, `cwd`, `idle_ms`; `None` otherwise) and
/// `attempt` the 1-based number of the event in the stream, so a test sees order and losses.
pub fn echo_reply(event: &Event, number: u32) -> Option<Command> {
    let (token, generation, detail) = match event {
        Event::PaneOpened {
            token,
            generation,
            cwd,
            ..
        } => (token, generation, Some(cwd.clone())),
        Event::PaneOutput {
            token,
            generation,
            text,
        } => (token, generation, Some(text.clone())),
        Event::PaneIdle {
            token,
            generation,
            idle_ms,
            ..
        } => (token, generation, Some(idle_ms.to_string())),
        Event::PaneExited { token, generation }
        | Event::PaneClosed { token, generation }
        | Event::UserInput { token, generation } => (token, generation, None),
        Event::Shutdown => return None,
    };
    Some(Command::Status {
        token: token.clone(),
        generation: *generation,
        state: event.tag().to_owned(),
        detail,
        deadline_epoch: None,
        attempt: number,
    })
}

/// Log message the echo guest sends when it leaves on `shutdown`.
pub fn shutdown_message(events: u32) -> String {
    format!("echo: shutdown after {events} events")
}

/// The conformance loop: answers every event with [`echo_reply`], every undecodable line
/// with a `warn` log naming the cause, and returns on `shutdown` (after logging
/// [`shutdown_message`]) or at end of input.
pub fn echo_until_shutdown() {
    echo_stream(incoming());
}

/// [`echo_until_shutdown`] over a stream some of which a guest has already read.
pub fn echo_stream(stream: impl Iterator<Item = Incoming>) {
    let mut events = 0u32;
    for incoming in stream {
        match incoming {
            Incoming::Event(event) => {
                events = events.saturating_add(1);
                match echo_reply(&event, events) {
                    Some(reply) => send(&reply),
                    None => {
                        log(LogLevel::Info, shutdown_message(events));
                        return;
                    }
                }
            }
            Incoming::Undecodable(why) => log(LogLevel::Warn, format!("echo: undecodable: {why}")),
        }
    }
}

/// Value of the first argument of the form `NAME=VALUE`.
pub fn arg(name: &str) -> Option<String> {
    std::env::args().skip(1).find_map(|arg| {
        arg.strip_prefix(name)
            .and_then(|rest| rest.strip_prefix('='))
            .map(str::to_owned)
    })
}

/// Burns CPU forever without a host call, so only an epoch interrupt (or a kill) stops it.
pub fn spin_forever() -> ! {
    let mut turns = 0u64;
    loop {
        turns = std::hint::black_box(turns.wrapping_add(1));
    }
}

/// Parks forever inside a host call (a sleep), where epochs cannot interrupt it.
pub fn park_forever() -> ! {
    loop {
        std::thread::sleep(std::time::Duration::from_secs(3600));
    }
}

//! The OpenCode adapter (SPEC §9.3): watches a pane's OpenCode server on loopback.
//!
//! The server's port comes only from an explicit `--port N` in the pane's command, its
//! address from `--hostname` when that reaches loopback (see [`command`]). The adapter
//! prefers the event stream (`GET /event`), read without blocking on each tick, and polls
//! `GET /session/status` at most every 5 s while no stream is accepted. Every request
//! carries `?directory=<pane cwd>`, and Basic credentials when the plugin env has
//! `OPENCODE_SERVER_PASSWORD`. What the signals mean is decided in [`status::Tracker`]. It
//! reports observations only; the state machine acts.

mod command;
mod http;
mod sse;
mod status;

use std::time::Duration;

use nightcrow_plugin_sdk::Now;
use nightcrow_protocol::LogLevel;

use crate::provider::{Adapter, Env, OpenedPane, Sink};
use http::{Endpoint, HttpError, Stream, with_directory};
use sse::SseParser;
use status::Tracker;

/// How often an open event stream is read.
pub const STREAM_TICK: Duration = Duration::from_millis(250);
/// Least time between two `/session/status` polls.
pub const POLL_INTERVAL: Duration = Duration::from_secs(5);
/// Wait before reopening a stream that failed or ended; it doubles with every failure in a
/// row up to [`REOPEN_AFTER_MAX`] and starts over once a stream delivers an event.
pub const REOPEN_AFTER: Duration = Duration::from_secs(2);
/// Longest wait before reopening a stream.
pub const REOPEN_AFTER_MAX: Duration = Duration::from_secs(60);
/// An open stream that sent nothing for this long (the server sends a heartbeat every 10 s)
/// is dead: it is dropped and the status map polled until a new one opens.
pub const STREAM_SILENCE: Duration = Duration::from_secs(30);
/// Most bytes read from the stream per tick.
const READ_BUDGET: usize = 256 * 1024;
/// Largest `/session/status` body accepted.
const MAX_STATUS_BODY: usize = 256 * 1024;

/// The observer of one OpenCode pane's server.
pub struct OpenCode {
    endpoint: Endpoint,
    cwd: String,
    stream: Option<OpenStream>,
    tracker: Tracker,
    alive: bool,
    reopen_at: Duration,
    stream_failures: u32,
    last_tick: Duration,
    last_status_poll: Option<Duration>,
    /// The kind of the last failure logged; the same kind is not logged again until a
    /// request succeeds.
    logged_failure: Option<FailureKind>,
}

struct OpenStream {
    stream: Stream,
    parser: SseParser,
    opened: Duration,
    last_bytes: Duration,
    /// A retry episode was open when this stream was opened: what happened while no stream
    /// was open is only in the status map, read once the server has accepted the stream.
    resync: bool,
}

/// Failures that are logged once per run of them, not on every retry.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum FailureKind {
    Unreachable,
    Unauthorized,
    Other,
}

impl OpenCode {
    /// `None` when the pane cannot be observed (no explicit port, or not on loopback); the
    /// reason is logged once, here.
    pub fn new(pane: &OpenedPane, env: &Env, sink: &mut Sink) -> Option<OpenCode> {
        let addr = match command::server_address(&pane.command, cfg!(windows)) {
            Ok(addr) => addr,
            Err(why) => {
                sink.log(LogLevel::Info, why.log_text());
                return None;
            }
        };
        Some(OpenCode {
            endpoint: Endpoint::new(
                addr,
                env.get("OPENCODE_SERVER_USERNAME"),
                env.get("OPENCODE_SERVER_PASSWORD"),
            ),
            cwd: pane.cwd.clone(),
            stream: None,
            tracker: Tracker::default(),
            alive: true,
            reopen_at: pane.opened.mono,
            stream_failures: 0,
            last_tick: pane.opened.mono,
            last_status_poll: None,
            logged_failure: None,
        })
    }

    fn read_stream(&mut self, now: Now, sink: &mut Sink) {
        let Some(open) = &mut self.stream else {
            return;
        };
        let mut bytes = Vec::new();
        let result = open.stream.read_available(READ_BUDGET, &mut bytes);
        if !bytes.is_empty() {
            open.last_bytes = now.mono;
        }
        let skipped_before = open.parser.skipped;
        let events = open.parser.feed(&bytes);
        let skipped = open.parser.skipped - skipped_before;
        if skipped > 0 {
            sink.log(
                LogLevel::Debug,
                format!(
                    "opencode: skipped {skipped} oversized or non-UTF-8 events ({} in all)",
                    open.parser.skipped
                ),
            );
        }
        let silent = now.mono.saturating_sub(open.last_bytes) >= STREAM_SILENCE;
        if !events.is_empty() {
            self.stream_failures = 0;
            self.logged_failure = None;
        }
        for data in events {
            if let Some((session, signal)) = status::parse_event(&data) {
                self.tracker.on_signal(&session, signal, sink);
            }
        }
        let failure = match result {
            Err(error) => Some(error),
            Ok(()) if silent => Some(HttpError::TimedOut),
            Ok(()) => None,
        };
        if let Some(error) = failure {
            self.stream = None;
            self.schedule_reopen(now);
            self.note_failure(&error, sink);
        } else if open.stream.accepted() && std::mem::take(&mut open.resync) {
            self.poll_status(now, sink);
        }
    }

    fn schedule_reopen(&mut self, now: Now) {
        let delay = REOPEN_AFTER
            .saturating_mul(1 << self.stream_failures.min(8))
            .min(REOPEN_AFTER_MAX);
        self.stream_failures += 1;
        self.reopen_at = now.mono + delay;
    }

    fn open_stream(&mut self, now: Now, sink: &mut Sink) {
        match self
            .endpoint
            .open_stream(&with_directory("/event", &self.cwd))
        {
            Ok(stream) => {
                self.stream = Some(OpenStream {
                    stream,
                    parser: SseParser::default(),
                    opened: now.mono,
                    last_bytes: now.mono,
                    resync: self.tracker.in_episode(),
                });
            }
            Err(error) => {
                self.schedule_reopen(now);
                self.note_failure(&error, sink);
            }
        }
    }

    fn poll_status(&mut self, now: Now, sink: &mut Sink) {
        self.last_status_poll = Some(now.mono);
        let path = with_directory("/session/status", &self.cwd);
        match self.endpoint.get(&path, MAX_STATUS_BODY) {
            Ok(body) => {
                self.logged_failure = None;
                match status::parse_status_map(&body) {
                    Ok(entries) => self.tracker.on_snapshot(&entries, sink),
                    // The category only: serde's message can quote the body.
                    Err(error) => sink.log(
                        LogLevel::Warn,
                        format!(
                            "opencode: /session/status body did not parse ({:?} error)",
                            error.classify()
                        ),
                    ),
                }
            }
            Err(error) => self.note_failure(&error, sink),
        }
    }

    /// Logs a failure once per run of the same kind. A stream the server ended is routine
    /// (it is reopened) and not logged. Error texts carry no provider text.
    fn note_failure(&mut self, error: &HttpError, sink: &mut Sink) {
        let kind = match error {
            HttpError::Closed => return,
            HttpError::Connect(_) => FailureKind::Unreachable,
            HttpError::Unauthorized => FailureKind::Unauthorized,
            _ => FailureKind::Other,
        };
        if self.logged_failure.replace(kind) == Some(kind) {
            return;
        }
        match kind {
            FailureKind::Unauthorized => sink.log(
                LogLevel::Warn,
                "opencode: the server refused the plugin (HTTP 401); set OPENCODE_SERVER_PASSWORD in [plugin.env]",
            ),
            FailureKind::Unreachable => sink.log(
                LogLevel::Info,
                format!(
                    "opencode: server at {} not reachable (yet?); is it granted in [plugin.sandbox] connect?",
                    self.endpoint.addr
                ),
            ),
            FailureKind::Other => {
                sink.log(LogLevel::Info, format!("opencode: request failed: {error}"));
            }
        }
    }
}

impl Adapter for OpenCode {
    fn name(&self) -> &'static str {
        "opencode"
    }

    fn next_poll(&self) -> Option<Duration> {
        if !self.alive {
            return None;
        }
        if self.stream.is_some() {
            return Some(self.last_tick + STREAM_TICK);
        }
        let poll_due = self
            .last_status_poll
            .map_or(Duration::ZERO, |last| last + POLL_INTERVAL);
        Some(poll_due.min(self.reopen_at))
    }

    fn poll(&mut self, now: Now, sink: &mut Sink) {
        if !self.alive {
            return;
        }
        self.last_tick = now.mono;
        if self.stream.is_none() && now.mono >= self.reopen_at {
            self.open_stream(now, sink);
        }
        if self.stream.is_some() {
            self.read_stream(now, sink);
        }
        // A stream not accepted (200, body begun) within a tick is no stream yet: meanwhile
        // the status map is polled.
        let streaming = self
            .stream
            .as_ref()
            .is_some_and(|open| open.stream.accepted() || now.mono < open.opened + STREAM_TICK);
        let poll_due = self
            .last_status_poll
            .is_none_or(|last| now.mono >= last + POLL_INTERVAL);
        if !streaming && poll_due {
            self.poll_status(now, sink);
        }
    }

    fn exited(&mut self, _now: Now, _sink: &mut Sink) {
        // The server ends with the process; whatever it was retrying ended with it.
        self.alive = false;
        self.stream = None;
        self.tracker.settle();
    }

    fn relaunched(&mut self, now: Now, _sink: &mut Sink) {
        self.alive = true;
        self.stream = None;
        self.tracker.settle();
        self.reopen_at = now.mono;
        self.stream_failures = 0;
        self.last_status_poll = None;
        self.logged_failure = None;
    }

    fn resume_args(&self) -> Option<Vec<String>> {
        let session = self.tracker.pane_session()?;
        Some(vec!["--session".to_owned(), session.to_owned()])
    }

    fn attention_after_resume(&self) -> bool {
        // `opencode --session <id>` reopens the session but does not re-run the failed
        // prompt, so the person is needed once it is back.
        true
    }
}

/// The crate's OpenCode captures (provenance in `tests/fixtures/README.md`).
#[cfg(test)]
const FIXTURES: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/fixtures/opencode");

/// The raw event stream of a captured scenario (the capture prefixes each line with its
/// time, in ms).
#[cfg(test)]
fn captured_sse(scenario: &str) -> Vec<u8> {
    let text =
        std::fs::read_to_string(format!("{FIXTURES}/{scenario}/sse-event.txt")).expect("fixture");
    let mut stream = Vec::new();
    for line in text.lines() {
        let raw = line.split_once(' ').map_or("", |(_, raw)| raw);
        stream.extend_from_slice(raw.as_bytes());
        stream.push(b'\n');
    }
    stream
}

#[cfg(test)]
mod tests;

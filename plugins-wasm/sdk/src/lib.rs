//! nightcrow-plugin-sdk: the loop every nightcrow plugin needs, so a plugin is one
//! [`Plugin`] impl and a plain `fn main() { nightcrow_plugin_sdk::run(&mut MyPlugin) }`.
//!
//! What the loop owns:
//! - **Input**: host events are read from stdin with the protocol crate's capped framing
//!   (a line never buffers more than [`MAX_LINE_BYTES`]). A line that does not decode —
//!   over-long, not UTF-8, bad JSON, wrong version — is reported on stderr and skipped; it
//!   never stops the plugin.
//! - **Waiting**: one thread waits for *stdin readable or the next timer*, whichever comes
//!   first. On wasm that is a single `wasi:io/poll` over stdin's pollable and a
//!   monotonic-clock pollable; natively a reader thread feeds a channel and the loop waits
//!   with `recv_timeout`. The plugin's callbacks always run on the loop's thread, one at a
//!   time.
//! - **Output**: every command goes through one [`Outbox`], which encodes it with
//!   [`encode_command`] (so it is one `\n`-terminated line under the cap) and flushes it.
//! - **Time**: callbacks get a [`Now`] (monotonic + wall clock read together). The clock is
//!   [`SystemClock`], or a [`FileClock`] when [`FAKE_CLOCK_ENV`] names a file — a test hook
//!   for driving a plugin process through hours of waits without sleeping.
//!
//! Timers are declarative: after every callback the loop asks [`Plugin::next_timer`] when to
//! call [`Plugin::timer`] next. A timer may fire late or spuriously; plugins re-check their
//! own deadlines.
//!
//! ```no_run
//! use nightcrow_plugin_sdk::{Context, PaneOpened, Plugin};
//!
//! struct Hello;
//! impl Plugin for Hello {
//!     fn pane_opened(&mut self, ctx: &mut Context<'_>, pane: PaneOpened) {
//!         ctx.log(nightcrow_protocol::LogLevel::Info, "got a pane");
//!     }
//! }
//!
//! fn main() {
//!     nightcrow_plugin_sdk::run(&mut Hello);
//! }
//! ```
#![forbid(unsafe_code)]

mod clock;
mod input;

use std::io::{self, Write};
use std::time::Duration;

use nightcrow_protocol::{
    Command, DecodeError, Event, Frame, Generation, LogLevel, Token, decode_event, encode_command,
};

pub use clock::{Clock, FileClock, Now, SystemClock};
pub use input::{Input, Waited};

/// Environment variable naming a [`FileClock`] file (`<mono_ms> <wall_ms>`). For tests that
/// drive a plugin process; unset in normal use.
pub const FAKE_CLOCK_ENV: &str = "NIGHTCROW_PLUGIN_FAKE_CLOCK";

/// A `pane_opened` event's fields.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PaneOpened {
    pub token: Token,
    pub generation: Generation,
    pub title: Option<String>,
    /// The original configured startup command; `None` for a bare shell.
    pub command: Option<String>,
    /// The repository root.
    pub cwd: String,
}

/// A plugin: one method per host event, each a no-op by default, plus a timer.
pub trait Plugin {
    fn pane_opened(&mut self, _ctx: &mut Context<'_>, _pane: PaneOpened) {}
    fn pane_output(
        &mut self,
        _ctx: &mut Context<'_>,
        _token: Token,
        _generation: Generation,
        _text: String,
    ) {
    }
    fn pane_idle(
        &mut self,
        _ctx: &mut Context<'_>,
        _token: Token,
        _generation: Generation,
        _idle_ms: u64,
    ) {
    }
    fn pane_exited(&mut self, _ctx: &mut Context<'_>, _token: Token, _generation: Generation) {}
    fn pane_closed(&mut self, _ctx: &mut Context<'_>, _token: Token, _generation: Generation) {}
    fn user_input(&mut self, _ctx: &mut Context<'_>, _token: Token, _generation: Generation) {}
    /// The host is going away; the loop returns after this.
    fn shutdown(&mut self, _ctx: &mut Context<'_>) {}
    /// Called once [`Plugin::next_timer`]'s time has come: never before it, possibly later
    /// (the loop finishes the callback it is in first).
    fn timer(&mut self, _ctx: &mut Context<'_>) {}
    /// Monotonic time ([`Now::mono`]) of the next [`Plugin::timer`] call; `None`: no timer.
    fn next_timer(&self) -> Option<Duration> {
        None
    }
}

/// What a callback gets: the time and the way out.
pub struct Context<'a> {
    now: Now,
    outbox: &'a mut Outbox,
}

impl Context<'_> {
    /// The clocks, read just before this callback.
    pub fn now(&self) -> Now {
        self.now
    }

    /// Sends one command to the host.
    pub fn send(&mut self, command: &Command) {
        self.outbox.send(command);
    }

    /// Sends a `log` command (the host truncates long messages).
    pub fn log(&mut self, level: LogLevel, message: impl Into<String>) {
        self.outbox.send(&Command::Log {
            level,
            message: message.into(),
        });
    }
}

/// The one writer of commands.
pub struct Outbox {
    writer: Box<dyn Write>,
    broken: bool,
}

impl Outbox {
    pub fn new(writer: impl Write + 'static) -> Outbox {
        Outbox {
            writer: Box::new(writer),
            broken: false,
        }
    }

    /// Encodes and writes one command line, flushed. A command that cannot be encoded (over
    /// the line cap) is reported on stderr and dropped; a write error (the host closed our
    /// stdout) is reported once and later sends are dropped.
    pub fn send(&mut self, command: &Command) {
        if self.broken {
            return;
        }
        let line = match encode_command(command) {
            Ok(line) => line,
            Err(error) => {
                eprintln!("dropped a command: {error}");
                return;
            }
        };
        if let Err(error) = self
            .writer
            .write_all(line.as_bytes())
            .and_then(|()| self.writer.flush())
        {
            eprintln!("stdout is gone, dropping commands from now on: {error}");
            self.broken = true;
        }
    }

    /// Whether writing failed (the host stopped reading); the loop ends then.
    pub fn is_broken(&self) -> bool {
        self.broken
    }
}

/// Runs `plugin` on the process's stdin/stdout until `shutdown` or end of input.
///
/// The clock is the system clock unless [`FAKE_CLOCK_ENV`] names a file.
pub fn run(plugin: &mut impl Plugin) {
    let mut outbox = Outbox::new(io::stdout());
    let mut input = input::stdin();
    match std::env::var_os(FAKE_CLOCK_ENV) {
        Some(path) => drive(plugin, &FileClock::new(path), &mut input, &mut outbox),
        None => drive(plugin, &SystemClock::new(), &mut input, &mut outbox),
    }
}

/// The loop itself, over any clock, input and outbox (tests drive it with their own).
pub fn drive(
    plugin: &mut impl Plugin,
    clock: &dyn Clock,
    input: &mut dyn Input,
    outbox: &mut Outbox,
) {
    loop {
        let now = fire_due_timer(plugin, clock, outbox);
        if outbox.is_broken() {
            return;
        }
        let timeout = match plugin.next_timer() {
            // A test clock only moves when the test says so, and the test says so with input.
            Some(_) if !clock.runs_by_itself() => None,
            Some(at) => Some(at.saturating_sub(now.mono)),
            None => None,
        };
        let line = match input.wait(timeout) {
            Waited::Frame(Frame::Line(line)) => line,
            Waited::Frame(Frame::TooLong { cap }) => {
                eprintln!("skipped an event line over {cap} bytes");
                continue;
            }
            Waited::Frame(Frame::NotUtf8 { len }) => {
                eprintln!("skipped an event line of {len} bytes that is not UTF-8");
                continue;
            }
            Waited::Nothing => continue,
            Waited::Closed(error) => {
                if let Some(error) = error {
                    eprintln!("stdin failed: {error}");
                }
                return;
            }
        };
        let event = match decode_event(&line) {
            Ok(event) => event,
            Err(DecodeError::Blank) => continue,
            Err(error) => {
                eprintln!("skipped an event line: {error}");
                continue;
            }
        };
        // Time moved while we waited: what fell due happens before the event that came after.
        let now = fire_due_timer(plugin, clock, outbox);
        let mut ctx = Context { now, outbox };
        if dispatch(plugin, &mut ctx, event).is_break() {
            return;
        }
    }
}

/// Calls [`Plugin::timer`] if its time has come; returns the clock reading used.
fn fire_due_timer(plugin: &mut impl Plugin, clock: &dyn Clock, outbox: &mut Outbox) -> Now {
    let now = clock.now();
    if plugin.next_timer().is_some_and(|at| at <= now.mono) {
        plugin.timer(&mut Context { now, outbox });
    }
    now
}

fn dispatch(
    plugin: &mut impl Plugin,
    ctx: &mut Context<'_>,
    event: Event,
) -> std::ops::ControlFlow<()> {
    match event {
        Event::PaneOpened {
            token,
            generation,
            title,
            command,
            cwd,
        } => plugin.pane_opened(
            ctx,
            PaneOpened {
                token,
                generation,
                title,
                command,
                cwd,
            },
        ),
        Event::PaneOutput {
            token,
            generation,
            text,
        } => plugin.pane_output(ctx, token, generation, text),
        Event::PaneIdle {
            token,
            generation,
            idle_ms,
        } => plugin.pane_idle(ctx, token, generation, idle_ms),
        Event::PaneExited { token, generation } => plugin.pane_exited(ctx, token, generation),
        Event::PaneClosed { token, generation } => plugin.pane_closed(ctx, token, generation),
        Event::UserInput { token, generation } => plugin.user_input(ctx, token, generation),
        Event::Shutdown => {
            plugin.shutdown(ctx);
            return std::ops::ControlFlow::Break(());
        }
    }
    std::ops::ControlFlow::Continue(())
}

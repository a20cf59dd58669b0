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
    Command, DecodeError, Event, Generation, LineItem, LogLevel, Token, decode_event,
    encode_command,
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
    /// When the slot first opened (unix ms), if the host says: the pane's own sessions are
    /// newer, even when this plugin hears of the pane only now (a restart of it, or of the
    /// daemon).
    pub opened_ms: Option<i64>,
}

/// A `pane_idle` event: the pane printed nothing for the idle threshold.
pub struct PaneIdle {
    pub token: Token,
    pub generation: Generation,
    pub idle_ms: u64,
    /// What the pane shows now, as plain text rows (the bottom rows within
    /// `MAX_SCREEN_BYTES`), if the host says: the way to tell a program waiting at its
    /// prompt from one showing a popup.
    pub screen: Option<String>,
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
    fn pane_idle(&mut self, _ctx: &mut Context<'_>, _idle: PaneIdle) {}
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
            Waited::Item(LineItem::Line(line)) => line,
            Waited::Item(LineItem::TooLong { cap }) => {
                eprintln!("skipped an event line over {cap} bytes");
                continue;
            }
            Waited::Item(LineItem::NotUtf8 { len }) => {
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
            opened_ms,
        } => plugin.pane_opened(
            ctx,
            PaneOpened {
                token,
                generation,
                title,
                command,
                cwd,
                opened_ms,
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
            screen,
        } => plugin.pane_idle(
            ctx,
            PaneIdle {
                token,
                generation,
                idle_ms,
                screen,
            },
        ),
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

#[cfg(all(test, not(target_family = "wasm")))]
mod tests {
    use std::cell::{Cell, RefCell};
    use std::rc::Rc;

    use super::*;
    use crate::input::ThreadedInput;

    /// A clock the test sets; it does not run by itself.
    struct Manual(Cell<Now>);

    impl Clock for Manual {
        fn now(&self) -> Now {
            self.0.get()
        }
        fn runs_by_itself(&self) -> bool {
            false
        }
    }

    /// Input the test hands out frame by frame, moving the clock in between.
    struct Script<'a> {
        steps: std::vec::IntoIter<(u64, &'a str)>,
        clock: &'a Manual,
        inner: Option<ThreadedInput>,
    }

    impl Input for Script<'_> {
        fn wait(&mut self, _timeout: Option<Duration>) -> Waited {
            let Some((mono_s, line)) = self.steps.next() else {
                return Waited::Closed(None);
            };
            self.clock.0.set(Now {
                mono: Duration::from_secs(mono_s),
                wall_ms: 0,
            });
            let mut input =
                ThreadedInput::new(std::io::Cursor::new(format!("{line}\n").into_bytes()));
            let waited = input.wait(None);
            self.inner = Some(input);
            waited
        }
    }

    #[derive(Default)]
    struct Recorder {
        seen: Vec<String>,
        timer_at: Option<Duration>,
    }

    impl Plugin for Recorder {
        fn pane_opened(&mut self, ctx: &mut Context<'_>, pane: PaneOpened) {
            self.seen.push(format!(
                "opened {} at {}",
                pane.generation,
                ctx.now().mono.as_secs()
            ));
            self.timer_at = Some(ctx.now().mono + Duration::from_secs(10));
            ctx.send(&Command::Attention {
                token: pane.token,
                generation: pane.generation,
            });
        }
        fn pane_idle(&mut self, ctx: &mut Context<'_>, _: PaneIdle) {
            self.seen
                .push(format!("idle at {}", ctx.now().mono.as_secs()));
        }
        fn timer(&mut self, ctx: &mut Context<'_>) {
            self.seen
                .push(format!("timer at {}", ctx.now().mono.as_secs()));
            self.timer_at = None;
        }
        fn shutdown(&mut self, _: &mut Context<'_>) {
            self.seen.push("shutdown".into());
        }
        fn next_timer(&self) -> Option<Duration> {
            self.timer_at
        }
    }

    #[derive(Clone, Default)]
    struct Shared(Rc<RefCell<Vec<u8>>>);

    impl Write for Shared {
        fn write(&mut self, bytes: &[u8]) -> io::Result<usize> {
            self.0.borrow_mut().extend_from_slice(bytes);
            Ok(bytes.len())
        }
        fn flush(&mut self) -> io::Result<()> {
            Ok(())
        }
    }

    const TOKEN: &str = "4f1c00000000000000000000000000e2";

    #[test]
    fn the_loop_dispatches_skips_bad_lines_fires_timers_in_order_and_stops_at_shutdown() {
        let opened = format!(
            r#"{{"event":"pane_opened","v":3,"token":"{TOKEN}","generation":1,"title":null,"command":"codex","cwd":"/r"}}"#
        );
        let idle = format!(
            r#"{{"event":"pane_idle","v":3,"token":"{TOKEN}","generation":1,"idle_ms":10000}}"#
        );
        let clock = Manual(Cell::new(Now {
            mono: Duration::ZERO,
            wall_ms: 0,
        }));
        let mut input = Script {
            steps: vec![
                (0, opened.as_str()),
                (1, r#"{"event":"pane_idle","v":2}"#),
                (2, "not json"),
                (5, idle.as_str()),
                // The timer (due at 10) fires before the event that arrives at 12.
                (12, idle.as_str()),
                (13, r#"{"event":"shutdown","v":3}"#),
                (14, idle.as_str()),
            ]
            .into_iter(),
            clock: &clock,
            inner: None,
        };
        let written = Shared::default();
        let mut outbox = Outbox::new(written.clone());
        let mut plugin = Recorder::default();
        drive(&mut plugin, &clock, &mut input, &mut outbox);
        assert_eq!(
            plugin.seen,
            [
                "opened 1 at 0",
                "idle at 5",
                "timer at 12",
                "idle at 12",
                "shutdown"
            ]
        );
        let written = String::from_utf8(written.0.borrow().clone()).expect("utf-8");
        assert_eq!(
            written,
            format!("{{\"cmd\":\"attention\",\"v\":3,\"token\":\"{TOKEN}\",\"generation\":1}}\n")
        );
    }

    #[test]
    fn the_threaded_input_caps_lines_and_ends_at_eof() {
        let mut bytes = vec![b'x'; MAX_LINE + 10];
        bytes.extend_from_slice(b"\nok\n\xff\n");
        let mut input = ThreadedInput::new(std::io::Cursor::new(bytes));
        assert!(matches!(
            input.wait(None),
            Waited::Item(LineItem::TooLong { .. })
        ));
        assert!(matches!(input.wait(None), Waited::Item(LineItem::Line(line)) if line == "ok"));
        assert!(matches!(
            input.wait(None),
            Waited::Item(LineItem::NotUtf8 { len: 1 })
        ));
        assert!(matches!(
            input.wait(Some(Duration::from_secs(5))),
            Waited::Closed(None)
        ));
    }

    #[test]
    fn a_real_timeout_expires_without_input() {
        let (_keep_open, reader) = std::sync::mpsc::channel::<()>();
        struct Never(std::sync::mpsc::Receiver<()>);
        impl io::Read for Never {
            fn read(&mut self, _: &mut [u8]) -> io::Result<usize> {
                let _ = self.0.recv();
                Ok(0)
            }
        }
        let mut input = ThreadedInput::new(Never(reader));
        assert!(matches!(
            input.wait(Some(Duration::from_millis(1))),
            Waited::Nothing
        ));
    }

    const MAX_LINE: usize = nightcrow_protocol::MAX_LINE_BYTES;
}

//! The terminal client (`nightcrow attach`, SPEC §8): the panes of one repository hub as
//! tabs you see and type into, recovery shown as a tab marker and a chip on the notice row.
//!
//! It speaks the hub's client protocol only, through an [`Attachment`] (two channels), so
//! the same client runs over the daemon's socket and on an in-process hub (the demo). Each
//! pane has its own terminal emulator (`vt100`); the screen is drawn with ratatui at most
//! [`FRAMES_PER_SECOND`] times a second however fast output arrives, and keys reach the
//! pane as the raw bytes the terminal sent.
//!
//! It refuses to fall behind the hub: frames are read as fast as they come, and a pane
//! whose output outruns its emulator is skipped ahead to its latest output (see
//! `docs/tui.md`). It never changes a pane's geometry for recovery, and it leaves the
//! person's terminal as it found it on every way out: detach, the daemon going away,
//! SIGTERM, SIGHUP, a panic.
#![forbid(unsafe_code)]

mod app;
mod cell_text;
mod copy;
mod draw;
pub mod format;
mod input;
mod keys;
mod layout;
mod mouse;
pub mod notify;
mod terminal;

use std::time::{Duration, Instant, SystemTime};

use nightcrow_client_protocol::{ClientRequest, Frame};
use nightcrow_config::{LeaderKey, TuiNotify};
use tokio::sync::mpsc;

pub use app::{App, Mode, Outcome, PaneArea};
pub use input::key_table;

/// Most redraws a second.
pub const FRAMES_PER_SECOND: u32 = 60;
/// Most output bytes fed to the emulators between two looks at the keyboard.
const PARSE_BUDGET: usize = 256 * 1024;
/// Frames between two rounds of parsing while output is left over (a flood): a flood
/// scrolls at 30 frames a second, and the TUI's loop takes about half the CPU it took at
/// 60, which its panes' producers get instead (docs/tui.md).
const FRAMES_A_ROUND_IN_A_FLOOD: u32 = 2;
// A round of a flood that brought nothing new is a pause (`app::FLOOD_PAUSE`).
const _: () = assert!(
    app::FLOOD_PAUSE.as_micros() * (FRAMES_PER_SECOND as u128)
        < 1_000_000 * (FRAMES_A_ROUND_IN_A_FLOOD as u128)
);
/// How long after a key its echo is waited for frame by frame; an echo that never comes
/// (a password prompt, a closed pane) must not keep a flood's frames waking the loop.
const ECHO_PATIENCE: Duration = Duration::from_millis(100);

/// The client's two ends of a hub attachment: frames from it, requests to it.
pub struct Attachment {
    pub frames: mpsc::UnboundedReceiver<Frame>,
    pub requests: mpsc::UnboundedSender<ClientRequest>,
}

/// Whether the TUI opens the first pane itself once attached.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FirstPane {
    /// The hub had none: open a shell.
    Open,
    /// The hub has its panes (or will have: the demo opens its own).
    Existing,
}

/// What the person in front of the TUI does there.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Role {
    /// Works in the panes: keys are typed into them; the leader's `d` detaches and the
    /// panes keep running.
    Attached,
    /// Watches `nightcrow demo`: keys are not typed into its pane, and q, Esc, Ctrl+C or the
    /// leader's `d` end the demo (its hub goes with it).
    Demo,
}

/// How the TUI starts.
#[derive(Debug, Clone, Copy)]
pub struct Options {
    pub leader: LeaderKey,
    pub first_pane: FirstPane,
    pub role: Role,
    /// How a notice reaches the person's terminal as a desktop notification.
    pub notify: TuiNotify,
    /// `[tui] mouse`: the TUI reads the mouse (docs/tui.md, "Mouse").
    pub mouse: bool,
}

/// Takes over the terminal until the person detaches, the hub's stream ends, the process
/// is told to stop or every pane is gone; the terminal is restored before it returns.
///
/// Run it with `Runtime::block_on` of a multi-thread runtime: the loop runs on the
/// calling thread, so whatever feeds the attachment keeps reading while it draws.
pub async fn run(attachment: Attachment, options: Options) -> std::io::Result<Outcome> {
    let notifier = notify::Notifier::new(options.notify, &notify::Environment::current());
    let mut screen = terminal::Screen::enter(notifier)?;
    let mut inputs = terminal::inputs()?;
    let Attachment {
        mut frames,
        requests,
    } = attachment;
    let (rows, cols) = screen.size()?;
    let mut app = App::new(
        options.leader,
        PaneArea::of_terminal(rows, cols),
        options.first_pane,
    );
    app.role = options.role;
    app.mouse.on = options.mouse;
    let frame_time = Duration::from_secs(1) / FRAMES_PER_SECOND;
    let mut last_draw = Instant::now() - frame_time;
    // The wall-clock second of the last draw: a chip that counts down is drawn again when
    // it passes.
    let mut drawn_second = wall_clock().as_secs();
    // When parsing may go on: at once, unless the last round left output over, which
    // means a flood; then one budget a round, so the emulator leaves the panes' producers
    // most of a core (the hub waits for this client) and skip-ahead keeps the screen current.
    let round_time = frame_time * FRAMES_A_ROUND_IN_A_FLOOD;
    let mut parse_at = Instant::now();
    let send = |batch: Vec<ClientRequest>| {
        for request in batch {
            // A closed link ends the frames too; the loop notices there.
            let _ = requests.send(request);
        }
    };
    // The pane a key was just typed into: its next output is its echo, parsed and drawn at
    // once instead of at the next round and frame (beside a flood those are ~2 frames).
    let mut awaiting_echo = EchoWait::default();
    let outcome = loop {
        let now = Instant::now();
        // While a flood waits for its next round, its frames stay queued and are taken all at
        // once when the round comes: waking for each (thousands a second) cost more than
        // parsing. The echo of a key is taken as it comes.
        let between_rounds =
            app.has_pending_output() && parse_at > now && awaiting_echo.pane(now).is_none();
        let wake = if app.has_pending_output() {
            // A change to draw (a tab switched, a scroll) does not wait for the round.
            if app.dirty {
                parse_at.min(last_draw + frame_time)
            } else {
                parse_at
            }
        } else if app.dirty {
            last_draw + frame_time
        } else {
            let tick = app
                .counting_down()
                .then(|| now + Duration::from_secs(1) - subsecond(wall_clock()));
            [app.notice_expiry(), tick]
                .into_iter()
                .flatten()
                .min()
                .unwrap_or(now + Duration::from_secs(3600))
        };
        tokio::select! {
            biased;
            input = inputs.next() => match input {
                terminal::Input::Bytes(bytes) => {
                    let batch = app.on_input(&bytes);
                    if let Some(pane) = typed_into(&batch) {
                        awaiting_echo.typed(pane, Instant::now());
                    }
                    send(batch);
                }
                terminal::Input::Resized => {
                    let (rows, cols) = screen.size()?;
                    send(app.resize(PaneArea::of_terminal(rows, cols)));
                }
                terminal::Input::Continued => {
                    screen.take_over_again()?;
                    app.dirty = true;
                }
                terminal::Input::Stop => break Outcome::Signalled,
            },
            frame = frames.recv(), if !between_rounds => match frame {
                Some(frame) => {
                    send(app.on_frame(frame));
                    // Take everything already queued: reading is cheap, parsing waits.
                    if take_queued(&mut app, &mut frames, &send) == Stream::Ended {
                        break Outcome::Closed;
                    }
                }
                None => break Outcome::Closed,
            },
            () = tokio::time::sleep_until(wake.into()) => {}
        }
        let woke = Instant::now();
        // One early draw per key, so a pane flooding while typed into keeps the frame rate.
        if let Some(pane) = awaiting_echo.pane(woke)
            && app.parse_echo(pane, PARSE_BUDGET, woke)
        {
            awaiting_echo = EchoWait::default();
            screen.draw(&mut app)?;
            last_draw = Instant::now();
            drawn_second = wall_clock().as_secs();
        }
        if app.has_pending_output() && woke >= parse_at {
            if take_queued(&mut app, &mut frames, &send) == Stream::Ended {
                break Outcome::Closed;
            }
            app.parse_pending(PARSE_BUDGET, woke);
            let now = Instant::now();
            parse_at = if app.has_pending_output() {
                now + round_time
            } else {
                now
            };
            // Let the readers run between rounds of parsing.
            tokio::task::yield_now().await;
        }
        if let Some(outcome) = app.outcome.clone() {
            break outcome;
        }
        let now = Instant::now();
        app.clear_expired_notice(now);
        if app.counting_down() && wall_clock().as_secs() != drawn_second {
            app.dirty = true;
        }
        if app.dirty && now >= last_draw + frame_time {
            screen.draw(&mut app)?;
            last_draw = now;
            drawn_second = wall_clock().as_secs();
        }
    };
    drop(screen);
    Ok(outcome)
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Stream {
    Open,
    Ended,
}

/// Hands `app` every frame already queued; whether the stream has ended after them.
fn take_queued(
    app: &mut App,
    frames: &mut mpsc::UnboundedReceiver<Frame>,
    send: &impl Fn(Vec<ClientRequest>),
) -> Stream {
    loop {
        match frames.try_recv() {
            Ok(frame) => send(app.on_frame(frame)),
            Err(mpsc::error::TryRecvError::Empty) => return Stream::Open,
            Err(mpsc::error::TryRecvError::Disconnected) => return Stream::Ended,
        }
    }
}

/// The pane whose echo is awaited, for [`ECHO_PATIENCE`] after the key.
#[derive(Debug, Default)]
struct EchoWait {
    typed: Option<(u64, Instant)>,
}

impl EchoWait {
    fn typed(&mut self, pane: u64, at: Instant) {
        self.typed = Some((pane, at));
    }

    /// The pane, unless its key is older than [`ECHO_PATIENCE`] at `now`.
    fn pane(&self, now: Instant) -> Option<u64> {
        self.typed
            .filter(|(_, at)| now.saturating_duration_since(*at) < ECHO_PATIENCE)
            .map(|(pane, _)| pane)
    }
}

/// The pane `batch` types into, if it does.
fn typed_into(batch: &[ClientRequest]) -> Option<u64> {
    batch.iter().rev().find_map(|request| match request {
        ClientRequest::Input { pane, .. } => Some(*pane),
        _ => None,
    })
}

/// Time since the Unix epoch by the wall clock (what deadlines count from).
fn wall_clock() -> Duration {
    SystemTime::now()
        .duration_since(SystemTime::UNIX_EPOCH)
        .unwrap_or_default()
}

fn subsecond(time: Duration) -> Duration {
    Duration::from_nanos(u64::from(time.subsec_nanos()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_echo_is_awaited_for_a_while_after_the_last_key_only() {
        let start = Instant::now();
        let mut echo = EchoWait::default();
        assert_eq!(echo.pane(start), None);
        echo.typed(3, start);
        assert_eq!(echo.pane(start + ECHO_PATIENCE / 2), Some(3));
        assert_eq!(echo.pane(start + ECHO_PATIENCE), None);
        echo.typed(4, start + ECHO_PATIENCE);
        assert_eq!(echo.pane(start + ECHO_PATIENCE * 3 / 2), Some(4));
    }

    #[tokio::test]
    async fn queued_frames_are_all_taken_and_an_ended_stream_is_told() {
        let mut app = App::new(
            LeaderKey::default(),
            PaneArea::of_terminal(24, 80),
            FirstPane::Existing,
        );
        let (sender, mut frames) = mpsc::unbounded_channel();
        let output = |text: &'static str| Frame::Output {
            pane: 1,
            bytes: text.as_bytes().to_vec().into(),
        };
        sender.send(output("one")).unwrap();
        sender.send(output("two")).unwrap();
        let no_requests = |batch: Vec<ClientRequest>| assert!(batch.is_empty(), "{batch:?}");
        assert_eq!(
            take_queued(&mut app, &mut frames, &no_requests),
            Stream::Open
        );
        assert!(frames.is_empty());
        sender.send(output("three")).unwrap();
        drop(sender);
        assert_eq!(
            take_queued(&mut app, &mut frames, &no_requests),
            Stream::Ended
        );
        assert!(frames.is_empty());
    }
}

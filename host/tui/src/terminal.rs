//! The person's terminal: taken over (raw mode, alternate screen) for as long as a
//! [`Screen`] lives and given back as it was on every way out — drop, SIGTERM/SIGHUP (they
//! end the loop, which drops it) and panics (a hook restores first, then reports).
//!
//! Keys are read as raw bytes on Unix, so they reach the pane exactly as the terminal sent
//! them. Windows consoles deliver key events instead; they are turned back into the bytes a
//! VT terminal would send.

use std::io::{Stdout, Write};
use std::sync::Once;

use ratatui::Terminal;
use ratatui::backend::CrosstermBackend;
use ratatui::crossterm::{cursor, execute, terminal};
use tokio::sync::mpsc;

use crate::app::App;
use crate::copy::{TmuxClipboard, osc52};
use crate::draw::{self, InputModes};
use crate::notify::{BELL, Notifier};

/// Every input mode the TUI may have switched on, switched off.
const INPUT_MODES_OFF: &str =
    "\x1b[?1l\x1b>\x1b[?2004l\x1b[?9l\x1b[?1000l\x1b[?1002l\x1b[?1003l\x1b[?1005l\x1b[?1006l";

pub struct Screen {
    terminal: Terminal<CrosstermBackend<Stdout>>,
    modes: InputModes,
    notifier: Notifier,
}

impl Screen {
    pub fn enter(notifier: Notifier) -> std::io::Result<Screen> {
        install_panic_hook();
        take_terminal().inspect_err(|_| restore())?;
        let terminal =
            Terminal::new(CrosstermBackend::new(std::io::stdout())).inspect_err(|_| restore())?;
        Ok(Screen {
            terminal,
            modes: InputModes::default(),
            notifier,
        })
    }

    /// `(rows, cols)` of the person's terminal.
    pub fn size(&self) -> std::io::Result<(u16, u16)> {
        let (cols, rows) = terminal::size()?;
        Ok((rows, cols))
    }

    /// Takes the terminal over again and draws everything at the next draw, not only what
    /// changed: after a stop, what is on the screen is not what was drawn.
    pub fn take_over_again(&mut self) -> std::io::Result<()> {
        take_terminal()?;
        // A resize to the same size clears the screen and forgets what was drawn, without
        // `clear`'s cursor-position query, whose answer the key reader would take.
        let size = self.terminal.size()?;
        self.terminal
            .resize(ratatui::layout::Rect::new(0, 0, size.width, size.height))?;
        self.modes = InputModes::default();
        // Off first, so the next draw switches on exactly what the app wants.
        let out = self.terminal.backend_mut();
        out.write_all(INPUT_MODES_OFF.as_bytes())?;
        out.flush()
    }

    pub fn draw(&mut self, app: &mut App) -> std::io::Result<()> {
        self.terminal.autoresize()?;
        // Asked before the frame, so a warning is drawn with it; written after it.
        let copied = app.clipboard.take().map(|text| {
            let tmux = TmuxClipboard::current();
            if tmux == TmuxClipboard::Drops {
                app.say(
                    "tmux keeps the copy from your terminal: set -g set-clipboard on \
                     (docs/tui.md, Copy mode)"
                        .to_owned(),
                );
            }
            osc52(&text, tmux)
        });
        self.terminal.draw(|frame| draw::draw(frame, app))?;
        let modes = InputModes::of(app);
        let mut extra = self.modes.switch_to(modes);
        self.modes = modes;
        // After the frame, never inside ratatui's output: each notice as one notification.
        // A notice told by the bell rings once with the attention it comes with.
        let mut bell = std::mem::take(&mut app.bell);
        for notice in app.untold.drain(..) {
            match self.notifier.sequence(&notice.text()) {
                Some(sequence) if sequence == BELL => bell = true,
                Some(sequence) => extra.push_str(&sequence),
                None => {}
            }
        }
        if bell {
            extra.push_str(BELL);
        }
        extra.extend(copied);
        if !extra.is_empty() {
            let out = self.terminal.backend_mut();
            out.write_all(extra.as_bytes())?;
            out.flush()?;
        }
        app.dirty = false;
        Ok(())
    }
}

impl Drop for Screen {
    fn drop(&mut self) {
        restore();
    }
}

/// Raw mode and the alternate screen: the terminal is the TUI's.
fn take_terminal() -> std::io::Result<()> {
    terminal::enable_raw_mode()?;
    execute!(std::io::stdout(), terminal::EnterAlternateScreen)
}

/// Puts the person's terminal back: main screen, cooked mode, cursor shown, no input
/// modes left on. Safe to call more than once.
fn restore() {
    let mut stdout = std::io::stdout();
    let _ = stdout.write_all(INPUT_MODES_OFF.as_bytes());
    let _ = execute!(stdout, terminal::LeaveAlternateScreen, cursor::Show);
    let _ = terminal::disable_raw_mode();
}

fn install_panic_hook() {
    static HOOK: Once = Once::new();
    HOOK.call_once(|| {
        let previous = std::panic::take_hook();
        std::panic::set_hook(Box::new(move |info| {
            restore();
            previous(info);
        }));
    });
}

/// What the loop hears from outside the hub.
pub enum Input {
    /// Bytes typed (or pasted) by the person.
    Bytes(Vec<u8>),
    /// The terminal changed size.
    Resized,
    /// The process was stopped and goes on (SIGCONT): while it was stopped, a shell may have
    /// written over the screen and set the terminal's modes back.
    #[cfg_attr(not(unix), expect(dead_code, reason = "Windows has no SIGCONT"))]
    Continued,
    /// SIGTERM or SIGHUP: leave, restoring the terminal.
    Stop,
}

pub struct Inputs {
    keys: mpsc::UnboundedReceiver<Input>,
    #[cfg(unix)]
    signals: UnixSignals,
}

#[cfg(unix)]
struct UnixSignals {
    winch: tokio::signal::unix::Signal,
    term: tokio::signal::unix::Signal,
    hup: tokio::signal::unix::Signal,
    cont: tokio::signal::unix::Signal,
}

impl Inputs {
    pub async fn next(&mut self) -> Input {
        #[cfg(unix)]
        {
            let signals = &mut self.signals;
            tokio::select! {
                _ = signals.winch.recv() => Input::Resized,
                _ = signals.term.recv() => Input::Stop,
                _ = signals.hup.recv() => Input::Stop,
                _ = signals.cont.recv() => Input::Continued,
                key = self.keys.recv() => key.unwrap_or(Input::Stop),
            }
        }
        #[cfg(not(unix))]
        {
            self.keys.recv().await.unwrap_or(Input::Stop)
        }
    }
}

/// Starts reading the keyboard (a thread: terminal reads block) and, on Unix, listening
/// for SIGWINCH, SIGTERM, SIGHUP and SIGCONT.
pub fn inputs() -> std::io::Result<Inputs> {
    let (sender, keys) = mpsc::unbounded_channel();
    std::thread::Builder::new()
        .name("nightcrow-keys".to_owned())
        .spawn(move || read_keys(&sender))?;
    #[cfg(unix)]
    {
        use tokio::signal::unix::{SignalKind, signal};
        Ok(Inputs {
            keys,
            signals: UnixSignals {
                winch: signal(SignalKind::window_change())?,
                term: signal(SignalKind::terminate())?,
                hup: signal(SignalKind::hangup())?,
                cont: signal(SignalKind::from_raw(libc::SIGCONT))?,
            },
        })
    }
    #[cfg(not(unix))]
    {
        Ok(Inputs { keys })
    }
}

#[cfg(unix)]
fn read_keys(sender: &mpsc::UnboundedSender<Input>) {
    use std::io::Read;
    let mut stdin = std::io::stdin().lock();
    let mut buffer = [0u8; 4096];
    loop {
        match stdin.read(&mut buffer) {
            Ok(0) | Err(_) => {
                let _ = sender.send(Input::Stop);
                return;
            }
            Ok(n) => {
                if sender.send(Input::Bytes(buffer[..n].to_vec())).is_err() {
                    return;
                }
            }
        }
    }
}

#[cfg(not(unix))]
fn read_keys(sender: &mpsc::UnboundedSender<Input>) {
    use ratatui::crossterm::event::{self, Event};
    loop {
        let input = match event::read() {
            Ok(Event::Key(key)) => match vt_bytes(key) {
                Some(bytes) => Input::Bytes(bytes),
                None => continue,
            },
            Ok(Event::Paste(text)) => Input::Bytes(text.into_bytes()),
            Ok(Event::Resize(..)) => Input::Resized,
            Ok(_) => continue,
            Err(_) => Input::Stop,
        };
        let stop = matches!(input, Input::Stop);
        if sender.send(input).is_err() || stop {
            return;
        }
    }
}

/// The bytes a VT terminal sends for a key press (Windows consoles report keys, not
/// bytes). Releases and repeats-as-release are ignored.
#[cfg(not(unix))]
fn vt_bytes(key: ratatui::crossterm::event::KeyEvent) -> Option<Vec<u8>> {
    use ratatui::crossterm::event::{KeyCode, KeyEventKind, KeyModifiers};
    if key.kind == KeyEventKind::Release {
        return None;
    }
    let ctrl = key.modifiers.contains(KeyModifiers::CONTROL);
    let alt = key.modifiers.contains(KeyModifiers::ALT);
    let mut bytes = match key.code {
        KeyCode::Char(c) if ctrl && c.is_ascii_alphabetic() => {
            vec![(c.to_ascii_lowercase() as u8) - b'a' + 1]
        }
        KeyCode::Char(c) => c.to_string().into_bytes(),
        KeyCode::Enter => b"\r".to_vec(),
        KeyCode::Tab => b"\t".to_vec(),
        KeyCode::BackTab => b"\x1b[Z".to_vec(),
        KeyCode::Backspace => b"\x7f".to_vec(),
        KeyCode::Esc => b"\x1b".to_vec(),
        KeyCode::Up => b"\x1b[A".to_vec(),
        KeyCode::Down => b"\x1b[B".to_vec(),
        KeyCode::Right => b"\x1b[C".to_vec(),
        KeyCode::Left => b"\x1b[D".to_vec(),
        KeyCode::Home => b"\x1b[H".to_vec(),
        KeyCode::End => b"\x1b[F".to_vec(),
        KeyCode::PageUp => b"\x1b[5~".to_vec(),
        KeyCode::PageDown => b"\x1b[6~".to_vec(),
        KeyCode::Insert => b"\x1b[2~".to_vec(),
        KeyCode::Delete => b"\x1b[3~".to_vec(),
        KeyCode::F(n @ 1..=4) => format!("\x1bO{}", (b'P' + n - 1) as char).into_bytes(),
        KeyCode::F(n @ 5..=12) => {
            let code = [15, 17, 18, 19, 20, 21, 23, 24][usize::from(n - 5)];
            format!("\x1b[{code}~").into_bytes()
        }
        _ => return None,
    };
    if alt {
        bytes.insert(0, 0x1b);
    }
    Some(bytes)
}

//! The keyboard: bytes the person typed, told apart into what goes to the pane in view and
//! what the TUI does itself (the leader and the key after it, the close prompt, scrollback
//! mode, the help), and the key table the help shows.

use nightcrow_client_protocol::ClientRequest;
use nightcrow_config::LeaderKey;

use crate::Role;
use crate::app::{App, Arrival, Mode, Outcome};
use crate::keys::{Key, mouse_report_at, next_key};
use crate::layout::Direction;

impl App {
    /// Bytes typed by the person; returns the requests they make.
    pub fn on_input(&mut self, mut bytes: &[u8]) -> Vec<ClientRequest> {
        let mut requests = Vec::new();
        while !bytes.is_empty() && self.outcome.is_none() {
            if self.mouse.on
                && let (Key::Mouse(report), used) = next_key(bytes)
            {
                bytes = &bytes[used..];
                requests.extend(self.on_mouse(report));
                continue;
            }
            if self.mode == Mode::Normal && self.role == Role::Demo {
                let (key, used) = next_key(bytes);
                bytes = &bytes[used..];
                match key {
                    Key::Byte(b'q' | CTRL_C) | Key::Escape => {
                        self.outcome = Some(Outcome::Detached);
                    }
                    Key::Byte(byte) if byte == self.leader.byte() => {
                        self.mode = Mode::Leader;
                        self.dirty = true;
                    }
                    // The demo's pane is watched, not typed into.
                    _ => {}
                }
                continue;
            }
            if self.mode == Mode::Normal {
                // Everything up to the leader goes to the pane in one write.
                let leader = self.leader.byte();
                let end = bytes
                    .iter()
                    .position(|&b| b == leader)
                    .unwrap_or(bytes.len());
                // A mouse report is the TUI's to act on, never typed into the pane.
                let end = if self.mouse.on {
                    mouse_report_at(&bytes[..end]).unwrap_or(end)
                } else {
                    end
                };
                if end > 0 {
                    requests.extend(self.type_into_active(&bytes[..end]));
                }
                if bytes.get(end) == Some(&leader) {
                    self.mode = Mode::Leader;
                    self.dirty = true;
                    bytes = &bytes[end + 1..];
                } else {
                    bytes = &bytes[end..];
                }
                continue;
            }
            let (key, used) = next_key(bytes);
            bytes = &bytes[used..];
            requests.extend(self.on_key(key));
        }
        requests.extend(self.refit());
        requests
    }

    /// Keys for the pane in view. An exited pane has no program to take them: they are
    /// dropped and the notice says what to do instead (the web page says the same). An
    /// escape sequence is dropped without a word: the outer terminal sends some by itself
    /// (focus reports), and a notice nobody typed for would be wrong.
    fn type_into_active(&mut self, bytes: &[u8]) -> Option<ClientRequest> {
        let pane = self.active_pane()?;
        if pane.alive {
            return Some(ClientRequest::Input {
                pane: pane.id,
                data: String::from_utf8_lossy(bytes).into_owned(),
            });
        }
        if bytes.first() != Some(&ESC) {
            let label = self.label(self.active);
            self.say(if pane.pending_relaunch() {
                format!("{label} waits for its plugin; nothing is typed into it")
            } else {
                format!("{label} has ended; {} c opens a new pane", self.leader)
            });
        }
        None
    }

    fn on_key(&mut self, key: Key) -> Vec<ClientRequest> {
        self.dirty = true;
        match self.mode {
            Mode::Normal => Vec::new(),
            Mode::Leader => {
                self.mode = Mode::Normal;
                self.on_command(key)
            }
            Mode::ConfirmClose(pane) => {
                self.mode = Mode::Normal;
                match key {
                    Key::Byte(b'y' | b'Y') => vec![ClientRequest::Close { pane }],
                    _ => Vec::new(),
                }
            }
            Mode::ConfirmCancel(pane) => {
                self.mode = Mode::Normal;
                match key {
                    Key::Byte(b'y' | b'Y') => vec![ClientRequest::CancelRecovery { pane }],
                    _ => Vec::new(),
                }
            }
            Mode::Scrollback(_) => {
                self.on_copy_key(key);
                Vec::new()
            }
            Mode::Help => {
                self.mode = Mode::Normal;
                Vec::new()
            }
        }
    }

    /// The key after the leader.
    fn on_command(&mut self, key: Key) -> Vec<ClientRequest> {
        let direction = match key {
            Key::Left | Key::Byte(b'h') => Some(Direction::Left),
            Key::Right | Key::Byte(b'l') => Some(Direction::Right),
            Key::Up | Key::Byte(b'k') => Some(Direction::Up),
            Key::Down | Key::Byte(b'j') => Some(Direction::Down),
            _ => None,
        };
        if let Some(direction) = direction {
            self.focus_towards(direction);
            return Vec::new();
        }
        let Key::Byte(byte) = key else {
            return Vec::new();
        };
        let active = self.active_pane().map(|pane| pane.id);
        match (byte, active) {
            (b'c', _) => return vec![self.create_request(Arrival::InView)],
            (b's', _) => return self.split(),
            (b'f', Some(_)) => self.toggle_zoom(),
            (b'g', Some(_)) => self.toggle_grid(),
            (b'u', Some(_)) => self.unsplit(),
            (b'o', Some(_)) => self.focus_next_cell(),
            (b'n', Some(_)) => self.select((self.active + 1) % self.panes.len()),
            (b'p', Some(_)) => {
                self.select((self.active + self.panes.len() - 1) % self.panes.len());
            }
            (b'1'..=b'9', _) => self.select(usize::from(byte - b'1')),
            (b'x', Some(pane)) => self.mode = Mode::ConfirmClose(pane),
            (b'r', Some(pane)) => return self.cancel_recovery(pane),
            (b'[', Some(_)) => self.enter_copy_mode(0),
            (b'z', _) => return self.claim_size(),
            (b'd', _) => self.outcome = Some(Outcome::Detached),
            (b'?', _) => self.mode = Mode::Help,
            _ if byte == self.leader.byte() => {
                return self.type_into_active(&[byte]).into_iter().collect();
            }
            _ => {}
        }
        Vec::new()
    }
}

/// What Ctrl+C sends in raw mode.
const CTRL_C: u8 = 0x03;
/// What every escape sequence starts with (arrows, function keys, terminal reports).
const ESC: u8 = 0x1b;

/// The key table, as the help popup shows it. Nothing is typed into the demo's pane, so its
/// table has no typing keys, and its way out ends it.
pub fn key_table(leader: LeaderKey, role: Role) -> Vec<(String, &'static str)> {
    let demo = role == Role::Demo;
    let leave = if demo {
        "end the demo"
    } else {
        "detach (panes keep running)"
    };
    let demo_ends = demo.then(|| ("q  Esc  Ctrl+C".to_owned(), leave));
    let table = [
        ("c", "new pane"),
        ("s", "new pane beside this one (a split of up to 4)"),
        (
            "arrows  h j k l  o",
            "move to the pane on that side / the next",
        ),
        ("f", "zoom: this pane alone, and back"),
        ("g", "grid: every pane at once (up to 8), and back"),
        ("u", "end the split (the panes stay as tabs)"),
        ("n  p", "next / previous pane"),
        ("1-8", "go to pane"),
        ("x", "close pane (asks first)"),
        ("r", "cancel recovery of this pane"),
        ("[", "scrollback: / search, v select, y copy, q leaves"),
        ("z", "panes take this terminal's size"),
        ("d", leave),
        ("?", "this help"),
    ]
    .into_iter()
    .filter(|(key, _)| !demo || !["c", "s"].contains(key))
    .map(|(key, what)| (format!("{leader} {key}"), what));
    let leader_to_pane = (!demo).then(|| {
        (
            format!("{leader} {leader}"),
            "send the leader key to the pane",
        )
    });
    demo_ends
        .into_iter()
        .chain(table)
        .chain(leader_to_pane)
        .collect()
}

//! The TUI's state and everything that changes it: hub frames in, keys in, client requests
//! out. No terminal here: [`crate::draw`] renders an [`App`] and [`crate::run`] wires it to
//! the terminal and the hub, so this part is tested by feeding it frames and bytes.

use std::collections::VecDeque;
use std::num::NonZeroU16;
use std::time::{Duration, Instant};

use bytes::Bytes;
use nightcrow_config::LeaderKey;
use nightcrow_hub::{ClientRequest, Frame, HubMessage, RecoveryReport};

use crate::format::{self, Recovery};
use crate::keys::{Key, next_key};

/// Lines of history each pane keeps for scrollback mode.
const SCROLLBACK_LINES: usize = 5_000;
/// A pane whose unparsed output grows past this is skipped ahead: its emulator restarts
/// from the last [`KEEP_ON_SKIP`] bytes, as a re-attach would replay them. Without it a
/// flood faster than the emulator would grow memory and lag without bound, and a TUI
/// that stopped reading would be disconnected by the hub.
const SKIP_AHEAD_AT: usize = 4 * 1024 * 1024;
const KEEP_ON_SKIP: usize = 256 * 1024;
/// How long a notice stays on the notice row.
const NOTICE_FOR: Duration = Duration::from_secs(6);

/// Rows and columns of the pane area: the terminal less the tab row and the notice row.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PaneSize {
    pub rows: u16,
    pub cols: u16,
}

impl PaneSize {
    /// The pane area of a terminal of this size; never under 2×2 (an emulator needs at
    /// least two columns for a wide character).
    pub fn of_terminal(rows: u16, cols: u16) -> PaneSize {
        PaneSize {
            rows: rows.saturating_sub(2).max(2),
            cols: cols.max(2),
        }
    }

    fn nonzero(self) -> (NonZeroU16, NonZeroU16) {
        let nz = |n: u16| NonZeroU16::new(n.max(2)).expect("at least 2");
        (nz(self.rows), nz(self.cols))
    }
}

/// One pane as this client knows it.
pub struct Pane {
    pub id: u64,
    pub title: String,
    pub screen: vt100::Parser,
    /// Output received and not yet fed to `screen`, oldest first.
    pending: VecDeque<Bytes>,
    pending_len: usize,
    /// The emulator starts afresh before the next parse (output was skipped ahead).
    restart: bool,
    /// `false` once exited and held for a relaunch.
    pub alive: bool,
    pub recovery: Option<Recovery>,
    /// Attention raised while the pane was not in view.
    pub unread: bool,
}

impl Pane {
    fn new(id: u64, title: Option<String>, size: PaneSize) -> Pane {
        let (rows, cols) = size.nonzero();
        Pane {
            id,
            title: title.unwrap_or_else(|| "shell".to_owned()),
            screen: vt100::Parser::new(rows, cols, SCROLLBACK_LINES),
            pending: VecDeque::new(),
            pending_len: 0,
            restart: false,
            alive: true,
            recovery: None,
            unread: false,
        }
    }

    fn push_output(&mut self, bytes: Bytes) -> bool {
        self.pending_len += bytes.len();
        self.pending.push_back(bytes);
        if self.pending_len <= SKIP_AHEAD_AT {
            return false;
        }
        while self.pending_len - self.pending[0].len() >= KEEP_ON_SKIP {
            let dropped = self.pending.pop_front().expect("non-empty");
            self.pending_len -= dropped.len();
        }
        let excess = self.pending_len - KEEP_ON_SKIP;
        let front = self.pending[0].slice(excess..);
        self.pending[0] = front;
        self.pending_len = KEEP_ON_SKIP;
        self.restart = true;
        true
    }

    /// Feeds at most `budget` bytes of pending output to the emulator; returns how many.
    fn parse(&mut self, budget: usize) -> usize {
        if self.restart {
            let (rows, cols) = self.screen.screen().size();
            self.screen = vt100::Parser::new(rows, cols, SCROLLBACK_LINES);
            self.restart = false;
        }
        let mut used = 0;
        while used < budget {
            let Some(chunk) = self.pending.front_mut() else {
                break;
            };
            let take = chunk.len().min(budget - used);
            self.screen.process(&chunk[..take]);
            used += take;
            if take == chunk.len() {
                self.pending.pop_front();
            } else {
                *chunk = chunk.slice(take..);
            }
        }
        self.pending_len -= used;
        used
    }

    fn parse_all(&mut self) {
        self.parse(usize::MAX);
    }

    fn resize(&mut self, size: PaneSize) {
        // Output sent for the old size is parsed at the old size.
        self.parse_all();
        let (rows, cols) = size.nonzero();
        self.screen.screen_mut().set_size(rows, cols);
    }

    /// The marker on this pane's tab, if recovery is under way.
    pub fn marker(&self) -> Option<String> {
        self.recovery.as_ref().map(Recovery::marker)
    }
}

/// What the keyboard is doing now.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Mode {
    /// Keys go to the pane, except the leader.
    Normal,
    /// The leader was pressed: the next key is a TUI command.
    Leader,
    /// `x` asked whether to close this pane.
    ConfirmClose(u64),
    /// Reading the active pane's history: this many lines up from the live screen.
    Scrollback(usize),
    /// The key table is shown; any key closes it.
    Help,
}

/// Why the TUI ended.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Outcome {
    /// The person detached (leader `d`); the panes keep running.
    Detached,
    /// The hub's stream ended: the daemon stopped, or the session it served is over.
    Closed,
    /// Every pane is gone.
    NoPanes,
    /// SIGTERM or SIGHUP.
    Signalled,
}

/// The whole client state.
pub struct App {
    pub panes: Vec<Pane>,
    /// Index into `panes` of the pane in view.
    pub active: usize,
    pub size: PaneSize,
    pub mode: Mode,
    pub leader: LeaderKey,
    notice: Option<(String, Instant)>,
    /// Something changed since the last draw.
    pub dirty: bool,
    /// The person's terminal should ring (attention on a pane).
    pub bell: bool,
    pub outcome: Option<Outcome>,
    /// Times a pane's output was skipped ahead (see [`SKIP_AHEAD_AT`]).
    pub skips: u64,
    /// Whether the first pane is ours to create once the replay is in (`hello`).
    create_on_hello: bool,
    /// A `create` of ours is on its way: its pane comes into view when it appears; a pane
    /// opened by someone else (another client, a relaunch) does not take the screen.
    awaiting_created: bool,
    /// A `hello` has been seen: another one starts a new replay.
    greeted: bool,
    /// The pane to bring back into view when a new replay lists it.
    reselect: Option<u64>,
}

impl App {
    pub fn new(leader: LeaderKey, size: PaneSize, create_first_pane: bool) -> App {
        App {
            panes: Vec::new(),
            active: 0,
            size,
            mode: Mode::Normal,
            leader,
            notice: None,
            dirty: true,
            bell: false,
            outcome: None,
            skips: 0,
            create_on_hello: create_first_pane,
            awaiting_created: false,
            greeted: false,
            reselect: None,
        }
    }

    pub fn active_pane(&self) -> Option<&Pane> {
        self.panes.get(self.active)
    }

    fn index_of(&self, id: u64) -> Option<usize> {
        self.panes.iter().position(|pane| pane.id == id)
    }

    /// The notice to show now, if one has not expired.
    pub fn notice(&self, now: Instant) -> Option<&str> {
        self.notice
            .as_ref()
            .filter(|(_, until)| *until > now)
            .map(|(text, _)| text.as_str())
    }

    /// When the notice row must be redrawn because a notice expires.
    pub fn notice_expiry(&self) -> Option<Instant> {
        self.notice.as_ref().map(|(_, until)| *until)
    }

    pub fn clear_expired_notice(&mut self, now: Instant) {
        if self.notice.as_ref().is_some_and(|(_, until)| *until <= now) {
            self.notice = None;
            self.dirty = true;
        }
    }

    fn say(&mut self, text: String) {
        self.notice = Some((text, Instant::now() + NOTICE_FOR));
        self.dirty = true;
    }

    pub fn has_pending_output(&self) -> bool {
        self.panes
            .iter()
            .any(|pane| pane.pending_len > 0 || pane.restart)
    }

    /// Feeds pending output to the emulators, at most `budget` bytes in all, the pane in
    /// view first; the rest waits for the next round so keys are never kept waiting long.
    pub fn parse_pending(&mut self, budget: usize) {
        let mut left = budget;
        let order =
            std::iter::once(self.active).chain((0..self.panes.len()).filter(|&i| i != self.active));
        for index in order.collect::<Vec<_>>() {
            let Some(pane) = self.panes.get_mut(index) else {
                continue;
            };
            if pane.pending_len == 0 && !pane.restart {
                continue;
            }
            left -= pane.parse(left);
            if index == self.active {
                self.dirty = true;
            }
            if left == 0 {
                break;
            }
        }
    }

    /// One frame from the hub; returns the requests it calls for.
    pub fn on_frame(&mut self, frame: Frame) -> Vec<ClientRequest> {
        match frame {
            Frame::Output { pane, bytes } => {
                if let Some(index) = self.index_of(pane)
                    && self.panes[index].push_output(bytes)
                {
                    self.skips += 1;
                }
                Vec::new()
            }
            Frame::Message(message) => self.on_message(message),
        }
    }

    fn on_message(&mut self, message: HubMessage) -> Vec<ClientRequest> {
        self.dirty = true;
        match message {
            HubMessage::Hello { .. } => {
                if std::mem::take(&mut self.greeted) {
                    // Attached again (the hub had dropped this client): a fresh replay
                    // follows, so start over, keeping the pane in view if it is still there.
                    self.reselect = self.active_pane().map(|pane| pane.id);
                    self.panes.clear();
                    self.active = 0;
                    self.mode = Mode::Normal;
                    self.say("reattached: the hub had dropped this client".to_owned());
                }
                self.greeted = true;
                if std::mem::take(&mut self.create_on_hello) {
                    return vec![self.create_request()];
                }
            }
            HubMessage::Created {
                pane,
                title,
                rows,
                cols,
            } => {
                if self.index_of(pane).is_some() {
                    return Vec::new();
                }
                // Built at the pane's size so its scrollback replays as it was drawn,
                // then brought to this terminal's size.
                self.panes
                    .push(Pane::new(pane, title, PaneSize { rows, cols }));
                let index = self.panes.len() - 1;
                let reselected = self.reselect == Some(pane);
                if reselected {
                    self.reselect = None;
                }
                if std::mem::take(&mut self.awaiting_created) || self.panes.len() == 1 || reselected
                {
                    self.select(index);
                }
                if (rows, cols) != (self.size.rows, self.size.cols) {
                    return vec![ClientRequest::Resize {
                        pane,
                        rows: self.size.rows,
                        cols: self.size.cols,
                    }];
                }
            }
            HubMessage::Resized { pane, rows, cols } => {
                if let Some(index) = self.index_of(pane) {
                    self.panes[index].resize(PaneSize { rows, cols });
                }
            }
            HubMessage::Exited { pane, code, held } => {
                let Some(index) = self.index_of(pane) else {
                    return Vec::new();
                };
                let title = self.panes[index].title.clone();
                let how = code.map_or("ended".to_owned(), |code| {
                    format!("exited with code {code}")
                });
                if held {
                    self.panes[index].alive = false;
                    self.say(format!("{title} {how}; held for its plugin to relaunch"));
                } else {
                    self.remove(index);
                    self.say(format!("{title} {how}"));
                }
            }
            HubMessage::Recovery(report) => self.on_recovery(report),
            HubMessage::Attention { pane } => {
                if let Some(index) = self.index_of(pane) {
                    self.bell = true;
                    if index != self.active {
                        self.panes[index].unread = true;
                    }
                    let title = self.panes[index].title.clone();
                    self.say(format!("{title} wants you back"));
                }
            }
            HubMessage::Plugin {
                name,
                state,
                detail,
            } => {
                if state != "running" {
                    let detail = detail.map(|d| format!(": {d}")).unwrap_or_default();
                    self.say(format!("plugin {name} {}{detail}", state.replace('_', " ")));
                }
            }
            HubMessage::Error { message } => self.say(format!("hub: {message}")),
        }
        Vec::new()
    }

    fn on_recovery(&mut self, report: RecoveryReport) {
        let index = match self.index_of(report.pane) {
            Some(index) => index,
            // An exited pane held for a relaunch, first heard of by its report (a replay
            // after attach lists running panes only).
            None if format::is_active(&report) => {
                let mut pane = Pane::new(report.pane, None, self.size);
                pane.title = format!("pane {}", report.pane);
                pane.alive = false;
                self.panes.push(pane);
                self.panes.len() - 1
            }
            None => return,
        };
        let pane = &mut self.panes[index];
        if format::is_active(&report) {
            pane.recovery = Some(Recovery::from_report(&report, &chrono::Local));
            return;
        }
        pane.recovery = None;
        if report.state == "cancelled" && !pane.alive {
            // The hold is over: relaunched as a new pane, cancelled or expired.
            self.remove(index);
        } else if let Some(detail) = report.detail {
            let title = pane.title.clone();
            self.say(format!("{title}: {detail}"));
        }
    }

    fn remove(&mut self, index: usize) {
        self.panes.remove(index);
        if self.panes.is_empty() {
            self.active = 0;
            self.outcome = Some(Outcome::NoPanes);
            return;
        }
        if index < self.active || self.active >= self.panes.len() {
            self.active -= 1;
        }
        if let Mode::ConfirmClose(id) = self.mode
            && self.index_of(id).is_none()
        {
            self.mode = Mode::Normal;
        }
        let active = self.active;
        self.select(active);
    }

    fn select(&mut self, index: usize) {
        if index < self.panes.len() {
            self.active = index;
            self.panes[index].unread = false;
            if let Mode::Scrollback(_) = self.mode {
                self.mode = Mode::Normal;
            }
            for pane in &mut self.panes {
                pane.screen.screen_mut().set_scrollback(0);
            }
            self.dirty = true;
        }
    }

    fn create_request(&mut self) -> ClientRequest {
        self.awaiting_created = true;
        ClientRequest::Create {
            title: None,
            command: None,
            rows: Some(self.size.rows),
            cols: Some(self.size.cols),
        }
    }

    /// The terminal changed size: every pane follows (the hub resizes their PTYs).
    pub fn resize(&mut self, size: PaneSize) -> Vec<ClientRequest> {
        if size == self.size {
            return Vec::new();
        }
        self.size = size;
        self.dirty = true;
        self.panes
            .iter_mut()
            .filter(|pane| pane.alive)
            .map(|pane| {
                pane.resize(size);
                ClientRequest::Resize {
                    pane: pane.id,
                    rows: size.rows,
                    cols: size.cols,
                }
            })
            .collect()
    }

    /// Bytes typed by the person; returns the requests they make.
    pub fn on_input(&mut self, mut bytes: &[u8]) -> Vec<ClientRequest> {
        let mut requests = Vec::new();
        while !bytes.is_empty() && self.outcome.is_none() {
            if self.mode == Mode::Normal {
                // Everything up to the leader goes to the pane in one write.
                let leader = self.leader.byte();
                let end = bytes
                    .iter()
                    .position(|&b| b == leader)
                    .unwrap_or(bytes.len());
                if end > 0 {
                    requests.extend(self.type_into_active(&bytes[..end]));
                }
                if end < bytes.len() {
                    self.mode = Mode::Leader;
                    self.dirty = true;
                    bytes = &bytes[end + 1..];
                } else {
                    bytes = &[];
                }
                continue;
            }
            let (key, used) = next_key(bytes);
            bytes = &bytes[used..];
            requests.extend(self.on_key(key));
        }
        requests
    }

    fn type_into_active(&mut self, bytes: &[u8]) -> Option<ClientRequest> {
        let pane = self.active_pane().filter(|pane| pane.alive)?;
        Some(ClientRequest::Input {
            pane: pane.id,
            data: String::from_utf8_lossy(bytes).into_owned(),
        })
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
            Mode::Scrollback(offset) => {
                let page = usize::from(self.size.rows.saturating_sub(1)).max(1);
                let offset = match key {
                    Key::Up | Key::Byte(b'k') => offset + 1,
                    Key::Down | Key::Byte(b'j') => offset.saturating_sub(1),
                    Key::PageUp => offset + page,
                    Key::PageDown => offset.saturating_sub(page),
                    Key::Home | Key::Byte(b'g') => usize::MAX,
                    Key::End | Key::Byte(b'G') => 0,
                    Key::Byte(b'q') | Key::Escape => {
                        let active = self.active;
                        self.select(active);
                        return Vec::new();
                    }
                    _ => offset,
                };
                if let Some(pane) = self.panes.get_mut(self.active) {
                    pane.screen.screen_mut().set_scrollback(offset);
                    self.mode = Mode::Scrollback(pane.screen.screen().scrollback());
                }
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
        let Key::Byte(byte) = key else {
            return Vec::new();
        };
        let active = self.active_pane().map(|pane| pane.id);
        match (byte, active) {
            (b'c', _) => return vec![self.create_request()],
            (b'n', Some(_)) => self.select((self.active + 1) % self.panes.len()),
            (b'p', Some(_)) => {
                self.select((self.active + self.panes.len() - 1) % self.panes.len());
            }
            (b'1'..=b'9', _) => self.select(usize::from(byte - b'1')),
            (b'x', Some(pane)) => self.mode = Mode::ConfirmClose(pane),
            (b'r', Some(pane)) => {
                self.say("recovery cancelled".to_owned());
                return vec![ClientRequest::CancelRecovery { pane }];
            }
            (b'[', Some(_)) => self.mode = Mode::Scrollback(0),
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

/// The key table, as the help popup shows it.
pub fn key_table(leader: LeaderKey) -> Vec<(String, &'static str)> {
    [
        ("c", "new pane"),
        ("n  p", "next / previous pane"),
        ("1-9", "go to pane"),
        ("x", "close pane (asks first)"),
        ("r", "cancel recovery of this pane"),
        ("[", "scrollback: PgUp PgDn arrows, q leaves"),
        ("d", "detach (panes keep running)"),
        ("?", "this help"),
    ]
    .into_iter()
    .map(|(key, what)| (format!("{leader} {key}"), what))
    .chain([(
        format!("{leader} {leader}"),
        "send the leader key to the pane",
    )])
    .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    const SIZE: PaneSize = PaneSize { rows: 10, cols: 40 };

    fn app() -> App {
        App::new(LeaderKey::default(), SIZE, false)
    }

    fn created(app: &mut App, pane: u64) -> Vec<ClientRequest> {
        app.on_frame(Frame::Message(HubMessage::Created {
            pane,
            title: Some(format!("p{pane}")),
            rows: SIZE.rows,
            cols: SIZE.cols,
        }))
    }

    fn output(app: &mut App, pane: u64, bytes: &[u8]) {
        app.on_frame(Frame::Output {
            pane,
            bytes: Bytes::copy_from_slice(bytes),
        });
    }

    fn report(pane: u64, state: &str) -> Frame {
        Frame::Message(HubMessage::Recovery(RecoveryReport {
            pane,
            state: state.to_owned(),
            detail: None,
            deadline_epoch: None,
            attempt: 0,
        }))
    }

    fn titles(app: &App) -> Vec<&str> {
        app.panes.iter().map(|pane| pane.title.as_str()).collect()
    }

    #[test]
    fn keys_go_to_the_pane_in_view_except_the_leader() {
        let mut app = app();
        created(&mut app, 7);
        assert_eq!(
            app.on_input(b"ls -l\r"),
            [ClientRequest::Input {
                pane: 7,
                data: "ls -l\r".into()
            }]
        );
        // The leader twice sends the leader byte; text around it still goes in one write.
        assert_eq!(
            app.on_input(b"a\x06\x06b"),
            [
                ClientRequest::Input {
                    pane: 7,
                    data: "a".into()
                },
                ClientRequest::Input {
                    pane: 7,
                    data: "\x06".into()
                },
                ClientRequest::Input {
                    pane: 7,
                    data: "b".into()
                },
            ]
        );
        assert_eq!(app.mode, Mode::Normal);
        assert_eq!(
            app.on_input(b"\x06r"),
            [ClientRequest::CancelRecovery { pane: 7 }]
        );
        assert_eq!(app.on_input(b"\x06x"), []);
        assert_eq!(app.mode, Mode::ConfirmClose(7));
        assert_eq!(app.on_input(b"n"), [], "anything but y keeps the pane");
        assert_eq!(app.on_input(b"\x06xy"), [ClientRequest::Close { pane: 7 }]);
        assert!(app.on_input(b"\x06d").is_empty());
        assert_eq!(app.outcome, Some(Outcome::Detached));
    }

    #[test]
    fn a_new_pane_of_ours_comes_into_view_and_others_do_not() {
        let mut app = app();
        created(&mut app, 1);
        let create = app.on_input(b"\x06c");
        assert!(matches!(
            create[..],
            [ClientRequest::Create {
                rows: Some(10),
                cols: Some(40),
                ..
            }]
        ));
        created(&mut app, 2);
        assert_eq!(app.active_pane().map(|p| p.id), Some(2));
        created(&mut app, 3);
        assert_eq!(
            app.active_pane().map(|p| p.id),
            Some(2),
            "a pane someone else opened"
        );
        app.on_input(b"\x06n");
        assert_eq!(app.active_pane().map(|p| p.id), Some(3));
        app.on_input(b"\x06n");
        assert_eq!(app.active_pane().map(|p| p.id), Some(1), "n wraps");
        app.on_input(b"\x06p\x06p");
        assert_eq!(app.active_pane().map(|p| p.id), Some(2));
        app.on_input(b"\x069");
        assert_eq!(app.active_pane().map(|p| p.id), Some(2), "no ninth pane");
    }

    #[test]
    fn a_pane_at_another_size_is_brought_to_ours_after_its_replay() {
        let mut app = app();
        let resize = app.on_frame(Frame::Message(HubMessage::Created {
            pane: 4,
            title: None,
            rows: 24,
            cols: 80,
        }));
        assert_eq!(
            resize,
            [ClientRequest::Resize {
                pane: 4,
                rows: 10,
                cols: 40
            }]
        );
        output(&mut app, 4, b"replayed at 80 columns");
        app.on_frame(Frame::Message(HubMessage::Resized {
            pane: 4,
            rows: 10,
            cols: 40,
        }));
        let screen = app.panes[0].screen.screen();
        assert_eq!(screen.size().1.get(), 40);
        assert!(screen.contents().starts_with("replayed at 80 columns"));
        assert_eq!(
            app.resize(PaneSize { rows: 5, cols: 20 }),
            [ClientRequest::Resize {
                pane: 4,
                rows: 5,
                cols: 20
            }]
        );
        assert_eq!(
            app.resize(PaneSize { rows: 5, cols: 20 }),
            [],
            "no change, no request"
        );
    }

    #[test]
    fn a_held_pane_stays_until_its_hold_ends() {
        let mut app = app();
        created(&mut app, 1);
        created(&mut app, 2);
        app.on_frame(Frame::Message(HubMessage::Exited {
            pane: 1,
            code: Some(1),
            held: true,
        }));
        assert_eq!(titles(&app), ["p1", "p2"]);
        assert!(!app.panes[0].alive);
        assert!(app.on_input(b"typed into an exited pane").is_empty());
        app.on_frame(report(1, "waiting_for_reset"));
        assert_eq!(app.panes[0].marker().as_deref(), Some("⏳"));
        // A report for a pane this client never saw created: a hold replayed on attach.
        app.on_frame(report(9, "backoff"));
        assert_eq!(titles(&app), ["p1", "p2", "pane 9"]);
        app.on_frame(report(1, "cancelled"));
        assert_eq!(titles(&app), ["p2", "pane 9"]);
        // Unheld exits go at once; the last one ends the TUI.
        app.on_frame(report(9, "cancelled"));
        app.on_frame(Frame::Message(HubMessage::Exited {
            pane: 2,
            code: Some(0),
            held: false,
        }));
        assert!(app.panes.is_empty());
        assert_eq!(app.outcome, Some(Outcome::NoPanes));
    }

    #[test]
    fn a_settled_report_clears_the_marker_of_a_live_pane() {
        let mut app = app();
        created(&mut app, 1);
        app.on_frame(report(1, "needs_attention"));
        assert!(app.panes[0].marker().is_some());
        app.on_frame(report(1, "idle"));
        assert_eq!(app.panes[0].marker(), None);
        assert_eq!(titles(&app), ["p1"], "a live pane stays");
        app.on_frame(report(5, "idle"));
        assert_eq!(
            titles(&app),
            ["p1"],
            "no tab for a settled report of an unknown pane"
        );
    }

    #[test]
    fn a_second_hello_starts_over_and_keeps_the_pane_in_view() {
        let mut app = app();
        app.on_frame(Frame::Message(HubMessage::Hello { version: 1 }));
        created(&mut app, 1);
        created(&mut app, 2);
        app.on_input(b"\x062");
        output(&mut app, 2, b"before");
        app.on_frame(Frame::Message(HubMessage::Hello { version: 1 }));
        assert!(app.panes.is_empty());
        assert_eq!(app.outcome, None, "a replay is not the end of the panes");
        created(&mut app, 1);
        created(&mut app, 2);
        output(&mut app, 2, b"replayed");
        app.parse_pending(usize::MAX);
        let pane = app.active_pane().expect("a pane in view");
        assert_eq!(pane.id, 2);
        assert_eq!(
            pane.screen.screen().contents(),
            "replayed",
            "no state from before"
        );
    }

    #[test]
    fn attention_marks_a_pane_out_of_view_until_it_is_viewed() {
        let mut app = app();
        created(&mut app, 1);
        created(&mut app, 2);
        app.on_frame(Frame::Message(HubMessage::Attention { pane: 1 }));
        assert!(!app.panes[0].unread, "the pane in view is seen already");
        app.on_frame(Frame::Message(HubMessage::Attention { pane: 2 }));
        assert!(app.panes[1].unread && app.bell);
        app.on_input(b"\x062");
        assert!(!app.panes[1].unread);
    }

    #[test]
    fn output_past_the_limit_is_skipped_ahead_to_its_latest_bytes() {
        let mut app = app();
        created(&mut app, 1);
        // More than the limit, in chunks; nothing parsed yet.
        let chunk = vec![b'a'; 64 * 1024];
        for _ in 0..(SKIP_AHEAD_AT / chunk.len()) {
            output(&mut app, 1, &chunk);
        }
        assert_eq!(app.skips, 0);
        output(&mut app, 1, b"\x1b[2J\x1b[Hthe latest line");
        assert_eq!(app.skips, 1);
        assert_eq!(app.panes[0].pending_len, KEEP_ON_SKIP);
        app.parse_pending(usize::MAX);
        assert!(!app.has_pending_output());
        assert!(
            app.panes[0]
                .screen
                .screen()
                .contents()
                .starts_with("the latest line")
        );
    }

    #[test]
    fn scrollback_mode_moves_through_history_and_leaves_on_q() {
        let mut app = app();
        created(&mut app, 1);
        let lines: String = (1..=50).map(|n| format!("line {n}\r\n")).collect();
        output(&mut app, 1, lines.as_bytes());
        app.parse_pending(usize::MAX);
        app.on_input(b"\x06[");
        assert_eq!(app.mode, Mode::Scrollback(0));
        app.on_input(b"\x1b[5~");
        assert_eq!(app.mode, Mode::Scrollback(9));
        assert!(
            app.panes[0]
                .screen
                .screen()
                .contents()
                .starts_with("line 33")
        );
        app.on_input(b"\x1b[A\x1b[A\x1b[B");
        assert_eq!(app.mode, Mode::Scrollback(10));
        assert!(
            app.on_input(b"typed keys are not sent while reading")
                .is_empty()
        );
        app.on_input(b"q");
        assert_eq!(app.mode, Mode::Normal);
        assert_eq!(app.panes[0].screen.screen().scrollback(), 0);
    }
}

//! The TUI's state and everything that changes it: hub frames in, keys in, client requests
//! out. No terminal here: [`crate::draw`] renders an [`App`] and [`crate::run`] wires it to
//! the terminal and the hub, so this part is tested by feeding it frames and bytes.

use std::collections::VecDeque;
use std::num::NonZeroU16;
use std::time::{Duration, Instant};

use bytes::Bytes;
use nightcrow_config::LeaderKey;
use nightcrow_hub::{ClientRequest, Frame, HubMessage, Notice, Notices, RecoveryReport};

use crate::format::{Clock, Recovery};
use crate::{FirstPane, Role};

/// Lines of history each pane keeps for scrollback mode.
const SCROLLBACK_LINES: usize = 5_000;
/// A pane whose unparsed output grows past this is skipped ahead: its emulator restarts
/// from the last [`KEEP_ON_SKIP`] bytes, as a re-attach would replay them. Without it a
/// flood faster than the emulator would grow memory and lag without bound, and a TUI
/// that stopped reading would be disconnected by the hub.
const SKIP_AHEAD_AT: usize = 4 * 1024 * 1024;
const KEEP_ON_SKIP: usize = 256 * 1024;
/// Most bytes a flooding pane (one that had to skip ahead) parses a round while its flood
/// lasts: a few screens of text, enough to show it moving. What it skips would be skipped
/// at the next [`SKIP_AHEAD_AT`] anyway, and the emulator's CPU is taken from the flood's
/// producers, which wait for this client.
const FLOOD_BUDGET: usize = 16 * 1024;
/// A flooding pane that has received nothing for this long is done flooding. Longer than
/// the pauses between bursts of a flood on a busy machine (docs/tui.md).
const FLOOD_QUIET: Duration = Duration::from_millis(300);
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
    /// The configured title, `shell` without one.
    pub title: String,
    /// The title its program set (OSC 0 or 2, from the hub's `title`), shown instead.
    pub program_title: Option<String>,
    pub screen: vt100::Parser,
    /// Output received and not yet fed to `screen`, oldest first.
    pending: VecDeque<Bytes>,
    pending_len: usize,
    /// The emulator starts afresh before the next parse (output was skipped ahead).
    restart: bool,
    /// Skipped ahead and not caught up since.
    flooding: bool,
    /// When output last arrived.
    last_output: Instant,
    /// `false` once its process ended; the pane stays, with its screen, until closed.
    pub alive: bool,
    /// Exited and held for its plugin to relaunch (until a `cancelled` report).
    pub held: bool,
    /// How the process ended, for the notice row: `exited with code 1`, `ended`.
    pub ended: Option<String>,
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
            program_title: None,
            screen: vt100::Parser::new(rows, cols, SCROLLBACK_LINES),
            pending: VecDeque::new(),
            pending_len: 0,
            restart: false,
            flooding: false,
            last_output: Instant::now(),
            alive: true,
            held: false,
            ended: None,
            recovery: None,
            unread: false,
        }
    }

    /// Queues output for the emulator; returns whether the pane had to skip ahead.
    fn push_output(&mut self, bytes: Bytes) -> bool {
        self.pending_len += bytes.len();
        self.pending.push_back(bytes);
        self.last_output = Instant::now();
        if self.pending_len <= SKIP_AHEAD_AT {
            return false;
        }
        self.skip_ahead();
        self.flooding = true;
        true
    }

    /// Keeps the latest [`KEEP_ON_SKIP`] bytes of pending output, to be parsed by a fresh
    /// emulator.
    fn skip_ahead(&mut self) {
        while self.pending_len - self.pending[0].len() >= KEEP_ON_SKIP {
            let dropped = self.pending.pop_front().expect("non-empty");
            self.pending_len -= dropped.len();
        }
        let excess = self.pending_len - KEEP_ON_SKIP;
        let front = self.pending[0].slice(excess..);
        self.pending[0] = front;
        self.pending_len = KEEP_ON_SKIP;
        self.restart = true;
    }

    /// One round of parsing, at most `budget` bytes unless a flood has just ended; returns
    /// how many bytes were parsed.
    fn parse_round(&mut self, budget: usize, now: Instant) -> usize {
        if self.flooding && now.saturating_duration_since(self.last_output) >= FLOOD_QUIET {
            // The flood is over. Show its end now, from what a re-attach would replay,
            // rather than work through what scrolled by.
            self.flooding = false;
            if self.pending_len > KEEP_ON_SKIP {
                self.skip_ahead();
            }
            return self.parse(KEEP_ON_SKIP);
        }
        let budget = if self.flooding {
            budget.min(FLOOD_BUDGET)
        } else {
            budget
        };
        let used = self.parse(budget);
        if self.pending_len == 0 {
            self.flooding = false;
        }
        used
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
        self.recovery
            .as_ref()
            .map(|recovery| recovery.marker(&chrono::Local))
    }

    /// What its tab calls it: the title its program set, else the configured one.
    pub fn shown_title(&self) -> &str {
        self.program_title.as_deref().unwrap_or(&self.title)
    }

    /// Exited with its plugin about to act on it (a hold and a report of recovery under
    /// way); an exited pane without that is plainly exited (SPEC §8).
    pub fn pending_relaunch(&self) -> bool {
        !self.alive && self.held && self.recovery.is_some()
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
    /// `r` on a held pane asked whether to end its hold.
    ConfirmCancel(u64),
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
    /// Reads the hub's messages for the moments worth a desktop notification.
    notices: Notices,
    /// Notices not yet written to the person's terminal (it writes them with the next draw).
    pub untold: Vec<Notice>,
    pub outcome: Option<Outcome>,
    /// Times a pane's output was skipped ahead (see [`SKIP_AHEAD_AT`]).
    pub skips: u64,
    /// Whether the first pane is ours to create once the replay is in (`hello`).
    create_on_hello: bool,
    pub role: Role,
    /// A `create` of ours is on its way: its pane comes into view when it appears; a pane
    /// opened by someone else (another client, a relaunch) does not take the screen.
    awaiting_created: bool,
    /// A `hello` has been seen: another one starts a new replay.
    greeted: bool,
    /// The pane to bring back into view when a new replay lists it.
    reselect: Option<u64>,
}

impl App {
    pub fn new(leader: LeaderKey, size: PaneSize, first_pane: FirstPane) -> App {
        App {
            panes: Vec::new(),
            active: 0,
            size,
            mode: Mode::Normal,
            leader,
            notice: None,
            dirty: true,
            bell: false,
            notices: Notices::new(),
            untold: Vec::new(),
            outcome: None,
            skips: 0,
            create_on_hello: first_pane == FirstPane::Open,
            role: Role::Attached,
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

    pub(crate) fn say(&mut self, text: String) {
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
    pub fn parse_pending(&mut self, budget: usize, now: Instant) {
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
            left = left.saturating_sub(pane.parse_round(left, now));
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
            Frame::Message(message) => {
                if let Some(notice) = self.notices.observe(&message) {
                    self.untold.push(notice);
                }
                self.on_message(message)
            }
        }
    }

    /// Whether the screen shows a chip that counts down (the pane in view has a deadline),
    /// so it must be drawn again as the seconds pass.
    pub fn counting_down(&self) -> bool {
        self.active_pane()
            .and_then(|pane| pane.recovery.as_ref())
            .is_some_and(Recovery::counts_down)
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
                    // Modes about a pane end with it; a leader pressed just before keeps
                    // its meaning, or its command key would be typed into the pane.
                    if matches!(
                        self.mode,
                        Mode::ConfirmClose(_) | Mode::ConfirmCancel(_) | Mode::Scrollback(_)
                    ) {
                        self.mode = Mode::Normal;
                    }
                    self.say("reattached: the hub had dropped this client".to_owned());
                }
                self.greeted = true;
                if std::mem::take(&mut self.create_on_hello) {
                    return vec![self.create_request()];
                }
            }
            HubMessage::Live => {}
            HubMessage::Created {
                pane,
                title,
                rows,
                cols,
                replaces,
            } => {
                if self.index_of(pane).is_some() {
                    return Vec::new();
                }
                // Built at the pane's size so its scrollback replays as it was drawn,
                // then brought to this terminal's size.
                let created = Pane::new(pane, title, PaneSize { rows, cols });
                // A relaunch takes the old pane's place, so its tab number stays.
                let index = match replaces.and_then(|old| self.index_of(old)) {
                    Some(index) => {
                        self.panes[index] = created;
                        index
                    }
                    None => {
                        self.panes.push(created);
                        self.panes.len() - 1
                    }
                };
                let reselected = self.reselect == Some(pane);
                if reselected {
                    self.reselect = None;
                }
                if std::mem::take(&mut self.awaiting_created)
                    || self.panes.len() == 1
                    || reselected
                    || index == self.active
                {
                    self.select(index);
                }
                // Even at our size already: the hub keeps every client's size for a pane,
                // to give it back when another client leaves (docs/hub.md, "Shared sizes").
                return vec![ClientRequest::Resize {
                    pane,
                    rows: self.size.rows,
                    cols: self.size.cols,
                }];
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
                let how = code.map_or("ended".to_owned(), |code| {
                    format!("exited with code {code}")
                });
                let exited = &mut self.panes[index];
                exited.alive = false;
                exited.held = held;
                exited.ended = Some(how.clone());
                self.say(format!("{} {how}", self.label(index)));
            }
            HubMessage::Closed { pane } => {
                if let Some(index) = self.index_of(pane) {
                    self.remove(index);
                }
            }
            HubMessage::Title { pane, title } => {
                if let Some(index) = self.index_of(pane) {
                    self.panes[index].program_title = title;
                }
            }
            HubMessage::Recovery(report) => self.on_recovery(report),
            HubMessage::Attention { pane } => {
                if let Some(index) = self.index_of(pane) {
                    self.bell = true;
                    if index != self.active {
                        self.panes[index].unread = true;
                    }
                    self.say(format!("{} wants you back", self.label(index)));
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
        let Some(index) = self.index_of(report.pane) else {
            return;
        };
        let label = self.label(index);
        let pane = &mut self.panes[index];
        if report.is_active() {
            pane.recovery = Some(Recovery::from_report(&report));
            return;
        }
        let was_shown = pane.recovery.take().is_some();
        if report.state == "cancelled" && pane.held {
            // The hold is over (cancelled, expired, or its plugin stopped): plainly exited.
            pane.held = false;
            self.say(format!(
                "{label}: recovery ended; it stays exited ({} x closes it)",
                self.leader
            ));
        } else if let Some(detail) = report.detail {
            self.say(format!("{label}: {detail}"));
        } else if was_shown {
            self.say(format!("{label}: recovery over"));
        }
    }

    /// `N:title`, as the pane's tab reads: notices name panes the way the tabs do.
    pub(crate) fn label(&self, index: usize) -> String {
        format!("{}:{}", index + 1, self.panes[index].shown_title())
    }

    /// Leader `r`: end the hold of a held pane after asking; anything else is told what
    /// is true instead of being told "cancelled".
    pub(crate) fn cancel_recovery(&mut self, pane: u64) -> Vec<ClientRequest> {
        let Some(index) = self.index_of(pane) else {
            return Vec::new();
        };
        let label = self.label(index);
        let target = &self.panes[index];
        if target.held {
            self.mode = Mode::ConfirmCancel(pane);
            return Vec::new();
        }
        let text = match (target.alive, &target.recovery) {
            (true, Some(recovery)) => format!(
                "nothing to cancel: {label} is running, not held; its plugin goes on ({})",
                recovery.chip(&Clock::local())
            ),
            (true, None) => format!("nothing to cancel: {label} is running, nothing is held"),
            (false, _) => format!(
                "nothing to cancel: {label} has exited and nothing is held ({} x closes it)",
                self.leader
            ),
        };
        self.say(text);
        Vec::new()
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

    pub(crate) fn select(&mut self, index: usize) {
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

    pub(crate) fn create_request(&mut self) -> ClientRequest {
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
        self.size_every_pane()
    }

    /// Leader `z`: another client's size counted; from now on this terminal's does. Sizing
    /// every pane again is an act, and the hub gives the latest client's size to the PTYs.
    pub(crate) fn claim_size(&mut self) -> Vec<ClientRequest> {
        self.say(format!(
            "the panes take this terminal's size ({} z)",
            self.leader
        ));
        self.size_every_pane()
    }

    fn size_every_pane(&mut self) -> Vec<ClientRequest> {
        let size = self.size;
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
}

#[cfg(test)]
#[path = "app_tests.rs"]
mod tests;

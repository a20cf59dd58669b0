//! The TUI's state and everything that changes it: hub frames in, keys in, client requests
//! out. No terminal here: [`crate::draw`] renders an [`App`] and [`crate::run`] wires it to
//! the terminal and the hub, so this part is tested by feeding it frames and bytes.

use std::collections::VecDeque;
use std::num::NonZeroU16;
use std::time::{Duration, Instant};

use bytes::Bytes;
use nightcrow_client_protocol::{
    ClientRequest, Frame, HubMessage, Notice, Notices, PluginHealth, RecoveryReport, RecoveryState,
};
use nightcrow_config::LeaderKey;

use ratatui::layout::Rect;

use crate::copy::CopyMode;
use crate::format::{Clock, Recovery};
use crate::layout::{self, Cell, Direction, GRID_MOST, SPLIT_MOST};
use crate::mouse::Mouse;
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
/// A flooding pane that has received nothing for this long has paused or ended: it shows
/// its latest output at once. A flood's frames are taken once a round (two frames, 33 ms,
/// `FRAMES_A_ROUND_IN_A_FLOOD`), so a round that brought nothing new is a pause. Shorter
/// than the hub holds a pane for a client that is behind (80–140 ms), so the screen is
/// current in those pauses too. Each costs one parse of at most [`KEEP_ON_SKIP`]
/// (docs/tui.md).
pub(crate) const FLOOD_PAUSE: Duration = Duration::from_millis(30);
/// A flooding pane that has received nothing for this long is done flooding: what comes
/// next is parsed as any output. Longer than the pauses between bursts of a flood on a busy
/// machine, which would otherwise each cost full rounds of parsing (docs/tui.md).
const FLOOD_QUIET: Duration = Duration::from_millis(300);
/// How long a notice stays on the notice row.
const NOTICE_FOR: Duration = Duration::from_secs(6);

/// Rows and columns of the pane area: the terminal less the tab row and the notice row.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PaneArea {
    pub rows: u16,
    pub cols: u16,
}

impl PaneArea {
    /// The pane area of a terminal of this size; never under 2×2 (an emulator needs at
    /// least two columns for a wide character).
    pub fn of_terminal(rows: u16, cols: u16) -> PaneArea {
        PaneArea {
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
    /// Skipped ahead, and since then neither caught up nor quiet for [`FLOOD_QUIET`].
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
    /// The size this client last asked the hub for (the hub may give another client's).
    asked: Option<PaneArea>,
}

impl Pane {
    fn new(id: u64, title: Option<String>, size: PaneArea) -> Pane {
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
            asked: None,
        }
    }

    /// Queues output for the emulator; returns whether the pane had to skip ahead.
    fn push_output(&mut self, bytes: Bytes) -> bool {
        let now = Instant::now();
        if self.flooding && now.saturating_duration_since(self.last_output) >= FLOOD_QUIET {
            self.flooding = false;
        }
        self.pending_len += bytes.len();
        self.pending.push_back(bytes);
        self.last_output = now;
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

    /// One round of parsing, at most `budget` bytes unless a flood has paused or ended;
    /// returns how many bytes were parsed.
    fn parse_round(&mut self, budget: usize, now: Instant) -> usize {
        if self.flooding && now.saturating_duration_since(self.last_output) >= FLOOD_PAUSE {
            // The flood paused or is over. Show where it is now, from what a re-attach
            // would replay, rather than work through what scrolled by; it stays a flood
            // until it has been quiet for `FLOOD_QUIET`.
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

    fn resize(&mut self, size: PaneArea) {
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

/// How the screen is shared between panes (docs/tui.md, "Split, grid and zoom").
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Layout {
    /// The panes of the split, by id, in the order of their cells. It is shown while it
    /// holds two panes or more and the pane in view is one of them.
    pub split: Vec<u64>,
    /// Every pane in a grid on the whole screen, [`GRID_MOST`] at a time.
    pub grid: bool,
    /// The pane in view alone, until zoomed out; the split and the grid are kept.
    pub zoomed: bool,
}

/// What the screen shows now: the layout resolved against the panes there are.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct View {
    /// The tab row is drawn (the grid gives it up: each cell's header names its pane).
    pub tabs: bool,
    /// The panes shown, by index, with their cells. A pane shown alone has a header of
    /// no height.
    pub cells: Vec<(usize, Cell)>,
}

impl View {
    /// The cell of the pane at `index`, if it is shown.
    pub fn cell_of(&self, index: usize) -> Option<Cell> {
        self.cells
            .iter()
            .find(|(shown, _)| *shown == index)
            .map(|(_, cell)| *cell)
    }
}

/// Where a pane this client asked for goes when it is created.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Arrival {
    /// Nothing of ours is on its way.
    None,
    /// It comes into view (leader `c`).
    InView,
    /// It joins the split beside the pane in view and comes into view (leader `s`).
    Beside,
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
    /// Index into `panes` of the pane in view (the focused cell of a split or grid).
    pub active: usize,
    /// The pane area of this terminal: a pane shown alone gets this size, and so does a
    /// pane out of view.
    pub size: PaneArea,
    pub layout: Layout,
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
    /// Scrollback mode's cursor, selection and search.
    pub(crate) copy: CopyMode,
    /// Text copied and not yet written to the person's terminal for its clipboard (it
    /// writes it with the next draw).
    pub clipboard: Option<String>,
    pub outcome: Option<Outcome>,
    /// Times a pane's output was skipped ahead (see [`SKIP_AHEAD_AT`]).
    pub skips: u64,
    /// Whether the first pane is ours to create once the replay is in (`hello`).
    create_on_hello: bool,
    pub role: Role,
    /// A `create` of ours on its way, and where its pane goes; a pane opened by someone
    /// else (another client, a relaunch) does not take the screen.
    arrival: Arrival,
    /// A `hello` has been seen: another one starts a new replay.
    greeted: bool,
    /// The pane to bring back into view when a new replay lists it.
    reselect: Option<u64>,
    pub mouse: Mouse,
}

impl App {
    pub fn new(leader: LeaderKey, size: PaneArea, first_pane: FirstPane) -> App {
        App {
            panes: Vec::new(),
            active: 0,
            size,
            layout: Layout::default(),
            mode: Mode::Normal,
            leader,
            notice: None,
            dirty: true,
            bell: false,
            notices: Notices::new(),
            untold: Vec::new(),
            copy: CopyMode::default(),
            clipboard: None,
            outcome: None,
            skips: 0,
            create_on_hello: first_pane == FirstPane::Open,
            role: Role::Attached,
            arrival: Arrival::None,
            greeted: false,
            reselect: None,
            mouse: Mouse::default(),
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
            left = left.saturating_sub(self.parse_pane(index, left, now));
            if left == 0 {
                break;
            }
        }
    }

    /// Parses the output of pane `id` out of turn, at most `budget` bytes: the echo of a key
    /// just typed is drawn without waiting for the next round. Whether there was any.
    pub fn parse_echo(&mut self, id: u64, budget: usize, now: Instant) -> bool {
        self.index_of(id)
            .is_some_and(|index| self.parse_pane(index, budget, now) > 0)
    }

    /// One pane's round of parsing; how many bytes it took.
    fn parse_pane(&mut self, index: usize, budget: usize, now: Instant) -> usize {
        let has_work = self
            .panes
            .get(index)
            .is_some_and(|pane| pane.pending_len > 0 || pane.restart);
        if !has_work {
            return 0;
        }
        // Only for a pane that parses: the layout is worked out anew on each call.
        let on_screen = self.view().cell_of(index).is_some();
        let used = self.panes[index].parse_round(budget, now);
        // Every pane on the screen is drawn again, not only the one in view: a split shows
        // a flood beside the pane being typed in.
        if on_screen {
            self.dirty = true;
        }
        used
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
                let mut requests = self.on_message(message);
                requests.extend(self.refit());
                requests
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
                    return vec![self.create_request(Arrival::InView)];
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
                let created = Pane::new(pane, title, PaneArea { rows, cols });
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
                if let Some(old) = replaces {
                    for id in &mut self.layout.split {
                        if *id == old {
                            *id = pane;
                        }
                    }
                }
                let reselected = self.reselect == Some(pane);
                if reselected {
                    self.reselect = None;
                }
                let arrival = std::mem::replace(&mut self.arrival, Arrival::None);
                if arrival == Arrival::Beside {
                    self.join_split(pane);
                }
                if arrival != Arrival::None
                    || self.panes.len() == 1
                    || reselected
                    || index == self.active
                {
                    self.select(index);
                }
                // The refit that follows every message sizes it, even at our size already:
                // the hub keeps every client's size for a pane, to give it back when
                // another client leaves (docs/hub.md, "Shared sizes").
            }
            HubMessage::Resized { pane, rows, cols } => {
                if let Some(index) = self.index_of(pane) {
                    self.panes[index].resize(PaneArea { rows, cols });
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
                if state != PluginHealth::Running {
                    let detail = detail.map(|d| format!(": {d}")).unwrap_or_default();
                    self.say(format!("plugin {name} {state}{detail}"));
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
        if report.state == RecoveryState::Cancelled && pane.held {
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
        let gone = self.panes.remove(index).id;
        // The pane in view leaving a split: the focus goes to the cell that follows it.
        let split = &mut self.layout.split;
        let successor = (index == self.active)
            .then(|| split.iter().position(|&id| id == gone))
            .flatten()
            .filter(|_| split.len() > 1)
            .map(|at| split[(at + 1) % split.len()]);
        split.retain(|&id| id != gone);
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
        let active = successor
            .and_then(|id| self.index_of(id))
            .unwrap_or(self.active);
        self.select(active);
    }

    /// Brings the pane at `index` into view: into the focused cell when it is not shown
    /// (it takes the place of the pane there in the split), or the focus moves to its cell.
    pub(crate) fn select(&mut self, index: usize) {
        if index < self.panes.len() {
            let (from, to) = (self.active_pane().map(|pane| pane.id), self.panes[index].id);
            if let Some(from) = from
                && !self.layout.split.contains(&to)
            {
                for id in &mut self.layout.split {
                    if *id == from {
                        *id = to;
                    }
                }
            }
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

    pub(crate) fn create_request(&mut self, arrival: Arrival) -> ClientRequest {
        self.arrival = arrival;
        ClientRequest::Create {
            title: None,
            command: None,
            rows: Some(self.size.rows),
            cols: Some(self.size.cols),
        }
    }

    /// The terminal changed size: every pane follows (the hub resizes their PTYs).
    pub fn resize(&mut self, size: PaneArea) -> Vec<ClientRequest> {
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
        self.dirty = true;
        self.fit(|_, _| true)
    }

    /// Sizes the running panes whose place on the screen changed since this client last
    /// asked for their size: called after every key and message, so a pane is always told
    /// the size it is shown at. Only a change asks: a size the hub gave from another client
    /// is not fought over (leader `z` claims it back).
    pub(crate) fn refit(&mut self) -> Vec<ClientRequest> {
        self.fit(|pane, size| pane.asked != Some(size))
    }

    /// Each pane is sized to its cell in the split or grid, even while another is zoomed (a
    /// zoom in and out should not make every program redraw twice); the zoomed pane and the
    /// panes out of view to the whole pane area.
    fn fit(&mut self, wanted: impl Fn(&Pane, PaneArea) -> bool) -> Vec<ClientRequest> {
        let laid_out = self.laid_out();
        let zoomed = self.layout.zoomed.then_some(self.active);
        let full = self.size;
        self.panes
            .iter_mut()
            .enumerate()
            .filter(|(_, pane)| pane.alive)
            .filter_map(|(index, pane)| {
                let cell = laid_out.cell_of(index).filter(|_| zoomed != Some(index));
                let size = cell.map_or(full, |cell| PaneArea {
                    rows: cell.screen.height,
                    cols: cell.screen.width,
                });
                if !wanted(pane, size) {
                    return None;
                }
                pane.asked = Some(size);
                pane.resize(size);
                Some(ClientRequest::Resize {
                    pane: pane.id,
                    rows: size.rows,
                    cols: size.cols,
                })
            })
            .collect()
    }

    /// The pane area: the terminal less the tab row above and the notice row below.
    fn pane_area(&self) -> Rect {
        Rect::new(0, 1, self.size.cols, self.size.rows)
    }

    /// What the screen shows now. Whatever the layout says, the pane in view is shown:
    /// alone when zoomed, when it is not in the split, or when the cells would not fit.
    pub fn view(&self) -> View {
        if self.layout.zoomed {
            self.alone()
        } else {
            self.laid_out()
        }
    }

    fn alone(&self) -> View {
        View {
            tabs: true,
            cells: self
                .active_pane()
                .map(|_| {
                    let screen = self.pane_area();
                    let header = Rect {
                        height: 0,
                        ..screen
                    };
                    (self.active, Cell { header, screen })
                })
                .into_iter()
                .collect(),
        }
    }

    /// The split or the grid, zoomed or not.
    fn laid_out(&self) -> View {
        let (shown, area, tabs): (Vec<usize>, Rect, bool) = if self.layout.grid {
            let page = self.active / GRID_MOST * GRID_MOST;
            let shown = (page..self.panes.len().min(page + GRID_MOST)).collect();
            let whole = Rect::new(0, 0, self.size.cols, self.size.rows + 1);
            (shown, whole, false)
        } else {
            let shown = (self.layout.split.iter())
                .filter_map(|&id| self.index_of(id))
                .collect();
            (shown, self.pane_area(), true)
        };
        if shown.len() < 2 || !shown.contains(&self.active) {
            return self.alone();
        }
        match layout::arrange(shown.len(), area) {
            Some(cells) => View {
                tabs,
                cells: shown.into_iter().zip(cells).collect(),
            },
            None => self.alone(),
        }
    }

    /// Rows of the pane in view as shown: what a page of scrollback moves.
    pub(crate) fn rows_in_view(&self) -> u16 {
        self.view()
            .cell_of(self.active)
            .map_or(self.size.rows, |cell| cell.screen.height)
    }

    /// Leader `s`: a new pane beside the one in view; the split grows to [`SPLIT_MOST`].
    pub(crate) fn split(&mut self) -> Vec<ClientRequest> {
        let Some(active) = self.active_pane().map(|pane| pane.id) else {
            return vec![self.create_request(Arrival::InView)];
        };
        self.layout
            .split
            .retain(|&id| self.panes.iter().any(|pane| pane.id == id));
        if !self.layout.split.contains(&active) {
            self.layout.split = vec![active];
        }
        if self.layout.split.len() >= SPLIT_MOST {
            self.say(format!(
                "a split shows at most {SPLIT_MOST} panes ({} g shows them all)",
                self.leader
            ));
            return Vec::new();
        }
        self.layout.grid = false;
        self.layout.zoomed = false;
        vec![self.create_request(Arrival::Beside)]
    }

    /// Puts `pane` into the split after the pane in view.
    fn join_split(&mut self, pane: u64) {
        let active = self.active_pane().map(|pane| pane.id);
        let at = (self.layout.split.iter())
            .position(|&id| Some(id) == active)
            .map_or(self.layout.split.len(), |at| at + 1);
        if self.layout.split.len() < SPLIT_MOST {
            self.layout.split.insert(at, pane);
        }
    }

    /// Leader `f`: the pane in view alone, and back.
    pub(crate) fn toggle_zoom(&mut self) {
        if !self.layout.zoomed && self.view().cells.len() < 2 {
            self.say("one pane in view: nothing to zoom".to_owned());
            return;
        }
        self.layout.zoomed = !self.layout.zoomed;
        if self.layout.zoomed {
            self.say(format!("zoomed: {} f shows the others again", self.leader));
        }
    }

    /// Leader `g`: every pane in a grid, and back to the split or the pane alone.
    pub(crate) fn toggle_grid(&mut self) {
        self.layout.zoomed = false;
        self.layout.grid = !self.layout.grid;
        if self.layout.grid && self.panes.len() < 2 {
            self.layout.grid = false;
            self.say("one pane: nothing to show in a grid".to_owned());
        }
    }

    /// Leader `u`: the split ends; the pane in view stays, the others go on as tabs.
    pub(crate) fn unsplit(&mut self) {
        self.layout = Layout::default();
    }

    /// Leader and an arrow (or `h` `j` `k` `l`): the focus moves to the cell on that side.
    pub(crate) fn focus_towards(&mut self, direction: Direction) {
        let view = self.view();
        let cells: Vec<Cell> = view.cells.iter().map(|&(_, cell)| cell).collect();
        let from = view
            .cells
            .iter()
            .position(|&(index, _)| index == self.active);
        if let Some(to) = from.and_then(|from| layout::neighbour(&cells, from, direction)) {
            self.select(view.cells[to].0);
        }
    }

    /// Leader `o`: the focus moves to the next cell, around.
    pub(crate) fn focus_next_cell(&mut self) {
        let view = self.view();
        if let Some(from) = view
            .cells
            .iter()
            .position(|&(index, _)| index == self.active)
        {
            let next = view.cells[(from + 1) % view.cells.len()].0;
            self.select(next);
        }
    }
}

#[cfg(test)]
#[path = "app_tests.rs"]
mod tests;

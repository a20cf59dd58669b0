//! `PaneTable`: a repository's panes and their slots, in display order.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, Instant};

use nightcrow_guard::{ApprovedRelaunch, ApprovedSendInput, PaneId};
use nightcrow_protocol::{Generation, Token};
use tokio::sync::mpsc;

use crate::process::{Ending, PaneProcess, SpawnSpec};
use crate::screen::screen_text;
use crate::scrollback::Scrollback;
use crate::strip::Stripper;
use crate::typing::Typing;
use crate::{IDLE_THRESHOLD, MAX_PANES, PaneError, PaneEvent, PaneSize, SCROLLBACK_BYTES, Shell};

/// A pane slot (SPEC §5.2): what outlives a relaunch of the pane's process.
#[derive(Debug, Clone)]
pub struct Slot {
    token: Token,
    generation: Generation,
    last_output: Instant,
    alive: bool,
}

impl Slot {
    pub fn token(&self) -> &Token {
        &self.token
    }

    /// 1 at open, +1 per relaunch, saturating.
    pub fn generation(&self) -> Generation {
        self.generation
    }

    /// When the child last printed anything; the spawn time until then.
    pub fn last_output(&self) -> Instant {
        self.last_output
    }

    /// Whether the slot's process runs: false once it exited or was released.
    pub fn is_alive(&self) -> bool {
        self.alive
    }
}

/// What [`PaneTable::record_output`] made of one chunk of a pane's output.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Recorded {
    /// The chunk as plugin text (SPEC §2.3); `None` when nothing is left of it.
    pub text: Option<String>,
    /// The title the program set in it with OSC 0 or 2, the last one if several: control
    /// characters removed, trimmed, at most [`MAX_TITLE_CHARS`](crate::MAX_TITLE_CHARS).
    /// Empty when it set an empty one (the configured title applies again); `None` when it
    /// set none.
    pub title: Option<String>,
}

/// An idle pane as [`PaneTable::take_idle`] reports it: once per quiet period.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct IdlePane {
    pub pane: PaneId,
    pub token: Token,
    pub generation: Generation,
    /// Time since the last output byte (or the spawn).
    pub idle: Duration,
}

#[derive(Debug)]
struct Entry {
    id: PaneId,
    slot: Slot,
    idle_reported: bool,
    size: PaneSize,
    process: Option<PaneProcess>,
    scrollback: Scrollback,
    stripper: Stripper,
}

impl Entry {
    fn idle_deadline(&self, threshold: Duration) -> Option<Instant> {
        let armed = self.slot.alive && !self.idle_reported;
        armed.then(|| self.slot.last_output + threshold)
    }
}

/// The PTYs and slots of one repository, in display order (SPEC §5).
///
/// Owned by the repository hub's worker; it knows nothing of plugins, owners, holds or
/// clients. Each pane's threads send [`PaneEvent`]s to the `events` queue given at
/// construction; the hub passes each `Output` back through
/// [`record_output`](Self::record_output) and acts on `Exited`. Events may still arrive
/// for a pane that was destroyed or relaunched; the table ignores unknown ids.
///
/// Dropping the table (or destroying a pane) kills the children.
#[derive(Debug)]
pub struct PaneTable {
    repo_root: PathBuf,
    shell: Shell,
    runtime_dir: PathBuf,
    events: mpsc::Sender<PaneEvent>,
    max_panes: usize,
    idle_threshold: Duration,
    /// When output arrives and processes start; the hub's own clock, so that idleness and
    /// the hub's deadlines are measured on one clock.
    clock: fn() -> Instant,
    next_id: u64,
    entries: Vec<Entry>,
    /// The pane a person types into, whose echo the other panes' floods must not delay.
    typing: Arc<Typing>,
}

impl PaneTable {
    /// A table for the repository at `repo_root`, which is canonicalised here and must be
    /// a directory. `runtime_dir` becomes `NIGHTCROW_PLUGIN_RUNTIME_DIR` for every pane; the
    /// caller creates it, privately, since plugins of the same hub share it (the hub holds it
    /// to the plugin host's rule for trusted folders).
    pub fn new(
        repo_root: PathBuf,
        shell: Shell,
        runtime_dir: PathBuf,
        events: mpsc::Sender<PaneEvent>,
    ) -> Result<PaneTable, PaneError> {
        let canonical = repo_root
            .canonicalize()
            .map_err(|source| PaneError::RepoRoot {
                path: repo_root.clone(),
                source,
            })?;
        if !canonical.is_dir() {
            return Err(PaneError::RepoRootNotADirectory { path: canonical });
        }
        Ok(PaneTable {
            repo_root: canonical,
            shell,
            runtime_dir,
            events,
            max_panes: MAX_PANES,
            idle_threshold: IDLE_THRESHOLD,
            clock: Instant::now,
            next_id: 1,
            entries: Vec::new(),
            typing: Arc::default(),
        })
    }

    /// Changes the cap on PTYs ([`MAX_PANES`] by default).
    pub fn with_max_panes(mut self, max_panes: usize) -> PaneTable {
        self.max_panes = max_panes;
        self
    }

    /// Changes the idle threshold ([`IDLE_THRESHOLD`] by default), so tests need not wait
    /// ten seconds. The hub uses the default, which the guard shares.
    pub fn with_idle_threshold(mut self, threshold: Duration) -> PaneTable {
        self.idle_threshold = threshold;
        self
    }

    /// Changes the clock ([`Instant::now`] by default): the hub's is tokio's, so that its
    /// tests may pause and advance time.
    pub fn with_clock(mut self, clock: fn() -> Instant) -> PaneTable {
        self.clock = clock;
        self
    }

    /// The canonical repository root: every pane's working directory.
    pub fn repo_root(&self) -> &Path {
        &self.repo_root
    }

    /// Opens a pane running `command` through the shell, or a bare shell for `None`, with
    /// a fresh token at generation 1. Refused when [`max_panes`](Self::with_max_panes) PTYs
    /// exist.
    pub fn open(&mut self, command: Option<String>, size: PaneSize) -> Result<PaneId, PaneError> {
        if self.live_ptys() >= self.max_panes {
            return Err(PaneError::TooManyPanes {
                max: self.max_panes,
            });
        }
        let token = mint_token()?;
        let id = PaneId::new(self.next_id);
        let process = self.spawn(id, &token, command.as_deref(), size)?;
        self.next_id += 1;
        self.entries.push(Entry {
            id,
            slot: Slot {
                token,
                generation: 1,
                last_output: (self.clock)(),
                alive: true,
            },
            idle_reported: false,
            size,
            process: Some(process),
            scrollback: Scrollback::new(SCROLLBACK_BYTES),
            stripper: Stripper::new(),
        });
        Ok(id)
    }

    /// Brings back a slot a previous daemon had (from its journal), as an exited pane with
    /// no process: the same token and generation, its size and the tail of its screen (its
    /// launch command is the hub's to keep, with the rest of what a slot is for). Only a relaunch the guard approves ever starts a process in it.
    /// Refused for a token the table already has.
    pub fn restore(
        &mut self,
        token: Token,
        generation: Generation,
        size: PaneSize,
        screen: &[u8],
    ) -> Result<PaneId, PaneError> {
        if self.index_of_token(&token).is_some() {
            return Err(PaneError::DuplicateToken);
        }
        let id = PaneId::new(self.next_id);
        self.next_id += 1;
        let mut scrollback = Scrollback::new(SCROLLBACK_BYTES);
        scrollback.push(screen);
        self.entries.push(Entry {
            id,
            slot: Slot {
                token,
                generation: generation.max(1),
                last_output: (self.clock)(),
                alive: false,
            },
            idle_reported: false,
            size,
            process: None,
            scrollback,
            stripper: Stripper::new(),
        });
        Ok(id)
    }

    /// Replaces the slot's process with the approved line (composed by the guard from the
    /// original command) under the same token, the next generation and a new [`PaneId`] at
    /// the old pane's position. Any old process is killed. On failure nothing changes.
    ///
    /// Only the guard's approval relaunches a slot: there is no way to hand the table a
    /// line of one's own.
    ///
    /// ```compile_fail
    /// # fn relaunch_a_line(table: &mut nightcrow_pane::PaneTable, token: &nightcrow_protocol::Token) {
    /// table.relaunch(token, "codex resume 42"); // expects an `ApprovedRelaunch`
    /// # }
    /// ```
    pub fn relaunch(&mut self, approved: &ApprovedRelaunch) -> Result<PaneId, PaneError> {
        let token = approved.target().token();
        let index = self
            .index_of_token(token)
            .ok_or_else(|| PaneError::UnknownToken(token.clone()))?;
        let replaced = usize::from(self.entries[index].process.is_some());
        if self.live_ptys() - replaced >= self.max_panes {
            return Err(PaneError::TooManyPanes {
                max: self.max_panes,
            });
        }
        let id = PaneId::new(self.next_id);
        let line = approved.line().as_str();
        let process = self.spawn(id, token, Some(line), self.entries[index].size)?;
        self.next_id += 1;
        let entry = &mut self.entries[index];
        entry.id = id;
        entry.process = Some(process);
        entry.slot.generation = entry.slot.generation.saturating_add(1);
        entry.slot.alive = true;
        entry.slot.last_output = (self.clock)();
        entry.idle_reported = false;
        entry.scrollback = Scrollback::new(SCROLLBACK_BYTES);
        entry.stripper = Stripper::new();
        Ok(id)
    }

    /// The pane a token currently names; `None` once the pane is destroyed.
    pub fn resolve(&self, token: &Token) -> Option<PaneId> {
        self.index_of_token(token)
            .map(|index| self.entries[index].id)
    }

    /// The pane's slot; `None` for an unknown pane.
    pub fn slot(&self, pane: PaneId) -> Option<&Slot> {
        self.entry(pane).map(|entry| &entry.slot)
    }

    /// Every pane, in display order.
    pub fn panes(&self) -> Vec<PaneId> {
        self.entries.iter().map(|entry| entry.id).collect()
    }

    /// The pane's index in display order.
    pub fn position(&self, pane: PaneId) -> Option<usize> {
        self.entries.iter().position(|entry| entry.id == pane)
    }

    /// The child's process id, for diagnostics; `None` once the process is released.
    pub fn pid(&self, pane: PaneId) -> Option<u32> {
        self.process(pane)?.pid()
    }

    /// Queues keys a person typed (a client's `input`) for the pane's writer thread; never
    /// waits for the child to read. Plugins have their own door, [`send_approved`](Self::send_approved).
    ///
    /// While a person types into a pane, the table's other panes hand on their output at
    /// most [`METERED_BYTES_PER_SECOND`](crate::METERED_BYTES_PER_SECOND) each, until
    /// [`TYPING_LASTS`](crate::TYPING_LASTS) after the last key, so a flood beside the
    /// pane cannot take the cores its echo needs.
    pub fn write_typed(&self, pane: PaneId, bytes: &[u8]) -> Result<(), PaneError> {
        self.write(pane, bytes)?;
        self.typing.typed_into(pane);
        Ok(())
    }

    /// Queues a plugin's input, as the guard approved it, for the approved pane.
    ///
    /// ```compile_fail
    /// # fn send_unapproved(table: &nightcrow_pane::PaneTable, pane: nightcrow_guard::PaneId) {
    /// table.send_approved(pane, b"rm -rf ~\r"); // expects an `ApprovedSendInput`
    /// # }
    /// ```
    pub fn send_approved(&self, approved: &ApprovedSendInput) -> Result<(), PaneError> {
        self.write(approved.target().pane(), approved.data().as_bytes())
    }

    fn write(&self, pane: PaneId, bytes: &[u8]) -> Result<(), PaneError> {
        let entry = self.entry(pane).ok_or(PaneError::UnknownPane(pane))?;
        let process = entry.process.as_ref().ok_or(PaneError::NoProcess(pane))?;
        process.write(pane, bytes)
    }

    /// Stops handing on the pane's output: its reader, then its child, wait on the PTY
    /// until [`release_output`](Self::release_output), while other panes go on. For a
    /// client that is far behind on this pane's output. A few chunks read before may still
    /// arrive; an exit waits for the output before it. Nothing for an unknown pane or one
    /// without a process, and a relaunch (a new pane id) starts released.
    pub fn hold_output(&self, pane: PaneId) {
        if let Some(process) = self.process(pane) {
            process.hold_output();
        }
    }

    pub fn release_output(&self, pane: PaneId) {
        if let Some(process) = self.process(pane) {
            process.release_output();
        }
    }

    /// Resizes the pane's PTY; a later relaunch keeps the size.
    pub fn resize(&mut self, pane: PaneId, size: PaneSize) -> Result<(), PaneError> {
        let entry = self.entry_mut(pane).ok_or(PaneError::UnknownPane(pane))?;
        entry.size = size;
        match &entry.process {
            Some(process) => process.resize(pane, size),
            None => Ok(()),
        }
    }

    /// Takes in one `Output` chunk: re-arms idleness, appends to the scrollback, and
    /// returns the chunk as plugin text (SPEC §2.3) with any title the program set in it
    /// (nothing for an unknown pane). An escape sequence split across chunks counts in the
    /// chunk that ends it.
    pub fn record_output(&mut self, pane: PaneId, bytes: &[u8]) -> Recorded {
        let now = (self.clock)();
        let Some(entry) = self.entry_mut(pane) else {
            return Recorded::default();
        };
        entry.slot.last_output = now;
        entry.idle_reported = false;
        entry.scrollback.push(bytes);
        let text = entry.stripper.push(bytes);
        Recorded {
            text: (!text.is_empty()).then_some(text),
            title: entry.stripper.take_title(),
        }
    }

    /// The last [`SCROLLBACK_BYTES`] of raw output, for a re-attaching client; empty for an
    /// unknown pane.
    pub fn scrollback(&self, pane: PaneId) -> Vec<u8> {
        self.entry(pane)
            .map(|entry| entry.scrollback.to_vec())
            .unwrap_or_default()
    }

    /// What the pane shows now, as plain text rows, its bottom rows within
    /// [`MAX_SCREEN_BYTES`](nightcrow_protocol::MAX_SCREEN_BYTES); `None` for an unknown
    /// pane. Drawn afresh from the scrollback, so it costs a parse of at most
    /// [`SCROLLBACK_BYTES`]: the hub asks once per quiet period of a watched pane.
    pub fn screen(&self, pane: PaneId) -> Option<String> {
        let entry = self.entry(pane)?;
        Some(screen_text(&entry.scrollback.to_vec(), entry.size))
    }

    /// When [`take_idle`](Self::take_idle) next has something to report: the earliest
    /// `last_output + threshold` among live panes not yet reported in their quiet period.
    /// The hub sleeps until then; `None` means no timer is needed.
    pub fn next_idle_deadline(&self) -> Option<Instant> {
        self.entries
            .iter()
            .filter_map(|entry| entry.idle_deadline(self.idle_threshold))
            .min()
    }

    /// Every live pane that has been quiet for the threshold at `now` and was not reported
    /// since its last output (or [`clear_idle`](Self::clear_idle)).
    pub fn take_idle(&mut self, now: Instant) -> Vec<IdlePane> {
        let threshold = self.idle_threshold;
        let mut idle = Vec::new();
        for entry in &mut self.entries {
            if entry.idle_deadline(threshold).is_some_and(|due| due <= now) {
                entry.idle_reported = true;
                idle.push(IdlePane {
                    pane: entry.id,
                    token: entry.slot.token.clone(),
                    generation: entry.slot.generation,
                    idle: now.saturating_duration_since(entry.slot.last_output),
                });
            }
        }
        idle
    }

    /// Forgets that the pane's quiet period was reported, so `take_idle` reports it again
    /// (at once if it is still quiet): for a hold or a take-over, whose new state should
    /// hear about idleness afresh. Does not touch the time of the last output.
    pub fn clear_idle(&mut self, pane: PaneId) {
        if let Some(entry) = self.entry_mut(pane) {
            entry.idle_reported = false;
        }
    }

    /// Time since the pane's last output at `now`, for the guard; `None` unless the pane
    /// is known and alive.
    pub fn idle_for(&self, pane: PaneId, now: Instant) -> Option<Duration> {
        let slot = self.slot(pane).filter(|slot| slot.alive)?;
        Some(now.saturating_duration_since(slot.last_output))
    }

    /// Drops the pane's PTY and process (killing it if it still runs) but keeps the slot
    /// and its scrollback: for an exited pane, which stays on screen until it is closed or
    /// relaunched.
    pub fn release_process(&mut self, pane: PaneId) {
        if let Some(entry) = self.entry_mut(pane) {
            entry.process = None;
            entry.slot.alive = false;
        }
    }

    /// Removes every pane, ending each process (see [`Ending`]); whoever must know they are
    /// gone (a daemon about to exit, which would take the escalation threads with it)
    /// waits on what this returns.
    pub fn end_all(&mut self) -> Vec<Ending> {
        self.entries
            .drain(..)
            .filter_map(|mut entry| entry.process.as_mut().map(PaneProcess::end))
            .collect()
    }

    /// Removes the pane and its slot, killing the child if it still runs.
    pub fn destroy(&mut self, pane: PaneId) {
        if let Some(index) = self.position(pane) {
            self.entries.remove(index);
        }
    }

    /// PTYs that exist, whether or not their child still runs: what the cap counts.
    fn live_ptys(&self) -> usize {
        self.entries
            .iter()
            .filter(|entry| entry.process.is_some())
            .count()
    }

    fn spawn(
        &self,
        pane: PaneId,
        token: &Token,
        line: Option<&str>,
        size: PaneSize,
    ) -> Result<PaneProcess, PaneError> {
        // portable-pty silently starts the child in the home directory when its cwd is not
        // a directory; a pane must run in the repository or not at all.
        if !self.repo_root.is_dir() {
            return Err(PaneError::RepoRootNotADirectory {
                path: self.repo_root.clone(),
            });
        }
        let mut command = self.shell.command(line);
        command.cwd(&self.repo_root);
        command.env("TERM", "xterm-256color");
        command.env("COLORTERM", "truecolor");
        command.env_remove("NO_COLOR");
        command.env("NIGHTCROW_PANE_TOKEN", token.as_str());
        command.env("NIGHTCROW_PLUGIN_RUNTIME_DIR", &self.runtime_dir);
        PaneProcess::spawn(SpawnSpec {
            pane,
            command,
            program: &self.shell.program,
            size,
            events: self.events.clone(),
            typing: Arc::clone(&self.typing),
        })
    }

    fn index_of_token(&self, token: &Token) -> Option<usize> {
        self.entries
            .iter()
            .position(|entry| entry.slot.token == *token)
    }

    fn entry(&self, pane: PaneId) -> Option<&Entry> {
        self.entries.iter().find(|entry| entry.id == pane)
    }

    /// The pane's process, if the pane is known and has one.
    fn process(&self, pane: PaneId) -> Option<&PaneProcess> {
        self.entry(pane)?.process.as_ref()
    }

    fn entry_mut(&mut self, pane: PaneId) -> Option<&mut Entry> {
        self.entries.iter_mut().find(|entry| entry.id == pane)
    }
}

/// 16 bytes from the OS RNG (SPEC §2.2); there is deliberately no fallback generator.
fn mint_token() -> Result<Token, PaneError> {
    let mut bytes = [0; 16];
    getrandom::fill(&mut bytes).map_err(PaneError::Random)?;
    Ok(Token::from_bytes(bytes))
}

//! The worker's panes, one of its three parts: the pane table, one [`SlotRecord`] per
//! slot, the guard that keeps each slot's budgets, and the sizes clients want. It never
//! reaches a plugin or a client: what a change means for them goes to the [`Outbox`].
//!
//! A plugin comes to own a pane in two ways only: the config named it for the pane's
//! startup command ([`Slots::adopt_intended`]), or the guard approved its `watch_pane`
//! ([`Slots::adopt_watched`], which takes the approval). Every way the recovery of a slot
//! ends is one [`Slots::end`].
//!
//! By job: [`events`] (pane output, exits, idleness, hold expiry, output to the owner),
//! [`approved`] (the guard's judgement and what an approval does to a pane), [`restore`]
//! (the journal's snapshots and taking back a previous daemon's panes), [`sizes`] (which
//! client's size a shared pane takes).

mod approved;
mod events;
mod restore;
mod sizes;

use std::collections::{BTreeSet, HashMap};
use std::time::{Duration, Instant};

use nightcrow_client_protocol::{Frame, HubMessage, RecoveryReport};
use nightcrow_guard::{Guard, GuardLimits, PaneId};
use nightcrow_pane::{PaneSize, PaneTable, Slot};
use nightcrow_protocol::{Event, Token};

use super::outbox::Outbox;
use super::output::OutputBatch;
use super::pane_error;
use crate::config::StartupCommand;
use crate::handle::{HoldStatus, HubError, PaneStatus};
use crate::snapshot::Clocks;

pub(super) use events::coalesce;

pub(super) struct Slots {
    table: PaneTable,
    records: HashMap<Token, SlotRecord>,
    guard: Guard,
    sizes: sizes::SharedSizes,
    /// How long an exited, owned pane waits for its owner's relaunch (SPEC §6.2).
    hold_ttl: Duration,
    /// The panes whose output is held for a client far behind.
    held_output: BTreeSet<u64>,
}

/// Everything the hub knows about one pane slot beside the table's own slot. One record
/// per token, so that forgetting a slot is one removal and no map can outlive another.
#[derive(Debug, Clone)]
struct SlotRecord {
    title: Option<String>,
    /// The title the pane's program set last (OSC 0 or 2), shown instead of `title`; kept
    /// across a relaunch until the new process sets its own.
    program_title: Option<String>,
    /// The startup command that opened it; `None` for a client pane, which is never
    /// relaunchable (SPEC §6.5).
    startup: Option<StartupCommand>,
    size: PaneSize,
    /// The plugin that owns the pane.
    owner: Option<String>,
    /// The plugin its startup command named (SPEC §6.5), whether or not it owns it now.
    intended: Option<String>,
    /// Set once the pane's process ended: the pane stays, exited, until a client closes it.
    exit: Option<Exit>,
    /// Set while the exited pane waits for its owner to relaunch it (SPEC §6.2).
    hold: Option<Hold>,
    /// The owner's latest status for the pane, live or held, replayed to clients that
    /// attach later (docs/hub.md: SPEC §6.6 keeps it for holds only).
    report: Option<RecoveryReport>,
    /// When the slot first opened (unix ms), for `pane_opened` and the journal.
    opened_ms: i64,
    /// Output text on its way to the owner.
    output: OutputBatch,
}

impl SlotRecord {
    fn new(
        title: Option<String>,
        startup: Option<StartupCommand>,
        size: PaneSize,
        opened_ms: i64,
    ) -> SlotRecord {
        SlotRecord {
            title,
            program_title: None,
            startup,
            size,
            owner: None,
            intended: None,
            exit: None,
            hold: None,
            report: None,
            opened_ms,
            output: OutputBatch::default(),
        }
    }

    fn owned_by(&self, plugin: &str) -> bool {
        self.owner.as_deref() == Some(plugin)
    }

    /// The original startup command; `None` for bare shells and client panes, which are
    /// therefore never relaunchable.
    fn launch_command(&self) -> Option<&str> {
        self.startup
            .as_ref()
            .map(|startup| startup.command.as_str())
    }

    /// `created` for this record shown as `pane`; `replaces`: the pane a relaunch put this
    /// one in place of.
    fn created(&self, pane: PaneId, replaces: Option<PaneId>) -> HubMessage {
        HubMessage::Created {
            pane: pane.get(),
            title: self.title.clone(),
            rows: self.size.rows(),
            cols: self.size.cols(),
            replaces: replaces.map(PaneId::get),
        }
    }

    /// `title` with the title the pane's program set, if it set one: after `created`, for
    /// a client that has not heard it (one attaching, or a relaunch's new pane).
    fn program_title(&self, pane: PaneId) -> Option<HubMessage> {
        let title = self.program_title.clone()?;
        Some(HubMessage::Title {
            pane: pane.get(),
            title: Some(title),
        })
    }
}

/// How a pane's process ended.
#[derive(Debug, Clone, Copy)]
struct Exit {
    /// `None` when a signal ended it.
    code: Option<u32>,
}

/// An exited, owned, relaunchable pane kept for a relaunch (SPEC §6.2).
#[derive(Debug, Clone)]
struct Hold {
    pane: PaneId,
    deadline: Instant,
}

/// How the recovery of a slot ends, in [`Slots::end`]. Each lets go of the slot's owner,
/// report and budget.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum End {
    /// The episode is over (a hold expired or was cancelled, a bare shell exited, the
    /// owner's instance failed): the owner hears `pane_closed` and lets go of the pane,
    /// which forgets the plugin its startup command named.
    Recovery,
    /// The owner is gone for good (it gave up, was stopped, or its successor did not
    /// start): nobody tells it, and clients stop showing a marker it left; the pane runs
    /// unwatched, and a plugin of that name started later takes the pane back if its
    /// startup command names it. Its holds were ended before, as `Recovery`.
    Release,
    /// The pane goes (a client closed it, or it is an old plain exit): an owned pane's
    /// recovery ends as in `Recovery`, then its record, table entry and sizes go, and
    /// clients are told.
    Close,
}

impl Slots {
    pub(super) fn new(table: PaneTable, guard: Guard, hold_ttl: Duration) -> Slots {
        Slots {
            table,
            records: HashMap::new(),
            guard,
            sizes: sizes::SharedSizes::default(),
            hold_ttl,
            held_output: BTreeSet::new(),
        }
    }

    /// Holds the output of exactly the panes in `wanted`: the ones newly in it wait on
    /// their PTYs, the ones no longer in it go on. An id that names no pane (any more) is
    /// kept only until it leaves `wanted`.
    pub(super) fn hold_output_of(&mut self, wanted: BTreeSet<u64>) {
        for pane in wanted.difference(&self.held_output) {
            self.table.hold_output(PaneId::new(*pane));
        }
        for pane in self.held_output.difference(&wanted) {
            self.table.release_output(PaneId::new(*pane));
        }
        self.held_output = wanted;
    }

    /// A reload's new limits and hold time: budgets already charged stay (SPEC §6.5).
    pub(super) fn set_rules(&mut self, limits: GuardLimits, hold_ttl: Duration) {
        self.guard.set_limits(limits);
        self.hold_ttl = hold_ttl;
    }

    /// Opens a pane; clients hear of it.
    pub(super) fn open(
        &mut self,
        title: Option<String>,
        command: Option<String>,
        startup: Option<StartupCommand>,
        size: PaneSize,
        outbox: &mut Outbox,
    ) -> Result<PaneId, HubError> {
        let pane = self.table.open(command, size).map_err(pane_error)?;
        let record = SlotRecord::new(title, startup, size, Clocks::now().unix_ms());
        outbox.show(record.created(pane, None));
        self.records.insert(self.token_of(pane), record);
        Ok(pane)
    }

    /// Opens a startup command's pane; `adopt`: the plugin it names runs, and owns the pane
    /// from now on.
    pub(super) fn open_startup(
        &mut self,
        startup: StartupCommand,
        size: PaneSize,
        adopt: bool,
        outbox: &mut Outbox,
    ) -> Result<PaneId, HubError> {
        let (title, command) = (startup.name.clone(), startup.command.clone());
        let intended = startup.plugin.clone();
        let pane = self.open(title, Some(command), Some(startup), size, outbox)?;
        let token = self.token_of(pane);
        if let Some(record) = self.records.get_mut(&token) {
            record.intended = intended;
        }
        if adopt && self.adopt_intended(&token) {
            self.hand_over(&token, outbox);
        }
        Ok(pane)
    }

    /// Whether a startup command already has a pane (restored, running or held).
    pub(super) fn has_pane_for(&self, startup: &StartupCommand) -> bool {
        self.records
            .values()
            .any(|record| record.startup.as_ref() == Some(startup))
    }

    /// Whether a startup command's pane is running or held: one that plainly exited may be
    /// started again.
    pub(super) fn has_live_pane_for(&self, startup: &StartupCommand) -> bool {
        self.records.values().any(|record| {
            record.startup.as_ref() == Some(startup)
                && (record.exit.is_none() || record.hold.is_some())
        })
    }

    fn token_of(&self, pane: PaneId) -> Token {
        self.table
            .slot(pane)
            .map(|slot| slot.token().clone())
            .expect("a pane just opened or relaunched has a slot")
    }

    /// A pane a client names that the hub knows, with its token.
    pub(super) fn known_pane(&self, pane: u64) -> Result<(PaneId, Token), HubError> {
        let id = PaneId::new(pane);
        let slot = self.table.slot(id).ok_or(HubError::UnknownPane(pane))?;
        Ok((id, slot.token().clone()))
    }

    /// Writes what a person typed into the pane (never the plugins' door): its owner hears
    /// of the person, with the output the pane printed before, and its budget is cleared,
    /// first (SPEC §6.4). The bytes go in only once the outbox is delivered.
    pub(super) fn user_typed(&mut self, pane: u64, outbox: &mut Outbox) -> Result<Typed, HubError> {
        let (id, token) = self.known_pane(pane)?;
        if !self.table.slot(id).is_some_and(Slot::is_alive) {
            return Err(HubError::Pane(format!("pane {pane} is not running")));
        }
        self.flush_output(&token, crate::clock::now(), outbox);
        self.tell_owner(
            &token,
            |token, generation| Event::UserInput { token, generation },
            outbox,
        );
        self.guard.cancel(&token);
        Ok(Typed(id))
    }

    /// The bytes [`user_typed`](Self::user_typed) announced.
    pub(super) fn write_typed(&self, typed: Typed, data: &[u8]) -> Result<(), HubError> {
        self.table.write_typed(typed.0, data).map_err(pane_error)
    }

    /// A client asks to end the pane's relaunch hold: the recovery ends. Without a hold,
    /// the answer says so and what happens instead, rather than pretend.
    pub(super) fn cancel_hold(&mut self, pane: u64, outbox: &mut Outbox) -> Result<(), HubError> {
        let (id, token) = self.known_pane(pane)?;
        let record = self.records.get(&token);
        if record.is_some_and(|r| r.hold.is_some()) {
            self.end(&token, End::Recovery, outbox);
            return Ok(());
        }
        let alive = self.table.slot(id).is_some_and(Slot::is_alive);
        let watcher = record.and_then(|r| r.owner.as_deref());
        Err(HubError::BadRequest(match (alive, watcher) {
            (true, Some(plugin)) => format!(
                "nothing to cancel: pane {pane} is running, not held; {plugin} goes on \
                 watching it (close the pane to end it)"
            ),
            (true, None) => {
                format!("nothing to cancel: pane {pane} is running and no plugin watches it")
            }
            (false, _) => {
                format!("nothing to cancel: pane {pane} has exited and nothing is held for it")
            }
        }))
    }

    /// A client closes the pane.
    pub(super) fn close(&mut self, pane: u64, outbox: &mut Outbox) -> Result<(), HubError> {
        let (_, token) = self.known_pane(pane)?;
        self.end(&token, End::Close, outbox);
        Ok(())
    }

    /// Ends the recovery of the slot (see [`End`]): every path that ends an owner's episode
    /// or hold comes here (a relaunch, which ends a hold by replacing the pane, excepted),
    /// and it is the only way a pane goes.
    pub(super) fn end(&mut self, token: &Token, how: End, outbox: &mut Outbox) {
        let pane = self.table.resolve(token);
        let owned = self.owner_of(token).is_some();
        if owned && how != End::Release {
            self.flush_output(token, crate::clock::now(), outbox);
            self.tell_owner(
                token,
                |token, generation| Event::PaneClosed { token, generation },
                outbox,
            );
        }
        self.guard.cancel(token);
        let mut had_report = false;
        if let Some(record) = self.records.get_mut(token) {
            had_report = record.report.take().is_some();
            record.owner = None;
            if how != End::Release {
                record.intended = None;
                record.hold = None;
            }
        }
        let Some(pane) = pane else {
            if how == End::Close {
                self.records.remove(token);
            }
            return;
        };
        let marker_goes = match how {
            End::Recovery => true,
            End::Release => had_report,
            End::Close => owned,
        };
        if marker_goes {
            outbox.show_cancelled(pane);
        }
        if how == End::Close {
            self.records.remove(token);
            self.sizes.forget_pane(pane);
            self.table.destroy(pane);
            outbox.show(HubMessage::Closed { pane: pane.get() });
        }
    }

    /// Ends every hold of `plugin` and clears what it reported about its live panes (SPEC
    /// §8: a marker lives exactly as long as its episode or hold): its instance is gone,
    /// and a successor starts afresh. Returns the held panes.
    pub(super) fn end_episodes_of(&mut self, plugin: &str, outbox: &mut Outbox) -> Vec<PaneId> {
        let held: Vec<(Token, PaneId)> = self
            .holds()
            .filter(|(token, _)| self.owner_of(token) == Some(plugin))
            .map(|(token, hold)| (token.clone(), hold.pane))
            .collect();
        for (token, _) in &held {
            self.end(token, End::Recovery, outbox);
        }
        for token in self.tokens_where(|r| r.owned_by(plugin) && r.report.is_some()) {
            if let Some(record) = self.records.get_mut(&token) {
                record.report = None;
            }
            if let Some(pane) = self.table.resolve(&token) {
                outbox.show_cancelled(pane);
            }
        }
        held.into_iter().map(|(_, pane)| pane).collect()
    }

    /// `plugin` no longer owns anything ([`End::Release`] for each of its panes).
    pub(super) fn release_all_of(&mut self, plugin: &str, outbox: &mut Outbox) {
        for token in self.tokens_where(|record| record.owned_by(plugin)) {
            self.end(&token, End::Release, outbox);
        }
    }

    /// Whether `plugin` owns any pane.
    pub(super) fn any_owned_by(&self, plugin: &str) -> bool {
        self.records.values().any(|record| record.owned_by(plugin))
    }

    /// A new instance of `plugin` started (SPEC §4.6, §6.5): it is given every live pane it
    /// owns, and the live, unowned panes whose startup command named it. Panes that exited
    /// while it was down are held for it: it hears of each as opened and then exited, so it
    /// can relaunch it (docs/hub.md).
    pub(super) fn plugin_started(&mut self, plugin: &str, outbox: &mut Outbox) {
        for token in
            self.tokens_where(|r| r.owner.is_none() && r.intended.as_deref() == Some(plugin))
        {
            self.adopt_intended(&token);
        }
        for token in self.tokens_where(|record| record.owned_by(plugin)) {
            let alive = self
                .table
                .resolve(&token)
                .and_then(|pane| self.table.slot(pane))
                .is_some_and(Slot::is_alive);
            if alive {
                self.hand_over(&token, outbox);
            }
        }
        for token in self.tokens_where(|r| r.hold.is_some() && r.owned_by(plugin)) {
            self.hand_over(&token, outbox);
            self.tell_owner(
                &token,
                |token, generation| Event::PaneExited { token, generation },
                outbox,
            );
        }
    }

    /// The plugin the pane's startup command named owns it from now on (SPEC §6.5); it is
    /// told by [`hand_over`](Self::hand_over). `false` when no plugin was named.
    fn adopt_intended(&mut self, token: &Token) -> bool {
        match self.records.get_mut(token) {
            Some(record) if record.intended.is_some() => {
                record.owner.clone_from(&record.intended);
                true
            }
            _ => false,
        }
    }

    /// Tells the pane's owner it has the pane, with fresh idleness.
    fn hand_over(&mut self, token: &Token, outbox: &mut Outbox) {
        if let Some(pane) = self.table.resolve(token) {
            self.table.clear_idle(pane);
        }
        self.tell_opened(token, outbox);
    }

    /// `pane_opened` for the slot's owner: after a hand-over, or a relaunch.
    fn tell_opened(&self, token: &Token, outbox: &mut Outbox) {
        let Some(record) = self.records.get(token) else {
            return;
        };
        let event = |token, generation| Event::PaneOpened {
            token,
            generation,
            title: record.title.clone(),
            command: record.launch_command().map(str::to_owned),
            cwd: self.table.repo_root().to_string_lossy().into_owned(),
            opened_ms: Some(record.opened_ms),
        };
        self.tell_owner(token, event, outbox);
    }

    /// Tells the slot's owner, if it has one, an event naming the slot's token and current
    /// generation.
    fn tell_owner(
        &self,
        token: &Token,
        make: impl FnOnce(Token, u32) -> Event,
        outbox: &mut Outbox,
    ) {
        let Some(owner) = self.owner_of(token) else {
            return;
        };
        let Some(slot) = self
            .table
            .resolve(token)
            .and_then(|pane| self.table.slot(pane))
        else {
            return;
        };
        outbox.tell(owner, make(token.clone(), slot.generation()));
    }

    fn owner_of(&self, token: &Token) -> Option<&str> {
        self.records.get(token)?.owner.as_deref()
    }

    /// Every pane in display order, with its slot and record.
    fn panes_in_order(&self) -> impl Iterator<Item = (PaneId, &Slot, &SlotRecord)> {
        self.table.panes().into_iter().filter_map(|pane| {
            let slot = self.table.slot(pane)?;
            let record = self.records.get(slot.token())?;
            Some((pane, slot, record))
        })
    }

    /// Every relaunch hold, with its token.
    fn holds(&self) -> impl Iterator<Item = (&Token, &Hold)> {
        self.records
            .iter()
            .filter_map(|(token, record)| Some((token, record.hold.as_ref()?)))
    }

    /// The tokens whose record satisfies `keep`.
    fn tokens_where(&self, keep: impl Fn(&SlotRecord) -> bool) -> Vec<Token> {
        self.records
            .iter()
            .filter(|(_, record)| keep(record))
            .map(|(token, _)| token.clone())
            .collect()
    }

    /// What a client that attaches now is shown of the panes, in display order: each
    /// pane's `created`, scrollback, program title, exit and latest report.
    pub(super) fn replay(&self) -> Vec<Frame> {
        let mut replay = Vec::new();
        for (pane, _, record) in self.panes_in_order() {
            replay.push(Frame::Message(record.created(pane, None)));
            let scrollback = self.table.scrollback(pane);
            if !scrollback.is_empty() {
                replay.push(Frame::Output {
                    pane: pane.get(),
                    bytes: scrollback.into(),
                });
            }
            replay.extend(record.program_title(pane).map(Frame::Message));
            if let Some(exit) = record.exit {
                replay.push(Frame::Message(HubMessage::Exited {
                    pane: pane.get(),
                    code: exit.code,
                    held: record.hold.is_some(),
                }));
            }
            if let Some(report) = &record.report {
                replay.push(Frame::Message(HubMessage::Recovery(report.clone())));
            }
        }
        replay
    }

    /// The reports the panes carry now.
    pub(super) fn reports(&self) -> impl Iterator<Item = &RecoveryReport> {
        self.records
            .values()
            .filter_map(|record| record.report.as_ref())
    }

    /// The panes and holds of `nightcrow status`.
    pub(super) fn status(&self, now: Instant) -> (Vec<PaneStatus>, Vec<HoldStatus>) {
        let panes = self
            .panes_in_order()
            .map(|(pane, slot, record)| PaneStatus {
                pane,
                title: record.title.clone(),
                program_title: record.program_title.clone(),
                generation: slot.generation(),
                alive: slot.is_alive(),
                owner: record.owner.clone(),
            })
            .collect();
        let holds = self
            .records
            .values()
            .filter_map(|record| {
                let hold = record.hold.as_ref()?;
                Some(HoldStatus {
                    pane: hold.pane,
                    expires_in: hold.deadline.saturating_duration_since(now),
                    report: record.report.clone(),
                })
            })
            .collect();
        (panes, holds)
    }

    /// Ends every pane's process and waits for it, so that a daemon exiting next does not
    /// end the escalation half-way.
    pub(super) async fn end_all(&mut self) {
        let endings = self.table.end_all();
        let _ = tokio::task::spawn_blocking(move || {
            endings.into_iter().for_each(nightcrow_pane::Ending::wait);
        })
        .await;
    }
}

/// A live pane a person typed into, whose owner has been told.
#[derive(Debug)]
pub(super) struct Typed(PaneId);

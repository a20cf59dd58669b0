//! Panes in the worker: opening them (startup and client panes), their events (output to
//! clients and owner, exits, idleness), relaunch holds and their expiry, the end of a
//! slot, and handing a pane to its plugin.
//!
//! A plugin comes to own a pane in two ways only: the config named it for the pane's
//! startup command ([`Worker::adopt_intended`]), or the guard approved its `watch_pane`
//! ([`Worker::adopt_watched`], which takes the approval).

use std::time::Instant;

use nightcrow_guard::{ApprovedWatchPane, PaneId};
use nightcrow_pane::{PaneEvent, PaneSize};
use nightcrow_protocol::{Event, Token};

use super::clients::created;
use super::{Exit, Hold, SlotRecord, Worker, pane_error};
use crate::config::StartupCommand;
use crate::handle::HubError;
use crate::snapshot::Clocks;
use nightcrow_client_protocol::{Frame, HubMessage};

/// Plainly exited panes a hub keeps for late clients (each keeps its scrollback).
const MAX_KEPT_EXITS: usize = 8;

impl Worker {
    /// Opens the startup commands that have no pane yet (a restored one counts).
    pub(super) fn open_startup_panes(&mut self) {
        let missing: Vec<StartupCommand> = self
            .config
            .startup_commands
            .iter()
            .filter(|startup| !self.has_pane_for(startup))
            .cloned()
            .collect();
        for startup in missing {
            if let Err(error) = self.open_startup_pane(startup.clone()) {
                tracing::warn!(command = %startup.command, %error, "startup pane not opened");
            }
        }
    }

    pub(super) fn open_startup_pane(
        &mut self,
        startup: StartupCommand,
    ) -> Result<PaneId, HubError> {
        let size = self.config.default_size;
        let (title, command) = (startup.name.clone(), startup.command.clone());
        let intended = startup.plugin.clone();
        let pane = self.open_pane(title, Some(command), Some(startup), size)?;
        if let Some(plugin) = intended {
            let token = self.token_of(pane);
            if let Some(record) = self.slots.get_mut(&token) {
                record.intended = Some(plugin.clone());
            }
            if self.running(&plugin).is_some() && self.adopt_intended(&token) {
                self.hand_over(&token);
            }
        }
        Ok(pane)
    }

    pub(super) fn open_pane(
        &mut self,
        title: Option<String>,
        command: Option<String>,
        startup: Option<StartupCommand>,
        size: PaneSize,
    ) -> Result<PaneId, HubError> {
        let pane = self.table.open(command, size).map_err(pane_error)?;
        let record = SlotRecord {
            title,
            program_title: None,
            startup,
            size,
            owner: None,
            intended: None,
            exit: None,
            hold: None,
            report: None,
            opened_ms: Clocks::now().unix_ms(),
            output: Default::default(),
        };
        self.broadcast(Frame::Message(created(pane, &record, None)));
        self.slots.insert(self.token_of(pane), record);
        Ok(pane)
    }

    pub(super) fn token_of(&self, pane: PaneId) -> Token {
        self.table
            .slot(pane)
            .map(|slot| slot.token().clone())
            .expect("a pane just opened or relaunched has a slot")
    }

    pub(super) fn on_pane_event(&mut self, event: PaneEvent) {
        match event {
            PaneEvent::Output { pane, bytes } => {
                self.journal.output_arrived();
                let recorded = self.table.record_output(pane, &bytes);
                self.broadcast(Frame::Output {
                    pane: pane.get(),
                    bytes,
                });
                let Some(token) = self.table.slot(pane).map(|slot| slot.token().clone()) else {
                    return;
                };
                if let Some(title) = recorded.title {
                    self.retitle(pane, &token, title);
                }
                let Some(text) = recorded.text else {
                    return;
                };
                let Some(record) = self.slots.get_mut(&token).filter(|r| r.owner.is_some()) else {
                    return;
                };
                if let Some(text) = record.output.push(&text, Instant::now()) {
                    self.send_output(&token, text);
                }
            }
            PaneEvent::Exited { pane, code } => self.on_exit(pane, code),
        }
    }

    /// The pane's program set its title (empty: it cleared it); clients hear of a change.
    fn retitle(&mut self, pane: PaneId, token: &Token, title: String) {
        let title = (!title.is_empty()).then_some(title);
        let Some(record) = self.slots.get_mut(token) else {
            return;
        };
        if record.program_title == title {
            return;
        }
        record.program_title = title;
        let message = HubMessage::Title {
            pane: pane.get(),
            title: record.program_title.clone(),
        };
        self.broadcast(Frame::Message(message));
    }

    /// SPEC §6.2. Whatever happens to the slot, the pane stays with its scrollback, exited,
    /// for any client that attaches later, until a client closes it (docs/hub.md).
    fn on_exit(&mut self, pane: PaneId, code: Option<u32>) {
        let Some(slot) = self.table.slot(pane) else {
            // Closed or relaunched already: the event is late.
            return;
        };
        let token = slot.token().clone();
        let generation = slot.generation();
        // The last words before the exit reach the owner before the exit does.
        self.flush_output(&token);
        self.table.release_process(pane);
        let Some(record) = self.slots.get_mut(&token) else {
            return;
        };
        record.exit = Some(Exit { code });
        let held = record.owner.is_some() && record.launch_command().is_some();
        if held {
            let deadline = Instant::now() + self.config.pending_relaunch_ttl;
            record.hold = Some(Hold { pane, deadline });
            self.send_to_owner(
                &token,
                Event::PaneExited {
                    token: token.clone(),
                    generation,
                },
            );
        } else if record.owner.is_some() {
            // A bare shell cannot be relaunched: its recovery is over.
            self.end_recovery(&token);
        }
        self.broadcast(Frame::Message(HubMessage::Exited {
            pane: pane.get(),
            code,
            held,
        }));
        self.let_go_of_old_exits();
    }

    /// Keeps at most [`MAX_KEPT_EXITS`] plainly exited panes (held ones do not count): the
    /// oldest beyond that is closed, so panes that come and go cannot grow the hub.
    fn let_go_of_old_exits(&mut self) {
        let plain: Vec<(PaneId, Token)> = self
            .table
            .panes()
            .into_iter()
            .filter_map(|pane| {
                let token = self.table.slot(pane)?.token().clone();
                let record = self.slots.get(&token)?;
                (record.exit.is_some() && record.hold.is_none()).then_some((pane, token))
            })
            .collect();
        let excess = plain.len().saturating_sub(MAX_KEPT_EXITS);
        for (pane, token) in plain.into_iter().take(excess) {
            self.remove_pane(pane, &token);
        }
    }

    /// The pane goes for good: its record, its budget, its table entry; clients are told.
    pub(super) fn remove_pane(&mut self, pane: PaneId, token: &Token) {
        if self.owner_of(token).is_some() {
            self.end_recovery(token);
        }
        self.slots.remove(token);
        self.guard.cancel(token);
        self.sizes.forget_pane(pane);
        self.table.destroy(pane);
        self.broadcast(Frame::Message(HubMessage::Closed { pane: pane.get() }));
    }

    pub(super) fn on_idle(&mut self) {
        for idle in self.table.take_idle(Instant::now()) {
            if self.owner_of(&idle.token).is_none() {
                continue;
            }
            self.flush_output(&idle.token);
            let event = Event::PaneIdle {
                token: idle.token.clone(),
                generation: idle.generation,
                idle_ms: u64::try_from(idle.idle.as_millis()).unwrap_or(u64::MAX),
                screen: self.table.screen(idle.pane),
            };
            self.send_to_owner(&idle.token, event);
        }
    }

    pub(super) fn expire_holds(&mut self) {
        let now = Instant::now();
        let expired: Vec<(Token, PaneId)> = self
            .holds()
            .filter(|(_, hold)| hold.deadline <= now)
            .map(|(token, hold)| (token.clone(), hold.pane))
            .collect();
        for (token, pane) in expired {
            tracing::info!(%pane, "relaunch hold expired");
            self.end_recovery(&token);
        }
    }

    /// The slot's recovery is over (SPEC §6.4): `pane_closed` to its owner, which lets go
    /// of it (ownership, budget, hold and report), and clients are told — in that order.
    /// The pane itself stays; an exited one is from now on plainly exited.
    pub(super) fn end_recovery(&mut self, token: &Token) {
        self.flush_output(token);
        if let Some(event) = self.slot_event(token, |token, generation| Event::PaneClosed {
            token,
            generation,
        }) {
            self.send_to_owner(token, event);
        }
        self.guard.cancel(token);
        if let Some(record) = self.slots.get_mut(token) {
            record.owner = None;
            record.intended = None;
            record.hold = None;
            record.report = None;
        }
        if let Some(pane) = self.table.resolve(token) {
            self.broadcast_cancelled(pane);
        }
    }

    /// Sends the owner the text that waited for its turn, for every pane whose turn it is.
    pub(super) fn flush_due_output(&mut self) {
        let now = Instant::now();
        for token in self.tokens_where(|record| record.output.due().is_some_and(|due| due <= now)) {
            self.flush_output(&token);
        }
    }

    /// Sends the owner whatever text of the pane is still pending.
    pub(super) fn flush_output(&mut self, token: &Token) {
        let text = self
            .slots
            .get_mut(token)
            .and_then(|record| record.output.take(Instant::now()));
        if let Some(text) = text {
            self.send_output(token, text);
        }
    }

    fn send_output(&mut self, token: &Token, text: String) {
        if let Some(event) = self.slot_event(token, |token, generation| Event::PaneOutput {
            token,
            generation,
            text,
        }) {
            self.send_to_owner(token, event);
        }
    }

    /// An event naming the slot's token and current generation.
    pub(super) fn slot_event(
        &self,
        token: &Token,
        make: impl FnOnce(Token, u32) -> Event,
    ) -> Option<Event> {
        let pane = self.table.resolve(token)?;
        let slot = self.table.slot(pane)?;
        Some(make(token.clone(), slot.generation()))
    }

    pub(super) fn opened_event(&self, token: &Token) -> Option<Event> {
        let record = self.slots.get(token)?;
        self.slot_event(token, |token, generation| Event::PaneOpened {
            token,
            generation,
            title: record.title.clone(),
            command: record.launch_command().map(str::to_owned),
            cwd: self.table.repo_root().to_string_lossy().into_owned(),
            opened_ms: Some(record.opened_ms),
        })
    }

    /// The plugin the pane's startup command named owns it from now on (SPEC §6.5); it is
    /// told by [`hand_over`](Self::hand_over). `false` when no plugin was named.
    pub(super) fn adopt_intended(&mut self, token: &Token) -> bool {
        match self.slots.get_mut(token) {
            Some(record) if record.intended.is_some() => {
                record.owner.clone_from(&record.intended);
                true
            }
            _ => false,
        }
    }

    /// The plugin whose `watch_pane` the guard approved takes the pane.
    pub(super) fn adopt_watched(&mut self, watch: &ApprovedWatchPane) {
        let token = watch.target().token();
        if let Some(record) = self.slots.get_mut(token) {
            record.owner = Some(watch.plugin().to_owned());
            self.hand_over(token);
        }
    }

    /// Tells the pane's owner it has the pane (`pane_opened`), with fresh idleness.
    pub(super) fn hand_over(&mut self, token: &Token) {
        if let Some(pane) = self.table.resolve(token) {
            self.table.clear_idle(pane);
        }
        if let Some(event) = self.opened_event(token) {
            self.send_to_owner(token, event);
        }
    }
}

/// Joins consecutive `Output` events of the same pane, keeping the order of everything.
/// Each run is copied once, into a buffer of its exact size (joining pairwise would copy a
/// run of n chunks n times over); a lone chunk is not copied at all.
pub(super) fn coalesce(round: Vec<PaneEvent>) -> Vec<PaneEvent> {
    let mut joined = Vec::with_capacity(round.len());
    let mut events = round.into_iter().peekable();
    while let Some(event) = events.next() {
        let PaneEvent::Output { pane, bytes } = event else {
            joined.push(event);
            continue;
        };
        let mut run = vec![bytes];
        while let Some(PaneEvent::Output { bytes, .. }) = events
            .next_if(|next| matches!(next, PaneEvent::Output { pane: same, .. } if *same == pane))
        {
            run.push(bytes);
        }
        joined.push(PaneEvent::Output {
            pane,
            bytes: concatenate(run),
        });
    }
    joined
}

fn concatenate(mut run: Vec<bytes::Bytes>) -> bytes::Bytes {
    if run.len() == 1 {
        return run.pop().unwrap_or_default();
    }
    let mut all = bytes::BytesMut::with_capacity(run.iter().map(bytes::Bytes::len).sum());
    for chunk in &run {
        all.extend_from_slice(chunk);
    }
    all.freeze()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn consecutive_output_of_one_pane_is_joined_in_order() {
        let output = |pane: u64, text: &'static str| PaneEvent::Output {
            pane: PaneId::new(pane),
            bytes: bytes::Bytes::from_static(text.as_bytes()),
        };
        let exited = PaneEvent::Exited {
            pane: PaneId::new(1),
            code: Some(0),
        };
        let round = vec![
            output(1, "a"),
            output(1, "b"),
            output(2, "c"),
            output(1, "d"),
            output(1, "e"),
            exited.clone(),
            output(2, "f"),
        ];
        assert_eq!(
            coalesce(round),
            [
                output(1, "ab"),
                output(2, "c"),
                output(1, "de"),
                exited,
                output(2, "f")
            ]
        );
    }
}

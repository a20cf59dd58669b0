//! Plugin commands in the worker: the only path from a plugin's request to a pane —
//! facts resolved from the token, `Guard::judge`, and an exhaustive match on the
//! `Approved` value that carries the approval into the pane table, which takes nothing
//! else for a plugin.

use std::collections::HashMap;
use std::time::Instant;

use nightcrow_guard::{
    Approved, ApprovedRelaunch, PaneFacts, PaneOwner, PaneState, Refused, Severity,
};
use nightcrow_pane::PaneTable;
use nightcrow_plugin_host::{RateLimit, Supervised};
use nightcrow_protocol::{Command, LogLevel, Token};

use super::clients::{created, program_title};
use super::{SlotRecord, Worker};
use nightcrow_client_protocol::{Frame, HubMessage, RecoveryReport};

/// Commands taken from one plugin before other sources are served (SPEC §4.4).
const COMMANDS_PER_ROUND: usize = 8;

impl Worker {
    pub(super) async fn on_supervised(&mut self, index: usize, item: Supervised) {
        match item {
            Supervised::Command(command) => {
                self.on_command(index, command);
                for _ in 1..COMMANDS_PER_ROUND {
                    match self.plugins[index].supervisor.try_recv() {
                        Some(command) => self.on_command(index, command),
                        None => break,
                    }
                }
            }
            Supervised::Lifecycle(step) => self.on_lifecycle(index, step),
        }
    }

    /// The only path from a plugin's request to a pane: facts, judgement, approval.
    fn on_command(&mut self, index: usize, command: Command) {
        let now = Instant::now();
        let plugin = &self.plugins[index].config;
        let facts = command
            .token()
            .and_then(|token| pane_facts(&self.table, &self.slots, plugin.name(), token, now));
        match self.guard.judge(&plugin.policy(), &command, facts, now) {
            Ok(approved) => self.carry_out(index, approved),
            Err(refused) => {
                let slot = &mut self.plugins[index];
                log_refusal(slot.config.name(), &mut slot.log_lines, &command, &refused);
            }
        }
    }

    fn carry_out(&mut self, index: usize, approved: Approved) {
        match approved {
            Approved::SendInput(send) => {
                if let Err(error) = self.table.send_approved(&send) {
                    let pane = send.target().pane();
                    tracing::warn!(%pane, %error, "approved send_input not written");
                }
            }
            Approved::Relaunch(relaunch) => self.relaunch(&relaunch),
            Approved::Status(status) => {
                let report = RecoveryReport {
                    pane: status.target().pane().get(),
                    state: status.state().into(),
                    detail: status.detail().map(str::to_owned),
                    deadline_epoch: status.deadline_epoch(),
                    attempt: status.attempt(),
                };
                if let Some(record) = self.slots.get_mut(status.target().token()) {
                    record.report = Some(report.clone());
                }
                self.broadcast(Frame::Message(HubMessage::Recovery(report)));
            }
            Approved::Attention(attention) => {
                let pane = attention.target().pane().get();
                self.broadcast(Frame::Message(HubMessage::Attention { pane }));
            }
            Approved::WatchPane(watch) => self.adopt_watched(&watch),
            Approved::Log(log) => {
                let admitted = self.plugins[index]
                    .log_lines
                    .admit(tokio::time::Instant::now());
                let Some(suppressed) = admitted else {
                    return;
                };
                let (plugin, text) = (log.plugin(), log.message());
                match log.level() {
                    LogLevel::Error => tracing::error!(plugin, text, suppressed, "plugin log"),
                    LogLevel::Warn => tracing::warn!(plugin, text, suppressed, "plugin log"),
                    LogLevel::Info => tracing::info!(plugin, text, suppressed, "plugin log"),
                    LogLevel::Debug => tracing::debug!(plugin, text, suppressed, "plugin log"),
                }
            }
        }
    }

    /// SPEC §6.3.
    fn relaunch(&mut self, relaunch: &ApprovedRelaunch) {
        let token = relaunch.target().token();
        let Some(hold) = self
            .slots
            .get_mut(token)
            .and_then(|record| record.hold.take())
        else {
            tracing::debug!(pane = %relaunch.target().pane(), "relaunch without a hold; ignored");
            return;
        };
        let old = hold.pane;
        match self.table.relaunch(relaunch) {
            Ok(pane) => {
                let Some(record) = self.slots.get_mut(token) else {
                    return;
                };
                // The new pane starts with no report; the `cancelled` below ends the old one's.
                record.report = None;
                record.exit = None;
                let message = created(pane, record, Some(old));
                let title = program_title(pane, record);
                self.broadcast(Frame::Message(message));
                if let Some(title) = title {
                    self.broadcast(Frame::Message(title));
                }
                if let Some(event) = self.opened_event(token) {
                    self.send_to_owner(token, event);
                }
                self.broadcast_cancelled(old);
            }
            Err(error) => {
                let plugin = self.owner_of(token).unwrap_or_default();
                tracing::warn!(plugin, pane = %old, %error, "relaunch failed; the pane stays held");
                if let Some(record) = self.slots.get_mut(token) {
                    record.hold = Some(hold);
                }
            }
        }
    }
}

/// What the guard needs about `token`, relative to `plugin` (SPEC §3).
fn pane_facts<'a>(
    table: &PaneTable,
    slots: &'a HashMap<Token, SlotRecord>,
    plugin: &str,
    token: &Token,
    now: Instant,
) -> Option<PaneFacts<'a>> {
    let pane = table.resolve(token)?;
    let slot = table.slot(pane)?;
    let record = slots.get(token);
    let owner = match record.and_then(|record| record.owner.as_deref()) {
        Some(owner) if owner == plugin => PaneOwner::ThisPlugin,
        Some(_) => PaneOwner::AnotherPlugin,
        None => PaneOwner::Nobody,
    };
    let state = match table.idle_for(pane, now) {
        Some(idle) => PaneState::Running { idle },
        None => PaneState::Exited,
    };
    Some(PaneFacts {
        pane,
        generation: slot.generation(),
        owner,
        state,
        launch_command: record.and_then(SlotRecord::launch_command),
    })
}

/// WARN refusals share the plugin's log-line limit; DEBUG ones are not written by default.
fn log_refusal(plugin: &str, log_lines: &mut RateLimit, command: &Command, refused: &Refused) {
    let cmd = command.tag();
    match refused.severity() {
        Severity::Debug => tracing::debug!(plugin, cmd, %refused, "refused"),
        Severity::Warn => {
            if let Some(suppressed) = log_lines.admit(tokio::time::Instant::now()) {
                tracing::warn!(plugin, cmd, %refused, suppressed, "refused");
            }
        }
    }
}

//! Plugin commands at the panes: the facts the guard needs, resolved from the token,
//! `Guard::judge`, and what each kind of `Approved` value does to a pane. The pane table
//! takes nothing else for a plugin.

use std::collections::HashMap;
use std::time::Instant;

use nightcrow_client_protocol::{HubMessage, RecoveryReport};
use nightcrow_guard::{
    Approved, ApprovedRelaunch, ApprovedSendInput, ApprovedStatus, ApprovedWatchPane, PaneFacts,
    PaneOwner, PaneState, PluginPolicy, Refused,
};
use nightcrow_pane::PaneTable;
use nightcrow_protocol::{Command, Token};

use super::{SlotRecord, Slots};
use crate::worker::outbox::Outbox;

impl Slots {
    /// The guard's judgement of `command` from the plugin of `policy`, on the facts of the
    /// pane it names (SPEC §3).
    pub(in crate::worker) fn judge(
        &mut self,
        policy: &PluginPolicy,
        command: &Command,
        now: Instant,
    ) -> Result<Approved, Refused> {
        let facts = command
            .token()
            .and_then(|token| facts(&self.table, &self.records, &policy.name, token, now));
        self.guard.judge(policy, command, facts, now)
    }

    pub(in crate::worker) fn send_input(&self, send: &ApprovedSendInput) {
        if let Err(error) = self.table.send_approved(send) {
            let pane = send.target().pane();
            tracing::warn!(%pane, %error, "approved send_input not written");
        }
    }

    /// The owner's status for its pane: kept for clients that attach later, shown now.
    pub(in crate::worker) fn report(&mut self, status: &ApprovedStatus, outbox: &mut Outbox) {
        let report = RecoveryReport {
            pane: status.target().pane().get(),
            state: status.state().into(),
            detail: status.detail().map(str::to_owned),
            deadline_epoch: status.deadline_epoch(),
            attempt: status.attempt(),
        };
        if let Some(record) = self.records.get_mut(status.target().token()) {
            record.report = Some(report.clone());
        }
        outbox.show(HubMessage::Recovery(report));
    }

    /// The plugin whose `watch_pane` the guard approved takes the pane.
    pub(in crate::worker) fn adopt_watched(
        &mut self,
        watch: &ApprovedWatchPane,
        outbox: &mut Outbox,
    ) {
        let token = watch.target().token();
        if let Some(record) = self.records.get_mut(token) {
            record.owner = Some(watch.plugin().to_owned());
            self.hand_over(token, outbox);
        }
    }

    /// SPEC §6.3.
    pub(in crate::worker) fn relaunch(&mut self, relaunch: &ApprovedRelaunch, outbox: &mut Outbox) {
        let token = relaunch.target().token();
        let Some(hold) = self
            .records
            .get_mut(token)
            .and_then(|record| record.hold.take())
        else {
            tracing::debug!(pane = %relaunch.target().pane(), "relaunch without a hold; ignored");
            return;
        };
        let old = hold.pane;
        match self.table.relaunch(relaunch) {
            Ok(pane) => {
                let Some(record) = self.records.get_mut(token) else {
                    return;
                };
                // The new pane starts with no report; the `cancelled` below ends the old one's.
                record.report = None;
                record.exit = None;
                outbox.show(record.created(pane, Some(old)));
                if let Some(title) = record.program_title(pane) {
                    outbox.show(title);
                }
                self.tell_opened(token, outbox);
                outbox.show_cancelled(old);
            }
            Err(error) => {
                let plugin = self.owner_of(token).unwrap_or_default();
                tracing::warn!(plugin, pane = %old, %error, "relaunch failed; the pane stays held");
                if let Some(record) = self.records.get_mut(token) {
                    record.hold = Some(hold);
                }
            }
        }
    }
}

/// What the guard needs about `token`, relative to `plugin`.
fn facts<'a>(
    table: &PaneTable,
    records: &'a HashMap<Token, SlotRecord>,
    plugin: &str,
    token: &Token,
    now: Instant,
) -> Option<PaneFacts<'a>> {
    let pane = table.resolve(token)?;
    let slot = table.slot(pane)?;
    let record = records.get(token);
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

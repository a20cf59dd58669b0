//! The panes as the daemon's journal keeps them: snapshots, and taking back one pane of a
//! previous daemon.
//!
//! Nothing here runs a command: a restored pane has no process until its plugin asks for a
//! relaunch and the guard approves one, composed from the config's startup command as any
//! relaunch is.

use nightcrow_client_protocol::RecoveryReport;

use super::{Exit, Hold, SlotRecord, Slots};
use crate::config::StartupCommand;
use crate::snapshot::{Clocks, HubSnapshot, PaneExit, PaneSnapshot};

impl Slots {
    /// Every pane as the journal keeps it; `screens` adds each pane's scrollback.
    pub(in crate::worker) fn snapshot(&self, clocks: Clocks, screens: bool) -> HubSnapshot {
        let panes = self
            .panes_in_order()
            .map(|(pane, slot, record)| {
                let token = slot.token();
                PaneSnapshot {
                    token: token.clone(),
                    generation: slot.generation(),
                    title: record.title.clone(),
                    program_title: record.program_title.clone(),
                    startup: record.startup.clone(),
                    owner: record.owner.clone(),
                    opened_ms: record.opened_ms,
                    size: record.size,
                    exit: record.exit.map(|exit| PaneExit { code: exit.code }),
                    hold_until_ms: record
                        .hold
                        .as_ref()
                        .map(|hold| clocks.to_unix_ms(hold.deadline)),
                    report: record.report.clone(),
                    charged: clocks.charged(&self.guard.charges(token, clocks.instant())),
                    screen: if screens {
                        self.table.scrollback(pane)
                    } else {
                        Vec::new()
                    },
                }
            })
            .collect();
        HubSnapshot { panes }
    }

    /// Takes back one pane of a previous daemon, shown exited with its last screen.
    /// `startup`: its command as the config has it now (the config decides what a pane may
    /// run, never the journal); `plugin`: the plugin that would hold it. It is held for that
    /// plugin if its process was running when that daemon went away (the restart is its
    /// exit, and its hold starts now), or if it was held with something pending and the
    /// hold has time left. An exit that was over (the person quit after the episode) is
    /// plain: no plugin may mistake it for an exit the restart caused.
    pub(in crate::worker) fn restore(
        &mut self,
        pane: PaneSnapshot,
        startup: Option<StartupCommand>,
        plugin: Option<String>,
        clocks: Clocks,
    ) {
        let shown = pane.title.clone().unwrap_or_else(|| "shell".to_owned());
        let id =
            match self
                .table
                .restore(pane.token.clone(), pane.generation, pane.size, &pane.screen)
            {
                Ok(id) => id,
                Err(error) => {
                    tracing::warn!(pane = %shown, %error, "journaled pane dropped");
                    return;
                }
            };
        let pending = pane.report.as_ref().is_some_and(RecoveryReport::is_active);
        let hold_until = match (pane.exit, pane.hold_until_ms) {
            (None, _) => Some(clocks.instant() + self.hold_ttl),
            (Some(_), Some(until)) if pending => clocks
                .to_instant(until)
                .filter(|until| *until > clocks.instant()),
            (Some(_), Some(_)) => {
                tracing::info!(pane = %id, "restored pane had exited with nothing pending; plainly exited");
                None
            }
            (Some(_), None) => None,
        };
        if pending && pane.hold_until_ms.is_some() && hold_until.is_none() {
            tracing::info!(pane = %id, "restored pane's relaunch hold had lapsed; dropped");
        }
        let hold = hold_until
            .zip(plugin.clone())
            .map(|(deadline, _)| Hold { pane: id, deadline });
        let owner = plugin.filter(|_| hold.is_some());
        tracing::info!(
            pane = %id,
            title = %shown,
            was = if pane.exit.is_some() { "exited" } else { "running" },
            held_for = owner.as_deref().unwrap_or("nobody"),
            last_report = pane.report.as_ref().map_or("none", |report| report.state.as_str()),
            "pane restored from the journal"
        );
        if owner.is_some() {
            let charges = clocks.charges(&pane.charged);
            self.guard
                .restore_charges(&pane.token, &charges, clocks.instant());
        }
        let record = SlotRecord {
            intended: owner.clone(),
            owner,
            exit: Some(Exit {
                code: pane.exit.and_then(|exit| exit.code),
            }),
            hold,
            program_title: pane.program_title,
            // What the previous daemon's plugin said is not this one's word: it reports
            // afresh once it has the pane.
            ..SlotRecord::new(pane.title, startup, pane.size, pane.opened_ms)
        };
        self.records.insert(pane.token, record);
    }
}

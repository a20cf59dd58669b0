//! The worker's side of the daemon's state journal: publishing a [`HubSnapshot`] when what
//! it would journal changed, and taking back a previous daemon's panes at start.
//!
//! Nothing here runs a command: a restored pane has no process until its plugin asks for a
//! relaunch and the guard approves one, composed from the config's startup command as any
//! relaunch is. A journaled command the config no longer has leaves the pane shown but not
//! relaunchable.

use std::sync::Arc;
use std::time::Instant;

use tokio::sync::watch;

use super::{Exit, Hold, SlotRecord, Worker};
use crate::config::StartupCommand;
use crate::snapshot::{Clocks, HubSnapshot, PaneExit, PaneSnapshot, SCREEN_EVERY};
use nightcrow_client_protocol::RecoveryReport;

/// What was last published, to know when to publish again.
pub(super) struct Journal {
    snapshots: watch::Sender<Arc<HubSnapshot>>,
    /// A fixed pair of clock readings: snapshots compared for changes convert instants with
    /// it, so that the same state always converts to the same numbers.
    epoch: Clocks,
    /// The last published snapshot, without screens, as converted with `epoch`.
    shape: HubSnapshot,
    published_at: Instant,
    /// Output arrived since the last publication.
    screens_stale: bool,
}

impl Journal {
    pub(super) fn new() -> Journal {
        Journal {
            snapshots: watch::Sender::new(Arc::default()),
            epoch: Clocks::now(),
            shape: HubSnapshot::default(),
            published_at: Instant::now(),
            screens_stale: false,
        }
    }

    pub(super) fn subscribe(&self) -> watch::Receiver<Arc<HubSnapshot>> {
        self.snapshots.subscribe()
    }

    pub(super) fn output_arrived(&mut self) {
        self.screens_stale = true;
    }

    /// When screens alone are due to be published.
    pub(super) fn screens_due(&self) -> Option<Instant> {
        self.screens_stale
            .then_some(self.published_at + SCREEN_EVERY)
    }
}

impl Worker {
    /// Publishes a snapshot if a pane, owner, hold, report or budget changed since the last
    /// one, or if only output did and [`SCREEN_EVERY`] has passed.
    pub(super) fn publish_snapshot(&mut self) {
        let shape = self.snapshot(self.journal.epoch, false);
        let now = Instant::now();
        let screens_due = self.journal.screens_due().is_some_and(|due| due <= now);
        if shape == self.journal.shape && !screens_due {
            return;
        }
        let snapshot = self.snapshot(Clocks::now(), true);
        self.journal.snapshots.send_replace(Arc::new(snapshot));
        self.journal.shape = shape;
        self.journal.published_at = now;
        self.journal.screens_stale = false;
    }

    /// Every pane as the journal keeps it; `screens` adds each pane's scrollback.
    pub(super) fn snapshot(&self, clocks: Clocks, screens: bool) -> HubSnapshot {
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

    /// Takes back a previous daemon's panes ("restart = exit", docs/hub.md "After a
    /// restart"): each is shown exited with its last screen. One whose process was running
    /// when that daemon went away, or that was held with something pending, is held again for
    /// the plugin its startup command names, if the config still has both; the plugin then hears of it as opened and exited when it
    /// starts, and decides. A hold past its time is dropped. A startup pane that was running
    /// and that no plugin would take up is not restored: its command runs again.
    pub(super) fn restore(&mut self, panes: Vec<PaneSnapshot>) {
        let clocks = Clocks::now();
        for pane in panes {
            let startup = pane.startup.as_ref().and_then(|journaled| {
                // The config decides what a pane may run, never the journal.
                self.config
                    .startup_commands
                    .iter()
                    .find(|startup| startup.command == journaled.command)
                    .cloned()
            });
            let shown = pane.title.clone().unwrap_or_else(|| "shell".to_owned());
            if pane.startup.is_some() && startup.is_none() {
                tracing::warn!(
                    pane = %shown,
                    "restored pane's command is no longer a startup command in the config; \
                     shown exited, never relaunched"
                );
            }
            let plugin = self.holding_plugin(startup.as_ref());
            if let Some(startup) = startup
                .clone()
                .filter(|_| pane.exit.is_none() && plugin.is_none())
            {
                // Nobody would take it up: its startup command runs again, as at any start,
                // in its place among the tabs.
                tracing::info!(pane = %shown, "restored startup pane runs its command again");
                if let Err(error) = self.open_startup_pane(startup) {
                    tracing::warn!(pane = %shown, %error, "startup pane not opened");
                }
                continue;
            }
            let id = match self.table.restore(
                pane.token.clone(),
                pane.generation,
                pane.size,
                &pane.screen,
            ) {
                Ok(id) => id,
                Err(error) => {
                    tracing::warn!(pane = %shown, %error, "journaled pane dropped");
                    continue;
                }
            };
            // An exit before the restart stays held only while its plugin had something
            // pending: one that was over (the person quit after the episode) is plain, and no
            // plugin may mistake it for an exit the restart caused.
            let pending = pane.report.as_ref().is_some_and(RecoveryReport::is_active);
            let hold_until = match (pane.exit, pane.hold_until_ms) {
                // It was running: the restart is its exit, and its hold starts now.
                (None, _) => Some(clocks.instant() + self.config.pending_relaunch_ttl),
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
                title: pane.title,
                program_title: pane.program_title,
                startup,
                size: pane.size,
                intended: owner.clone(),
                owner,
                exit: Some(Exit {
                    code: pane.exit.and_then(|exit| exit.code),
                }),
                hold,
                // What the previous daemon's plugin said is not this one's word: it reports
                // afresh once it has the pane.
                report: None,
                opened_ms: pane.opened_ms,
                output: Default::default(),
            };
            self.slots.insert(pane.token, record);
        }
    }

    /// The plugin a restored pane is held for: the one its startup command names, if that
    /// plugin is configured and would run here.
    fn holding_plugin(&self, startup: Option<&StartupCommand>) -> Option<String> {
        let name = startup?.plugin.as_deref()?;
        let plugin = self.config.plugins.iter().find(|p| p.name() == name)?;
        self.config
            .should_run(plugin, true)
            .then(|| name.to_owned())
    }

    /// Whether a startup command already has a pane (restored, running or held).
    pub(super) fn has_pane_for(&self, startup: &StartupCommand) -> bool {
        self.slots
            .values()
            .any(|record| record.startup.as_ref() == Some(startup))
    }
}

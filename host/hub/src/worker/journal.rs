//! The worker's side of the daemon's state journal: publishing a [`HubSnapshot`] when what
//! it would journal changed, and taking back a previous daemon's panes at start.

use std::sync::Arc;
use std::time::Instant;

use tokio::sync::watch;

use super::Worker;
use crate::config::StartupCommand;
use crate::snapshot::{Clocks, HubSnapshot, PaneSnapshot, SCREEN_EVERY};

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
            published_at: crate::clock::now(),
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
        let shape = self.slots.snapshot(self.journal.epoch, false);
        let now = crate::clock::now();
        let screens_due = self.journal.screens_due().is_some_and(|due| due <= now);
        if shape == self.journal.shape && !screens_due {
            return;
        }
        let snapshot = self.slots.snapshot(Clocks::now(), true);
        self.journal.snapshots.send_replace(Arc::new(snapshot));
        self.journal.shape = shape;
        self.journal.published_at = now;
        self.journal.screens_stale = false;
    }

    /// Takes back a previous daemon's panes ("restart = exit", docs/hub.md "After a
    /// restart"): each is shown exited with its last screen, held for the plugin its startup
    /// command names if the config still has both ([`Slots::restore`](super::slots::Slots::restore)).
    /// A startup pane that was running and that no plugin would take up is not restored:
    /// its command runs again, in its place among the tabs. A journaled command the config
    /// no longer has leaves the pane shown but not relaunchable.
    pub(super) fn restore(&mut self, panes: Vec<PaneSnapshot>) {
        let clocks = Clocks::now();
        for pane in panes {
            let startup = pane.startup.as_ref().and_then(|journaled| {
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
            match startup {
                Some(startup) if pane.exit.is_none() && plugin.is_none() => {
                    tracing::info!(pane = %shown, "restored startup pane runs its command again");
                    if let Err(error) = self.open_startup_pane(startup) {
                        tracing::warn!(pane = %shown, %error, "startup pane not opened");
                    }
                }
                startup => self.slots.restore(pane, startup, plugin, clocks),
            }
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
}

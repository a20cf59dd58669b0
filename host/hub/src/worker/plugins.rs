//! Plugins in the worker: starting supervised instances, their life cycle (adoption on
//! start, holds retired on failure, panes released when supervision gives up), routing
//! events to a pane's owner, and reload (SPEC §4.6, §6.5).

use nightcrow_client_protocol::PluginHealth;
use nightcrow_guard::PaneId;
use nightcrow_plugin_host::{Lifecycle, RateLimit, Supervised, Supervisor};
use nightcrow_protocol::{Event, Token};

use super::{PluginSlot, Worker};
use crate::config::{HubConfig, HubPlugin};
use crate::handle::ReloadReport;

impl Worker {
    /// Starts a supervised instance and waits for its first life-cycle step, outside any
    /// `select!`: a first start compiles the component, and a start dropped half-way by a
    /// busier branch would compile again from scratch.
    pub(super) async fn start_plugin(&mut self, config: HubPlugin) -> bool {
        let supervisor = Supervisor::new(
            self.runtime.clone(),
            config.spec.clone(),
            self.config.restart_policy,
        );
        self.plugins.push(PluginSlot {
            config,
            supervisor,
            gave_up: false,
            log_lines: RateLimit::per_second(),
        });
        let index = self.plugins.len() - 1;
        let first = self.plugins[index].supervisor.next().await;
        let started = first == Supervised::Lifecycle(Lifecycle::Started);
        if !started {
            let name = self.plugins[index].config.name();
            tracing::warn!(
                plugin = name,
                "plugin did not start; its panes run unwatched"
            );
        }
        self.on_supervised(index, first).await;
        started
    }

    pub(super) fn on_lifecycle(&mut self, index: usize, step: Lifecycle) {
        let name = self.plugins[index].config.name().to_owned();
        match step {
            Lifecycle::Started => {
                // SPEC §4.6 and §6.5: the instance is given every live pane it owns, and the
                // live, unowned panes whose startup command named it.
                for token in
                    self.tokens_where(|r| r.owner.is_none() && r.intended.as_deref() == Some(&name))
                {
                    self.adopt_intended(&token);
                }
                for token in self.live_owned(&name) {
                    self.hand_over(&token);
                }
                // Panes that exited while the plugin was down are held for it: it hears of
                // each as opened and then exited, so it can relaunch it (docs/hub.md).
                for token in self.tokens_where(|r| r.hold.is_some() && r.owned_by(&name)) {
                    self.hand_over(&token);
                    if let Some(event) = self.slot_event(&token, |token, generation| {
                        Event::PaneExited { token, generation }
                    }) {
                        self.send_to_owner(&token, event);
                    }
                }
                self.broadcast_plugin(&name, PluginHealth::Running, None);
            }
            Lifecycle::Failed { cause } => {
                // Its successor starts afresh: nothing the failed instance said stays true.
                self.end_recovery_of(&name);
                self.broadcast_plugin(&name, PluginHealth::Failed, Some(cause.to_string()));
            }
            Lifecycle::Restarting { .. } => {}
            Lifecycle::GaveUp => {
                self.plugins[index].gave_up = true;
                self.release_panes_of(&name);
                self.broadcast_plugin(&name, PluginHealth::GaveUp, None);
            }
        }
    }

    fn live_owned(&self, plugin: &str) -> Vec<Token> {
        self.tokens_where(|record| record.owned_by(plugin))
            .into_iter()
            .filter(|token| {
                self.table
                    .resolve(token)
                    .and_then(|pane| self.table.slot(pane))
                    .is_some_and(|slot| slot.is_alive())
            })
            .collect()
    }

    /// Ends the holds of `plugin`'s panes and clears what it reported about its live ones
    /// (SPEC §8: a marker lives exactly as long as its episode or hold); returns the held
    /// pane ids.
    fn end_recovery_of(&mut self, plugin: &str) -> Vec<PaneId> {
        let held: Vec<(Token, PaneId)> = self
            .holds()
            .filter(|(token, _)| self.owner_of(token) == Some(plugin))
            .map(|(token, hold)| (token.clone(), hold.pane))
            .collect();
        for (token, _) in &held {
            self.end_recovery(token);
        }
        self.clear_reports_of(plugin);
        held.into_iter().map(|(_, pane)| pane).collect()
    }

    /// Clients stop showing what `plugin` said about its panes.
    fn clear_reports_of(&mut self, plugin: &str) {
        for token in self.tokens_where(|r| r.owned_by(plugin) && r.report.is_some()) {
            if let Some(record) = self.slots.get_mut(&token) {
                record.report = None;
            }
            if let Some(pane) = self.table.resolve(&token) {
                self.broadcast_cancelled(pane);
            }
        }
    }

    /// The plugin no longer owns anything: its panes run unwatched, their budgets cleared,
    /// its reports about them gone from every client.
    fn release_panes_of(&mut self, plugin: &str) {
        self.clear_reports_of(plugin);
        for token in self.tokens_where(|record| record.owned_by(plugin)) {
            if let Some(record) = self.slots.get_mut(&token) {
                record.owner = None;
            }
            self.guard.cancel(&token);
        }
    }

    pub(super) fn running(&self, name: &str) -> Option<&PluginSlot> {
        self.plugins
            .iter()
            .find(|slot| slot.config.name() == name && !slot.gave_up)
    }

    pub(super) fn send_to_owner(&self, token: &Token, event: Event) {
        if let Some(slot) = self.owner_of(token).and_then(|owner| self.running(owner)) {
            slot.supervisor.send(event);
        }
    }

    /// SPEC §6.5: stop first, then start; policies apply in place; guard and budgets stay.
    pub(super) async fn reload(&mut self, new: HubConfig) -> ReloadReport {
        let mut report = ReloadReport::default();
        // What running panes were started with stays (docs/hub.md).
        let idle_threshold = self.config.guard_limits.idle_threshold();
        let old = std::mem::replace(&mut self.config, new);
        self.config.repo_root = old.repo_root;
        self.config.shell = old.shell;
        self.config.runtime_dir = old.runtime_dir;
        self.config.guard_limits = self.config.guard_limits.with_idle_threshold(idle_threshold);
        self.guard.set_limits(self.config.guard_limits);
        let mut to_start = Vec::new();
        for slot in std::mem::take(&mut self.plugins) {
            let name = slot.config.name().to_owned();
            let owns = self.slots.values().any(|record| record.owned_by(&name));
            let wanted = self
                .config
                .plugins
                .iter()
                .find(|plugin| plugin.name() == name && self.config.should_run(plugin, owns))
                .cloned();
            match wanted {
                Some(plugin) if !slot.gave_up && slot.config.same_instance(&plugin) => {
                    self.plugins.push(PluginSlot {
                        config: plugin,
                        ..slot
                    });
                }
                Some(plugin) => {
                    report.retired.extend(self.stop_plugin(slot).await);
                    report.restarted.push(name);
                    to_start.push(plugin);
                }
                None => {
                    report.retired.extend(self.stop_plugin(slot).await);
                    self.release_panes_of(&name);
                    report.stopped.push(name);
                }
            }
        }
        let restarted = to_start.len();
        for plugin in self.config.plugins.clone() {
            let known = self
                .plugins
                .iter()
                .any(|slot| slot.config.name() == plugin.name())
                || to_start.iter().any(|other| other.name() == plugin.name());
            if !known && self.config.should_run(&plugin, false) {
                report.started.push(plugin.name().to_owned());
                to_start.push(plugin);
            }
        }
        for (n, plugin) in to_start.into_iter().enumerate() {
            let name = plugin.name().to_owned();
            if !self.start_plugin(plugin).await {
                report.failed.push(name.clone());
                if n < restarted {
                    // A successor that fails drops the panes it was to keep: no owner-less
                    // recovery (SPEC §6.5).
                    self.release_panes_of(&name);
                }
            }
        }
        report
    }

    /// Ends the plugin's holds and reports, then stops its instance.
    async fn stop_plugin(&mut self, mut slot: PluginSlot) -> Vec<PaneId> {
        let retired = self.end_recovery_of(slot.config.name());
        slot.supervisor.shutdown().await;
        retired
    }
}

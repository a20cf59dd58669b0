//! Plugins and panes together: starting an instance, its life cycle (adoption on start,
//! holds ended on failure, panes released when supervision gives up), its commands — the
//! only path from a plugin's request to a pane: facts, `Guard::judge`, and an exhaustive
//! match on the `Approved` value — and reload (SPEC §4.4, §4.6, §6.5).

use nightcrow_client_protocol::{HubMessage, PluginHealth};
use nightcrow_guard::Approved;
use nightcrow_plugin_host::{Lifecycle, Supervised};
use nightcrow_protocol::Command;

use super::Worker;
use crate::config::{HubConfig, HubPlugin};
use crate::handle::ReloadReport;

/// Commands taken from one plugin before other sources are served (SPEC §4.4).
const COMMANDS_PER_ROUND: usize = 8;

impl Worker {
    /// Starts a supervised instance and carries out its first life-cycle step; `false` when
    /// it did not start.
    pub(super) async fn start_plugin(&mut self, config: HubPlugin) -> bool {
        let restart = self.config.restart_policy;
        let (index, first) = self.plugins.start(config, restart).await;
        let started = first == Supervised::Lifecycle(Lifecycle::Started);
        if !started {
            let plugin = self.plugins.name(index);
            tracing::warn!(plugin, "plugin did not start; its panes run unwatched");
        }
        self.on_supervised(index, first).await;
        // What it was handed goes now, not after the plugins that start next.
        self.deliver();
        started
    }

    pub(super) async fn on_supervised(&mut self, index: usize, item: Supervised) {
        match item {
            Supervised::Command(command) => {
                self.on_command(index, command);
                for _ in 1..COMMANDS_PER_ROUND {
                    match self.plugins.try_recv(index) {
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
        let policy = self.plugins.policy(index);
        let approved = match self.slots.judge(&policy, &command, crate::clock::now()) {
            Ok(approved) => approved,
            Err(refused) => return self.plugins.log_refusal(index, &command, &refused),
        };
        let outbox = &mut self.outbox;
        match approved {
            Approved::SendInput(send) => self.slots.send_input(&send),
            Approved::Relaunch(relaunch) => self.slots.relaunch(&relaunch, outbox),
            Approved::Status(status) => self.slots.report(&status, outbox),
            Approved::Attention(attention) => outbox.show(HubMessage::Attention {
                pane: attention.target().pane().get(),
            }),
            Approved::WatchPane(watch) => self.slots.adopt_watched(&watch, outbox),
            Approved::Log(log) => self.plugins.log(index, &log),
        }
    }

    fn on_lifecycle(&mut self, index: usize, step: Lifecycle) {
        let name = self.plugins.name(index).to_owned();
        let outbox = &mut self.outbox;
        let (health, detail) = match step {
            Lifecycle::Started => {
                self.slots.plugin_started(&name, outbox);
                (PluginHealth::Running, None)
            }
            Lifecycle::Failed { cause } => {
                // Its successor starts afresh: nothing the failed instance said stays true.
                self.slots.end_episodes_of(&name, outbox);
                (PluginHealth::Failed, Some(cause.to_string()))
            }
            Lifecycle::Restarting { .. } => return,
            Lifecycle::GaveUp => {
                self.plugins.gave_up(index);
                self.slots.release_all_of(&name, outbox);
                (PluginHealth::GaveUp, None)
            }
        };
        outbox.show(HubMessage::Plugin {
            name,
            state: health,
            detail,
        });
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
        self.slots
            .set_rules(self.config.guard_limits, self.config.pending_relaunch_ttl);
        let mut to_start = Vec::new();
        for instance in self.plugins.take_all() {
            let name = instance.name().to_owned();
            let owns = self.slots.any_owned_by(&name);
            let wanted = self
                .config
                .plugins
                .iter()
                .find(|plugin| plugin.name() == name && self.config.should_run(plugin, owns))
                .cloned();
            match wanted {
                Some(plugin) if instance.serves(&plugin) => self.plugins.keep(instance, plugin),
                wanted => {
                    report
                        .retired
                        .extend(self.slots.end_episodes_of(&name, &mut self.outbox));
                    // Clients see the markers go now; the instance, out of the list, is
                    // not told its holds ended: it is going.
                    self.deliver();
                    instance.shutdown().await;
                    match wanted {
                        Some(plugin) => {
                            report.restarted.push(name);
                            to_start.push(plugin);
                        }
                        None => {
                            self.slots.release_all_of(&name, &mut self.outbox);
                            report.stopped.push(name);
                        }
                    }
                }
            }
        }
        // Before any successor of a stopped plugin's name starts, which must not hear what
        // was meant for its predecessor.
        self.deliver();
        let restarted = to_start.len();
        for plugin in self.config.plugins.clone() {
            let known = self.plugins.has(plugin.name())
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
                    self.slots.release_all_of(&name, &mut self.outbox);
                }
            }
        }
        report
    }
}

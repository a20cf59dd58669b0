//! The worker's plugins, one of its three parts: one supervised instance per configured
//! plugin that should run, which of them is running, what is sent to them, and the lines
//! logged on their behalf. It knows nothing of panes: who owns a pane is the slots' record.

use nightcrow_guard::{ApprovedLog, PluginPolicy, Refused, Severity};
use nightcrow_plugin_host::{PluginRuntime, RateLimit, RestartPolicy, Supervised, Supervisor};
use nightcrow_protocol::{Command, Event, LogLevel};

use crate::config::HubPlugin;
use crate::handle::PluginStatus;

pub(super) struct Plugins {
    runtime: PluginRuntime,
    instances: Vec<Instance>,
}

/// One configured plugin and its supervised instance.
pub(super) struct Instance {
    config: HubPlugin,
    supervisor: Supervisor,
    gave_up: bool,
    /// Lines logged on the plugin's behalf (its `log` commands, WARN refusals): a plugin
    /// that floods them fills no disk.
    log_lines: RateLimit,
}

impl Instance {
    pub(super) fn name(&self) -> &str {
        self.config.name()
    }

    /// Whether `config` can go on with this instance: it did not give up, and what it
    /// runs and may touch is the same (policies change in place).
    pub(super) fn serves(&self, config: &HubPlugin) -> bool {
        !self.gave_up && self.config.same_instance(config)
    }

    pub(super) async fn shutdown(mut self) {
        self.supervisor.shutdown().await;
    }
}

impl Plugins {
    pub(super) fn new(runtime: PluginRuntime) -> Plugins {
        Plugins {
            runtime,
            instances: Vec::new(),
        }
    }

    /// Starts a supervised instance and waits for its first life-cycle step, outside any
    /// `select!`: a first start compiles the component, and a start dropped half-way by a
    /// busier branch would compile again from scratch.
    pub(super) async fn start(
        &mut self,
        config: HubPlugin,
        restart: RestartPolicy,
    ) -> (usize, Supervised) {
        let supervisor = Supervisor::new(self.runtime.clone(), config.spec.clone(), restart);
        self.instances.push(Instance {
            config,
            supervisor,
            gave_up: false,
            log_lines: RateLimit::per_second(),
        });
        let index = self.instances.len() - 1;
        (index, self.instances[index].supervisor.next().await)
    }

    /// The next item of any instance, with its index; pending forever without plugins.
    pub(super) async fn next(&mut self) -> (usize, Supervised) {
        if self.instances.is_empty() {
            return std::future::pending().await;
        }
        let nexts =
            self.instances.iter_mut().enumerate().map(|(index, slot)| {
                Box::pin(async move { (index, slot.supervisor.next().await) })
            });
        futures::future::select_all(nexts).await.0
    }

    /// A command the instance has ready, without waiting.
    pub(super) fn try_recv(&mut self, index: usize) -> Option<Command> {
        self.instances[index].supervisor.try_recv()
    }

    pub(super) fn name(&self, index: usize) -> &str {
        self.instances[index].name()
    }

    /// What the guard judges the instance's commands by.
    pub(super) fn policy(&self, index: usize) -> PluginPolicy {
        self.instances[index].config.policy()
    }

    /// Its supervision gave up: it is no longer running.
    pub(super) fn gave_up(&mut self, index: usize) {
        self.instances[index].gave_up = true;
    }

    pub(super) fn is_running(&self, name: &str) -> bool {
        self.running(name).is_some()
    }

    /// Sends `event` to the plugin of this name if it is running.
    pub(super) fn send(&self, name: &str, event: Event) {
        if let Some(instance) = self.running(name) {
            instance.supervisor.send(event);
        }
    }

    fn running(&self, name: &str) -> Option<&Instance> {
        self.instances
            .iter()
            .find(|instance| instance.name() == name && !instance.gave_up)
    }

    /// Writes an approved `log` command, within the plugin's log-line limit.
    pub(super) fn log(&mut self, index: usize, log: &ApprovedLog) {
        let admitted = self.instances[index]
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

    /// WARN refusals share the plugin's log-line limit; DEBUG ones are not written by
    /// default.
    pub(super) fn log_refusal(&mut self, index: usize, command: &Command, refused: &Refused) {
        let instance = &mut self.instances[index];
        let (plugin, cmd) = (instance.config.name(), command.tag());
        match refused.severity() {
            Severity::Debug => tracing::debug!(plugin, cmd, %refused, "refused"),
            Severity::Warn => {
                if let Some(suppressed) = instance.log_lines.admit(tokio::time::Instant::now()) {
                    tracing::warn!(plugin, cmd, %refused, suppressed, "refused");
                }
            }
        }
    }

    pub(super) fn status(&self) -> Vec<PluginStatus> {
        self.instances
            .iter()
            .map(|instance| PluginStatus {
                name: instance.name().to_owned(),
                health: instance.supervisor.plugin().map(|plugin| plugin.health()),
                gave_up: instance.gave_up,
            })
            .collect()
    }

    /// Takes every instance out, for a reload to keep, restart or stop each.
    pub(super) fn take_all(&mut self) -> Vec<Instance> {
        std::mem::take(&mut self.instances)
    }

    /// Puts an instance back with its new config.
    pub(super) fn keep(&mut self, instance: Instance, config: HubPlugin) {
        self.instances.push(Instance { config, ..instance });
    }

    /// Whether a plugin of this name has an instance, running or not.
    pub(super) fn has(&self, name: &str) -> bool {
        self.instances
            .iter()
            .any(|instance| instance.name() == name)
    }

    pub(super) async fn shutdown(&mut self) {
        futures::future::join_all(
            self.instances
                .iter_mut()
                .map(|instance| instance.supervisor.shutdown()),
        )
        .await;
    }
}

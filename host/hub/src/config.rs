//! What a hub needs, already resolved: the daemon maps its config file onto these types, so
//! the hub never reads a file or expands a path.

use std::path::PathBuf;
use std::time::Duration;

pub use nightcrow_guard::StartupCommand;
use nightcrow_guard::{GuardLimits, PluginPolicy};
use nightcrow_pane::{PaneSize, Shell};
use nightcrow_plugin_host::{PluginSource, PluginSpec, RestartPolicy};

/// How long an exited, owned, relaunchable pane is held for a relaunch (SPEC §6.2).
pub const PENDING_RELAUNCH_TTL: Duration = Duration::from_secs(9 * 24 * 60 * 60);

/// One `[[plugin]]`: how to start it, what the guard lets it do, and whether it may run.
#[derive(Debug, Clone)]
pub struct HubPlugin {
    /// `spec.name` is the plugin's one name: owners, logs, and the guard's policy.
    pub spec: PluginSpec,
    /// Resume flags its relaunches may carry (SPEC §3.4); applies at the next judgement
    /// after a reload, as `watch_on_signal` does.
    pub allowed_resume_flags: Vec<String>,
    /// It may take a pane on its own signal (`watch_pane`), and so runs in every hub.
    pub watch_on_signal: bool,
    pub enabled: bool,
}

impl HubPlugin {
    pub fn name(&self) -> &str {
        &self.spec.name
    }

    /// What the guard judges its commands by, named as the plugin is.
    pub(crate) fn policy(&self) -> PluginPolicy {
        PluginPolicy {
            name: self.spec.name.clone(),
            allowed_resume_flags: self.allowed_resume_flags.clone(),
            watch_on_signal: self.watch_on_signal,
        }
    }

    /// Whether `other` needs a new instance: only `command`, `args`, `env`, `runtime` and
    /// `sandbox` changes do (SPEC §6.5); policy changes apply in place.
    pub(crate) fn same_instance(&self, other: &HubPlugin) -> bool {
        let (a, b) = (&self.spec, &other.spec);
        let same_source = match (&a.source, &b.source) {
            (PluginSource::Path(a), PluginSource::Path(b)) => a == b,
            (
                PluginSource::Builtin { name: a, bytes: x },
                PluginSource::Builtin { name: b, bytes: y },
            ) => a == b && x == y,
            (
                PluginSource::Installed {
                    name: a,
                    path: p,
                    bytes: x,
                },
                PluginSource::Installed {
                    name: b,
                    path: q,
                    bytes: y,
                },
            ) => a == b && p == q && x == y,
            _ => false,
        };
        same_source
            && a.runtime == b.runtime
            && a.args == b.args
            && a.env == b.env
            && a.runtime_dir == b.runtime_dir
            && a.sandbox == b.sandbox
    }
}

/// Everything one hub needs, resolved.
///
/// `repo_root`, `shell`, `runtime_dir` and the guard limits' idle threshold are fixed when
/// the hub spawns (its panes were started with them); a reload applies every other field.
#[derive(Debug, Clone)]
pub struct HubConfig {
    /// The repository; canonicalised by the pane table, every pane's cwd.
    pub repo_root: PathBuf,
    pub shell: Shell,
    /// The guard's budgets, and its idle threshold, which is also when `pane_idle` is sent
    /// (SPEC §5.3): one value, so the two always agree.
    pub guard_limits: GuardLimits,
    pub startup_commands: Vec<StartupCommand>,
    pub plugins: Vec<HubPlugin>,
    /// `NIGHTCROW_PLUGIN_RUNTIME_DIR` of this hub's panes (SPEC §5.4); created (0700) at spawn.
    pub runtime_dir: PathBuf,
    pub pending_relaunch_ttl: Duration,
    pub restart_policy: RestartPolicy,
    /// Size of startup panes and of client panes that name none.
    pub default_size: PaneSize,
}

impl HubConfig {
    /// A hub for `repo_root` with no startup commands, no plugins and the spec's defaults.
    pub fn new(repo_root: PathBuf, runtime_dir: PathBuf) -> HubConfig {
        HubConfig {
            repo_root,
            shell: Shell::user_default(),
            guard_limits: GuardLimits::default(),
            startup_commands: Vec::new(),
            plugins: Vec::new(),
            runtime_dir,
            pending_relaunch_ttl: PENDING_RELAUNCH_TTL,
            restart_policy: RestartPolicy::default(),
            default_size: PaneSize::new(24, 80).expect("24x80 is within bounds"),
        }
    }

    /// Whether `plugin` runs in this hub (SPEC §6.5): enabled, and named by a startup command
    /// or allowed to watch; `owns_panes` covers the third reason, a pane it owns.
    pub(crate) fn should_run(&self, plugin: &HubPlugin, owns_panes: bool) -> bool {
        let named = self
            .startup_commands
            .iter()
            .any(|startup| startup.plugin.as_deref() == Some(plugin.name()));
        plugin.enabled && (named || plugin.watch_on_signal || owns_panes)
    }
}

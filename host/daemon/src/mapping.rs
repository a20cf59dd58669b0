//! From the config file's values to what a hub runs: the one place a `[[plugin]]` becomes a
//! [`PluginSpec`] (builtin bytes, a path, or an installed file's bytes with their hash checked) and a
//! [`PluginPolicy`], and `[shell]` a [`Shell`].

use std::path::{Path, PathBuf};
use std::sync::Arc;

use nightcrow_config::{Config, PluginCommand, PluginConfig};
use nightcrow_hub::{HubConfig, HubPlugin};
use nightcrow_pane::Shell;
use nightcrow_plugin_host::{PluginRuntime, PluginSource, PluginSpec, RuntimeKind};

use nightcrow_client::Home;

use crate::registry::Registry;

/// A `[[plugin]]` the daemon cannot run as configured. The hub still opens its panes; they
/// run unwatched, and the message says why.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("plugin `{plugin}`: {message}")]
pub struct UnusablePlugin {
    pub plugin: String,
    pub message: String,
}

/// The hub for `repo_root` under `config`, and the plugins left out of it with the reason.
pub fn hub_config(
    config: &Config,
    home: &Home,
    repo_root: &Path,
) -> (HubConfig, Vec<UnusablePlugin>) {
    let runtime_dir = nightcrow_pane::runtime_dir_for(&runtime_base(home), repo_root);
    let mut hub = HubConfig::new(repo_root.to_owned(), runtime_dir.clone());
    hub.shell = shell(config);
    hub.guard_limits = config.guard;
    hub.startup_commands.clone_from(&config.startup_commands);
    let mut unusable = Vec::new();
    for plugin in &config.plugins {
        match hub_plugin(plugin, home, &runtime_dir) {
            Ok(resolved) => hub.plugins.push(resolved),
            Err(message) => unusable.push(UnusablePlugin {
                plugin: plugin.name.clone(),
                message,
            }),
        }
    }
    (hub, unusable)
}

/// Compiles (or finds in the cache) every enabled wasm plugin of `config` before its hub
/// opens panes. A plugin learns a pane's start from its `pane_opened`; a cold compile of
/// seconds in between would make it miss what the pane's program wrote at once (a Codex
/// rollout created "before" the pane opened is not bound). Failures are left to the hub,
/// which reports them when it starts the plugin.
pub async fn precompile(runtime: &PluginRuntime, config: &HubConfig) {
    for plugin in config.plugins.iter().filter(|plugin| plugin.enabled) {
        if plugin.spec.runtime == RuntimeKind::Wasm {
            let _ = runtime.check(&plugin.spec.source).await;
        }
    }
}

/// `$XDG_RUNTIME_DIR/nightcrow` if set, else `run/` in the daemon's home (SPEC §5.4's
/// `~/.nightcrow/run`, following `$NIGHTCROW_HOME` so that homes never share one).
pub fn runtime_base(home: &Home) -> PathBuf {
    match std::env::var_os("XDG_RUNTIME_DIR").map(PathBuf::from) {
        Some(xdg) if xdg.is_absolute() => xdg.join("nightcrow"),
        _ => home.root().join("run"),
    }
}

fn shell(config: &Config) -> Shell {
    let default = Shell::user_default();
    Shell {
        program: config
            .shell
            .program
            .as_ref()
            .map_or(default.program, PathBuf::from),
        command_args: config
            .shell
            .command_args
            .clone()
            .unwrap_or(default.command_args),
    }
}

fn hub_plugin(plugin: &PluginConfig, home: &Home, runtime_dir: &Path) -> Result<HubPlugin, String> {
    let source = match &plugin.command {
        PluginCommand::Builtin(name) => PluginSource::Builtin {
            name: name.clone(),
            bytes: Arc::from(
                nightcrow_builtin::lookup(name)
                    .ok_or_else(|| format!("no bundled plugin `builtin:{name}`"))?,
            ),
        },
        PluginCommand::Path(path) => PluginSource::Path(path.clone()),
        // The checked bytes themselves, so restarts never read the file again.
        PluginCommand::Installed(name) => Registry::of(home)
            .load(name)
            .map_err(|error| error.to_string())?,
    };
    let runtime = plugin.runtime;
    if runtime == RuntimeKind::Native {
        match source {
            PluginSource::Builtin { .. } => {
                return Err(
                    "a builtin plugin runs as wasm only; remove `runtime = \"native\"`".into(),
                );
            }
            PluginSource::Installed { .. } => {
                return Err(
                    "an installed plugin runs as wasm only; remove `runtime = \"native\"`".into(),
                );
            }
            PluginSource::Path(_) => {}
        }
    }
    Ok(HubPlugin {
        spec: PluginSpec {
            name: plugin.name.clone(),
            runtime,
            source,
            args: plugin.args.clone(),
            env: plugin.env.clone(),
            runtime_dir: runtime_dir.to_owned(),
            sandbox: plugin.sandbox.clone(),
        },
        allowed_resume_flags: plugin.allowed_resume_flags.clone(),
        watch_on_signal: plugin.watch_on_signal,
        enabled: plugin.enabled,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_configured_sandbox_reaches_the_runtime_as_it_is() {
        let text = r#"
[[plugin]]
name = "p"
command = "/p.wasm"
[plugin.sandbox]
read_dirs = ["~/notes"]
connect = ["127.0.0.1:4100-4110"]
memory_mib = 32
cpu_slice_ms = 50
"#;
        let dir = tempfile::tempdir().unwrap();
        let config = nightcrow_config::parse(Path::new("c.toml"), text, dir.path()).unwrap();
        let home = Home::new(dir.path().join("home"));
        let (hub, unusable) = hub_config(&config, &home, dir.path());
        assert!(unusable.is_empty(), "{unusable:?}");
        // One type from the file to the runtime: nothing to copy, so nothing to forget.
        assert_eq!(hub.plugins[0].spec.sandbox, config.plugins[0].sandbox);
        assert_eq!(hub.plugins[0].spec.sandbox.memory_mib, 32);
    }
}

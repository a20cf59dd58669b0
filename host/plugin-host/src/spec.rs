//! What the hub asks for: one plugin, its runtime, its source and its sandbox grants.

use std::fmt;
use std::path::PathBuf;
use std::sync::Arc;

pub use nightcrow_guard::{ConnectRule, RuntimeKind, Sandbox};

/// Everything needed to start one plugin instance. Built by the hub from a `[[plugin]]`
/// table (paths already absolute, `~` already expanded).
#[derive(Debug, Clone)]
pub struct PluginSpec {
    /// The configured plugin name; attributes every log line and event.
    pub name: String,
    /// Which runtime runs it.
    pub runtime: RuntimeKind,
    /// Where the code comes from.
    pub source: PluginSource,
    /// The guest's arguments after `argv[0]` (which is the plugin name).
    pub args: Vec<String>,
    /// The guest's entire environment (`[plugin.env]`); nothing is inherited.
    pub env: Vec<(String, String)>,
    /// Value of `NIGHTCROW_PLUGIN_RUNTIME_DIR` (SPEC §5.4), set after `env` so it cannot be
    /// overridden. For wasm plugins it is only a name unless `read_dirs` grants it.
    pub runtime_dir: PathBuf,
    /// Capabilities and limits; applies to wasm plugins only (native plugins are trusted).
    pub sandbox: Sandbox,
}

/// Where a plugin's code comes from.
#[derive(Clone)]
pub enum PluginSource {
    /// A component embedded in the daemon (`builtin:<name>`); wasm only.
    Builtin {
        /// The name after `builtin:`.
        name: String,
        /// The component's bytes.
        bytes: Arc<[u8]>,
    },
    /// An installed plugin (a bare name in `command`): the bytes the registry read once and
    /// checked against the SHA-256 recorded at install; wasm only. Every start and every
    /// restart runs exactly these bytes and never reads `path` again, so a file changed on
    /// disk after the check does not run until it is installed again.
    Installed {
        /// The installed name.
        name: String,
        /// The file the bytes were read from; for messages only.
        path: PathBuf,
        /// The checked bytes.
        bytes: Arc<[u8]>,
    },
    /// A `.wasm` file (wasm) or an executable (native), read at every start.
    Path(PathBuf),
}

impl fmt::Debug for PluginSource {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            PluginSource::Builtin { name, bytes } => {
                write!(f, "builtin:{name} ({} bytes)", bytes.len())
            }
            PluginSource::Installed { name, path, bytes } => write!(
                f,
                "installed:{name} ({}, {} bytes)",
                path.display(),
                bytes.len()
            ),
            PluginSource::Path(path) => write!(f, "{}", path.display()),
        }
    }
}

impl fmt::Display for PluginSource {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            PluginSource::Builtin { name, .. } => write!(f, "builtin:{name}"),
            PluginSource::Installed { path, .. } => write!(f, "{}", path.display()),
            PluginSource::Path(path) => write!(f, "{}", path.display()),
        }
    }
}

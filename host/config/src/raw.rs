//! The file's own shape, as serde reads it. Spans are kept where validation needs them.

use std::collections::BTreeMap;

use nightcrow_guard::GuardLimits;
use serde::Deserialize;
use toml::Spanned;

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct RawConfig {
    #[serde(default)]
    pub shell: RawShell,
    #[serde(default)]
    pub guard: GuardLimits,
    #[serde(default)]
    pub web: RawWeb,
    #[serde(default)]
    pub tui: RawTui,
    #[serde(default)]
    pub startup_command: Vec<RawStartupCommand>,
    #[serde(default)]
    pub plugin: Vec<RawPlugin>,
    #[serde(default)]
    pub notify: Vec<Spanned<RawNotify>>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct RawShell {
    pub program: Option<String>,
    pub command_args: Option<Vec<String>>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct RawWeb {
    #[serde(default)]
    pub enabled: bool,
    pub bind: Option<Spanned<String>>,
    pub port: Option<u16>,
    pub password_hash: Option<Spanned<String>>,
    #[serde(default)]
    pub insecure: bool,
    pub max_connections: Option<Spanned<usize>>,
    pub request_timeout_secs: Option<Spanned<u64>>,
    #[serde(default)]
    pub hosts: Vec<Spanned<String>>,
    #[serde(default)]
    pub secure_cookie: bool,
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct RawTui {
    pub leader: Option<Spanned<String>>,
    pub notify: Option<Spanned<String>>,
    pub mouse: Option<bool>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct RawStartupCommand {
    pub name: Option<String>,
    pub command: Spanned<String>,
    pub plugin: Option<Spanned<String>>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct RawPlugin {
    pub name: Spanned<String>,
    pub command: Spanned<String>,
    #[serde(default)]
    pub args: Vec<String>,
    #[serde(default)]
    pub enabled: bool,
    #[serde(default)]
    pub watch_on_signal: bool,
    #[serde(default)]
    pub allowed_resume_flags: Vec<String>,
    pub runtime: Option<Spanned<String>>,
    /// Required for `runtime = "native"`: the user vouches for unsandboxed code.
    #[serde(default)]
    pub trusted: bool,
    #[serde(default)]
    pub env: BTreeMap<String, String>,
    /// Absent and empty differ: a native plugin may not have the table at all.
    pub sandbox: Option<Spanned<RawSandbox>>,
}

/// `[plugin.sandbox]` as written: every value keeps its span, because each is checked (and
/// every bad one reported) when it is resolved into a [`nightcrow_guard::Sandbox`].
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct RawSandbox {
    #[serde(default)]
    pub read_dirs: Vec<Spanned<String>>,
    #[serde(default)]
    pub connect: Vec<Spanned<String>>,
    pub memory_mib: Option<Spanned<u32>>,
    pub cpu_slice_ms: Option<Spanned<u32>>,
    pub cpu_percent: Option<Spanned<u32>>,
    pub cpu_window_secs: Option<Spanned<u32>>,
}

/// One `[[notify]]` hook as written.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct RawNotify {
    pub command: Option<Spanned<Vec<Spanned<String>>>>,
    pub url: Option<Spanned<String>>,
    pub events: Option<Spanned<Vec<Spanned<String>>>>,
}

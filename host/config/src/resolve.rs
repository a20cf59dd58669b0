//! Validation and resolution: from the file's shape to what the daemon runs.

use std::collections::HashSet;
use std::fmt;
use std::net::{IpAddr, Ipv4Addr};
use std::ops::Range;
use std::path::{Path, PathBuf};
use std::time::Duration;

use nightcrow_guard::{ConnectRule, GuardLimits, RuntimeKind, Sandbox, StartupCommand};
use toml::Spanned;

use crate::raw::{RawConfig, RawNotify, RawPlugin, RawSandbox, RawWeb};

/// Most `[[plugin]]` entries a config may declare.
pub const MAX_PLUGINS: usize = 8;

/// Most `[[notify]]` hooks a config may declare: each one is a process or a request per
/// notice, and a phone needs one.
pub const MAX_NOTIFY_HOOKS: usize = 8;

/// The events a `[[notify]]` hook may ask for, as the daemon names them in
/// `NIGHTCROW_EVENT` (the hub's notices; the daemon checks that the two lists agree).
pub const NOTIFY_EVENTS: [&str; 4] = ["attention", "needs_attention", "auto_continued", "resumed"];

/// A whole, valid config.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Config {
    pub shell: ShellConfig,
    pub guard: GuardLimits,
    pub web: WebConfig,
    pub tui: TuiConfig,
    pub startup_commands: Vec<StartupCommand>,
    pub plugins: Vec<PluginConfig>,
    /// `[[notify]]`, in file order.
    pub notify_hooks: Vec<NotifyHook>,
}

/// One `[[notify]]` hook: a command, a URL, or both, told of the events it names.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NotifyHook {
    /// The program and its arguments, run without a shell; `~/` expanded.
    pub command: Option<Vec<String>>,
    /// An `http://` or `https://` address that gets a POST per notice (the way ntfy takes
    /// one).
    pub url: Option<String>,
    /// Names from [`NOTIFY_EVENTS`], each once, in file order (all of them by default).
    pub events: Vec<String>,
}

impl NotifyHook {
    pub fn wants(&self, event: &str) -> bool {
        self.events.iter().any(|wanted| wanted == event)
    }
}

/// `[[notify]]` checked where it was written: at most [`MAX_NOTIFY_HOOKS`], each with a
/// command or a URL, a command with a program, a URL that is HTTP(S), events that exist.
fn resolve_notify(
    raw: Vec<Spanned<RawNotify>>,
    home: &Path,
    problems: &mut Problems,
) -> Vec<NotifyHook> {
    if raw.len() > MAX_NOTIFY_HOOKS {
        problems.push((
            raw[MAX_NOTIFY_HOOKS].span(),
            format!(
                "{} [[notify]] hooks declared, at most {MAX_NOTIFY_HOOKS} allowed",
                raw.len()
            ),
        ));
    }
    let mut hooks = Vec::with_capacity(raw.len());
    for entry in raw {
        let span = entry.span();
        let entry = entry.into_inner();
        if entry.command.is_none() && entry.url.is_none() {
            problems.push((
                span,
                "[[notify]] needs a `command` (a program and its arguments) or a `url`, or both"
                    .to_owned(),
            ));
        }
        let command = entry.command.and_then(|command| {
            let program = command.get_ref().first();
            if program.is_none_or(|program| program.get_ref().trim().is_empty()) {
                problems.push((
                    command.span(),
                    "notify command has no program: write it as a list, program first, like [\"notify-send\", \"nightcrow\"]".to_owned(),
                ));
                return None;
            }
            Some(
                command
                    .into_inner()
                    .into_iter()
                    .map(|arg| expand_home(arg.get_ref(), home))
                    .collect(),
            )
        });
        let url = entry.url.and_then(|url| {
            let text = url.get_ref().trim();
            let host = text
                .strip_prefix("https://")
                .or_else(|| text.strip_prefix("http://"))
                .and_then(|rest| rest.split(['/', '?', '#']).next())
                .filter(|host| !host.is_empty() && !host.contains(char::is_whitespace));
            if host.is_none() {
                problems.push((
                    url.span(),
                    format!(
                        "notify url `{}` is not an http:// or https:// address with a host",
                        url.get_ref()
                    ),
                ));
                return None;
            }
            Some(text.to_owned())
        });
        let events = match entry.events {
            None => NOTIFY_EVENTS.map(str::to_owned).to_vec(),
            Some(events) if events.get_ref().is_empty() => {
                problems.push((
                    events.span(),
                    "events is empty, so the hook would never run: name some, or remove the key for all of them".to_owned(),
                ));
                Vec::new()
            }
            Some(events) => {
                let mut names: Vec<String> = Vec::new();
                for event in events.into_inner() {
                    let name = event.get_ref().trim();
                    if !NOTIFY_EVENTS.contains(&name) {
                        problems.push((
                            event.span(),
                            format!(
                                "event `{}` is unknown; events: {}",
                                event.get_ref(),
                                NOTIFY_EVENTS.join(", ")
                            ),
                        ));
                    } else if !names.iter().any(|known| known == name) {
                        names.push(name.to_owned());
                    }
                }
                names
            }
        };
        hooks.push(NotifyHook {
            command,
            url,
            events,
        });
    }
    hooks
}

/// `[shell]`; `None` means the platform default (`$SHELL -lc`, `%ComSpec% /C`).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ShellConfig {
    pub program: Option<String>,
    pub command_args: Option<Vec<String>>,
}

/// `[web]`: the browser client. Resolving it refuses a non-loopback `bind` unless
/// `insecure = true` says the plain HTTP is meant (nightcrow terminates no TLS).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WebConfig {
    /// Start the web client with the daemon (`nightcrow web` starts it on demand).
    pub enabled: bool,
    pub bind: IpAddr,
    pub port: u16,
    /// Argon2id PHC string; the web client refuses to start without one.
    pub password_hash: Option<String>,
    pub insecure: bool,
    /// HTTP connections served at once; more are closed as soon as they are accepted (the
    /// daemon lowers it further to a quarter of its file-descriptor limit).
    pub max_connections: usize,
    /// The longest a connection may take to send a request (headers and body), and the
    /// longest it may stay open idle between requests.
    pub request_timeout: Duration,
    /// `Host` header values answered besides the loopback names (`name` or `name:port`);
    /// when bound beyond loopback and empty, any host is answered.
    pub hosts: Vec<String>,
    /// Mark the session cookie `Secure`: the page is reached through a TLS proxy.
    pub secure_cookie: bool,
}

impl WebConfig {
    /// Default for `max_connections`.
    pub const DEFAULT_MAX_CONNECTIONS: usize = 64;
    /// Default for `request_timeout_secs`.
    pub const DEFAULT_REQUEST_TIMEOUT: Duration = Duration::from_secs(10);
}

impl Default for WebConfig {
    fn default() -> WebConfig {
        WebConfig {
            enabled: false,
            bind: IpAddr::V4(Ipv4Addr::LOCALHOST),
            port: 8091,
            password_hash: None,
            insecure: false,
            max_connections: WebConfig::DEFAULT_MAX_CONNECTIONS,
            request_timeout: WebConfig::DEFAULT_REQUEST_TIMEOUT,
            hosts: Vec::new(),
            secure_cookie: false,
        }
    }
}

/// The `[web]` table checked: `bind` an IP address, loopback unless `insecure = true`, and
/// `password_hash` an Argon2id PHC string.
fn resolve_web(raw: RawWeb, problems: &mut Problems) -> WebConfig {
    let mut web = WebConfig {
        enabled: raw.enabled,
        port: raw.port.unwrap_or(8091),
        insecure: raw.insecure,
        secure_cookie: raw.secure_cookie,
        ..WebConfig::default()
    };
    match raw.max_connections {
        Some(value) if *value.get_ref() == 0 => {
            problems.push((
                value.span(),
                "max_connections must be at least 1".to_owned(),
            ));
        }
        Some(value) => web.max_connections = value.into_inner(),
        None => {}
    }
    match raw.request_timeout_secs {
        Some(value) if *value.get_ref() == 0 => {
            problems.push((
                value.span(),
                "request_timeout_secs must be at least 1".to_owned(),
            ));
        }
        Some(value) => web.request_timeout = Duration::from_secs(value.into_inner()),
        None => {}
    }
    for host in raw.hosts {
        let name = host.get_ref().trim();
        let valid = !name.is_empty()
            && name
                .bytes()
                .all(|b| b.is_ascii_alphanumeric() || b".-:[]".contains(&b));
        if valid {
            web.hosts.push(name.to_owned());
        } else {
            problems.push((
                host.span(),
                format!(
                    "hosts entry `{}` is not a host name or `name:port` as a browser sends it in `Host`",
                    host.get_ref()
                ),
            ));
        }
    }
    if let Some(bind) = raw.bind {
        match bind.get_ref().trim().parse::<IpAddr>() {
            Err(_) => problems.push((
                bind.span(),
                format!("bind `{}` is not an IP address (like 127.0.0.1 or ::1)", bind.get_ref()),
            )),
            Ok(address) if !address.is_loopback() && !raw.insecure => problems.push((
                bind.span(),
                format!(
                    "bind `{address}` is reachable from other machines, and the web client speaks plain HTTP (nightcrow has no TLS of its own): the password and the session cookie would cross the network readable. Keep 127.0.0.1 and reach it through an SSH tunnel, or put a TLS reverse proxy in front and set `insecure = true` in [web] to say so"
                ),
            )),
            Ok(address) => web.bind = address,
        }
    }
    if let Some(hash) = raw.password_hash {
        if hash.get_ref().starts_with("$argon2id$") {
            web.password_hash = Some(hash.into_inner());
        } else {
            problems.push((
                hash.span(),
                "password_hash is not an Argon2id hash (`$argon2id$...`); set it with `nightcrow web passwd`, never write the password itself".to_owned(),
            ));
        }
    }
    web
}

/// `[tui]`: the terminal client's settings.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TuiConfig {
    pub leader: LeaderKey,
    pub notify: TuiNotify,
    /// `[tui] mouse`: the TUI reads the mouse (tabs, cells, wheel, programs' mouse
    /// reports); off, the outer terminal keeps it and programs' reports are mirrored.
    pub mouse: bool,
}

impl Default for TuiConfig {
    fn default() -> TuiConfig {
        TuiConfig {
            leader: LeaderKey::default(),
            notify: TuiNotify::default(),
            mouse: true,
        }
    }
}

/// `[tui] notify`: how the terminal client raises a desktop notification through the
/// person's terminal when a pane wants them back or recovery carried on without them.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum TuiNotify {
    /// Whatever the terminal is known to support, else the bell.
    #[default]
    Auto,
    /// `ESC ] 9 ; text BEL` (iTerm2, WezTerm, ghostty, kitty).
    Osc9,
    /// `ESC ] 777 ; notify ; title ; body BEL` (foot, WezTerm, ghostty, urxvt's notify).
    Osc777,
    /// `ESC ] 99 ; ; text ESC \` (kitty's own protocol).
    Osc99,
    /// The bell alone.
    Bell,
    /// Nothing.
    Off,
}

impl TuiNotify {
    const NAMES: [(&'static str, TuiNotify); 6] = [
        ("auto", TuiNotify::Auto),
        ("osc9", TuiNotify::Osc9),
        ("osc777", TuiNotify::Osc777),
        ("osc99", TuiNotify::Osc99),
        ("bell", TuiNotify::Bell),
        ("off", TuiNotify::Off),
    ];

    /// One of the names above, exactly; the message lists them.
    pub fn parse(text: &str) -> Result<TuiNotify, String> {
        TuiNotify::NAMES
            .iter()
            .find(|(name, _)| *name == text)
            .map(|(_, notify)| *notify)
            .ok_or_else(|| {
                let names: Vec<String> = TuiNotify::NAMES
                    .iter()
                    .map(|(name, _)| format!("`{name}`"))
                    .collect();
                format!("notify `{text}` is not one of {}", names.join(", "))
            })
    }
}

/// The key that starts a TUI command: a Ctrl+letter chord, written `ctrl-f` in the file.
/// It is held as the one byte a terminal sends for the chord, which is what the TUI sees.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct LeaderKey {
    letter: u8,
}

impl LeaderKey {
    /// `ctrl-<letter>`, case-insensitive; the message says what is accepted.
    pub fn parse(text: &str) -> Result<LeaderKey, String> {
        let letter = text
            .trim()
            .to_ascii_lowercase()
            .strip_prefix("ctrl-")
            .and_then(|rest| match rest.as_bytes() {
                [letter] if letter.is_ascii_lowercase() => Some(*letter),
                _ => None,
            });
        match letter {
            // Ctrl+M, Ctrl+I and Ctrl+[ are Enter, Tab and Escape on the wire.
            Some(b'm' | b'i') | None => Err(format!(
                "leader `{text}` is not a Ctrl+letter chord: write it like `ctrl-f` (any letter but i and m, which are Tab and Enter)"
            )),
            Some(letter) => Ok(LeaderKey { letter }),
        }
    }

    /// The byte the terminal sends for the chord (Ctrl+F is 0x06).
    pub fn byte(self) -> u8 {
        self.letter - b'a' + 1
    }
}

impl Default for LeaderKey {
    fn default() -> LeaderKey {
        LeaderKey { letter: b'f' }
    }
}

impl fmt::Display for LeaderKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Ctrl+{}", self.letter.to_ascii_uppercase() as char)
    }
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PluginConfig {
    pub name: String,
    pub command: PluginCommand,
    pub args: Vec<String>,
    pub enabled: bool,
    pub watch_on_signal: bool,
    pub allowed_resume_flags: Vec<String>,
    pub runtime: RuntimeKind,
    /// `[plugin.env]` with `~/` expanded, sorted by key.
    pub env: Vec<(String, String)>,
    /// `[plugin.sandbox]`, the value the plugin runtime applies as it is.
    pub sandbox: Sandbox,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum PluginCommand {
    /// `builtin:<name>`, one of the plugins the daemon embeds.
    Builtin(String),
    /// A path (absolute, `~/`-relative, or relative to the config file's folder).
    Path(PathBuf),
    /// A bare name: a plugin installed under `~/.nightcrow/plugins/`.
    Installed(String),
}

type Problems = Vec<(Range<usize>, String)>;

pub(crate) fn resolve(raw: RawConfig, home: &Path) -> Result<Config, Problems> {
    let mut problems = Problems::new();
    let mut names = HashSet::new();
    if raw.plugin.len() > MAX_PLUGINS {
        problems.push((
            raw.plugin[MAX_PLUGINS].name.span(),
            format!(
                "{} plugins declared, at most {MAX_PLUGINS} allowed",
                raw.plugin.len()
            ),
        ));
    }
    let mut plugins = Vec::with_capacity(raw.plugin.len());
    for plugin in raw.plugin {
        let name = plugin.name.get_ref().trim();
        if name.is_empty() {
            problems.push((plugin.name.span(), "plugin name is blank".to_owned()));
        } else if !names.insert(name.to_owned()) {
            problems.push((
                plugin.name.span(),
                format!("a plugin named `{name}` is already declared"),
            ));
        }
        if let Some(resolved) = resolve_plugin(plugin, home, &mut problems) {
            plugins.push(resolved);
        }
    }
    let startup_commands = raw
        .startup_command
        .into_iter()
        .map(|entry| {
            if entry.command.get_ref().trim().is_empty() {
                problems.push((entry.command.span(), "startup command is blank".to_owned()));
            }
            if let Some(plugin) = &entry.plugin
                && !names.contains(plugin.get_ref().as_str())
            {
                problems.push((
                    plugin.span(),
                    format!("no [[plugin]] is named `{}`", plugin.get_ref()),
                ));
            }
            StartupCommand {
                name: entry.name,
                command: entry.command.into_inner(),
                plugin: entry.plugin.map(Spanned::into_inner),
            }
        })
        .collect();
    let web = resolve_web(raw.web, &mut problems);
    let tui = TuiConfig {
        leader: match raw.tui.leader {
            None => LeaderKey::default(),
            Some(leader) => LeaderKey::parse(leader.get_ref()).unwrap_or_else(|message| {
                problems.push((leader.span(), message));
                LeaderKey::default()
            }),
        },
        notify: match raw.tui.notify {
            None => TuiNotify::default(),
            Some(notify) => TuiNotify::parse(notify.get_ref()).unwrap_or_else(|message| {
                problems.push((notify.span(), message));
                TuiNotify::default()
            }),
        },
        mouse: raw.tui.mouse.unwrap_or(true),
    };
    let notify_hooks = resolve_notify(raw.notify, home, &mut problems);
    if !problems.is_empty() {
        problems.sort_by_key(|(span, _)| span.start);
        return Err(problems);
    }
    Ok(Config {
        shell: ShellConfig {
            program: raw.shell.program,
            command_args: raw.shell.command_args,
        },
        guard: raw.guard,
        web,
        tui,
        startup_commands,
        plugins,
        notify_hooks,
    })
}

fn resolve_plugin(plugin: RawPlugin, home: &Path, problems: &mut Problems) -> Option<PluginConfig> {
    let command = plugin_command(&plugin.command, home, problems)?;
    let runtime = match plugin
        .runtime
        .as_ref()
        .map(|r| (r.get_ref().as_str(), r.span()))
    {
        None | Some(("wasm", _)) => RuntimeKind::Wasm,
        Some(("native", span)) => {
            if matches!(command, PluginCommand::Builtin(_)) {
                problems.push((span.clone(), "builtin plugins run only as wasm".to_owned()));
            }
            if !plugin.trusted {
                problems.push((
                    span,
                    "a native plugin runs as you, with no sandbox: it can read, write and send anything you can. Add `trusted = true` to this [[plugin]] if you trust its code, or run it as wasm".to_owned(),
                ));
            }
            if let Some(sandbox) = &plugin.sandbox {
                problems.push((
                    sandbox.span(),
                    "[plugin.sandbox] does not apply to a native plugin, which runs unsandboxed: remove it, or run the plugin as wasm to have it enforced".to_owned(),
                ));
            }
            RuntimeKind::Native
        }
        Some((other, span)) => {
            problems.push((
                span,
                format!("runtime `{other}` is unknown; use \"wasm\" or \"native\""),
            ));
            return None;
        }
    };
    Some(PluginConfig {
        name: plugin.name.get_ref().trim().to_owned(),
        command,
        args: plugin.args,
        enabled: plugin.enabled,
        watch_on_signal: plugin.watch_on_signal,
        allowed_resume_flags: plugin.allowed_resume_flags,
        runtime,
        env: plugin
            .env
            .into_iter()
            .map(|(key, value)| (key, expand_home(&value, home)))
            .collect(),
        sandbox: sandbox(
            plugin.sandbox.map(Spanned::into_inner).unwrap_or_default(),
            home,
            problems,
        ),
    })
}

fn plugin_command(
    command: &Spanned<String>,
    home: &Path,
    problems: &mut Problems,
) -> Option<PluginCommand> {
    let text = command.get_ref().trim();
    if let Some(name) = text.strip_prefix(nightcrow_builtin::PREFIX) {
        if nightcrow_builtin::NAMES.contains(&name) {
            return Some(PluginCommand::Builtin(name.to_owned()));
        }
        problems.push((
            command.span(),
            format!(
                "there is no builtin plugin `{name}`; builtins: {}",
                nightcrow_builtin::NAMES.join(", ")
            ),
        ));
        return None;
    }
    if text.is_empty() {
        problems.push((command.span(), "plugin command is blank".to_owned()));
        return None;
    }
    if text.contains('/') || text.contains('\\') || text.starts_with('~') {
        return Some(PluginCommand::Path(PathBuf::from(expand_home(text, home))));
    }
    Some(PluginCommand::Installed(text.to_owned()))
}

/// Checks each grant where the file wrote it (so a bad one has a position) and resolves it.
fn sandbox(raw: RawSandbox, home: &Path, problems: &mut Problems) -> Sandbox {
    let mut positive = |value: Option<Spanned<u32>>, default: u32, key: &str| match value {
        Some(value) if *value.get_ref() == 0 => {
            problems.push((value.span(), format!("{key} must be at least 1")));
            default
        }
        Some(value) => value.into_inner(),
        None => default,
    };
    let memory_mib = positive(raw.memory_mib, Sandbox::DEFAULT_MEMORY_MIB, "memory_mib");
    let cpu_slice_ms = positive(
        raw.cpu_slice_ms,
        Sandbox::DEFAULT_CPU_SLICE_MS,
        "cpu_slice_ms",
    );
    let cpu_window_secs = positive(
        raw.cpu_window_secs,
        Sandbox::DEFAULT_CPU_WINDOW_SECS,
        "cpu_window_secs",
    );
    let cpu_percent = match raw.cpu_percent {
        Some(value) if !(1..=100).contains(value.get_ref()) => {
            problems.push((value.span(), "cpu_percent must be from 1 to 100".to_owned()));
            Sandbox::DEFAULT_CPU_PERCENT
        }
        Some(value) => value.into_inner(),
        None => Sandbox::DEFAULT_CPU_PERCENT,
    };
    let mut read_dirs = Vec::with_capacity(raw.read_dirs.len());
    for dir in raw.read_dirs {
        let path = PathBuf::from(expand_home(dir.get_ref(), home));
        if path.is_absolute() {
            read_dirs.push(path);
        } else {
            problems.push((
                dir.span(),
                format!(
                    "read_dirs entry `{}` must be absolute or start with ~/",
                    dir.get_ref()
                ),
            ));
        }
    }
    let mut connect = Vec::with_capacity(raw.connect.len());
    for entry in raw.connect {
        match ConnectRule::parse(entry.get_ref()) {
            Ok(rule) => connect.push(rule),
            Err(error) => problems.push((entry.span(), format!("connect entry {error}"))),
        }
    }
    Sandbox {
        read_dirs,
        connect,
        memory_mib,
        cpu_slice_ms,
        cpu_percent,
        cpu_window_secs,
    }
}

/// Expands a leading `~/` (or a lone `~`) to `home`.
fn expand_home(text: &str, home: &Path) -> String {
    if text == "~" {
        return home.to_string_lossy().into_owned();
    }
    match text.strip_prefix("~/") {
        Some(rest) => home.join(rest).to_string_lossy().into_owned(),
        None => text.to_owned(),
    }
}

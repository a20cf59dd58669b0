//! Harness for tests that run real plugins on the real runtime.

use std::path::{Path, PathBuf};
use std::time::Duration;

use nightcrow_plugin_host::{
    Plugin, PluginRuntime, PluginSource, PluginSpec, RuntimeKind, Sandbox,
};
use nightcrow_protocol::{Command, Event, Token};
use nightcrow_test_plugin_artifacts::Guest;
pub use nightcrow_test_support::{logged, logs_dump, within};

/// This binary's plugin runtime, its compilation cache under the test target folder.
pub fn runtime() -> &'static PluginRuntime {
    let cache_dir = || PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("e2e-wasmtime-cache");
    nightcrow_test_support::runtime(cache_dir)
}

/// The `nightcrow` binary with `home` as its `NIGHTCROW_HOME`, no `NIGHTCROW_LOG`, and one
/// compilation cache for every case of this binary standing in for the user cache dir, so
/// tests never write into the real one.
pub fn nightcrow(home: &Path) -> std::process::Command {
    with_test_env(
        std::process::Command::new(env!("CARGO_BIN_EXE_nightcrow")),
        home,
    )
}

/// `nightcrow open dir` in the daemon of `home`, then `nightcrow status` until `done` holds
/// for what it prints (a minute at most); returns that.
#[track_caller]
pub fn open_and_wait_for_status(home: &Path, dir: &Path, done: impl Fn(&str) -> bool) -> String {
    let opened = nightcrow(home).arg("open").arg(dir).output().unwrap();
    assert!(opened.status.success(), "{opened:?}");
    let started = std::time::Instant::now();
    loop {
        let status = nightcrow(home).arg("status").output().unwrap();
        let status = String::from_utf8_lossy(&status.stdout).into_owned();
        if done(&status) {
            return status;
        }
        assert!(started.elapsed() < Duration::from_secs(60), "{status}");
        std::thread::sleep(Duration::from_millis(200));
    }
}

/// [`nightcrow`] allowed at most `open_files` file descriptors (soft and hard limit), through
/// util-linux's `prlimit`.
#[cfg(target_os = "linux")]
pub fn nightcrow_with_open_files(home: &Path, open_files: u64) -> std::process::Command {
    let mut command = std::process::Command::new("prlimit");
    command
        .arg(format!("--nofile={open_files}:{open_files}"))
        .arg("--")
        .arg(env!("CARGO_BIN_EXE_nightcrow"));
    with_test_env(command, home)
}

fn with_test_env(mut command: std::process::Command, home: &Path) -> std::process::Command {
    command
        .env("NIGHTCROW_HOME", home)
        .env(
            "XDG_CACHE_HOME",
            Path::new(env!("CARGO_TARGET_TMPDIR")).join("cli-cache"),
        )
        .env_remove("NIGHTCROW_LOG");
    command
}

/// A spec for `guest` on `kind` with no grants and default limits.
pub fn spec(name: &str, guest: Guest, kind: RuntimeKind, args: &[&str]) -> PluginSpec {
    let path = match kind {
        RuntimeKind::Wasm => guest.wasm,
        RuntimeKind::Native => guest.native.expect("this guest has a native build"),
    };
    PluginSpec {
        name: name.to_owned(),
        runtime: kind,
        source: PluginSource::Path(PathBuf::from(path)),
        args: args.iter().map(|arg| (*arg).to_owned()).collect(),
        env: Vec::new(),
        runtime_dir: std::env::temp_dir()
            .join("nightcrow-e2e-runtime")
            .join(name),
        sandbox: Sandbox::default(),
    }
}

/// Starts `spec` on the shared runtime.
pub async fn start(spec: &PluginSpec) -> Plugin {
    within("plugin start", runtime().start(spec))
        .await
        .unwrap_or_else(|error| panic!("{} does not start: {error}", spec.name))
}

/// The `n`-th test token (distinct per `n`).
pub fn token(n: u8) -> Token {
    Token::from_bytes([n; 16])
}

/// A `pane_opened` for token `n`, generation `generation`.
pub fn pane_opened(n: u8, generation: u32) -> Event {
    Event::PaneOpened {
        token: token(n),
        generation,
        title: Some("codex".to_owned()),
        command: Some("codex".to_owned()),
        cwd: "/repo".to_owned(),
        opened_ms: None,
    }
}

/// The next command, within a step ([`nightcrow_test_support::STEP`]); fails if the plugin's stdout ends first.
pub async fn next_command(plugin: &mut Plugin) -> Command {
    let name = plugin.name().to_owned();
    within(&format!("a command from {name}"), plugin.recv())
        .await
        .unwrap_or_else(|| panic!("{name} closed its stdout\n{}", logs_dump()))
}

/// A plugin-`log` command's message, or a failure naming what came instead.
#[track_caller]
pub fn log_message(command: Command) -> String {
    match command {
        Command::Log { message, .. } => message,
        other => panic!("expected a log command, got {other:?}"),
    }
}

/// An echo plugin on the same runtime (so, for wasm, on the same engine) as a hostile one;
/// [`Companion::answers`] proves the host still serves other plugins.
pub struct Companion {
    plugin: Plugin,
    pings: u32,
}

impl Companion {
    pub async fn start(case: &str, kind: RuntimeKind) -> Companion {
        let name = format!("{case}-companion");
        let plugin = start(&spec(
            &name,
            nightcrow_test_plugin_artifacts::ECHO,
            kind,
            &[],
        ))
        .await;
        Companion { plugin, pings: 0 }
    }

    /// One round trip: a `pane_output` in, its echoed `status` out.
    pub async fn answers(&mut self) {
        self.pings += 1;
        let text = format!("ping {}", self.pings);
        assert!(self.plugin.send(Event::PaneOutput {
            token: token(200),
            generation: 1,
            text: text.clone(),
        }));
        match next_command(&mut self.plugin).await {
            Command::Status {
                state,
                detail,
                attempt,
                ..
            } => {
                assert_eq!(
                    (state.as_str(), detail.as_deref(), attempt),
                    ("pane_output", Some(text.as_str()), self.pings)
                );
            }
            other => panic!("companion answered {other:?}"),
        }
    }
}

/// Resident memory of this process, from `/proc/self/status`.
pub fn rss_bytes() -> u64 {
    let status = std::fs::read_to_string("/proc/self/status").expect("Linux /proc");
    let kib: u64 = status
        .lines()
        .find_map(|line| line.strip_prefix("VmRSS:"))
        .and_then(|rest| rest.trim().trim_end_matches("kB").trim().parse().ok())
        .expect("VmRSS in /proc/self/status");
    kib * 1024
}

/// Cases that measure this process's RSS run one at a time, so that one case's guest
/// memory does not show up in another's measurement.
/// Cases that compile in this process (cranelift's memory is this process's too) hold it as
/// well; and before the first measurement every test guest is compiled once, so that no
/// case's first start compiles during another's measurement.
pub async fn memory_exclusive() -> tokio::sync::MutexGuard<'static, ()> {
    static LOCK: tokio::sync::Mutex<()> = tokio::sync::Mutex::const_new(());
    static COMPILED: tokio::sync::OnceCell<()> = tokio::sync::OnceCell::const_new();
    let guard = LOCK.lock().await;
    COMPILED.get_or_init(compile_every_guest).await;
    guard
}

async fn compile_every_guest() {
    let dir = Path::new(nightcrow_test_plugin_artifacts::ECHO_WASM)
        .parent()
        .expect("a guests folder");
    for entry in std::fs::read_dir(dir).expect("the guests folder lists") {
        let path = entry.expect("a guest file").path();
        if path.extension().is_some_and(|ext| ext == "wasm") {
            within(
                "a guest compiles",
                runtime().check(&PluginSource::Path(path.clone())),
            )
            .await
            .unwrap_or_else(|error| panic!("{}: {error}", path.display()));
        }
    }
}

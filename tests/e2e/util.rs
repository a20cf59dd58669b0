//! Harness for tests that run real plugins on the real runtime.

use std::future::Future;
use std::path::{Path, PathBuf};
use std::sync::{Arc, LazyLock, Mutex};
use std::time::Duration;

use nightcrow_plugin_host::{
    Plugin, PluginRuntime, PluginSource, PluginSpec, RuntimeConfig, RuntimeKind, Sandbox,
};
use nightcrow_protocol::{Command, Event, Token};
use nightcrow_test_plugin_artifacts::Guest;
use tokio::sync::watch;

/// How long any one awaited step may take before the test fails. Generous: CI shares two
/// cores between several builds. A step normally takes milliseconds.
pub const STEP: Duration = Duration::from_secs(20);

/// Awaits `future`, failing the test with `what` if it takes longer than [`STEP`].
#[track_caller]
pub fn within<F: Future>(what: &str, future: F) -> impl Future<Output = F::Output> {
    let caller = std::panic::Location::caller();
    let what = what.to_owned();
    async move {
        match tokio::time::timeout(STEP, future).await {
            Ok(output) => output,
            Err(_) => panic!("{caller}: timed out waiting for {what}\n{}", logs_dump()),
        }
    }
}

/// The runtime shared by every test: one engine, one epoch ticker, one compilation cache.
pub fn runtime() -> &'static PluginRuntime {
    static RUNTIME: LazyLock<PluginRuntime> = LazyLock::new(|| {
        install_log_capture();
        let cache_dir = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("e2e-wasmtime-cache");
        PluginRuntime::new(RuntimeConfig {
            cache_dir: Some(cache_dir),
        })
        .expect("runtime starts")
    });
    &RUNTIME
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

/// The next command, under [`STEP`]; fails if the plugin's stdout ends first.
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

/// One event the host logged: its level, the `plugin` field (if any) and the rest rendered
/// as text (message first, then the other fields as `name=value`).
#[derive(Debug, Clone)]
pub struct LogLine {
    pub level: tracing::Level,
    pub plugin: Option<String>,
    pub text: String,
}

struct Capture {
    lines: Mutex<Vec<LogLine>>,
    count: watch::Sender<usize>,
}

static CAPTURE: LazyLock<Arc<Capture>> = LazyLock::new(|| {
    Arc::new(Capture {
        lines: Mutex::new(Vec::new()),
        count: watch::Sender::new(0),
    })
});

struct CaptureLayer;

impl<S: tracing::Subscriber> tracing_subscriber::Layer<S> for CaptureLayer {
    fn on_event(&self, event: &tracing::Event<'_>, _: tracing_subscriber::layer::Context<'_, S>) {
        #[derive(Default)]
        struct Fields {
            plugin: Option<String>,
            message: String,
            rest: String,
        }
        impl tracing::field::Visit for Fields {
            fn record_debug(&mut self, field: &tracing::field::Field, value: &dyn std::fmt::Debug) {
                match field.name() {
                    "message" => self.message = format!("{value:?}"),
                    "plugin" => self.plugin = Some(format!("{value:?}")),
                    name => self.rest += &format!(" {name}={value:?}"),
                }
            }
        }
        let mut fields = Fields::default();
        event.record(&mut fields);
        let line = LogLine {
            level: *event.metadata().level(),
            plugin: fields.plugin,
            text: fields.message + &fields.rest,
        };
        CAPTURE.lines.lock().expect("capture lock").push(line);
        CAPTURE.count.send_modify(|count| *count += 1);
    }
}

fn install_log_capture() {
    use tracing_subscriber::Layer;
    use tracing_subscriber::layer::SubscriberExt;
    // wasmtime-wasi traces every host call and logs every guest write (with its bytes) at
    // DEBUG; capturing those would make a flooding guest flood the capture too. The daemon
    // filters them the same way.
    let subscriber = tracing_subscriber::registry().with(
        CaptureLayer.with_filter(
            tracing_subscriber::filter::Targets::new()
                .with_default(tracing::Level::INFO)
                .with_target("nightcrow", tracing::Level::TRACE),
        ),
    );
    tracing::subscriber::set_global_default(subscriber).expect("one subscriber per test binary");
}

/// Everything logged so far about plugin `name`.
pub fn logs_of(name: &str) -> Vec<LogLine> {
    CAPTURE
        .lines
        .lock()
        .expect("capture lock")
        .iter()
        .filter(|line| line.plugin.as_deref() == Some(name))
        .cloned()
        .collect()
}

/// Waits until the host has logged, about plugin `name`, a line containing every needle.
pub async fn logged(name: &str, needles: &[&str]) -> LogLine {
    let mut count = CAPTURE.count.subscribe();
    let find = || {
        logs_of(name)
            .into_iter()
            .find(|line| needles.iter().all(|needle| line.text.contains(needle)))
    };
    within(
        &format!("a log about {name} containing {needles:?}"),
        async {
            loop {
                if let Some(line) = find() {
                    return line;
                }
                count
                    .changed()
                    .await
                    .expect("the capture lives as long as the process");
            }
        },
    )
    .await
}

fn logs_dump() -> String {
    let lines = CAPTURE.lines.lock().expect("capture lock");
    let mut dump = String::from("host log:\n");
    for line in lines.iter() {
        dump += &format!(
            "  {} [{}] {}\n",
            line.level,
            line.plugin.as_deref().unwrap_or("-"),
            line.text
        );
    }
    dump
}

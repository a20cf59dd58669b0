//! What the hub's and the end-to-end test binaries share: the time one awaited step may
//! take before a test fails (with the host's log in the message), one plugin runtime per
//! test binary, and a capture of everything the host logs, to wait for a line or read a
//! plugin's.

use std::future::Future;
use std::path::PathBuf;
use std::sync::{LazyLock, Mutex, OnceLock};
use std::time::Duration;

use nightcrow_plugin_host::{PluginRuntime, RuntimeConfig};
use tokio::sync::watch;

/// How long one awaited step may take before the test fails: a hang detector only,
/// generous because CI shares two cores between several builds. A step normally takes
/// milliseconds.
pub const STEP: Duration = Duration::from_secs(30);

/// Awaits `future`, failing the test with `what` and the host's log if it takes longer than
/// [`STEP`].
#[track_caller]
pub fn within<F: Future>(what: &str, future: F) -> impl Future<Output = F::Output> {
    within_longer(Duration::ZERO, what, future)
}

/// [`within`] for a step that takes `expected` by design (a client paced on purpose): the
/// hang detector starts counting after it.
#[track_caller]
pub fn within_longer<F: Future>(
    expected: Duration,
    what: &str,
    future: F,
) -> impl Future<Output = F::Output> {
    let caller = std::panic::Location::caller();
    let what = what.to_owned();
    async move {
        match tokio::time::timeout(expected + STEP, future).await {
            Ok(output) => output,
            Err(_) => panic!("{caller}: timed out waiting for {what}\n{}", logs_dump()),
        }
    }
}

/// The one runtime of this test binary (engine, epoch ticker, compilation cache in
/// `cache_dir`, which the first call names); the log capture starts with it.
pub fn runtime(cache_dir: impl FnOnce() -> PathBuf) -> &'static PluginRuntime {
    static RUNTIME: OnceLock<PluginRuntime> = OnceLock::new();
    RUNTIME.get_or_init(|| {
        install_log_capture();
        PluginRuntime::new(RuntimeConfig {
            cache_dir: Some(cache_dir()),
        })
        .expect("runtime starts")
    })
}

/// One event the host logged.
#[derive(Debug, Clone)]
pub struct LogLine {
    pub level: tracing::Level,
    /// The `plugin` field, if any.
    pub plugin: Option<String>,
    /// The message and the other fields as `name=value`.
    pub text: String,
    /// The `text` field of a plugin's `log` command, verbatim.
    pub plugin_text: Option<String>,
}

struct Capture {
    lines: Mutex<Vec<LogLine>>,
    count: watch::Sender<usize>,
}

static CAPTURE: LazyLock<Capture> = LazyLock::new(|| Capture {
    lines: Mutex::new(Vec::new()),
    count: watch::Sender::new(0),
});

struct CaptureLayer;

impl<S: tracing::Subscriber> tracing_subscriber::Layer<S> for CaptureLayer {
    fn on_event(&self, event: &tracing::Event<'_>, _: tracing_subscriber::layer::Context<'_, S>) {
        #[derive(Default)]
        struct Fields {
            plugin: Option<String>,
            message: String,
            rest: String,
            text: Option<String>,
        }
        impl tracing::field::Visit for Fields {
            fn record_str(&mut self, field: &tracing::field::Field, value: &str) {
                match field.name() {
                    "plugin" => self.plugin = Some(value.to_owned()),
                    "text" => self.text = Some(value.to_owned()),
                    _ => self.record_debug(field, &value),
                }
            }
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
            plugin_text: fields.text,
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

/// Everything logged so far about `plugin`.
pub fn logs_of(plugin: &str) -> Vec<LogLine> {
    CAPTURE
        .lines
        .lock()
        .expect("capture lock")
        .iter()
        .filter(|line| line.plugin.as_deref() == Some(plugin))
        .cloned()
        .collect()
}

/// Waits until the host has logged, about `plugin`, a line containing every needle (in its
/// fields or in the plugin's own log text).
pub async fn logged(plugin: &str, needles: &[&str]) -> LogLine {
    wait_logs(
        &format!("a log about {plugin} containing {needles:?}"),
        || {
            logs_of(plugin).into_iter().find(|line| {
                let haystack = format!(
                    "{} {}",
                    line.text,
                    line.plugin_text.as_deref().unwrap_or("")
                );
                needles.iter().all(|needle| haystack.contains(needle))
            })
        },
    )
    .await
}

/// Waits, within [`STEP`], until `find` finds something in the log.
pub async fn wait_logs<T>(what: &str, mut find: impl FnMut() -> Option<T>) -> T {
    let mut count = CAPTURE.count.subscribe();
    within(what, async {
        loop {
            if let Some(found) = find() {
                return found;
            }
            count.changed().await.expect("the capture lives on");
        }
    })
    .await
}

/// Everything the host logged, for a failure message.
pub fn logs_dump() -> String {
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

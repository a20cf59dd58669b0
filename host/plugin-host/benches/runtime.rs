//! The plugin runtime's benchmark (issue 5): every figure measured for a wasm guest and for
//! the same guest built natively, in the same run, printed as a table with wasm/native
//! ratios. Native is the baseline: it is what a plugin costs without a sandbox.
//!
//! A second table compares plugins by language: the bundled recovery plugin and the Rust
//! example against the Python example (componentize-py): file size, cold and warm start,
//! and resident memory per idle instance.
//!
//! `cargo bench -p nightcrow-plugin-host --bench runtime` measures; `-- --quick` (what
//! `.ci/run` uses, through `cargo test --bench runtime`) runs every step with tiny counts to
//! prove the benchmark works, and its numbers mean nothing.

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use nightcrow_plugin_host::{
    Plugin, PluginRuntime, PluginSource, PluginSpec, RuntimeConfig, RuntimeKind, Sandbox, Usage,
};
use nightcrow_protocol::{Command, Event, Token};
use nightcrow_test_plugin_artifacts::{COMMAND_FLOOD, ECHO, Guest};

/// How much of each measurement to do.
struct Counts {
    round_trips: usize,
    flood_lines: u64,
    starts: usize,
    idle_instances: usize,
    idle_window: Duration,
    /// Starts per language plugin and instances kept idle for its memory reading.
    language_rounds: usize,
}

const FULL: Counts = Counts {
    round_trips: 5_000,
    flood_lines: 200_000,
    starts: 20,
    idle_instances: 100,
    idle_window: Duration::from_secs(3),
    language_rounds: 5,
};

const QUICK: Counts = Counts {
    round_trips: 20,
    flood_lines: 1_000,
    starts: 2,
    idle_instances: 3,
    idle_window: Duration::from_millis(100),
    language_rounds: 1,
};

const KINDS: [RuntimeKind; 2] = [RuntimeKind::Wasm, RuntimeKind::Native];

fn main() {
    let quick = std::env::args().any(|arg| arg == "--quick");
    let counts = if quick { QUICK } else { FULL };
    let tokio = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .expect("tokio runtime");
    let scratch = tempfile::tempdir().expect("temporary directory");
    let rows = tokio.block_on(measure(&counts, scratch.path()));
    print_table(&rows, quick);
    let languages = tokio.block_on(languages(&counts, scratch.path()));
    print_languages(&languages);
}

/// One plugin of the by-language table.
struct Language {
    plugin: &'static str,
    kib: f64,
    cold_ms: f64,
    warm_ms: f64,
    idle_rss_kib: f64,
}

/// The plugins compared by language, measured the same way: a start is `start` to a clean
/// exit after `pane_opened` and `shutdown` (so the guest's own runtime has initialised and
/// read its input); cold over an empty cache directory, warm from a fresh runtime over the
/// filled one. Memory: `language_rounds` instances that each took a `pane_opened`.
async fn languages(counts: &Counts, scratch: &Path) -> Vec<Language> {
    let read = |path: &str| std::fs::read(path).expect("the example is built");
    let plugins = [
        (
            "nightcrow-recovery (Rust, bundled)",
            nightcrow_builtin::lookup("builtin:nightcrow-recovery")
                .expect("bundled")
                .to_vec(),
        ),
        (
            "regex-attention (Rust example)",
            read(nightcrow_example_artifacts::REGEX_ATTENTION_WASM),
        ),
        (
            "python-status (Python example)",
            read(nightcrow_example_artifacts::PYTHON_STATUS_WASM),
        ),
    ];
    let mut measured = Vec::new();
    for (plugin, bytes) in plugins {
        let source = PluginSource::Builtin {
            name: plugin.to_owned(),
            bytes: bytes.clone().into(),
        };
        let spec = spec_of(plugin, source, RuntimeKind::Wasm, &[]);
        let (mut cold, mut warm) = (Vec::new(), Vec::new());
        for round in 0..counts.language_rounds {
            let cache_dir = scratch.join(format!("language-{}-{round}", measured.len()));
            for samples in [&mut cold, &mut warm] {
                let runtime = PluginRuntime::new(RuntimeConfig {
                    cache_dir: Some(cache_dir.clone()),
                })
                .expect("runtime");
                let began = Instant::now();
                let plugin = start(&runtime, &spec).await;
                opened_then_stopped(plugin).await;
                samples.push(began.elapsed().as_secs_f64() * 1e3);
            }
        }
        let runtime = PluginRuntime::new(RuntimeConfig {
            cache_dir: Some(scratch.join(format!("language-{}-0", measured.len()))),
        })
        .expect("runtime");
        opened_then_stopped(start(&runtime, &spec).await).await;
        let before = usage();
        let mut idle = Vec::new();
        for _ in 0..counts.language_rounds {
            let plugin = start(&runtime, &spec).await;
            plugin.send(pane_opened());
            idle.push(plugin);
        }
        tokio::time::sleep(counts.idle_window).await;
        let loaded = usage();
        for plugin in &idle {
            plugin.shutdown().await;
        }
        measured.push(Language {
            plugin,
            kib: bytes.len() as f64 / 1024.0,
            cold_ms: percentile(&cold, 0.5),
            warm_ms: percentile(&warm, 0.5),
            idle_rss_kib: loaded.rss_kib.saturating_sub(before.rss_kib) as f64
                / counts.language_rounds as f64,
        });
    }
    measured
}

fn pane_opened() -> Event {
    Event::PaneOpened {
        token: Token::from_bytes([7; 16]),
        generation: 1,
        title: None,
        command: Some("codex".to_owned()),
        cwd: "/tmp".to_owned(),
        opened_ms: None,
    }
}

async fn opened_then_stopped(mut plugin: Plugin) {
    plugin.send(pane_opened());
    plugin.begin_shutdown();
    while plugin.recv().await.is_some() {}
    let (cause, requested) = plugin.ended().await;
    assert!(requested, "{} ended by itself: {cause}", plugin.name());
}

fn print_languages(languages: &[Language]) {
    println!(
        "\n| {:<36} | {:>9} | {:>13} | {:>13} | {:>18} |",
        "plugin", "size KiB", "cold start ms", "warm start ms", "idle RSS/inst. KiB"
    );
    println!(
        "|{:-<38}|{:->11}|{:->15}|{:->15}|{:->20}|",
        "", "", "", "", ""
    );
    for language in languages {
        println!(
            "| {:<36} | {:>9.0} | {:>13.1} | {:>13.1} | {:>18.0} |",
            language.plugin,
            language.kib,
            language.cold_ms,
            language.warm_ms,
            language.idle_rss_kib
        );
    }
}

/// One line of the table: a figure for wasm and for native.
struct Row {
    what: &'static str,
    unit: &'static str,
    wasm: f64,
    native: f64,
}

async fn measure(counts: &Counts, scratch: &Path) -> Vec<Row> {
    let runtime = PluginRuntime::new(RuntimeConfig {
        cache_dir: Some(scratch.join("cache")),
    })
    .expect("runtime");
    let mut rows = Vec::new();

    let [cold, warm, restart] = starts(counts, scratch).await;
    rows.push(pair("cold start (compile + instantiate)", "ms", cold));
    rows.push(pair("warm start (from the disk cache)", "ms", warm));
    rows.push(pair("restart (compiled code in memory)", "ms", restart));

    let mut p50 = [0.0; 2];
    let mut p99 = [0.0; 2];
    let mut throughput = [0.0; 2];
    for (i, kind) in KINDS.into_iter().enumerate() {
        let latencies = round_trips(&runtime, kind, counts.round_trips).await;
        p50[i] = percentile(&latencies, 0.50);
        p99[i] = percentile(&latencies, 0.99);
        throughput[i] = flood(&runtime, kind, counts.flood_lines).await;
    }
    rows.push(pair("event → command round trip p50", "µs", p50));
    rows.push(pair("event → command round trip p99", "µs", p99));
    rows.push(pair(
        "plugin → host throughput, 200 B lines",
        "lines/s",
        throughput,
    ));

    let mut memory = [0.0; 2];
    let mut cpu = [0.0; 2];
    for (i, kind) in KINDS.into_iter().enumerate() {
        (memory[i], cpu[i]) = idle(&runtime, kind, counts).await;
    }
    rows.push(pair("resident memory per idle instance", "KiB", memory));
    rows.push(pair("CPU of an idle instance", "% of a core", cpu));
    rows
}

fn pair(what: &'static str, unit: &'static str, [wasm, native]: [f64; 2]) -> Row {
    Row {
        what,
        unit,
        wasm,
        native,
    }
}

fn spec(name: &str, guest: Guest, kind: RuntimeKind, args: &[String]) -> PluginSpec {
    let path = match kind {
        RuntimeKind::Wasm => guest.wasm,
        RuntimeKind::Native => guest.native.expect("the benchmark's guests build natively"),
    };
    spec_of(name, PluginSource::Path(PathBuf::from(path)), kind, args)
}

/// A spec with no grants and default limits.
fn spec_of(name: &str, source: PluginSource, kind: RuntimeKind, args: &[String]) -> PluginSpec {
    PluginSpec {
        name: name.to_owned(),
        runtime: kind,
        source,
        args: args.to_vec(),
        env: Vec::new(),
        runtime_dir: std::env::temp_dir().join("nightcrow-bench"),
        sandbox: Sandbox::default(),
    }
}

async fn start(runtime: &PluginRuntime, spec: &PluginSpec) -> Plugin {
    runtime
        .start(spec)
        .await
        .unwrap_or_else(|error| panic!("{} does not start: {error}", spec.name))
}

fn output(n: u32) -> Event {
    Event::PaneOutput {
        token: Token::from_bytes([7; 16]),
        generation: 1,
        text: format!("line {n}"),
    }
}

/// Until the first answer arrives: a start counts only once the guest can serve.
async fn first_answer(plugin: &mut Plugin) {
    assert!(plugin.send(output(0)));
    let answer = plugin.recv().await.expect("the echo guest answers");
    assert!(matches!(answer, Command::Status { .. }), "{answer:?}");
}

/// Milliseconds from `start` to a first answer. Cold: a runtime over an empty cache
/// directory (wasm compiles). Warm: a fresh runtime (a daemon restart) over the filled
/// directory (wasm loads compiled code). Restart: the same runtime again (a supervised
/// restart; the compiled component is reused from memory). Creating a runtime is the
/// daemon's one-time cost and is not counted. A native start is a spawn every time.
async fn starts(counts: &Counts, scratch: &Path) -> [[f64; 2]; 3] {
    let mut medians = [[0.0; 2]; 3];
    for (i, kind) in KINDS.into_iter().enumerate() {
        let spec = spec("bench-start", ECHO, kind, &[]);
        let mut samples: [Vec<f64>; 3] = Default::default();
        for round in 0..counts.starts {
            let cache_dir = scratch.join(format!("start-{kind:?}-{round}"));
            let mut runtime = None;
            for (step, samples) in samples.iter_mut().enumerate() {
                if step < 2 {
                    runtime = Some(
                        PluginRuntime::new(RuntimeConfig {
                            cache_dir: Some(cache_dir.clone()),
                        })
                        .expect("runtime"),
                    );
                }
                let runtime = runtime.as_ref().expect("created in step 0");
                let began = Instant::now();
                let mut plugin = start(runtime, &spec).await;
                first_answer(&mut plugin).await;
                samples.push(began.elapsed().as_secs_f64() * 1e3);
                plugin.shutdown().await;
            }
        }
        for (median, samples) in medians.iter_mut().zip(&samples) {
            median[i] = percentile(samples, 0.5);
        }
    }
    medians
}

/// Microseconds per round trip, one event in flight at a time.
async fn round_trips(runtime: &PluginRuntime, kind: RuntimeKind, count: usize) -> Vec<f64> {
    let mut plugin = start(runtime, &spec("bench-echo", ECHO, kind, &[])).await;
    first_answer(&mut plugin).await;
    let mut latencies = Vec::with_capacity(count);
    for n in 1..=count {
        let began = Instant::now();
        assert!(plugin.send(output(n as u32)));
        plugin.recv().await.expect("the echo guest answers");
        latencies.push(began.elapsed().as_secs_f64() * 1e6);
    }
    plugin.shutdown().await;
    latencies
}

/// Lines per second the host decodes from a guest writing `lines` 200-byte commands.
async fn flood(runtime: &PluginRuntime, kind: RuntimeKind, lines: u64) -> f64 {
    let args = [format!("count={lines}"), "bytes=200".to_owned()];
    let mut plugin = start(runtime, &spec("bench-flood", COMMAND_FLOOD, kind, &args)).await;
    let began = Instant::now();
    for _ in 0..lines {
        let command = plugin.recv().await.expect("the flood guest writes");
        assert!(matches!(command, Command::Log { .. }), "{command:?}");
    }
    let rate = lines as f64 / began.elapsed().as_secs_f64();
    plugin.shutdown().await;
    rate
}

/// KiB of resident memory and percent of a core per instance, with `idle_instances`
/// instances started and answering once, then left alone for `idle_window`.
async fn idle(runtime: &PluginRuntime, kind: RuntimeKind, counts: &Counts) -> (f64, f64) {
    let spec = spec("bench-idle", ECHO, kind, &[]);
    // One instance first, so that compiling and the runtime's own start are not counted.
    let mut warmup = start(runtime, &spec).await;
    first_answer(&mut warmup).await;
    let before = usage();
    let mut plugins = Vec::with_capacity(counts.idle_instances);
    for _ in 0..counts.idle_instances {
        let mut plugin = start(runtime, &spec).await;
        first_answer(&mut plugin).await;
        plugins.push(plugin);
    }
    let loaded = usage();
    tokio::time::sleep(counts.idle_window).await;
    let after = usage();
    for plugin in plugins.iter().chain([&warmup]) {
        plugin.shutdown().await;
    }
    let instances = counts.idle_instances as f64;
    let rss_kib = loaded.rss_kib.saturating_sub(before.rss_kib) as f64 / instances;
    let cpu = after.cpu_percent_since(&loaded, counts.idle_window.as_secs_f64());
    (rss_kib, cpu / instances)
}

fn usage() -> Usage {
    Usage::now().expect("the benchmark reads /proc (Linux)")
}

fn percentile(samples: &[f64], at: f64) -> f64 {
    let mut sorted = samples.to_vec();
    sorted.sort_by(f64::total_cmp);
    let index = ((sorted.len() as f64 - 1.0) * at).round() as usize;
    sorted.get(index).copied().unwrap_or(f64::NAN)
}

fn print_table(rows: &[Row], quick: bool) {
    if quick {
        println!("(--quick: tiny counts; these numbers only show that every step runs)");
    }
    println!(
        "| {:<40} | {:>12} | {:>12} | {:>11} | {:<11} |",
        "measure", "wasm", "native", "wasm/native", "unit"
    );
    println!(
        "|{:-<42}|{:->14}|{:->14}|{:->13}|{:-<13}|",
        "", "", "", "", ""
    );
    for row in rows {
        // Two idle instances that used no CPU at all have no ratio worth printing.
        let ratio = if row.native > 0.0 {
            format!("{:.2}", row.wasm / row.native)
        } else {
            "-".to_owned()
        };
        println!(
            "| {:<40} | {:>12.2} | {:>12.2} | {:>11} | {:<11} |",
            row.what, row.wasm, row.native, ratio, row.unit
        );
    }
}

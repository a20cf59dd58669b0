//! The hub's throughput benchmark: a pane `cat`s a large file and one client receives every
//! byte; measured with no plugin, with the bundled recovery plugin watching the pane as wasm,
//! and with the same plugin built natively. Two baselines in the same run show what the hub
//! costs against the limit: the same `cat` read straight off a bare PTY (no hub at all), and,
//! when tmux is installed, through a tmux session with a client attached (until the last line
//! is on the client's screen). Printed as a table with ratios against the bare PTY and
//! against the hub with no plugin, and the CPU time this process spent on each row (a native
//! plugin's own CPU is in its process, not counted), which holds on a busy machine where
//! the wall-clock ratios do not.
//!
//! `cargo bench -p nightcrow-hub --bench throughput` measures (200 MB); `-- --quick` (through
//! `cargo test -p nightcrow-hub --bench throughput -- --quick`) streams 2 MB to prove the
//! benchmark works, and its numbers mean nothing.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use nightcrow_client_protocol::{Frame, HubMessage};
use nightcrow_hub::{Hub, HubConfig, HubPlugin, StartupCommand};
use nightcrow_pane::Shell;
use nightcrow_plugin_host::{
    PluginRuntime, PluginSource, PluginSpec, RuntimeConfig, RuntimeKind, Sandbox,
};

const RECOVERY: &str = "nightcrow-recovery";
/// Every line of the file: 63 characters and a newline, which the PTY turns into `\r\n`.
const LINE: &[u8; 64] = b"The quick brown fox jumps over the lazy dog 0123456789 abcdefgh\n";

fn main() {
    let quick = std::env::args().any(|arg| arg == "--quick");
    let lines = if quick { 32 * 1024 } else { 3_200_000 };
    let scratch = tempfile::tempdir().expect("temporary directory");
    let file = scratch.path().join("stream.txt");
    write_file(&file, lines);
    let expected = lines * (LINE.len() + 1);
    let runtime = PluginRuntime::new(RuntimeConfig {
        cache_dir: Some(scratch.path().join("cache")),
    })
    .expect("plugin runtime");
    // A daemon compiles a plugin file once per machine and keeps the code (the runtime
    // bench times that cold start): compiled here, cranelift would run on the two cores
    // during the wasm row's flood.
    tokio::runtime::Builder::new_current_thread()
        .build()
        .expect("compile runtime")
        .block_on(runtime.check(&recovery_source(RuntimeKind::Wasm)))
        .expect("the recovery plugin compiles");

    let mut rows = vec![Row::timed("bare PTY, no hub", || {
        Some(bare_pty(&file, expected))
    })];
    if let Some(seconds) = tmux(&file) {
        // tmux's own work is in its server, not in this process: no CPU figure.
        rows.push(Row {
            what: "tmux, a client attached",
            seconds: Some(seconds),
            cpu_secs: None,
        });
    }
    for (what, plugin) in [
        ("no plugin", None),
        ("recovery, wasm", Some(RuntimeKind::Wasm)),
        ("recovery, native", Some(RuntimeKind::Native)),
    ] {
        rows.push(Row::timed(what, || {
            measure(&runtime, scratch.path(), &file, expected, plugin)
        }));
    }
    print_table(&rows, expected, quick);
}

/// One row of the table.
struct Row {
    what: &'static str,
    /// `None` when the client fell behind and was disconnected.
    seconds: Option<f64>,
    /// CPU time of this process (every thread: PTY reader, hub, wasm plugin, client) over
    /// the row: what the work cost, whatever else the machine was doing.
    cpu_secs: Option<f64>,
}

impl Row {
    fn timed(what: &'static str, run: impl FnOnce() -> Option<f64>) -> Row {
        let before = process_cpu_secs();
        let seconds = run();
        Row {
            what,
            seconds,
            cpu_secs: Some(process_cpu_secs() - before),
        }
    }
}

/// utime + stime of this process, fields 14 and 15 of `/proc/self/stat` (stat(5)), in
/// clock ticks of 1/100 s.
fn process_cpu_secs() -> f64 {
    let stat = std::fs::read_to_string("/proc/self/stat").unwrap_or_default();
    let after_name = stat.rsplit_once(')').map_or("", |(_, rest)| rest);
    let ticks: u64 = after_name
        .split_whitespace()
        .skip(11)
        .take(2)
        .filter_map(|field| field.parse::<u64>().ok())
        .sum();
    ticks as f64 / 100.0
}

/// Seconds from spawning `cat` in a PTY of our own until every byte is read off it: the
/// limit a hub's reader thread works against.
fn bare_pty(file: &Path, expected: usize) -> f64 {
    use portable_pty::CommandBuilder;
    use std::io::Read;
    let pair = open_pty(24, 80);
    let mut reader = pair.master.try_clone_reader().expect("a reader");
    let mut command = CommandBuilder::new("cat");
    command.arg(file);
    let started = Instant::now();
    let mut child = pair.slave.spawn_command(command).expect("cat starts");
    drop(pair.slave);
    let mut buffer = vec![0u8; 64 * 1024];
    let mut received = 0;
    while received < expected {
        match reader.read(&mut buffer) {
            Ok(0) | Err(_) => panic!("the PTY ended after {received} of {expected} bytes"),
            Ok(n) => received += n,
        }
    }
    let seconds = started.elapsed().as_secs_f64();
    let _ = child.wait();
    seconds
}

/// Seconds from starting a tmux session that `cat`s the file, with a client attached in a
/// PTY of 50×200, until the line printed after it is on that client's screen; `None`
/// without tmux.
fn tmux(file: &Path) -> Option<f64> {
    use portable_pty::CommandBuilder;
    use std::io::Read;
    std::process::Command::new("tmux").arg("-V").output().ok()?;
    let server = format!("nightcrow-bench-{}", std::process::id());
    let pair = open_pty(50, 200);
    let mut reader = pair.master.try_clone_reader().expect("a reader");
    let mut command = CommandBuilder::new("tmux");
    command.args(["-L", &server, "-f", "/dev/null", "new-session"]);
    // Printed with a format, so the command line tmux may show never contains the marker.
    command.arg(format!(
        "cat '{}'; printf 'END-%s\\n' OF-BENCH; sleep 60",
        file.display()
    ));
    command.env("TERM", "xterm-256color");
    let started = Instant::now();
    let mut client = pair.slave.spawn_command(command).expect("tmux starts");
    drop(pair.slave);
    let marker = b"END-OF-BENCH";
    let mut buffer = vec![0u8; 64 * 1024];
    let mut tail: Vec<u8> = Vec::new();
    let seconds = loop {
        match reader.read(&mut buffer) {
            Ok(0) | Err(_) => panic!("the tmux client ended before the end of the file"),
            Ok(n) => {
                tail.extend_from_slice(&buffer[..n]);
                if tail.windows(marker.len()).any(|window| window == marker) {
                    break started.elapsed().as_secs_f64();
                }
                let keep = tail.len().saturating_sub(marker.len());
                tail.drain(..keep);
            }
        }
    };
    let _ = std::process::Command::new("tmux")
        .args(["-L", &server, "kill-server"])
        .status();
    let _ = client.wait();
    Some(seconds)
}

fn open_pty(rows: u16, cols: u16) -> portable_pty::PtyPair {
    portable_pty::native_pty_system()
        .openpty(portable_pty::PtySize {
            rows,
            cols,
            pixel_width: 0,
            pixel_height: 0,
        })
        .expect("a PTY")
}

fn write_file(path: &Path, lines: usize) {
    let mut out = std::io::BufWriter::new(std::fs::File::create(path).expect("stream file"));
    for _ in 0..lines {
        out.write_all(LINE).expect("write");
    }
    out.flush().expect("flush");
}

fn recovery_source(kind: RuntimeKind) -> PluginSource {
    match kind {
        RuntimeKind::Wasm => PluginSource::Builtin {
            name: RECOVERY.to_owned(),
            bytes: nightcrow_builtin::lookup(RECOVERY).expect("bundled").into(),
        },
        RuntimeKind::Native => {
            PluginSource::Path(nightcrow_test_plugin_artifacts::RECOVERY_NATIVE.into())
        }
    }
}

fn recovery(kind: RuntimeKind, scratch: &Path) -> HubPlugin {
    HubPlugin {
        spec: PluginSpec {
            name: RECOVERY.to_owned(),
            runtime: kind,
            source: recovery_source(kind),
            args: Vec::new(),
            env: Vec::new(),
            runtime_dir: scratch.join("plugin-run"),
            sandbox: Sandbox::default(),
        },
        allowed_resume_flags: vec!["resume".to_owned(), "--session".to_owned()],
        watch_on_signal: false,
        enabled: true,
    }
}

/// Seconds from the start of the `cat` until the client has every byte; `None` when the
/// client fell behind and was disconnected.
fn measure(
    runtime: &PluginRuntime,
    scratch: &Path,
    file: &Path,
    expected: usize,
    plugin: Option<RuntimeKind>,
) -> Option<f64> {
    let repo = tempfile::tempdir_in(scratch).expect("repo dir");
    let mut config = HubConfig::new(repo.path().to_path_buf(), scratch.join("run"));
    config.shell = Shell {
        program: PathBuf::from("/bin/sh"),
        command_args: vec!["-c".to_owned()],
    };
    config.startup_commands = vec![StartupCommand {
        name: Some("stream".to_owned()),
        // Waits for a line first, so that the stream starts once the client is attached.
        command: format!("read go; cat '{}'; exec cat", file.display()),
        plugin: plugin.map(|_| RECOVERY.to_owned()),
    }];
    config.plugins = plugin
        .map(|kind| recovery(kind, scratch))
        .into_iter()
        .collect();

    // The hub and its plugin on one runtime, the client on another thread, as a daemon's
    // socket writer would be.
    let hub_runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("hub runtime");
    let hub = {
        let _context = hub_runtime.enter();
        Hub::spawn(config, runtime.clone()).expect("hub spawns")
    };
    let client_runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("client runtime");
    client_runtime.block_on(async {
        let mut client = hub.attach().await.expect("attach");
        let pane = loop {
            match client.recv().await {
                Some(Frame::Message(HubMessage::Created { pane, .. })) => break pane,
                Some(_) => {}
                None => panic!("the hub ended"),
            }
        };
        let started = Instant::now();
        hub.input(nightcrow_guard::PaneId::new(pane), "\r")
            .await
            .expect("input");
        // The echo of the line that starts the stream.
        let mut received = 0usize;
        let target = expected + 2;
        let outcome = loop {
            match tokio::time::timeout(Duration::from_secs(120), client.recv()).await {
                Ok(Some(Frame::Output { pane: from, bytes })) if from == pane => {
                    received += bytes.len();
                    if received >= target {
                        break Some(started.elapsed().as_secs_f64());
                    }
                }
                Ok(Some(_)) => {}
                Ok(None) => break None,
                Err(_) => panic!("stalled after {received} of {target} bytes"),
            }
        };
        hub.shutdown().await;
        outcome
    })
}

fn print_table(rows: &[Row], bytes: usize, quick: bool) {
    let megabytes = bytes as f64 / 1e6;
    println!(
        "hub throughput: {megabytes:.0} MB through a PTY to one client{}",
        if quick {
            " (--quick: numbers mean nothing)"
        } else {
            ""
        }
    );
    println!(
        "{:<24} {:>10} {:>10} {:>12} {:>12} {:>10} {:>12}",
        "", "seconds", "MB/s", "vs bare PTY", "vs no plugin", "CPU s", "CPU vs bare"
    );
    let row_of = |name: &str| rows.iter().find(|row| row.what == name);
    let bare = row_of("bare PTY, no hub");
    let no_plugin = row_of("no plugin");
    for row in rows {
        let what = row.what;
        let Some(seconds) = row.seconds else {
            println!("{what:<24} {:>10}", "client fell behind (disconnected)");
            continue;
        };
        let speed = |base: Option<&Row>| {
            base.and_then(|base| base.seconds)
                .map_or(f64::NAN, |base| base / seconds)
        };
        let (cpu, cpu_ratio) = match (row.cpu_secs, bare.and_then(|bare| bare.cpu_secs)) {
            (Some(cpu), Some(base)) => (format!("{cpu:.2}"), format!("{:.2}", cpu / base)),
            (Some(cpu), None) => (format!("{cpu:.2}"), "-".to_owned()),
            (None, _) => ("-".to_owned(), "-".to_owned()),
        };
        println!(
            "{what:<24} {seconds:>10.3} {:>10.1} {:>12.2} {:>12.2} {cpu:>10} {cpu_ratio:>12}",
            megabytes / seconds,
            speed(bare),
            speed(no_plugin)
        );
    }
}

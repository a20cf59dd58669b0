//! What the TUI client (`nightcrow attach`) costs over a bare socket client, end to end,
//! with the real binary: a real daemon in a temp `NIGHTCROW_HOME`, the TUI in a real PTY
//! whose output is parsed by a terminal emulator the way a person's terminal would.
//!
//! - **Throughput**: a pane `cat`s a big file of ~100-column lines; the time until its last
//!   byte is seen, by a raw socket client (the bytes arrive) and through the TUI (the end
//!   marker is on the screen it draws).
//! - **Keystroke to echo**: one key in, the time until its echo comes back, on a raw socket
//!   client (an output frame with the letter) and through the TUI (the letter on screen).
//! - **The web client** ([`web_client`]): the same two measurements through a headless
//!   Chromium logged in to the daemon's web client, in the same runs, against the same raw
//!   socket client.
//! - **At rest**: a daemon holding 8 idle panes watched by the bundled recovery plugin, its
//!   CPU over 60 s and its resident memory per pane (Linux: read from `/proc`).
//!
//! It prints a markdown table on stdout; progress goes to stderr. A throughput run whose
//! client stops hearing anything before the end is shown as lost and makes the bench exit
//! with status 1; a client the hub drops for falling behind attaches again by itself, and
//! the drops are counted below the table.
//!
//! ```text
//! cargo bench --bench attach               # release build, 200 MB, 9 runs, 200 keys
//!                                          # (every size: one untimed raw run first)
//! cargo test --bench attach                # the same sizes in the test profile
//! cargo test --bench attach -- --quick     # 4 MB, 1 run, 20 keys: proves it works (CI)
//! ```

use std::io::{BufWriter, Read, Write};
use std::num::NonZeroU16;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::{Arc, Condvar, Mutex, MutexGuard};
use std::time::{Duration, Instant};

use nightcrow_client::{Connection, Home};
use nightcrow_client_protocol::{ClientRequest, Frame, HubMessage};
use portable_pty::{CommandBuilder, MasterPty, PtySize, native_pty_system};
use tokio::sync::mpsc::{UnboundedReceiver, UnboundedSender};

mod web_client;

/// The terminal the TUI runs in, and the size the raw client asks for its panes.
const ROWS: u16 = 50;
const COLS: u16 = 200;
/// Printed once the file is out. The command prints it with `printf 'END-%s\n' OF-BENCH`,
/// so the echo of the command line itself never contains it.
const MARKER: &str = "END-OF-BENCH";
/// Keys typed per letter before the line is killed: the screen stays one short line, so
/// the TUI never scrolls or wraps while it is measured.
const KEYS_PER_ROUND: usize = 40;
/// The wait before each key. Without it every key would arrive a moment after the TUI drew
/// the previous echo and its own echo would wait for the next frame (60 a second), so the
/// TUI column would measure the frame cap, not the path. 25 ms is a quick typist (40 keys
/// a second); the raw client gets the same pace so the two columns compare.
const TYPING_GAP: Duration = Duration::from_millis(25);
/// How long one step may take before the bench gives up: only there to turn a hang into a
/// message.
const STEP: Duration = Duration::from_secs(30);
/// How long the whole file may take through either client.
const FLOOD_PATIENCE: Duration = Duration::from_secs(600);
/// During a flood a client hears something many times a second; this long without
/// anything, the run is over without its end.
const STALL: Duration = Duration::from_secs(10);

/// How much work one invocation does.
struct Sizes {
    file_bytes: usize,
    runs: usize,
    keys: usize,
    /// How long the daemon is watched at rest.
    rest: Duration,
}

impl Sizes {
    fn from_args() -> Sizes {
        // `cargo bench` passes `--bench`; anything but `--quick` is ignored.
        if std::env::args().skip(1).any(|arg| arg == "--quick") {
            Sizes {
                file_bytes: 4_000_000,
                runs: 1,
                keys: 20,
                rest: Duration::from_secs(1),
            }
        } else {
            Sizes {
                file_bytes: 200_000_000,
                runs: 9,
                keys: 200,
                rest: Duration::from_secs(60),
            }
        }
    }
}

fn main() {
    let sizes = Sizes::from_args();
    let tokio = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .expect("a tokio runtime");
    let daemon = Daemon::start(&tokio, &web_client::config());
    let mut web = web_client::WebClient::start(&tokio, &daemon);
    let file = daemon.home.path().join("lines.txt");
    let lines = write_lines(&file, sizes.file_bytes);
    let command = format!("cat {}; printf 'END-%s\\n' OF-BENCH", file.display());

    // Untimed: the first flood through a new daemon (and beside a browser that has just
    // started) ran at a half to a third of the later ones' pace, which made every first
    // ratio an outlier and moved the medians.
    let raw_run =
        || daemon.flood(|| tokio.block_on(raw_throughput(&daemon, &command, sizes.file_bytes)));
    eprintln!("warm-up run: raw socket client");
    raw_run().expect("the warm-up flood arrives");
    // Interleaved so that whatever else the machine does affects both clients alike.
    let mut raw_runs = Vec::new();
    let mut tui_runs = Vec::new();
    let mut web_runs = Vec::new();
    for run in 1..=sizes.runs {
        eprintln!("throughput run {run}/{}: raw socket client", sizes.runs);
        raw_runs.push(raw_run());
        eprintln!("throughput run {run}/{}: TUI", sizes.runs);
        tui_runs.push(daemon.flood(|| tui_throughput(&daemon, &command)));
        eprintln!("throughput run {run}/{}: web client", sizes.runs);
        web_runs.push(daemon.flood(|| web.throughput(&tokio, &daemon, &command)));
    }
    eprintln!("keystroke latency: raw socket client");
    let mut raw_keys = tokio.block_on(raw_latency(&daemon, sizes.keys));
    eprintln!("keystroke latency: TUI");
    let mut tui_keys = tui_latency(&daemon, sizes.keys);
    eprintln!("keystroke latency: TUI, a 2x2 split with a flood in another pane");
    let flood_loop = format!("while :; do cat {}; done", file.display());
    let mut split_keys = tui_split_latency(&daemon, sizes.keys, &flood_loop);
    eprintln!("keystroke latency: web client");
    let mut web_keys = web.latency(&tokio, &daemon, sizes.keys);
    drop(web);
    drop(daemon);
    eprintln!("the daemon at rest: {IDLE_PANES} panes watched by the recovery plugin");
    let rest = at_rest(&tokio, sizes.rest);

    let profile = if cfg!(debug_assertions) {
        "test profile (dependencies at opt-level 2)"
    } else {
        "release"
    };
    println!("## `nightcrow attach` against a raw socket client\n");
    println!(
        "{profile}; file {:.0} MB ({lines} lines of 100 bytes); terminal {ROWS} rows x {COLS} \
         columns\n",
        megabytes(sizes.file_bytes)
    );
    let row = |name: &str, raw: &Result<Duration, Lost>, tui: &Result<Duration, Lost>| {
        let rate = |elapsed: &Duration| megabytes(sizes.file_bytes) / elapsed.as_secs_f64();
        let cells = |run: &Result<Duration, Lost>| match run {
            Ok(elapsed) => format!("{:.3} | {:.1}", elapsed.as_secs_f64(), rate(elapsed)),
            Err(lost) => format!("— | {lost}"),
        };
        let ratio = pace_ratio(raw, tui).map_or_else(|| "—".to_owned(), |r| format!("{r:.2}"));
        println!("| {name} | {} | {} | {ratio} |", cells(raw), cells(tui));
    };
    // Over the runs that finished: a lost run has no time to rank.
    let median_of = |runs: &[Result<Duration, Lost>]| {
        let mut done: Vec<Duration> = runs.iter().filter_map(|run| run.clone().ok()).collect();
        if done.is_empty() {
            Err(Lost::NoneFinished)
        } else {
            Ok(median(&mut done))
        }
    };
    for (client, runs, keys) in [
        ("TUI", &tui_runs, &mut tui_keys),
        ("web", &web_runs, &mut web_keys),
    ] {
        println!("### {client}: throughput, `cat` of the file, until its last byte is seen\n");
        println!("| run | raw: s | raw: MB/s | {client}: s | {client}: MB/s | {client}/raw |");
        println!("|---|---|---|---|---|---|");
        for (run, (raw, other)) in raw_runs.iter().zip(runs.iter()).enumerate() {
            row(&(run + 1).to_string(), raw, other);
        }
        row("median", &median_of(&raw_runs), &median_of(runs));
        // Each run's ratio compares two runs made one after the other, so a slow spell of
        // the machine weighs on both; the median of the times above mixes spells.
        let mut ratios: Vec<f64> = raw_runs
            .iter()
            .zip(runs.iter())
            .filter_map(|(raw, other)| pace_ratio(raw, other))
            .collect();
        ratios.sort_by(f64::total_cmp);
        // The lower middle of an even count, as `median` takes.
        if let Some(middle) = ratios.get(ratios.len().saturating_sub(1) / 2) {
            println!("| median of the runs' ratios | | | | | {middle:.2} |");
        }
        println!();
        println!(
            "### {client}: keystroke to echo, {} keys, each after a {} ms pause\n",
            sizes.keys,
            TYPING_GAP.as_millis()
        );
        println!("| | raw socket | {client} | {client}/raw |");
        println!("|---|---|---|---|");
        for percent in [50, 99] {
            let raw = percentile(&mut raw_keys, percent);
            let other = percentile(keys, percent);
            println!(
                "| p{percent} (µs) | {} | {} | {:.2} |",
                raw.as_micros(),
                other.as_micros(),
                other.as_secs_f64() / raw.as_secs_f64()
            );
        }
        println!();
    }
    println!(
        "### TUI: keystroke to echo in a 2x2 split, `cat` of the file in a loop in another \
         pane, {} keys, each after a {} ms pause\n",
        sizes.keys,
        TYPING_GAP.as_millis()
    );
    println!(
        "| | raw socket | TUI, one pane | TUI, split and flood | split/raw | split/one pane |"
    );
    println!("|---|---|---|---|---|---|");
    for percent in [50, 99] {
        let raw = percentile(&mut raw_keys, percent);
        let alone = percentile(&mut tui_keys, percent);
        let split = percentile(&mut split_keys, percent);
        println!(
            "| p{percent} (µs) | {} | {} | {} | {:.2} | {:.2} |",
            raw.as_micros(),
            alone.as_micros(),
            split.as_micros(),
            split.as_secs_f64() / raw.as_secs_f64(),
            split.as_secs_f64() / alone.as_secs_f64()
        );
    }
    println!();
    // A lost run is a failure, not a number: the exit status says so (CI runs `--quick`).
    let lost: Vec<&Lost> = raw_runs
        .iter()
        .chain(&tui_runs)
        .chain(&web_runs)
        .filter_map(|run| run.as_ref().err())
        .collect();
    let drops = DROPS.load(std::sync::atomic::Ordering::Relaxed);
    if drops > 0 {
        println!(
            "\nThe hub dropped a client {drops} time(s) for falling behind (its log says \
             `{DROPPED}`); each attached again by itself and its run finished."
        );
    }
    if lost.iter().any(|lost| matches!(lost, Lost::Stalled)) {
        println!(
            "\n`stalled`: nothing arrived for {} s before the end, and the hub did not say it \
             dropped the client.",
            STALL.as_secs()
        );
    }
    println!(
        "\n### The daemon at rest: {IDLE_PANES} idle panes, the bundled recovery plugin (wasm) \
         watching them\n"
    );
    println!("| | value |");
    println!("|---|---|");
    println!(
        "| CPU over {} s (% of one core) | {:.3} |",
        sizes.rest.as_secs(),
        rest.cpu_percent
    );
    println!(
        "| daemon RSS, no repository open (KiB) | {} |",
        rest.rss_before_kib
    );
    println!(
        "| daemon RSS, {IDLE_PANES} panes and the plugin (KiB) | {} |",
        rest.rss_after_kib
    );
    println!(
        "| daemon memory per pane, plugin included (KiB) | {} |",
        rest.rss_after_kib.saturating_sub(rest.rss_before_kib) / IDLE_PANES as u64
    );
    if !lost.is_empty() {
        std::process::exit(1);
    }
}

/// Panes the daemon holds while it is measured at rest.
const IDLE_PANES: usize = 8;

/// What the daemon costs while nothing happens.
struct AtRest {
    cpu_percent: f64,
    rss_before_kib: u64,
    rss_after_kib: u64,
}

/// A daemon with [`IDLE_PANES`] startup panes (each a `sleep`, so none prints) all opted
/// into the bundled recovery plugin: its CPU time over `window` once settled, and its
/// resident memory before the repository is opened and after.
fn at_rest(tokio: &tokio::runtime::Runtime, window: Duration) -> AtRest {
    let mut config = String::from(
        "[[plugin]]\nname = \"nightcrow-recovery\"\ncommand = \"builtin:nightcrow-recovery\"\n\
         enabled = true\n",
    );
    for n in 0..IDLE_PANES {
        config.push_str(&format!(
            "[[startup_command]]\nname = \"idle-{n}\"\ncommand = \"exec sleep 100000\"\n\
             plugin = \"nightcrow-recovery\"\n"
        ));
    }
    let daemon = Daemon::start(tokio, &config);
    let pid = daemon.child.id();
    // Settled: the runtime's threads started, the allocator warmed up.
    std::thread::sleep(Duration::from_secs(1));
    let rss_before_kib = rss_kib(pid);
    let repo = fresh_repo();
    tokio.block_on(async {
        let mut connection = Connection::open(&daemon.home()).await.expect("connect");
        connection
            .ask(&nightcrow_client_protocol::daemon::DaemonRequest::Open {
                dir: repo.path().to_owned(),
            })
            .await
            .expect("the repository opens");
    });
    // The panes spawned, the plugin compiled (or loaded from its cache) and told of them.
    std::thread::sleep(Duration::from_secs(3));
    let rss_after_kib = rss_kib(pid);
    let (ticks_before, started) = (cpu_ticks(pid), Instant::now());
    std::thread::sleep(window);
    let ticks = cpu_ticks(pid) - ticks_before;
    let elapsed = started.elapsed().as_secs_f64();
    AtRest {
        cpu_percent: ticks as f64 / clock_ticks_per_second() / elapsed * 100.0,
        rss_before_kib,
        rss_after_kib,
    }
}

/// User plus system CPU time of `pid` so far, in clock ticks (`/proc/PID/stat`).
fn cpu_ticks(pid: u32) -> u64 {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).expect("/proc/PID/stat");
    // Fields after the command name, which is in parentheses and may hold spaces.
    let fields: Vec<&str> = stat[stat.rfind(')').expect("a command name") + 2..]
        .split_whitespace()
        .collect();
    // utime and stime are fields 14 and 15 of the line, 12 and 13 after the name.
    fields[11].parse::<u64>().expect("utime") + fields[12].parse::<u64>().expect("stime")
}

fn clock_ticks_per_second() -> f64 {
    let output = Command::new("getconf")
        .arg("CLK_TCK")
        .output()
        .expect("getconf");
    String::from_utf8_lossy(&output.stdout)
        .trim()
        .parse()
        .expect("CLK_TCK is a number")
}

/// Resident memory of `pid` (`VmRSS` in `/proc/PID/status`), in KiB.
fn rss_kib(pid: u32) -> u64 {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).expect("/proc/PID/status");
    status
        .lines()
        .find_map(|line| line.strip_prefix("VmRSS:"))
        .and_then(|value| value.split_whitespace().next())
        .and_then(|kib| kib.parse().ok())
        .expect("VmRSS in KiB")
}

/// Why a throughput run has no time.
#[derive(Debug, Clone)]
enum Lost {
    /// Nothing arrived for [`STALL`], and the hub did not say it dropped the client.
    Stalled,
    /// (For the median) no run finished.
    NoneFinished,
}

impl std::fmt::Display for Lost {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Lost::Stalled => "stalled",
            Lost::NoneFinished => "no run finished",
        })
    }
}

/// The daemon, run in the foreground as a child with a home of its own; killed on drop,
/// so a panicking bench leaves nothing behind.
struct Daemon {
    child: Child,
    home: tempfile::TempDir,
}

impl Daemon {
    /// A daemon whose config is a plain `/bin/sh -c` shell and then `more`.
    fn start(tokio: &tokio::runtime::Runtime, more: &str) -> Daemon {
        let home = tempfile::tempdir().expect("a temp dir");
        // `sh -c` runs a pane's command; a bare shell pane is `/bin/sh` too.
        std::fs::write(
            home.path().join("config.toml"),
            format!("[shell]\nprogram = \"/bin/sh\"\ncommand_args = [\"-c\"]\n{more}"),
        )
        .expect("the config is written");
        let log = std::fs::File::create(home.path().join("daemon.stderr")).expect("a log file");
        let mut command = Command::new(env!("CARGO_BIN_EXE_nightcrow"));
        set_env(&mut command, home.path());
        let child = command
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(log)
            .spawn()
            .expect("the daemon starts");
        let mut daemon = Daemon { child, home };
        let started = Instant::now();
        while tokio.block_on(Connection::open(&daemon.home())).is_err() {
            if let Ok(Some(status)) = daemon.child.try_wait() {
                daemon.fail(&format!("the daemon exited ({status})"));
            }
            if started.elapsed() > STEP {
                daemon.fail("the daemon never answered");
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        daemon
    }

    fn home(&self) -> Home {
        Home::new(self.home.path().to_owned())
    }

    /// Runs one throughput measurement, which returns `None` when its client stopped
    /// hearing anything before the end. A client the hub drops for falling behind attaches
    /// again by itself and finishes, slower: the hub's log line is counted before and
    /// after, and the drop is reported beside the time.
    fn flood(&self, run: impl FnOnce() -> Option<Duration>) -> Result<Duration, Lost> {
        let drops = || daemon_log(self.home.path()).matches(DROPPED).count();
        let before = drops();
        let outcome = run().ok_or(Lost::Stalled);
        let dropped = drops() - before;
        if dropped > 0 {
            eprintln!("  the hub dropped the client {dropped} time(s) ({DROPPED}); it came back");
            DROPS.fetch_add(dropped, std::sync::atomic::Ordering::Relaxed);
        }
        outcome
    }

    fn fail(&self, what: &str) -> ! {
        panic!(
            "{what}\n--- daemon stderr ---\n{}",
            daemon_log(self.home.path())
        );
    }
}

impl Drop for Daemon {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// What the hub logs when it disconnects a client whose queue is full.
const DROPPED: &str = "client fell behind; disconnected";
/// Times the hub dropped a client during the throughput runs.
static DROPS: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);

/// What the daemon of `home` has written on stderr.
fn daemon_log(home: &Path) -> String {
    std::fs::read_to_string(home.join("daemon.stderr")).unwrap_or_default()
}

/// The environment every nightcrow process of the bench gets: the bench's home, a cache
/// inside it (the compilation cache never touches the user's), no log filter from outside
/// (log lines would land on the TUI's screen), and a prompt with no letters in it, so a
/// letter on screen or in a frame can only be an echo.
fn set_env(command: &mut Command, home: &Path) {
    command
        .env("NIGHTCROW_HOME", home)
        .env("XDG_CACHE_HOME", home.join("cache"))
        .env("PS1", "$ ")
        .env_remove("NIGHTCROW_LOG");
}

/// The same environment as [`set_env`], for a process started on a PTY.
fn set_pty_env(command: &mut CommandBuilder, home: &Path) {
    command.env("NIGHTCROW_HOME", home);
    command.env("XDG_CACHE_HOME", home.join("cache"));
    command.env("PS1", "$ ");
    command.env_remove("NIGHTCROW_LOG");
    command.env("TERM", "xterm-256color");
}

/// Writes numbered lines of 100 bytes (99 printable ASCII characters and a newline) up to
/// about `bytes`; returns how many. Plain text, so what is measured is moving bytes and
/// emulating a terminal, not decoding escape sequences.
fn write_lines(path: &Path, bytes: usize) -> usize {
    let filler: String = (0..89u8).map(|i| char::from(b'!' + i % 94)).collect();
    let lines = bytes / 100;
    let mut out = BufWriter::new(std::fs::File::create(path).expect("the file is created"));
    for number in 0..lines {
        writeln!(out, "{number:09} {filler}").expect("the file is written");
    }
    out.flush().expect("the file is written");
    // On disk before any run is timed: the kernel writing 200 MB back during the first
    // run took a core from it.
    out.get_ref().sync_all().expect("the file is written");
    lines
}

/// A fresh repository folder: its hub is new, so nothing is replayed to a client and no
/// earlier pane shares the daemon's attention inside it.
fn fresh_repo() -> tempfile::TempDir {
    tempfile::Builder::new()
        .prefix("nightcrow-bench-repo")
        .tempdir()
        .expect("a temp dir")
}

// ---- the raw socket client ----------------------------------------------------------

/// The frames and requests of one attachment, as `Connection::attach` returns them.
type Attached = (UnboundedReceiver<Frame>, UnboundedSender<ClientRequest>);

async fn attach(daemon: &Daemon, repo: &Path) -> Attached {
    let connection = Connection::open(&daemon.home())
        .await
        .unwrap_or_else(|e| daemon.fail(&format!("connect: {e}")));
    connection
        .attach(repo)
        .await
        .unwrap_or_else(|e| daemon.fail(&format!("attach: {e}")))
}

/// The next frame; a hang or a closed stream ends the bench.
async fn next_frame(daemon: &Daemon, frames: &mut UnboundedReceiver<Frame>) -> Frame {
    match tokio::time::timeout(STEP, frames.recv()).await {
        Ok(Some(frame)) => frame,
        Ok(None) => daemon.fail("the daemon closed the attachment"),
        Err(_) => daemon.fail("no frame from the hub"),
    }
}

/// Time from `create` to the end marker, counting every output byte on the way; `None`
/// when the output stopped before it.
async fn raw_throughput(daemon: &Daemon, command: &str, file_bytes: usize) -> Option<Duration> {
    let repo = fresh_repo();
    let (mut frames, requests) = attach(daemon, repo.path()).await;
    requests
        .send(ClientRequest::Create {
            title: None,
            command: Some(command.to_owned()),
            rows: Some(ROWS),
            cols: Some(COLS),
        })
        .expect("the request is sent");
    let started = Instant::now();
    let mut received = 0;
    let mut tail = Vec::new();
    loop {
        let frame = match tokio::time::timeout(STALL, frames.recv()).await {
            Ok(Some(frame)) => frame,
            Ok(None) => daemon.fail("the daemon closed the attachment"),
            Err(_) => return None,
        };
        if let Frame::Output { bytes, .. } = frame {
            received += bytes.len();
            if ends_with_marker(&mut tail, &bytes) {
                break;
            }
        }
        if started.elapsed() > FLOOD_PATIENCE {
            daemon.fail("the raw client never saw the end marker");
        }
    }
    let elapsed = started.elapsed();
    // The PTY turns each newline into CR LF, so more arrives than the file holds; less
    // would mean the measurement missed part of the output.
    assert!(received >= file_bytes, "only {received} bytes arrived");
    Some(elapsed)
}

/// Whether the stream, whose latest piece is `bytes`, now holds the marker. `tail` keeps
/// the stream's last bytes across calls, since the marker may straddle two frames.
///
/// Only the end of the stream is searched: the marker is the last thing the pane prints
/// (its shell exits after it), so the frame that completes it leaves it within a few bytes
/// of the end. That keeps the check as cheap per frame as it is for a small frame, which
/// matters because this file is not optimised in the test profile.
fn ends_with_marker(tail: &mut Vec<u8>, bytes: &[u8]) -> bool {
    const KEEP: usize = 64;
    tail.extend_from_slice(&bytes[bytes.len().saturating_sub(KEEP)..]);
    let excess = tail.len().saturating_sub(KEEP);
    tail.drain(..excess);
    tail.windows(MARKER.len())
        .any(|window| window == MARKER.as_bytes())
}

/// Keystroke-to-echo times of a bare shell pane, `keys` of them.
async fn raw_latency(daemon: &Daemon, keys: usize) -> Vec<Duration> {
    let repo = fresh_repo();
    let (mut frames, requests) = attach(daemon, repo.path()).await;
    requests
        .send(ClientRequest::Create {
            title: None,
            command: None,
            rows: Some(ROWS),
            cols: Some(COLS),
        })
        .expect("the request is sent");
    let pane = loop {
        if let Frame::Message(HubMessage::Created { pane, .. }) =
            next_frame(daemon, &mut frames).await
        {
            break pane;
        }
    };
    // The prompt: some output, then nothing for a while.
    drain_until_quiet(daemon, &mut frames, Duration::from_millis(300)).await;
    let send = |data: &str| {
        requests
            .send(ClientRequest::Input {
                pane,
                data: data.to_owned(),
            })
            .expect("the request is sent");
    };
    let mut times = Vec::with_capacity(keys);
    for (round, count) in rounds(keys).enumerate() {
        let letter = letter(round);
        for _ in 0..count {
            tokio::time::sleep(TYPING_GAP).await;
            send(&letter.to_string());
            let sent = Instant::now();
            loop {
                if let Frame::Output { bytes, .. } = next_frame(daemon, &mut frames).await
                    && bytes.contains(&(letter as u8))
                {
                    break;
                }
            }
            times.push(sent.elapsed());
        }
        // Ctrl-U kills the line; its echo (the line rubbed out) is not measured.
        send("\u{15}");
        drain_until_quiet(daemon, &mut frames, Duration::from_millis(100)).await;
    }
    times
}

/// Waits for some output, then until none has come for `quiet`.
async fn drain_until_quiet(
    daemon: &Daemon,
    frames: &mut UnboundedReceiver<Frame>,
    quiet: Duration,
) {
    while !matches!(next_frame(daemon, frames).await, Frame::Output { .. }) {}
    while let Ok(frame) = tokio::time::timeout(quiet, frames.recv()).await {
        if frame.is_none() {
            daemon.fail("the daemon closed the attachment");
        }
    }
}

/// How many keys each round types: [`KEYS_PER_ROUND`], the last one what is left.
fn rounds(keys: usize) -> impl Iterator<Item = usize> {
    (0..keys)
        .step_by(KEYS_PER_ROUND)
        .map(move |first| KEYS_PER_ROUND.min(keys - first))
}

/// The letter typed in `round`: a new one each round, so an echo left over from the
/// previous round can never be taken for this one's.
fn letter(round: usize) -> char {
    char::from(b'a' + (round % 26) as u8)
}

// ---- the TUI in a PTY ---------------------------------------------------------------

/// `nightcrow attach` running in a PTY of its own; what it draws is parsed on a thread
/// into an emulator the bench can look at. Killed on drop.
struct Tui {
    child: Box<dyn portable_pty::Child + Send + Sync>,
    keys: Box<dyn Write + Send>,
    terminal: Arc<Terminal>,
    // Kept open for as long as the TUI runs: its terminal goes away with it.
    _master: Box<dyn MasterPty + Send>,
    _repo: tempfile::TempDir,
    /// For the daemon's log when something is never seen.
    daemon_home: PathBuf,
}

/// The emulator, shared with the thread feeding it; `changed` is notified after each read.
struct Terminal {
    state: Mutex<TerminalState>,
    changed: Condvar,
}

struct TerminalState {
    parser: vt100::Parser,
    /// The PTY closed: the TUI has ended.
    closed: bool,
    /// When the TUI last wrote anything.
    last_output: Instant,
}

impl Tui {
    /// Attaches to a fresh repository (so `attach` creates its first shell pane) and waits
    /// until that pane shows its prompt.
    fn attach(daemon: &Daemon) -> Tui {
        let repo = fresh_repo();
        let pty = native_pty_system()
            .openpty(PtySize {
                rows: ROWS,
                cols: COLS,
                pixel_width: 0,
                pixel_height: 0,
            })
            .expect("a PTY");
        let mut command = CommandBuilder::new(env!("CARGO_BIN_EXE_nightcrow"));
        command.arg("attach");
        command.arg(repo.path());
        command.cwd(repo.path());
        set_pty_env(&mut command, daemon.home.path());
        let child = pty.slave.spawn_command(command).expect("attach starts");
        // Only the TUI holds the PTY's other end now, so reading ends when it does.
        drop(pty.slave);
        let mut reader = pty.master.try_clone_reader().expect("the PTY reads");
        let keys = pty.master.take_writer().expect("the PTY writes");
        let terminal = Arc::new(Terminal {
            state: Mutex::new(TerminalState {
                parser: vt100::Parser::new(nonzero(ROWS), nonzero(COLS), 0),
                closed: false,
                last_output: Instant::now(),
            }),
            changed: Condvar::new(),
        });
        let feeding = Arc::clone(&terminal);
        // Not joined: it ends by itself once the TUI is gone and the PTY reads nothing.
        std::thread::spawn(move || {
            let mut buffer = vec![0; 64 * 1024];
            loop {
                let read = reader.read(&mut buffer).unwrap_or(0);
                let mut state = feeding.lock();
                if read == 0 {
                    state.closed = true;
                } else {
                    state.parser.process(&buffer[..read]);
                    state.last_output = Instant::now();
                }
                drop(state);
                feeding.changed.notify_all();
                if read == 0 {
                    return;
                }
            }
        });
        let tui = Tui {
            child,
            keys,
            terminal,
            _master: pty.master,
            _repo: repo,
            daemon_home: daemon.home.path().to_owned(),
        };
        tui.wait_for("the tab row", STEP, |screen| {
            screen.contents().starts_with(" 1:shell")
        });
        tui.wait_for("the prompt", STEP, |screen| {
            pane_rows(screen).iter().any(|row| row.starts_with('$'))
        });
        tui
    }

    /// Sends `bytes` as typed keys.
    fn type_keys(&mut self, bytes: &[u8]) {
        self.keys.write_all(bytes).expect("the PTY takes keys");
        self.keys.flush().expect("the PTY takes keys");
    }

    /// Waits until the screen satisfies `done`; returns when that was first seen.
    fn wait_for(
        &self,
        what: &str,
        patience: Duration,
        done: impl Fn(&vt100::Screen) -> bool,
    ) -> Instant {
        self.watch(patience, None, done)
            .unwrap_or_else(|why| self.fail(&format!("never saw {what} ({why})")))
    }

    /// Waits until the screen satisfies `done` and returns when that was first seen; or
    /// says why not.
    fn watch(
        &self,
        patience: Duration,
        stall: Option<Duration>,
        done: impl Fn(&vt100::Screen) -> bool,
    ) -> Result<Instant, Miss> {
        let deadline = Instant::now() + patience;
        let mut state = self.terminal.lock();
        loop {
            if done(state.parser.screen()) {
                return Ok(Instant::now());
            }
            let now = Instant::now();
            let mut wake = deadline;
            if let Some(stall) = stall {
                if now >= state.last_output + stall {
                    return Err(Miss::Stalled);
                }
                wake = wake.min(state.last_output + stall);
            }
            if state.closed {
                return Err(Miss::Ended);
            }
            if now >= deadline {
                return Err(Miss::TimedOut);
            }
            state = self
                .terminal
                .changed
                .wait_timeout(state, wake - now)
                .expect("the feeding thread does not panic")
                .0;
        }
    }

    /// Panics with `what`, what the TUI shows and the daemon's log.
    fn fail(&self, what: &str) -> ! {
        // Taken and let go before panicking: a lock poisoned by this panic would fail the
        // feeding thread too, burying this message under its own.
        let screen = self.terminal.lock().parser.screen().contents();
        panic!(
            "{what}; the screen:\n{screen}\n--- daemon stderr ---\n{}",
            daemon_log(&self.daemon_home)
        );
    }

    /// Whether the TUI still runs: it ends when its connection closes.
    fn running(&mut self) -> bool {
        matches!(self.child.try_wait(), Ok(None))
    }
}

/// Why [`Tui::watch`] returned without seeing what it waited for.
#[derive(Debug)]
enum Miss {
    /// The TUI ended.
    Ended,
    /// The patience ran out.
    TimedOut,
    /// The TUI drew nothing for the given stall time.
    Stalled,
}

impl std::fmt::Display for Miss {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Miss::Ended => "the TUI ended",
            Miss::TimedOut => "timed out",
            Miss::Stalled => "the TUI stopped drawing",
        })
    }
}

impl Terminal {
    fn lock(&self) -> MutexGuard<'_, TerminalState> {
        self.state
            .lock()
            .expect("the feeding thread does not panic")
    }
}

impl Drop for Tui {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn nonzero(value: u16) -> NonZeroU16 {
    NonZeroU16::new(value).expect("not zero")
}

/// The pane area of the TUI's screen: all but the tab row and the notice row, which hold
/// words of their own (`shell` has an `e`).
fn pane_rows(screen: &vt100::Screen) -> Vec<String> {
    let rows: Vec<String> = screen.rows(0, COLS).collect();
    rows[1..rows.len() - 1].to_vec()
}

/// Time from typing the command to the end marker on the TUI's screen; `None` when the
/// TUI stopped drawing before it.
fn tui_throughput(daemon: &Daemon, command: &str) -> Option<Duration> {
    let mut tui = Tui::attach(daemon);
    tui.type_keys(format!("{command}\r").as_bytes());
    let started = Instant::now();
    let seen = tui.watch(FLOOD_PATIENCE, Some(STALL), |screen| {
        screen.contents().contains(MARKER)
    });
    assert!(tui.running(), "the TUI ended during the flood");
    match seen {
        Ok(seen) => Some(seen - started),
        Err(Miss::Stalled) => None,
        Err(why) => tui.fail(&format!("never saw the end marker ({why})")),
    }
}

/// Keystroke-to-echo times through the TUI, `keys` of them, in a pane shown alone.
fn tui_latency(daemon: &Daemon, keys: usize) -> Vec<Duration> {
    let mut tui = Tui::attach(daemon);
    let times = type_and_time(&mut tui, keys, pane_rows);
    assert!(tui.running(), "the TUI ended while typing");
    times
}

/// Types `keys` keys, [`TYPING_GAP`] apart, into the pane in view, whose rows on screen
/// `rows_of` gives; the time from each key until its echo is among those rows.
fn type_and_time(
    tui: &mut Tui,
    keys: usize,
    rows_of: impl Fn(&vt100::Screen) -> Vec<String>,
) -> Vec<Duration> {
    let mut times = Vec::with_capacity(keys);
    for (round, count) in rounds(keys).enumerate() {
        let letter = letter(round);
        for typed in 1..=count {
            std::thread::sleep(TYPING_GAP);
            tui.type_keys(&[letter as u8]);
            let sent = Instant::now();
            let run = letter.to_string().repeat(typed);
            let seen = tui.wait_for(&format!("{typed} {letter}"), STEP, |screen| {
                rows_of(screen).iter().any(|row| row.contains(&run))
            });
            times.push(seen - sent);
        }
        tui.type_keys(b"\x15");
        let run = letter.to_string().repeat(count);
        tui.wait_for("the line killed", STEP, |screen| {
            !rows_of(screen).iter().any(|row| row.contains(&run))
        });
    }
    times
}

/// The TUI's leader key (its default, Ctrl+F), typed before each of its commands.
const LEADER: u8 = 0x06;
/// Panes in the split: the most a split holds, a 2x2 grid in a 50x200 terminal.
const SPLIT_PANES: usize = 4;

/// Keystroke-to-echo times through the TUI, `keys` of them, in one pane of a 2x2 split
/// while the pane beside it runs `flood` (a command that never ends by itself).
///
/// Each step is checked on the parsed screen: four cell headers, the flood moving in its
/// cell before the first key and still after the last, the focus (the reversed header) on
/// the measured pane. The flood is stopped with Ctrl+C after, and its pane seen quiet at
/// a prompt, so nothing measured later shares the CPU with it.
fn tui_split_latency(daemon: &Daemon, keys: usize, flood: &str) -> Vec<Duration> {
    let mut tui = Tui::attach(daemon);
    for panes in 2..=SPLIT_PANES {
        tui.type_keys(&[LEADER, b's']);
        tui.wait_for(
            &format!("{panes} cells with a prompt each"),
            STEP,
            |screen| {
                (1..=panes).all(|pane| {
                    cell_place(screen, pane).is_some_and(|cell| {
                        cell.rows(screen).iter().any(|row| row.starts_with('$'))
                    })
                })
            },
        );
    }
    // The last pane opened is in view: it floods, and the focus moves to its left.
    let flooding = SPLIT_PANES;
    let place = |pane| {
        tui.look(|screen| cell_place(screen, pane))
            .unwrap_or_else(|| tui.fail(&format!("no cell for pane {pane}")))
    };
    let (flood_cell, typed_cell) = (place(flooding), place(flooding - 1));
    assert_eq!(
        flood_cell.header_row,
        typed_cell.header_row,
        "panes {flooding} and {} are side by side",
        flooding - 1
    );
    tui.type_keys(format!("{flood}\r").as_bytes());
    tui.type_keys(&[LEADER, b'h']);
    tui.wait_for("the focus on the pane left of the flood", STEP, |screen| {
        typed_cell.in_view(screen)
    });
    tui.wait_for_flood(&flood_cell, "before the first key");
    let times = type_and_time(&mut tui, keys, |screen| typed_cell.rows(screen));
    tui.wait_for_flood(&flood_cell, "after the last key");
    tui.type_keys(&[LEADER, b'l']);
    tui.wait_for("the focus back on the flood", STEP, |screen| {
        flood_cell.in_view(screen)
    });
    tui.type_keys(b"\x03");
    tui.wait_for("the flood stopped at a prompt", STEP, |screen| {
        flood_cell
            .rows(screen)
            .iter()
            .rev()
            .find(|row| !row.trim().is_empty())
            .is_some_and(|row| row.trim_end() == "$")
    });
    let quiet = tui.look(|screen| flood_cell.rows(screen));
    std::thread::sleep(Duration::from_millis(500));
    let later = tui.look(|screen| flood_cell.rows(screen));
    assert_eq!(quiet, later, "the flood pane still moves after Ctrl+C");
    assert!(tui.running(), "the TUI ended during the split");
    times
}

impl Tui {
    /// What `look` makes of the screen as it is now.
    fn look<T>(&self, look: impl FnOnce(&vt100::Screen) -> T) -> T {
        look(self.terminal.lock().parser.screen())
    }

    /// Waits until the flood's cell has shown three different screens, so it is moving.
    fn wait_for_flood(&self, cell: &CellPlace, when: &str) {
        let seen = std::cell::RefCell::new(Vec::<Vec<String>>::new());
        self.wait_for(&format!("the flood moving {when}"), STEP, |screen| {
            let rows = cell.rows(screen);
            let mut seen = seen.borrow_mut();
            if seen.last() != Some(&rows) {
                seen.push(rows);
            }
            seen.len() >= 3
        });
    }
}

/// Where a pane of a split is drawn: its header row, and the rows and columns of its
/// screen below it.
struct CellPlace {
    header_row: u16,
    /// The header's first column, also the screen's.
    left: u16,
    /// Past the screen's last column and row.
    right: u16,
    bottom: u16,
}

impl CellPlace {
    /// The rows of this cell's screen, as text.
    fn rows(&self, screen: &vt100::Screen) -> Vec<String> {
        (self.header_row + 1..self.bottom)
            .map(|row| cells_text(screen, row, self.left..self.right))
            .collect()
    }

    /// Whether its pane is the one in view: the TUI reverses that header.
    fn in_view(&self, screen: &vt100::Screen) -> bool {
        screen
            .cell(self.header_row, self.left + 2)
            .is_some_and(vt100::Cell::inverse)
    }
}

/// The place of tab `pane`'s cell, found by its header (`─ N:shell`): its screen runs to
/// the next header to its right (less the rule between them) and down to the next header
/// row below, or to the notice row.
fn cell_place(screen: &vt100::Screen, pane: usize) -> Option<CellPlace> {
    let header = |number: usize| format!("─ {number}:shell ");
    let mut headers = Vec::new();
    // Row 0 is the tab row and the last the notice row; headers are between.
    for row in 1..ROWS - 1 {
        let text: Vec<char> = cells_text(screen, row, 0..COLS).chars().collect();
        for number in 1..=SPLIT_PANES {
            let wanted: Vec<char> = header(number).chars().collect();
            if let Some(col) = text.windows(wanted.len()).position(|w| w == wanted) {
                let col = u16::try_from(col).expect("a column");
                headers.push((number, row, col));
            }
        }
    }
    let &(_, header_row, left) = headers.iter().find(|(number, ..)| *number == pane)?;
    let right = (headers.iter())
        .filter(|&&(_, row, col)| row == header_row && col > left)
        .map(|&(_, _, col)| col - 1)
        .min()
        .unwrap_or(COLS);
    let bottom = (headers.iter())
        .filter(|&&(_, row, _)| row > header_row)
        .map(|&(_, row, _)| row)
        .min()
        .unwrap_or(ROWS - 1);
    Some(CellPlace {
        header_row,
        left,
        right,
        bottom,
    })
}

/// The characters of `row` in `cols`, one a column (an empty cell is a space).
fn cells_text(screen: &vt100::Screen, row: u16, cols: std::ops::Range<u16>) -> String {
    cols.map(
        |col| match screen.cell(row, col).map(vt100::Cell::contents) {
            Some(text) if !text.is_empty() => text.to_owned(),
            _ => " ".to_owned(),
        },
    )
    .collect()
}

// ---- arithmetic ---------------------------------------------------------------------

fn megabytes(bytes: usize) -> f64 {
    bytes as f64 / 1e6
}

/// How fast `other` went against `raw` (their MB/s, divided); `None` if either was lost.
fn pace_ratio(raw: &Result<Duration, Lost>, other: &Result<Duration, Lost>) -> Option<f64> {
    match (raw, other) {
        (Ok(raw), Ok(other)) => Some(raw.as_secs_f64() / other.as_secs_f64()),
        _ => None,
    }
}

fn median(values: &mut [Duration]) -> Duration {
    percentile(values, 50)
}

/// The nearest-rank percentile: the smallest value at least `percent` % of them are not
/// above.
fn percentile(values: &mut [Duration], percent: usize) -> Duration {
    values.sort();
    let rank = (values.len() * percent).div_ceil(100).max(1);
    values[rank - 1]
}

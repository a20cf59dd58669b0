//! The harness: the plugin on either runtime, its file clock, the barrier that makes every
//! step synchronous, and the checks every test ends with (no transcript text, no files).

use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdin, Command as Process, Stdio};
use std::sync::mpsc::{Receiver, channel};
use std::time::Duration;

use nightcrow_protocol::{Command, Event, Token, decode_command, encode_event};

/// 2026-12-02T16:00:00Z, before the 0.169 rollouts were created.
pub const T0_MS: i64 = 1_796_227_200_000;
pub const PANE: &str = "4f1c00000000000000000000000000e2";
/// Nothing a test waits for takes this long unless the plugin is broken.
pub const PATIENCE: Duration = Duration::from_secs(20);

/// The recovery crate's test data (`tests/fixtures/`, provenance in its README).
pub fn fixtures() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("plugins-wasm/nightcrow-recovery/tests/fixtures")
}

/// Where the plugin runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Runtime {
    /// The native build as a plain child process, its stdin and stdout the test's: the one
    /// way to feed it lines the host itself would never send.
    Native,
    /// `builtin:nightcrow-recovery` inside the real wasm runtime (`nightcrow plugin run`),
    /// with only the grants of [`Grants`].
    Wasm,
}

/// The sandbox grants of SPEC §9.4 a wasm case gets (native plugins are trusted and get
/// everything). The clock file's directory is always granted: it is the test's clock.
#[derive(Debug, Clone)]
pub struct Grants {
    /// `read_dirs` holds the Codex home.
    pub codex_home: bool,
    /// `connect` holds `127.0.0.1:<port>`.
    pub connect: Option<u16>,
    /// `[plugin.env]` beyond `CODEX_HOME`.
    pub env: Vec<(String, String)>,
    /// The wall clock at start.
    pub wall_ms: i64,
}

impl Default for Grants {
    fn default() -> Grants {
        Grants {
            codex_home: true,
            connect: None,
            env: Vec::new(),
            wall_ms: T0_MS,
        }
    }
}

impl Grants {
    /// What an OpenCode pane on `port` needs: the port, and the wall clock at `wall_ms`.
    pub fn opencode(port: u16, wall_ms: i64) -> Grants {
        Grants {
            codex_home: false,
            connect: Some(port),
            env: Vec::new(),
            wall_ms,
        }
    }

    pub fn env(mut self, key: &str, value: &str) -> Grants {
        self.env.push((key.to_owned(), value.to_owned()));
        self
    }
}

/// Runs `$name(runtime)` once per runtime, as `$name::native` and `$name::wasm`.
macro_rules! on_both_runtimes {
    ($($name:ident),* $(,)?) => {$(
        mod $name {
            #[test]
            fn native() {
                super::$name($crate::recovery::harness::Runtime::Native);
            }
            #[test]
            fn wasm() {
                super::$name($crate::recovery::harness::Runtime::Wasm);
            }
        }
    )*};
}
pub(crate) use on_both_runtimes;

pub struct Plugin {
    child: Child,
    pub stdin: ChildStdin,
    lines: Receiver<String>,
    clock: PathBuf,
    mono_ms: u64,
    pub wall_ms: i64,
    barrier: u64,
    /// Every line the plugin wrote, stdout and stderr, for the transcript check.
    pub seen: Vec<String>,
    stderr: Receiver<String>,
    home: tempfile::TempDir,
    pub cwd: String,
    /// Files the test wrote under the Codex home and the pane cwd; the plugin writes none.
    written: Vec<PathBuf>,
}

impl Plugin {
    /// The plugin on `runtime` with the default grants: the Codex home readable, its wall
    /// clock at [`T0_MS`].
    pub fn start(runtime: Runtime) -> Plugin {
        Plugin::start_with(runtime, Grants::default())
    }

    /// The plugin on `runtime` with `grants`: natively they are its env and clock only (a
    /// native plugin is trusted with everything); in wasm they are all it can reach.
    pub fn start_with(runtime: Runtime, grants: Grants) -> Plugin {
        let home = tempfile::tempdir().expect("temp dir");
        // A space in the pane cwd, so `?directory=` has something to encode.
        let cwd = home.path().join("my repo");
        std::fs::create_dir_all(&cwd).expect("cwd");
        let codex = home.path().join("codex");
        std::fs::create_dir_all(&codex).expect("codex home");
        let clock_dir = home.path().join("clock");
        std::fs::create_dir_all(&clock_dir).expect("clock dir");
        let clock = clock_dir.join("now");
        write_clock(&clock, (0, grants.wall_ms));
        let mut env = grants.env.clone();
        env.push(("CODEX_HOME".into(), codex.display().to_string()));
        env.push((
            nightcrow_plugin_sdk::FAKE_CLOCK_ENV.into(),
            clock.display().to_string(),
        ));
        let mut process = match runtime {
            Runtime::Native => {
                let mut process = Process::new(nightcrow_test_plugin_artifacts::RECOVERY_NATIVE);
                process.env_clear().envs(env);
                process
            }
            Runtime::Wasm => {
                let mut process = crate::util::nightcrow(home.path());
                process
                    .args(["plugin", "run", "builtin:nightcrow-recovery", "--read"])
                    .arg(&clock_dir);
                if grants.codex_home {
                    process.arg("--read").arg(&codex);
                }
                if let Some(port) = grants.connect {
                    process.arg("--connect").arg(format!("127.0.0.1:{port}"));
                }
                for (key, value) in env {
                    process.arg("--env").arg(format!("{key}={value}"));
                }
                process
            }
        };
        let mut child = process
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("spawn the plugin");
        let lines = pump(child.stdout.take().expect("stdout"));
        let stderr = pump(child.stderr.take().expect("stderr"));
        Plugin {
            stdin: child.stdin.take().expect("stdin"),
            child,
            lines,
            clock,
            mono_ms: 0,
            wall_ms: grants.wall_ms,
            barrier: 0,
            seen: Vec::new(),
            stderr,
            cwd: cwd.display().to_string(),
            home,
            written: Vec::new(),
        }
    }

    /// The `CODEX_HOME` the plugin is given.
    pub fn codex_home(&self) -> PathBuf {
        self.home.path().join("codex")
    }

    /// Counts every file now under the Codex home as written by the test (a stand-in CLI
    /// the test ran), so the no-file check at the end still holds the plugin to none.
    pub fn files_written_by_the_test(&mut self) {
        let mut files = Vec::new();
        list_files(&self.codex_home(), &mut files);
        for file in files {
            if !self.written.contains(&file) {
                self.written.push(file);
            }
        }
    }

    pub fn day(&self) -> PathBuf {
        let dir = self.home.path().join("codex/sessions/2026/12/02");
        std::fs::create_dir_all(&dir).expect("day dir");
        dir
    }

    /// The fixture's records with `$WORKDIR` rewritten to the pane cwd, and the file they go to.
    pub fn rollout(&mut self, relative: &str) -> (PathBuf, Vec<String>) {
        let text =
            std::fs::read_to_string(fixtures().join("codex").join(relative)).expect("fixture");
        let text = text.replace("$WORKDIR", &self.cwd);
        let path = self
            .day()
            .join(Path::new(relative).file_name().expect("name"));
        std::fs::write(&path, "").expect("create rollout");
        self.written.push(path.clone());
        (
            path,
            text.split_inclusive('\n').map(str::to_owned).collect(),
        )
    }

    pub fn send(&mut self, event: Event) {
        let line = encode_event(&event).expect("encodable");
        self.stdin.write_all(line.as_bytes()).expect("write event");
        self.stdin.flush().expect("flush");
    }

    pub fn open(&mut self, generation: u32, command: &str) {
        self.open_since(generation, command, None);
    }

    /// `pane_opened` for a slot that first opened at `opened_ms` (unix ms), as a restarted
    /// host says it.
    pub fn open_since(&mut self, generation: u32, command: &str, opened_ms: Option<i64>) {
        self.send(Event::PaneOpened {
            token: token(PANE),
            generation,
            title: None,
            command: Some(command.into()),
            cwd: self.cwd.clone(),
            opened_ms,
        });
    }

    /// Moves both clocks by `secs`.
    pub fn advance(&mut self, secs: u64) {
        self.advance_ms(secs * 1000);
    }

    /// Moves both clocks by `ms`.
    pub fn advance_ms(&mut self, ms: u64) {
        self.mono_ms += ms;
        self.wall_ms += ms as i64;
        write_clock(&self.clock, (self.mono_ms, self.wall_ms));
    }

    /// `pane_exited` for generation `generation` of the test pane.
    pub fn exit(&mut self, generation: u32) {
        self.send(Event::PaneExited {
            token: token(PANE),
            generation,
        });
    }

    /// Everything the plugin sent since the last sync, as compact strings (logs left out).
    pub fn sync(&mut self) -> Vec<String> {
        self.barrier += 1;
        let barrier = token(&format!(
            "{:032x}",
            0xb000_0000_0000_0000_u128 + u128::from(self.barrier)
        ));
        self.send(Event::PaneIdle {
            token: barrier.clone(),
            generation: 1,
            idle_ms: 10_000,
            screen: None,
        });
        let mut out = Vec::new();
        loop {
            let line = match self.lines.recv_timeout(PATIENCE) {
                Ok(line) => line,
                Err(_) => panic!(
                    "no answer from the plugin; stderr: {:?}",
                    self.drain_stderr()
                ),
            };
            self.seen.push(line.clone());
            match decode_command(&line).unwrap_or_else(|e| panic!("bad line {line:?}: {e}")) {
                Command::WatchPane { token } if token == barrier => break,
                command => out.extend(describe(command)),
            }
        }
        // Settle the barrier token so pending watch requests never pile up.
        self.send(Event::PaneOpened {
            token: barrier,
            generation: 1,
            title: None,
            command: None,
            cwd: "/".into(),
            opened_ms: None,
        });
        out
    }

    /// Stderr lines until `done` holds for all of them so far (stderr is read by its own
    /// thread, so it may lag behind stdout).
    pub fn stderr_until(&mut self, done: impl Fn(&str) -> bool) -> String {
        let mut all = self.drain_stderr().join("\n");
        while !done(&all) {
            match self.stderr.recv_timeout(PATIENCE) {
                Ok(line) => {
                    self.seen.push(line.clone());
                    all.push('\n');
                    all.push_str(&line);
                }
                Err(_) => panic!("stderr never got there: {all}"),
            }
        }
        all
    }

    pub fn drain_stderr(&mut self) -> Vec<String> {
        let lines: Vec<String> = self.stderr.try_iter().collect();
        self.seen.extend(lines.iter().cloned());
        lines
    }

    /// Appends records one by one, polling after each (2 s apart, the poll interval);
    /// returns what came out.
    pub fn replay(&mut self, path: &Path, records: &[String]) -> Vec<String> {
        let mut out = Vec::new();
        for record in records {
            let mut file = std::fs::OpenOptions::new()
                .append(true)
                .open(path)
                .expect("open");
            file.write_all(record.as_bytes()).expect("append");
            self.advance(2);
            out.extend(self.sync());
        }
        out
    }

    /// Shuts the plugin down; checks that it exits cleanly and returns every line it wrote.
    pub fn finish(mut self) -> Vec<String> {
        self.send(Event::Shutdown);
        let status = self.child.wait().expect("wait");
        assert!(status.success(), "plugin exited with {status}");
        // Both pumps end at end of stream, so this takes every line, however late.
        self.seen.extend(self.lines.iter());
        self.seen.extend(self.stderr.iter());
        check_no_transcript(&self.seen);
        let mut files = Vec::new();
        for root in [self.home.path().join("codex"), PathBuf::from(&self.cwd)] {
            list_files(&root, &mut files);
        }
        files.sort();
        self.written.sort();
        assert_eq!(files, self.written, "the plugin wrote no file");
        self.seen
    }
}

fn list_files(dir: &Path, out: &mut Vec<PathBuf>) {
    for entry in std::fs::read_dir(dir).into_iter().flatten().flatten() {
        let path = entry.path();
        if path.is_dir() {
            list_files(&path, out);
        } else {
            out.push(path);
        }
    }
}

fn write_clock(path: &Path, (mono_ms, wall_ms): (u64, i64)) {
    let temp = path.with_extension("new");
    std::fs::write(&temp, format!("{mono_ms} {wall_ms}\n")).expect("clock");
    std::fs::rename(&temp, path).expect("clock rename");
}

fn pump(stream: impl std::io::Read + Send + 'static) -> Receiver<String> {
    let (sender, receiver) = channel();
    std::thread::spawn(move || {
        for line in BufReader::new(stream).lines() {
            let Ok(line) = line else { break };
            if sender.send(line).is_err() {
                break;
            }
        }
    });
    receiver
}

pub fn token(text: &str) -> Token {
    Token::parse(text).expect("valid token")
}

fn describe(command: Command) -> Option<String> {
    Some(match command {
        Command::Status {
            generation,
            state,
            detail,
            deadline_epoch,
            attempt,
            ..
        } => {
            format!(
                "g{generation} {state} {} {} #{attempt}",
                detail.unwrap_or_default(),
                deadline_epoch.map_or("-".into(), |d| d.to_string())
            )
        }
        Command::Relaunch {
            generation,
            resume_args,
            ..
        } => format!("g{generation} relaunch {}", resume_args.join(" ")),
        Command::Attention { generation, .. } => format!("g{generation} attention"),
        Command::SendInput { .. } => panic!("the plugin must never send input"),
        Command::WatchPane { token } => format!("watch {}", token.as_str()),
        Command::Log { .. } => return None,
    })
}

/// Fails if any human text of the fixtures (every JSON string containing a space, at least
/// 12 chars: messages, instructions, error texts, replies) appears in anything the plugin
/// wrote. Covers every Codex rollout and every OpenCode capture (SSE `data:` lines and the
/// status bodies inside the polls), whichever provider a test ran.
fn check_no_transcript(lines: &[String]) {
    fn strings(value: &serde_json::Value, out: &mut Vec<String>) {
        match value {
            serde_json::Value::String(s) => {
                // Status bodies inside the polls are JSON themselves.
                match serde_json::from_str::<serde_json::Value>(s) {
                    Ok(inner) if inner.is_object() => strings(&inner, out),
                    _ if s.len() >= 12 && s.contains(' ') => out.push(s.clone()),
                    _ => {}
                }
            }
            serde_json::Value::Array(items) => items.iter().for_each(|v| strings(v, out)),
            serde_json::Value::Object(map) => map.values().for_each(|v| strings(v, out)),
            _ => {}
        }
    }
    fn walk(dir: &Path, texts: &mut Vec<String>) {
        let mut files = Vec::new();
        list_files(dir, &mut files);
        for file in files {
            let name = file.file_name().and_then(|n| n.to_str()).unwrap_or("");
            if !(name.ends_with(".jsonl") || name == "sse-event.txt") {
                continue;
            }
            for line in std::fs::read_to_string(&file).expect("fixture").lines() {
                let json = line.split_once("data: ").map_or(line, |(_, data)| data);
                if let Ok(value) = serde_json::from_str(json) {
                    strings(&value, texts);
                }
            }
        }
    }
    let mut texts = Vec::new();
    walk(&fixtures(), &mut texts);
    for needle in [
        "usage limit",
        "Rate limit reached",
        "Hello from the loopback",
    ] {
        assert!(
            texts.iter().any(|t| t.contains(needle)),
            "the check has texts to look for: {needle}"
        );
    }
    for line in lines {
        for text in &texts {
            // Compare on a prefix too, so a truncated copy is caught as well.
            let probe: String = text.chars().take(40).collect();
            assert!(
                !line.contains(&probe),
                "plugin output carries transcript text: {line}"
            );
        }
    }
}

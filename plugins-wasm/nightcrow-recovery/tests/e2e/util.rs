//! The native build of the plugin as a real child process: host events in on stdin, commands
//! out on stdout, a temp `CODEX_HOME` with the real rollouts, and a file clock (SDK test
//! hook) so hours of waiting take no time and no test sleeps.
//!
//! Synchronisation without sleeps: after each step the test sends `pane_idle` for a token the
//! plugin has never seen; the plugin answers with `watch_pane` for it, and since it handles
//! stdin in order, every command before that answer belongs to the steps before.

use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdin, Command as Process, Stdio};
use std::sync::mpsc::{Receiver, channel};
use std::time::Duration;

use nightcrow_protocol::{Command, Event, Token, decode_command, encode_event};

const LIMIT_ROLLOUT: &str = "real-0.169-mock-backend/exec-c-normal-then-limit/rollout-2026-12-02T16-10-09-01a23785-4104-78f1-b4f0-247bed73e273.jsonl";
const LIMIT_UUID: &str = "01a23785-4104-78f1-b4f0-247bed73e273";
const NO_HEADERS_ROLLOUT: &str = "real-0.169-mock-backend/exec-b-variant-no-rate-limit-headers/rollout-2026-12-02T16-10-08-01a23785-3c47-7c32-9d29-4a0452622344.jsonl";
const NORMAL_ROLLOUT: &str = "real-0.169-mock-backend/exec-a-normal/rollout-2026-12-02T16-09-52-01a23784-fe56-70f1-80cd-3fa99065980c.jsonl";
/// 2026-12-02T16:00:00Z, before the 0.169 rollouts were created.
const T0_MS: i64 = 1_796_227_200_000;
const PANE: &str = "4f1c00000000000000000000000000e2";
/// Nothing a test waits for takes this long unless the plugin is broken.
const PATIENCE: Duration = Duration::from_secs(20);

fn fixtures() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/codex")
}

struct Plugin {
    child: Child,
    stdin: ChildStdin,
    lines: Receiver<String>,
    clock: PathBuf,
    mono_ms: u64,
    wall_ms: i64,
    barrier: u64,
    /// Every line the plugin wrote, stdout and stderr, for the transcript check.
    seen: Vec<String>,
    stderr: Receiver<String>,
    home: tempfile::TempDir,
    cwd: String,
    /// Files the test wrote under the Codex home and the pane cwd; the plugin writes none.
    written: Vec<PathBuf>,
}

impl Plugin {
    fn start() -> Plugin {
        let home = tempfile::tempdir().expect("temp dir");
        let cwd = home.path().join("repo");
        std::fs::create_dir_all(&cwd).expect("cwd");
        let clock = home.path().join("clock");
        let mut plugin_clock = (0, T0_MS);
        write_clock(&clock, plugin_clock);
        let mut child = Process::new(env!("CARGO_BIN_EXE_nightcrow-recovery"))
            .env_clear()
            .env("CODEX_HOME", home.path().join("codex"))
            .env(nightcrow_plugin_sdk::FAKE_CLOCK_ENV, &clock)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("spawn the plugin");
        let lines = pump(child.stdout.take().expect("stdout"));
        let stderr = pump(child.stderr.take().expect("stderr"));
        plugin_clock.0 = 0;
        Plugin {
            stdin: child.stdin.take().expect("stdin"),
            child,
            lines,
            clock,
            mono_ms: plugin_clock.0,
            wall_ms: plugin_clock.1,
            barrier: 0,
            seen: Vec::new(),
            stderr,
            cwd: cwd.display().to_string(),
            home,
            written: Vec::new(),
        }
    }

    fn day(&self) -> PathBuf {
        let dir = self.home.path().join("codex/sessions/2026/12/02");
        std::fs::create_dir_all(&dir).expect("day dir");
        dir
    }

    /// The fixture's records with `$WORKDIR` rewritten to the pane cwd, and the file they go to.
    fn rollout(&mut self, relative: &str) -> (PathBuf, Vec<String>) {
        let text = std::fs::read_to_string(fixtures().join(relative)).expect("fixture");
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

    fn send(&mut self, event: Event) {
        let line = encode_event(&event).expect("encodable");
        self.stdin.write_all(line.as_bytes()).expect("write event");
        self.stdin.flush().expect("flush");
    }

    fn open(&mut self, generation: u32, command: &str) {
        self.send(Event::PaneOpened {
            token: token(PANE),
            generation,
            title: None,
            command: Some(command.into()),
            cwd: self.cwd.clone(),
        });
    }

    /// Moves both clocks by `secs`.
    fn advance(&mut self, secs: u64) {
        self.mono_ms += secs * 1000;
        self.wall_ms += secs as i64 * 1000;
        write_clock(&self.clock, (self.mono_ms, self.wall_ms));
    }

    /// Everything the plugin sent since the last sync, as compact strings (logs left out).
    fn sync(&mut self) -> Vec<String> {
        self.barrier += 1;
        let barrier = token(&format!(
            "{:032x}",
            0xb000_0000_0000_0000_u128 + u128::from(self.barrier)
        ));
        self.send(Event::PaneIdle {
            token: barrier.clone(),
            generation: 1,
            idle_ms: 10_000,
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
        });
        out
    }

    fn drain_stderr(&mut self) -> Vec<String> {
        let lines: Vec<String> = self.stderr.try_iter().collect();
        self.seen.extend(lines.iter().cloned());
        lines
    }

    /// Appends records one by one, polling after each (2 s apart, the poll interval);
    /// returns what came out.
    fn replay(&mut self, path: &Path, records: &[String]) -> Vec<String> {
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
    fn finish(mut self) -> Vec<String> {
        self.send(Event::Shutdown);
        let status = self.child.wait().expect("wait");
        assert!(status.success(), "plugin exited with {status}");
        self.seen.extend(self.lines.try_iter());
        self.drain_stderr();
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

fn token(text: &str) -> Token {
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
/// 12 chars: messages, instructions, error texts) appears in anything the plugin wrote.
fn check_no_transcript(lines: &[String]) {
    fn strings(value: &serde_json::Value, out: &mut Vec<String>) {
        match value {
            serde_json::Value::String(s) if s.len() >= 12 && s.contains(' ') => out.push(s.clone()),
            serde_json::Value::Array(items) => items.iter().for_each(|v| strings(v, out)),
            serde_json::Value::Object(map) => map.values().for_each(|v| strings(v, out)),
            _ => {}
        }
    }
    let mut texts = Vec::new();
    for relative in [LIMIT_ROLLOUT, NO_HEADERS_ROLLOUT, NORMAL_ROLLOUT] {
        for line in std::fs::read_to_string(fixtures().join(relative))
            .expect("fixture")
            .lines()
        {
            strings(
                &serde_json::from_str(line).expect("fixture JSON"),
                &mut texts,
            );
        }
    }
    assert!(
        texts.iter().any(|t| t.contains("usage limit")),
        "the check has texts to look for"
    );
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

#[test]
fn exec_limit_then_exit_is_relaunched_with_resume_uuid_and_confirmed() {
    let mut plugin = Plugin::start();
    plugin.open(1, "codex exec 'do the thing'");
    assert!(plugin.sync().is_empty());
    let (path, records) = plugin.rollout(LIMIT_ROLLOUT);
    // Turns 1 and 2, as Codex appends them: the limit is seen at turn 2's end.
    let out = plugin.replay(&path, &records[..=20]);
    // Reset 1796228415 (the exhausted primary window) + 30 s.
    assert_eq!(
        out,
        [
            "g1 limit_detected usage limit 1796228415 #0",
            "g1 waiting_for_reset usage limit 1796228445 #0",
        ]
    );
    // `codex exec` exits 1 at the limit.
    plugin.send(Event::PaneExited {
        token: token(PANE),
        generation: 1,
    });
    assert!(plugin.sync().is_empty(), "waits for the reset");
    let left = 1_796_228_445 - plugin.wall_ms / 1000;
    plugin.advance(left as u64 - 1);
    assert!(plugin.sync().is_empty(), "not a second early");
    plugin.advance(1);
    assert_eq!(
        plugin.sync(),
        [
            "g1 ready_to_resume limit reset - #0".to_owned(),
            format!("g1 relaunch resume {LIMIT_UUID}"),
            "g1 resuming resuming session - #1".to_owned(),
        ]
    );
    plugin.advance(3);
    plugin.open(2, "codex exec 'do the thing'");
    assert_eq!(plugin.sync(), ["g2 idle resumed - #0"]);
    // The resumed session's next turn is normal: nothing more to say.
    assert!(plugin.replay(&path, &records[21..]).is_empty());
    plugin.finish();
}

#[test]
fn a_live_tui_at_the_limit_is_called_back_and_a_later_normal_turn_ends_the_episode() {
    let mut plugin = Plugin::start();
    plugin.open(1, "codex");
    let (path, records) = plugin.rollout(LIMIT_ROLLOUT);
    let out = plugin.replay(&path, &records[..=20]);
    assert_eq!(out.len(), 2, "{out:?}");
    plugin.advance(3600);
    assert_eq!(
        plugin.sync(),
        [
            "g1 needs_attention limit reset; continue the session - #0",
            "g1 attention"
        ]
    );
    // The person continued by hand? No input came; Codex itself answered turn 3.
    assert_eq!(
        plugin.replay(&path, &records[21..]),
        ["g1 idle recovered - #0"]
    );
    plugin.finish();
}

#[test]
fn no_rate_limit_headers_backs_off_without_a_deadline_and_input_cancels() {
    let mut plugin = Plugin::start();
    plugin.open(1, "/usr/local/bin/codex exec");
    let (path, records) = plugin.rollout(NO_HEADERS_ROLLOUT);
    assert_eq!(
        plugin.replay(&path, &records),
        [
            "g1 limit_detected usage limit - #0",
            "g1 backoff usage limit; no reset time - #0"
        ]
    );
    plugin.send(Event::UserInput {
        token: token(PANE),
        generation: 1,
    });
    assert_eq!(plugin.sync(), ["g1 idle cancelled - #0"]);
    plugin.advance(3600);
    assert!(plugin.sync().is_empty());
    plugin.finish();
}

#[test]
fn two_candidate_rollouts_never_resume() {
    let mut plugin = Plugin::start();
    plugin.open(1, "codex");
    let (normal, normal_records) = plugin.rollout(NORMAL_ROLLOUT);
    let (path, records) = plugin.rollout(LIMIT_ROLLOUT);
    plugin.replay(&normal, &normal_records);
    assert_eq!(
        plugin.replay(&path, &records[..=20]),
        [
            "g1 needs_attention several sessions match; resume by hand - #0",
            "g1 attention"
        ]
    );
    plugin.send(Event::PaneExited {
        token: token(PANE),
        generation: 1,
    });
    plugin.advance(86_400);
    assert!(plugin.sync().is_empty(), "no relaunch, ever");
    plugin.finish();
}

#[test]
fn other_panes_bad_lines_and_unknown_tokens() {
    let mut plugin = Plugin::start();
    for command in ["npx codex", "bash", "opencode-x"] {
        plugin.open(1, command);
    }
    plugin
        .stdin
        .write_all(b"{\"event\":\"shutdown\",\"v\":2}\nnot json\n\xff\xfe\n")
        .expect("write");
    assert!(
        plugin.sync().is_empty(),
        "ignored panes and bad lines produce nothing"
    );
    // Events for a pane it never got: it asks once, not again within 30 s.
    let stranger = token("5e000000000000000000000000000001");
    plugin.send(Event::PaneOutput {
        token: stranger.clone(),
        generation: 1,
        text: "hi".into(),
    });
    plugin.send(Event::PaneOutput {
        token: stranger.clone(),
        generation: 1,
        text: "hi".into(),
    });
    assert_eq!(plugin.sync(), [format!("watch {}", stranger.as_str())]);
    plugin.advance(31);
    plugin.send(Event::PaneIdle {
        token: stranger.clone(),
        generation: 1,
        idle_ms: 10_000,
    });
    assert_eq!(plugin.sync(), [format!("watch {}", stranger.as_str())]);
    let stderr = plugin.drain_stderr().join("\n");
    assert!(
        stderr.contains("version mismatch") && stderr.contains("not UTF-8"),
        "{stderr}"
    );
    plugin.finish();
}

#[test]
fn at_most_64_panes_are_tracked_and_the_overflow_is_logged_once() {
    let mut plugin = Plugin::start();
    for n in 0..66u32 {
        plugin.send(Event::PaneOpened {
            token: token(&format!("{:032x}", 0xa000 + n)),
            generation: 1,
            title: None,
            command: Some("codex".into()),
            cwd: plugin.cwd.clone(),
        });
    }
    plugin.sync();
    let full: Vec<&String> = plugin
        .seen
        .iter()
        .filter(|line| line.contains("tracking 64 panes already"))
        .collect();
    assert_eq!(full.len(), 1, "logged once: {full:?}");
    plugin.finish();
}

//! The bundled recovery plugin as what users run: the wasm component
//! `builtin:nightcrow-recovery` inside the real runtime (through `nightcrow plugin run`),
//! with the sandbox grant SPEC §9.4 asks for and without it. The same scenario runs as a
//! native process in `plugins-wasm/nightcrow-recovery/tests/e2e`.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdin, Stdio};
use std::sync::mpsc::{Receiver, channel};
use std::time::Duration;

use nightcrow_protocol::{Command as PluginCommand, Event, Token, decode_command, encode_event};

const FIXTURES: &str = concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/plugins-wasm/nightcrow-recovery/tests/fixtures/codex"
);
const LIMIT_ROLLOUT: &str = "real-0.169-mock-backend/exec-c-normal-then-limit/rollout-2026-12-02T16-10-09-01a23785-4104-78f1-b4f0-247bed73e273.jsonl";
const T0_MS: i64 = 1_796_227_200_000;
const PANE: &str = "4f1c00000000000000000000000000e2";
const PATIENCE: Duration = Duration::from_secs(20);

/// The one grant a case gives beyond the clock dir.
#[derive(Clone, Copy)]
enum Grant {
    Nothing,
    CodexHome,
    Connect(u16),
}

struct Recovery {
    child: Child,
    stdin: ChildStdin,
    lines: Receiver<String>,
    home: tempfile::TempDir,
    clock: PathBuf,
    mono_ms: u64,
    wall_ms: i64,
    barrier: u128,
}

impl Recovery {
    /// The component with its clock dir granted, and the Codex home too if `grant_codex`.
    fn start(grant_codex: bool) -> Recovery {
        Recovery::start_with(if grant_codex {
            Grant::CodexHome
        } else {
            Grant::Nothing
        })
    }

    fn start_with(grant: Grant) -> Recovery {
        let home = tempfile::tempdir().unwrap();
        let codex = home.path().join("codex");
        let clock_dir = home.path().join("clock");
        std::fs::create_dir_all(codex.join("sessions/2026/12/02")).unwrap();
        std::fs::create_dir_all(home.path().join("my repo")).unwrap();
        std::fs::create_dir_all(&clock_dir).unwrap();
        let clock = clock_dir.join("now");
        write_clock(&clock, 0, T0_MS);
        let mut command = crate::util::nightcrow(home.path());
        command
            .args(["plugin", "run", "builtin:nightcrow-recovery", "--read"])
            .arg(&clock_dir)
            .arg("--env")
            .arg(format!("CODEX_HOME={}", codex.display()))
            .arg("--env")
            .arg(format!(
                "{}={}",
                nightcrow_plugin_sdk::FAKE_CLOCK_ENV,
                clock.display()
            ))
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::null());
        match grant {
            Grant::CodexHome => {
                command.arg("--read").arg(&codex);
            }
            Grant::Connect(port) => {
                command.arg("--connect").arg(format!("127.0.0.1:{port}"));
            }
            Grant::Nothing => {}
        }
        let mut child = command.spawn().expect("nightcrow runs");
        let stdout = child.stdout.take().unwrap();
        let (sender, lines) = channel();
        std::thread::spawn(move || {
            use std::io::BufRead;
            for line in std::io::BufReader::new(stdout)
                .lines()
                .map_while(Result::ok)
            {
                if sender.send(line).is_err() {
                    break;
                }
            }
        });
        let stdin = child.stdin.take().unwrap();
        Recovery {
            child,
            stdin,
            lines,
            home,
            clock,
            mono_ms: 0,
            wall_ms: T0_MS,
            barrier: 0,
        }
    }

    fn send(&mut self, event: Event) {
        let line = encode_event(&event).unwrap();
        self.stdin.write_all(line.as_bytes()).unwrap();
        self.stdin.flush().unwrap();
    }

    fn advance(&mut self, secs: u64) {
        self.mono_ms += secs * 1000;
        self.wall_ms += secs as i64 * 1000;
        write_clock(&self.clock, self.mono_ms, self.wall_ms);
    }

    /// Every status, relaunch and attention since the last sync; a `pane_idle` for an
    /// unknown token is the barrier (the plugin answers it with `watch_pane`).
    fn sync(&mut self) -> Vec<String> {
        self.barrier += 1;
        let barrier = Token::parse(&format!(
            "{:032x}",
            0xb000_0000_0000_0000_u128 + self.barrier
        ))
        .unwrap();
        self.send(Event::PaneIdle {
            token: barrier.clone(),
            generation: 1,
            idle_ms: 10_000,
        });
        let mut out = Vec::new();
        loop {
            let line = self
                .lines
                .recv_timeout(PATIENCE)
                .expect("the plugin answers the barrier");
            match decode_command(&line).expect("a v3 command") {
                PluginCommand::WatchPane { token } if token == barrier => break,
                PluginCommand::Status {
                    generation,
                    state,
                    deadline_epoch,
                    ..
                } => {
                    out.push(format!(
                        "g{generation} {state} {}",
                        deadline_epoch.map_or("-".into(), |d| d.to_string())
                    ));
                }
                PluginCommand::Relaunch {
                    generation,
                    resume_args,
                    ..
                } => {
                    out.push(format!("g{generation} relaunch {}", resume_args.join(" ")));
                }
                PluginCommand::Attention { generation, .. } => {
                    out.push(format!("g{generation} attention"))
                }
                PluginCommand::SendInput { .. } => panic!("the plugin must never send input"),
                PluginCommand::WatchPane { .. } | PluginCommand::Log { .. } => {}
            }
        }
        self.send(Event::PaneOpened {
            token: barrier,
            generation: 1,
            title: None,
            command: None,
            cwd: "/".into(),
        });
        out
    }

    /// Opens the pane, then appends the limit rollout's first two turns as Codex does.
    fn run_to_the_limit(&mut self) -> Vec<String> {
        let cwd = self.home.path().join("my repo").display().to_string();
        self.send(Event::PaneOpened {
            token: Token::parse(PANE).unwrap(),
            generation: 1,
            title: None,
            command: Some("codex exec 'do the thing'".into()),
            cwd: cwd.clone(),
        });
        let mut out = self.sync();
        let text = std::fs::read_to_string(Path::new(FIXTURES).join(LIMIT_ROLLOUT))
            .unwrap()
            .replace("$WORKDIR", &cwd);
        let rollout = self
            .home
            .path()
            .join("codex/sessions/2026/12/02")
            .join(Path::new(LIMIT_ROLLOUT).file_name().unwrap());
        std::fs::write(&rollout, "").unwrap();
        for record in text.split_inclusive('\n').take(21) {
            std::fs::OpenOptions::new()
                .append(true)
                .open(&rollout)
                .unwrap()
                .write_all(record.as_bytes())
                .unwrap();
            self.advance(2);
            out.extend(self.sync());
        }
        out
    }

    /// `shutdown` through end of stdin; the component must end cleanly, not be forced.
    fn finish(self) {
        let Recovery {
            mut child, stdin, ..
        } = self;
        drop(stdin);
        let status = child.wait().unwrap();
        assert!(status.success(), "{status:?}");
    }
}

fn write_clock(path: &Path, mono_ms: u64, wall_ms: i64) {
    let temp = path.with_extension("new");
    std::fs::write(&temp, format!("{mono_ms} {wall_ms}\n")).unwrap();
    std::fs::rename(&temp, path).unwrap();
}

#[test]
fn with_the_sessions_grant_the_wasm_plugin_waits_for_the_reset_and_resumes() {
    let mut plugin = Recovery::start(true);
    assert_eq!(
        plugin.run_to_the_limit(),
        [
            "g1 limit_detected 1796228415",
            "g1 waiting_for_reset 1796228445"
        ]
    );
    plugin.send(Event::PaneExited {
        token: Token::parse(PANE).unwrap(),
        generation: 1,
    });
    assert!(plugin.sync().is_empty(), "waits for the reset");
    let left = 1_796_228_445 - plugin.wall_ms / 1000;
    plugin.advance(left as u64);
    assert_eq!(
        plugin.sync(),
        [
            "g1 ready_to_resume -",
            "g1 relaunch resume 01a23785-4104-78f1-b4f0-247bed73e273",
            "g1 resuming -"
        ]
    );
    plugin.finish();
}

#[test]
fn without_the_grant_the_wasm_plugin_sees_nothing_and_keeps_running() {
    let mut plugin = Recovery::start(false);
    assert!(plugin.run_to_the_limit().is_empty());
    plugin.send(Event::PaneExited {
        token: Token::parse(PANE).unwrap(),
        generation: 1,
    });
    plugin.advance(24 * 3600);
    assert!(plugin.sync().is_empty());
    plugin.finish();
}

/// A loopback server that reports the request line of every request made to it.
fn listening_server() -> (u16, Receiver<String>) {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    let (sender, requests) = channel();
    std::thread::spawn(move || {
        use std::io::BufRead;
        for stream in listener.incoming().map_while(Result::ok) {
            let mut line = String::new();
            let _ = std::io::BufReader::new(&stream).read_line(&mut line);
            if sender.send(line).is_err() {
                break;
            }
            // Dropping the stream answers nothing: the plugin must cope with that too.
        }
    });
    (port, requests)
}

/// Opens an OpenCode pane on `port` and gives the plugin ten seconds of its clock.
fn watch_opencode(plugin: &mut Recovery, port: u16) {
    let cwd = plugin.home.path().join("my repo").display().to_string();
    plugin.send(Event::PaneOpened {
        token: Token::parse(PANE).unwrap(),
        generation: 1,
        title: None,
        command: Some(format!("opencode --port {port}")),
        cwd,
    });
    for _ in 0..10 {
        plugin.advance(1);
        assert!(
            plugin.sync().is_empty(),
            "nothing to report about a silent server"
        );
    }
}

#[test]
fn with_the_connect_grant_the_wasm_plugin_reaches_the_opencode_server() {
    let (port, requests) = listening_server();
    let mut plugin = Recovery::start_with(Grant::Connect(port));
    watch_opencode(&mut plugin, port);
    let request = requests
        .recv_timeout(PATIENCE)
        .expect("the plugin connects through the sandbox");
    assert!(
        request.starts_with("GET /") && request.contains("directory="),
        "{request:?}"
    );
    plugin.finish();
}

#[test]
fn without_the_connect_grant_the_sandbox_refuses_and_the_plugin_keeps_running() {
    let (port, requests) = listening_server();
    let mut plugin = Recovery::start_with(Grant::Nothing);
    watch_opencode(&mut plugin, port);
    plugin.finish();
    assert!(
        requests.try_recv().is_err(),
        "a connection got through the sandbox"
    );
}

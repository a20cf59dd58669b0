//! The daemon as a real process in a temp `NIGHTCROW_HOME`: single instance, socket mode,
//! stale-socket recovery after `kill -9` (and nothing left running), a socket client that
//! attaches, types and re-attaches with scrollback, config errors, reload, and the demo.

use std::path::{Path, PathBuf};
use std::process::{Child, Output, Stdio};
use std::time::{Duration, Instant};

use nightcrow_client::{Connection, Home};
use nightcrow_client_protocol::daemon::{DaemonAnswer, DaemonRequest};
use nightcrow_client_protocol::frame::WireFrame;
use nightcrow_test_plugin_artifacts as guests;

use serde_json::{Value, json};

use crate::util::nightcrow;

/// Long enough for anything here unless it is broken; used only to detect hangs.
const PATIENCE: Duration = Duration::from_secs(30);

/// A daemon in the foreground of a child process. Its log is printed if a test fails.
pub(crate) struct TestDaemon {
    home: tempfile::TempDir,
    child: Option<Child>,
    log: PathBuf,
}

impl TestDaemon {
    pub(crate) fn start(config: &str) -> TestDaemon {
        let home = tempfile::tempdir().unwrap();
        std::fs::write(home.path().join("config.toml"), config).unwrap();
        TestDaemon::start_in(home)
    }

    /// A daemon for a home the test has prepared.
    pub(crate) fn start_in(home: tempfile::TempDir) -> TestDaemon {
        let mut daemon = TestDaemon {
            log: home.path().join("test-daemon.log"),
            home,
            child: None,
        };
        daemon.spawn();
        daemon
    }

    pub(crate) fn spawn(&mut self) {
        let log = std::fs::File::create(&self.log).unwrap();
        let child = nightcrow(self.home.path())
            .stdin(Stdio::null())
            .stdout(log.try_clone().unwrap())
            .stderr(log)
            .spawn()
            .unwrap();
        self.child = Some(child);
        wait_until("the daemon never answered", || {
            self.ask(&DaemonRequest::Status).is_ok()
        });
    }

    pub(crate) fn home(&self) -> &Path {
        self.home.path()
    }

    pub(crate) fn run(&self, args: &[&str]) -> Output {
        nightcrow(self.home()).args(args).output().unwrap()
    }

    pub(crate) fn ask(&self, request: &DaemonRequest) -> Result<DaemonAnswer, String> {
        let home = Home::new(self.home().to_owned());
        tokio_runtime().block_on(async {
            let mut connection = Connection::open(&home).await.map_err(|e| e.to_string())?;
            connection.ask(request).await.map_err(|e| e.to_string())
        })
    }

    /// A temp repository opened with `nightcrow open` (kept while the guard lives).
    pub(crate) fn open_repo(&self) -> tempfile::TempDir {
        let repo = tempfile::tempdir().unwrap();
        let opened = self.run(&["open", repo.path().to_str().unwrap()]);
        assert!(opened.status.success(), "{opened:?}");
        repo
    }

    pub(crate) fn pid(&self) -> u32 {
        self.child.as_ref().unwrap().id()
    }

    /// Waits for the daemon process to end by itself.
    pub(crate) fn wait(&mut self) -> std::process::ExitStatus {
        let mut child = self.child.take().unwrap();
        let mut status = None;
        wait_until("the daemon did not end", || {
            status = child.try_wait().unwrap();
            status.is_some()
        });
        status.unwrap()
    }
}

impl Drop for TestDaemon {
    fn drop(&mut self) {
        if let Some(mut child) = self.child.take() {
            let _ = child.kill();
            let _ = child.wait();
        }
        if std::thread::panicking() {
            eprintln!(
                "--- daemon log ---\n{}",
                std::fs::read_to_string(&self.log).unwrap_or_default()
            );
        }
    }
}

/// Polls `done` until it holds; `what` says what never happened if it does not.
pub(crate) fn wait_until(what: &str, mut done: impl FnMut() -> bool) {
    let started = Instant::now();
    while !done() {
        assert!(started.elapsed() < PATIENCE, "{what}");
        std::thread::sleep(Duration::from_millis(20));
    }
}

pub(crate) fn tokio_runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap()
}

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

#[test]
fn one_daemon_per_home_a_private_socket_status_and_a_clean_stop() {
    let mut daemon = TestDaemon::start("");
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        let mode = std::fs::metadata(daemon.home().join("daemon.sock"))
            .unwrap()
            .permissions()
            .mode();
        assert_eq!(mode & 0o777, 0o600, "socket mode {mode:o}");
    }
    let status = daemon.run(&["status"]);
    assert!(status.status.success(), "{status:?}");
    assert!(
        text(&status.stdout).contains(&format!("(pid {})", daemon.pid())),
        "{status:?}"
    );
    assert!(
        text(&status.stdout).contains("no repository open"),
        "{status:?}"
    );

    let second = nightcrow(daemon.home()).output().unwrap();
    assert!(!second.status.success());
    assert!(
        text(&second.stderr).contains("already running"),
        "{second:?}"
    );

    let stopped = daemon.run(&["stop"]);
    assert!(stopped.status.success(), "{stopped:?}");
    assert!(daemon.wait().success());
    assert!(!daemon.home().join("daemon.sock").exists());
    let after = daemon.run(&["status"]);
    assert!(!after.status.success());
    assert!(
        text(&after.stderr).contains("no nightcrow daemon is running"),
        "{after:?}"
    );
}

/// Processes whose command line contains `marker`, other than the caller.
fn processes_with(marker: &str) -> Vec<String> {
    let mut found = Vec::new();
    for entry in std::fs::read_dir("/proc").unwrap().flatten() {
        let Ok(cmdline) = std::fs::read(entry.path().join("cmdline")) else {
            continue;
        };
        let cmdline = text(&cmdline).replace('\0', " ");
        if cmdline.contains(marker) && !cmdline.contains("processes_with") {
            found.push(format!(
                "{}: {cmdline}",
                entry.file_name().to_string_lossy()
            ));
        }
    }
    found
}

/// `nightcrow stop` ends panes that ignore SIGHUP and SIGTERM, background jobs included:
/// SIGKILL to the pane's process group after the grace, before the daemon exits.
#[cfg(target_os = "linux")]
#[test]
fn stop_ends_panes_that_ignore_hup_and_term() {
    let seconds = 87_000 + std::process::id() % 400;
    let config = format!(
        "[shell]\nprogram = \"/bin/sh\"\ncommand_args = [\"-c\"]\n\n\
         [[startup_command]]\ncommand = \"trap '' HUP TERM; sleep {seconds} & echo started; while :; do sleep 1; done\"\n"
    );
    let mut daemon = TestDaemon::start(&config);
    let _repo = daemon.open_repo();
    let marker = format!("sleep {seconds}");
    wait_until("the stubborn pane and its job", || {
        processes_with(&marker).len() >= 2
    });
    let stopped = daemon.run(&["stop"]);
    assert!(stopped.status.success(), "{stopped:?}");
    assert!(daemon.wait().success());
    assert_eq!(processes_with(&marker), Vec::<String>::new());
}

#[cfg(target_os = "linux")]
#[test]
fn kill_9_leaves_no_pane_or_plugin_behind_and_the_next_daemon_replaces_the_stale_socket() {
    let marker = format!("nightcrow-e2e-{}", std::process::id());
    let pane_seconds = 86_000 + std::process::id() % 400;
    let config = format!(
        "[[startup_command]]\ncommand = \"sleep {pane_seconds}\"\nplugin = \"watcher\"\n\n\
         [[plugin]]\nname = \"watcher\"\ncommand = {:?}\nruntime = \"native\"\ntrusted = true\nenabled = true\n\
         args = [{marker:?}]\n",
        guests::ECHO_NATIVE
    );
    let mut daemon = TestDaemon::start(&config);
    let _repo = daemon.open_repo();
    let pane = format!("sleep {pane_seconds}");
    wait_until("pane and plugin never ran", || {
        !processes_with(&pane).is_empty() && !processes_with(&marker).is_empty()
    });
    let status = daemon.run(&["status"]);
    let status = text(&status.stdout);
    assert!(status.contains("plugin watcher running"), "{status}");
    assert!(status.contains("watched by watcher"), "{status}");

    let killed = std::process::Command::new("kill")
        .args(["-9", &daemon.pid().to_string()])
        .status()
        .unwrap();
    assert!(killed.success());
    daemon.wait();
    assert!(
        daemon.home().join("daemon.sock").exists(),
        "kill -9 leaves the socket file"
    );
    wait_until("a pane or plugin process outlived the daemon", || {
        processes_with(&pane).is_empty() && processes_with(&marker).is_empty()
    });

    daemon.spawn();
    let status = daemon.run(&["status"]);
    assert!(status.status.success(), "{status:?}");
    assert!(daemon.run(&["stop"]).status.success());
    assert!(daemon.wait().success());
}

pub(crate) async fn attach(connection: &mut Connection, repo: &Path) {
    let request = json!({"type": "attach", "repo": repo});
    connection.send(&request.to_string()).await.unwrap();
}

/// Reads frames until a control message satisfies `want`; output frames of the pane are
/// collected into `output` on the way.
pub(crate) async fn until(
    connection: &mut Connection,
    output: &mut String,
    want: impl Fn(&Value, &str) -> bool,
) -> Value {
    tokio::time::timeout(PATIENCE, async {
        loop {
            match connection
                .next()
                .await
                .unwrap()
                .expect("the daemon hung up")
            {
                WireFrame::Control(text) => {
                    let message: Value = serde_json::from_str(&text).unwrap();
                    if want(&message, output) {
                        return message;
                    }
                }
                WireFrame::Output(bytes) => {
                    output.push_str(&String::from_utf8_lossy(&bytes[4..]));
                    if want(&Value::Null, output) {
                        return Value::Null;
                    }
                }
            }
        }
    })
    .await
    .unwrap_or_else(|_| panic!("never got there; output so far: {output:?}"))
}

#[test]
fn a_socket_client_opens_a_pane_types_and_reattaches_with_the_scrollback() {
    let daemon = TestDaemon::start("");
    let repo = tempfile::tempdir().unwrap();
    let home = Home::new(daemon.home().to_owned());
    tokio_runtime().block_on(async {
        let mut connection = Connection::open(&home).await.unwrap();
        // A malformed daemon request is answered with `error`; the connection carries on.
        connection.send(r#"{"type":"explode"}"#).await.unwrap();
        let error = until(&mut connection, &mut String::new(), |_, _| true).await;
        let error: DaemonAnswer = serde_json::from_value(error).unwrap();
        assert!(matches!(error, DaemonAnswer::Error { .. }), "{error:?}");
        attach(&mut connection, repo.path()).await;
        let mut output = String::new();
        let hello = until(&mut connection, &mut output, |m, _| m["type"] == "hello").await;
        assert_eq!(hello["version"], 1);
        connection
            .send(r#"{"type":"create","title":"sh"}"#)
            .await
            .unwrap();
        let created = until(&mut connection, &mut output, |m, _| m["type"] == "created").await;
        let pane = created["pane"].as_u64().unwrap();
        // A malformed hub request gets an error in the stream; the pane keeps running.
        connection.send(r#"{"type":"input"}"#).await.unwrap();
        until(&mut connection, &mut output, |m, _| m["type"] == "error").await;
        let input = json!({"type": "input", "pane": pane, "data": "echo hi-$((6*7))\r"});
        connection.send(&input.to_string()).await.unwrap();
        until(&mut connection, &mut output, |_, out| out.contains("hi-42")).await;
        drop(connection);

        let mut again = Connection::open(&home).await.unwrap();
        attach(&mut again, repo.path()).await;
        let mut replay = String::new();
        let created = until(&mut again, &mut replay, |m, _| m["type"] == "created").await;
        assert_eq!(created["pane"].as_u64(), Some(pane));
        until(&mut again, &mut replay, |_, out| out.contains("hi-42")).await;
    });
}

#[cfg(unix)]
#[test]
fn ctrl_c_stops_the_daemon_cleanly_and_an_installed_plugin_runs_by_name() {
    let home = tempfile::tempdir().unwrap();
    let installed = nightcrow(home.path())
        .args(["plugin", "install", guests::ECHO_WASM, "--name", "mine"])
        .output()
        .unwrap();
    assert!(installed.status.success(), "{installed:?}");
    let config = "[[plugin]]\nname = \"mine\"\ncommand = \"mine\"\nenabled = true\n\
                  watch_on_signal = true\n";
    std::fs::write(home.path().join("config.toml"), config).unwrap();
    let mut daemon = TestDaemon::start_in(home);
    let _repo = daemon.open_repo();
    wait_until("the installed plugin never ran", || {
        text(&daemon.run(&["status"]).stdout).contains("plugin mine running")
    });
    let interrupted = std::process::Command::new("kill")
        .args(["-INT", &daemon.pid().to_string()])
        .status()
        .unwrap();
    assert!(interrupted.success());
    assert!(daemon.wait().success());
    assert!(!daemon.home().join("daemon.sock").exists());
    let log = std::fs::read_to_string(&daemon.log).unwrap();
    assert!(log.contains("daemon stopped"), "{log}");
}

#[test]
fn detach_starts_a_background_daemon_that_logs_to_its_file() {
    let home = tempfile::tempdir().unwrap();
    let started = nightcrow(home.path()).arg("-d").output().unwrap();
    assert!(started.status.success(), "{started:?}");
    assert!(
        text(&started.stdout).contains("nightcrow daemon running"),
        "{started:?}"
    );
    let status = nightcrow(home.path()).arg("status").output().unwrap();
    assert!(status.status.success(), "{status:?}");
    let stopped = nightcrow(home.path()).arg("stop").output().unwrap();
    assert!(stopped.status.success(), "{stopped:?}");
    let log = std::fs::read_to_string(home.path().join("daemon.log")).unwrap();
    assert!(log.contains("daemon listening"), "{log}");
}

#[test]
fn bad_configs_stop_the_daemon_from_starting_with_file_line_and_column() {
    let cases = [
        ("[shell]\nprogramm = \"/bin/sh\"\n", ":2:1:"),
        ("[guard]\nwindow_secs = \"sixty\"\n", ":2:"),
        (
            "[[startup_command]]\ncommand = \"codex\"\nplugin = \"nobody\"\n",
            ":3:",
        ),
        (
            "[[plugin]]\nname = \"p\"\ncommand = \"builtin:nightcrow-recovery\"\n\
             [[plugin]]\nname = \"p\"\ncommand = \"builtin:nightcrow-recovery\"\n",
            ":5:",
        ),
        (
            "[[plugin]]\nname = \"p\"\ncommand = \"builtin:nightcrow-recovery\"\n\
             [plugin.sandbox]\nconnect = [\"127.0.0.1:90-80\"]\n",
            ":5:",
        ),
    ];
    for (config, position) in cases {
        let home = tempfile::tempdir().unwrap();
        let path = home.path().join("config.toml");
        std::fs::write(&path, config).unwrap();
        let output = nightcrow(home.path()).output().unwrap();
        assert_eq!(output.status.code(), Some(2), "{config}: {output:?}");
        let stderr = text(&output.stderr);
        assert!(
            stderr.contains(&format!("{}{position}", path.display())),
            "{config}: {stderr}"
        );
        assert!(!home.path().join("daemon.sock").exists());
    }
}

#[test]
fn a_broken_reload_changes_nothing_and_a_good_one_reports_what_changed() {
    let config = format!(
        "[[plugin]]\nname = \"echo\"\ncommand = {:?}\nenabled = true\nwatch_on_signal = true\n",
        guests::ECHO_WASM
    );
    let daemon = TestDaemon::start(&config);
    let _repo = daemon.open_repo();
    let running = || text(&daemon.run(&["status"]).stdout).contains("plugin echo running");
    wait_until("the plugin never ran", running);
    let path = daemon.home().join("config.toml");
    std::fs::write(&path, format!("{config}enabeld = false\n")).unwrap();
    let broken = daemon.run(&["reload"]);
    assert_eq!(broken.status.code(), Some(2), "{broken:?}");
    let stderr = text(&broken.stderr);
    assert!(
        stderr.contains(&format!("{}:6:", path.display())),
        "{stderr}"
    );
    assert!(stderr.contains("nothing was changed"), "{stderr}");
    assert!(running(), "the broken file changed nothing");

    std::fs::write(&path, config.replace("enabled = true", "enabled = false")).unwrap();
    let reloaded = daemon.run(&["reload"]);
    assert!(reloaded.status.success(), "{reloaded:?}");
    assert!(
        text(&reloaded.stdout).contains("stopped: echo"),
        "{reloaded:?}"
    );
}

#[test]
fn the_demo_shows_a_usage_limit_recovery_and_exits_0() {
    let home = tempfile::tempdir().unwrap();
    let output = nightcrow(home.path()).arg("demo").output().unwrap();
    let stdout = text(&output.stdout);
    assert!(output.status.success(), "{output:?}");
    for step in [
        "You've hit your usage limit",
        "recovery, pane 1: waiting_for_reset",
        "until the plugin acts",
        "recovery, pane 1: resuming",
        "pane 1 (codex) started again: the relaunched session",
        "resuming session",
        "recovered: the session was resumed in pane 1",
    ] {
        assert!(stdout.contains(step), "missing {step:?} in:\n{stdout}");
    }
    assert!(
        !stdout.contains("cancelled"),
        "a relaunch cancels nothing:\n{stdout}"
    );
}

/// The examples as a user runs them: installed with `plugin install`, enabled with only the
/// grants their READMEs ask for (none), in a daemon; what they say reaches a client — the
/// Python example's status, the Rust example's attention.
#[test]
fn the_example_plugins_installed_and_enabled_reach_a_client() {
    let home = tempfile::tempdir().unwrap();
    for (file, name) in [
        (
            nightcrow_example_artifacts::PYTHON_STATUS_WASM,
            "python-status",
        ),
        (
            nightcrow_example_artifacts::REGEX_ATTENTION_WASM,
            "regex-attention",
        ),
    ] {
        let installed = nightcrow(home.path())
            .args(["plugin", "install", file])
            .output()
            .unwrap();
        assert!(installed.status.success(), "{installed:?}");
        assert!(
            text(&installed.stdout).contains(&format!("as `{name}`")),
            "{installed:?}"
        );
    }
    let config = "[[plugin]]\nname = \"python-status\"\ncommand = \"python-status\"\nenabled = true\n\n\
                  [[plugin]]\nname = \"regex-attention\"\ncommand = \"regex-attention\"\n\
                  enabled = true\nargs = [\"(?i)usage limit\"]\n\n\
                  [[startup_command]]\nname = \"status\"\ncommand = \"echo building-$((6*7)); sleep 60\"\n\
                  plugin = \"python-status\"\n\n\
                  [[startup_command]]\nname = \"limit\"\n\
                  command = \"sleep 1; echo You hit your usage limit; sleep 60\"\nplugin = \"regex-attention\"\n";
    std::fs::write(home.path().join("config.toml"), config).unwrap();
    let daemon = TestDaemon::start_in(home);
    let repo = tempfile::tempdir().unwrap();
    let client_home = Home::new(daemon.home().to_owned());
    tokio_runtime().block_on(async {
        let mut connection = Connection::open(&client_home).await.unwrap();
        attach(&mut connection, repo.path()).await;
        let mut output = String::new();
        let status = until(&mut connection, &mut output, |m, _| {
            m["type"] == "recovery" && m["state"] == "working"
        })
        .await;
        assert_eq!(status["detail"], "building-42", "{status}");
        until(&mut connection, &mut output, |m, _| {
            m["type"] == "attention"
        })
        .await;
    });
}

/// A plugin's status text with escape sequences (retitle the terminal, turn it red) reaches
/// neither `nightcrow status` nor an attached client as control characters: the guard
/// escapes them, and `status` escapes whatever it prints.
#[test]
fn a_plugins_escape_sequences_reach_neither_status_nor_a_client() {
    let config = format!(
        "[shell]\nprogram = \"/bin/sh\"\ncommand_args = [\"-c\"]\n\n\
         [[plugin]]\nname = \"scripted\"\ncommand = {:?}\nenabled = true\n\
         args = [\"exit_status=\\u001b]0;pwned\\u0007\\u001b[31mred\"]\n\n\
         [[startup_command]]\nname = \"held\"\ncommand = \"echo ready; read go; exit 0\"\nplugin = \"scripted\"\n",
        guests::SCRIPTED_WASM
    );
    let daemon = TestDaemon::start(&config);
    let repo = daemon.open_repo();
    let home = Home::new(daemon.home().to_owned());
    tokio_runtime().block_on(async {
        let mut connection = Connection::open(&home).await.unwrap();
        attach(&mut connection, repo.path()).await;
        let mut output = String::new();
        let created = until(&mut connection, &mut output, |m, _| m["type"] == "created").await;
        until(&mut connection, &mut output, |_, out| out.contains("ready")).await;
        let input = json!({"type": "input", "pane": created["pane"], "data": "go\r"});
        connection.send(&input.to_string()).await.unwrap();
        let recovery = until(&mut connection, &mut output, |m, _| {
            m["type"] == "recovery" && m["state"] != "cancelled"
        })
        .await;
        let state = recovery["state"].as_str().unwrap();
        assert_eq!(state, r"\u{1b}]0;pwned\u{7}\u{1b}[31mred", "{recovery}");
    });
    let status = daemon.run(&["status"]);
    assert!(status.status.success(), "{status:?}");
    let stdout = text(&status.stdout);
    assert!(stdout.contains("hold on pane"), "{stdout}");
    assert!(stdout.contains(r"\u{1b}]0;pwned"), "{stdout}");
    assert!(!stdout.contains(['\u{1b}', '\u{7}']), "{stdout:?}");
}

/// The uid every test here runs the other side as (`nobody`).
#[cfg(target_os = "linux")]
const OTHER_UID: u32 = 65_534;

/// `setpriv` running `nightcrow` as [`OTHER_UID`] with `home` (theirs) as its home;
/// `None` (after saying why) where this test cannot switch users.
#[cfg(target_os = "linux")]
fn as_other_user(home: &Path) -> Option<std::process::Command> {
    let root = std::fs::metadata("/proc/self")
        .map(|meta| std::os::unix::fs::MetadataExt::uid(&meta) == 0)
        .unwrap_or(false);
    if !root
        || std::process::Command::new("setpriv")
            .arg("--version")
            .output()
            .is_err()
    {
        eprintln!("skipped: switching users needs root and setpriv");
        return None;
    }
    std::os::unix::fs::chown(home, Some(OTHER_UID), Some(OTHER_UID)).unwrap();
    let mut command = std::process::Command::new("setpriv");
    command
        .args(["--reuid=65534", "--regid=65534", "--clear-groups", "--"])
        .arg(env!("CARGO_BIN_EXE_nightcrow"))
        .env("NIGHTCROW_HOME", home)
        .env("HOME", home)
        .env("XDG_CACHE_HOME", home.join("cache"))
        .env_remove("NIGHTCROW_LOG");
    Some(command)
}

/// Another user reaching the socket (here through a hard link and a mode opened wide, as
/// in the moment between the old bind and chmod) is refused by the daemon; and a client
/// refuses a daemon of another user (a socket swapped under it).
#[cfg(target_os = "linux")]
#[test]
fn the_daemon_and_its_clients_refuse_a_peer_of_another_user() {
    use std::os::unix::fs::PermissionsExt;
    let their_home = tempfile::tempdir().unwrap();
    let Some(mut theirs) = as_other_user(their_home.path()) else {
        return;
    };
    let daemon = TestDaemon::start("");
    let socket = daemon.home().join("daemon.sock");
    std::fs::hard_link(&socket, their_home.path().join("daemon.sock")).unwrap();
    std::fs::set_permissions(&socket, std::fs::Permissions::from_mode(0o666)).unwrap();
    let status = theirs.arg("status").output().unwrap();
    assert!(!status.status.success(), "{status:?}");
    wait_until("the daemon never refused the other user", || {
        std::fs::read_to_string(&daemon.log)
            .unwrap()
            .contains(&format!("its peer runs as uid {OTHER_UID}"))
    });
    assert!(
        text(&status.stderr).contains("its peer runs as uid 0"),
        "the client refused the daemon too: {status:?}"
    );

    // Their daemon, and our client pointed at its socket.
    let their_daemon_home = tempfile::tempdir().unwrap();
    let mut their_daemon = as_other_user(their_daemon_home.path())
        .unwrap()
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let their_socket = their_daemon_home.path().join("daemon.sock");
    wait_until("their daemon never listened", || their_socket.exists());
    let our_home = tempfile::tempdir().unwrap();
    std::fs::hard_link(&their_socket, our_home.path().join("daemon.sock")).unwrap();
    let status = nightcrow(our_home.path()).arg("status").output().unwrap();
    let _ = their_daemon.kill();
    let _ = their_daemon.wait();
    assert!(!status.status.success(), "{status:?}");
    let stderr = text(&status.stderr);
    assert!(
        stderr.contains("refusing to talk to the daemon's socket")
            && stderr.contains(&format!("its peer runs as uid {OTHER_UID}")),
        "{stderr}"
    );
}

/// `-d` beside a running daemon says so with that daemon's pid and fails, as the
/// foreground daemon does; it never reports a process that gave up at once.
#[test]
fn detach_beside_a_running_daemon_names_it_and_fails() {
    let daemon = TestDaemon::start("");
    let second = daemon.run(&["-d"]);
    assert_eq!(second.status.code(), Some(1), "{second:?}");
    let stderr = text(&second.stderr);
    assert!(
        stderr.contains(&format!("already running for {}", daemon.home().display()))
            && stderr.contains(&format!("(pid {})", daemon.pid())),
        "{second:?}"
    );
    assert!(second.stdout.is_empty(), "{second:?}");
    assert!(daemon.ask(&DaemonRequest::Status).is_ok());
}

/// `-d` while the daemon holding the home is going away (here: frozen, then killed, as a
/// crash or a `kill -9` leaves it for a moment) waits for it to let go and starts a new one,
/// instead of failing on the dying daemon's socket.
#[cfg(unix)]
#[test]
fn detach_while_the_running_daemon_dies_starts_a_new_one() {
    let mut daemon = TestDaemon::start("");
    let dying = daemon.pid();
    let signal = |name: &str| {
        let sent = std::process::Command::new("kill")
            .args([name, &dying.to_string()])
            .status()
            .unwrap();
        assert!(sent.success());
    };
    signal("-STOP");
    let detach = nightcrow(daemon.home())
        .arg("-d")
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    // `-d` is asking the frozen daemon (its connection waits in the socket's backlog).
    std::thread::sleep(Duration::from_millis(500));
    signal("-KILL");
    daemon.wait();
    let detached = detach.wait_with_output().unwrap();
    assert!(detached.status.success(), "{detached:?}");
    let pid = match daemon.ask(&DaemonRequest::Status) {
        Ok(DaemonAnswer::Status(status)) => status.pid,
        other => panic!("{other:?}"),
    };
    assert_ne!(pid, dying);
    assert!(
        text(&detached.stdout).contains(&format!("nightcrow daemon running (pid {pid})")),
        "{detached:?}"
    );
    assert!(daemon.run(&["stop"]).status.success());
}

/// `nightcrow status | head -1`: the daemon's commands end quietly on a closed stdout.
#[cfg(unix)]
#[test]
fn status_and_open_end_quietly_on_a_closed_stdout() {
    let daemon = TestDaemon::start("");
    let repo = tempfile::tempdir().unwrap();
    for args in [&["status"][..], &["open", repo.path().to_str().unwrap()]] {
        let ended = nightcrow(daemon.home())
            .args(args)
            .stdout(crate::cli::closed_pipe())
            .output()
            .unwrap();
        assert_eq!(ended.status.code(), Some(141), "{args:?}: {ended:?}");
        assert!(ended.stderr.is_empty(), "{args:?}: {ended:?}");
    }
}

/// A reload that changes only the startup commands names no repository with nothing under
/// it: it says nothing started, stopped or restarted, and when the new commands apply.
#[test]
fn a_reload_of_startup_commands_says_what_it_did() {
    let config = "[[startup_command]]\nname = \"one\"\ncommand = \"sleep 600\"\n";
    let daemon = TestDaemon::start(config);
    let _repo = daemon.open_repo();
    let path = daemon.home().join("config.toml");
    std::fs::write(
        &path,
        format!("{config}[[startup_command]]\nname = \"two\"\ncommand = \"sleep 601\"\n"),
    )
    .unwrap();
    let reloaded = daemon.run(&["reload"]);
    assert!(reloaded.status.success(), "{reloaded:?}");
    let stdout = text(&reloaded.stdout);
    assert!(
        stdout.lines().all(|line| !line.ends_with(':')),
        "a repository with nothing under it: {stdout}"
    );
    assert!(
        stdout.contains("no plugin started, stopped or restarted")
            && stdout.contains("startup commands apply when the daemon next opens a repository"),
        "{stdout}"
    );
}

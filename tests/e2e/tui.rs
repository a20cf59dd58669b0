//! `nightcrow attach` in a real terminal: the binary runs inside a private tmux server,
//! keys go in with `send-keys`, and what a person would see is read with `capture-pane`.
//! Each test has its own `NIGHTCROW_HOME`; `attach` starts the daemon there by itself.
//!
//! tmux is required: `.ci/run` installs it. Outside CI a machine without tmux skips these
//! tests with a message (under CI they fail instead).

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use nightcrow_test_plugin_artifacts as guests;

use crate::util::nightcrow;

/// Long enough for anything here unless it is broken; used only to detect hangs.
const PATIENCE: Duration = Duration::from_secs(40);

/// A tmux server of its own running `nightcrow attach` (or another nightcrow command).
pub(crate) struct Tui {
    server: String,
    home: tempfile::TempDir,
    repo: tempfile::TempDir,
}

impl Tui {
    /// `None` (after saying why) when tmux is missing outside CI.
    pub(crate) fn attach(config: &str) -> Option<Tui> {
        Tui::run(config, "attach", 100, 30)
    }

    /// `attach` with a plain shell, once the first pane's tab is drawn.
    pub(crate) fn attach_shell() -> Option<Tui> {
        let tui = Tui::attach(PLAIN_SHELL)?;
        tui.wait_for("the first pane's tab", |screen| {
            screen.starts_with(" 1:shell")
        });
        Some(tui)
    }

    pub(crate) fn run(config: &str, args: &str, width: u16, height: u16) -> Option<Tui> {
        Tui::run_in(tempfile::tempdir().unwrap(), config, args, width, height)
    }

    /// [`Tui::run`] in a `NIGHTCROW_HOME` prepared beforehand (e.g. plugins installed).
    pub(crate) fn run_in(
        home: tempfile::TempDir,
        config: &str,
        args: &str,
        width: u16,
        height: u16,
    ) -> Option<Tui> {
        if Command::new("tmux").arg("-V").output().is_err() {
            assert!(std::env::var_os("CI").is_none(), "tmux is not installed");
            eprintln!("skipped: tmux is not installed (apt-get install tmux)");
            return None;
        }
        std::fs::write(home.path().join("config.toml"), config).unwrap();
        let repo = tempfile::tempdir().unwrap();
        let name = format!(
            "nightcrow-tui-{}",
            home.path().file_name().unwrap().to_string_lossy()
        );
        let tui = Tui {
            server: name,
            home,
            repo,
        };
        // The same environment `util::nightcrow` gives a command, passed through tmux.
        let probe = nightcrow(tui.home.path());
        let mut command = tui.tmux();
        command.args([
            "new-session",
            "-d",
            "-x",
            &width.to_string(),
            "-y",
            &height.to_string(),
        ]);
        command.arg("-c").arg(tui.repo.path());
        for (key, value) in probe.get_envs() {
            if let Some(value) = value {
                command.arg("-e").arg(format!(
                    "{}={}",
                    key.to_string_lossy(),
                    value.to_string_lossy()
                ));
            }
        }
        // Local time is UTC here, so a deadline is drawn as a known HH:MM.
        command.args(["-e", "TZ=UTC"]);
        command.arg(then_report(args));
        let started = command.status().unwrap();
        assert!(started.success(), "tmux did not start");
        Some(tui)
    }

    pub(crate) fn tmux(&self) -> Command {
        let mut command = Command::new("tmux");
        command.args(["-L", &self.server, "-f", "/dev/null"]);
        command
    }

    /// Keys as `send-keys` names them (`C-f`, `Enter`, `PageUp`) or literal words.
    pub(crate) fn keys(&self, keys: &[&str]) {
        let status = self.tmux().arg("send-keys").args(keys).status().unwrap();
        assert!(status.success());
    }

    /// Types `line` literally, then Enter.
    pub(crate) fn type_line(&self, line: &str) {
        let status = self
            .tmux()
            .args(["send-keys", "-l", line])
            .status()
            .unwrap();
        assert!(status.success());
        self.keys(&["Enter"]);
    }

    pub(crate) fn leader(&self, key: &str) {
        self.keys(&["C-f"]);
        self.keys(&[key]);
    }

    pub(crate) fn screen(&self) -> String {
        let output = self.tmux().args(["capture-pane", "-p"]).output().unwrap();
        String::from_utf8_lossy(&output.stdout).into_owned()
    }

    pub(crate) fn display(&self, format: &str) -> String {
        let output = self
            .tmux()
            .args(["display", "-p", format])
            .output()
            .unwrap();
        String::from_utf8_lossy(&output.stdout).trim().to_owned()
    }

    /// Waits until the screen satisfies `done`; returns that screen.
    #[track_caller]
    pub(crate) fn wait_for(&self, what: &str, done: impl Fn(&str) -> bool) -> String {
        self.wait_within(PATIENCE, what, done)
    }

    #[track_caller]
    pub(crate) fn wait_within(
        &self,
        patience: Duration,
        what: &str,
        done: impl Fn(&str) -> bool,
    ) -> String {
        let started = Instant::now();
        loop {
            let screen = self.screen();
            if done(&screen) {
                return screen;
            }
            if started.elapsed() > patience {
                panic!(
                    "never saw {what}; the screen:\n{screen}\n--- daemon log ---\n{}",
                    std::fs::read_to_string(self.home.path().join("daemon.log"))
                        .unwrap_or_default()
                );
            }
            std::thread::sleep(Duration::from_millis(50));
        }
    }

    #[track_caller]
    pub(crate) fn wait_for_text(&self, text: &str) -> String {
        self.wait_for(&format!("{text:?}"), |screen| screen.contains(text))
    }

    /// The pane area as text: the screen less its tab row and notice row.
    pub(crate) fn pane_text(screen: &str) -> String {
        let lines: Vec<&str> = screen.lines().collect();
        lines[1..lines.len().saturating_sub(1)].join("\n")
    }

    /// Waits for nightcrow to end; checks the terminal came back as it was: the main
    /// screen, canonical mode, echo on.
    #[track_caller]
    pub(crate) fn assert_ended_and_restored(&self) -> String {
        let screen = self.wait_for("nightcrow to end", |screen| {
            screen.contains("EXITED") && screen.lines().any(|line| line.ends_with("echo"))
        });
        assert_eq!(self.display("#{alternate_on}"), "0", "{screen}");
        let modes: Vec<&str> = screen
            .lines()
            .filter(|line| line.ends_with("icanon") || line.ends_with("echo"))
            .collect();
        assert_eq!(modes, ["icanon", "echo"], "raw mode left on:\n{screen}");
        screen
    }

    /// What `nightcrow status` prints.
    pub(crate) fn status(&self) -> String {
        let status = nightcrow(self.home()).arg("status").output().unwrap();
        String::from_utf8_lossy(&status.stdout).into_owned()
    }

    pub(crate) fn home(&self) -> &Path {
        self.home.path()
    }

    pub(crate) fn repo(&self) -> PathBuf {
        self.repo.path().canonicalize().unwrap()
    }

    /// The pid of the process tmux started (nightcrow itself runs as its child).
    pub(crate) fn client_pid(&self) -> u32 {
        let shell = self.display("#{pane_pid}");
        let children =
            std::fs::read_to_string(format!("/proc/{shell}/task/{shell}/children")).unwrap();
        children
            .split_whitespace()
            .next()
            .expect("nightcrow runs")
            .parse()
            .unwrap()
    }

    pub(crate) fn daemon_pid(&self) -> Option<u32> {
        let lock = std::fs::read_to_string(self.home().join("daemon.lock")).ok()?;
        lock.trim().parse().ok()
    }
}

impl Drop for Tui {
    fn drop(&mut self) {
        let _ = self.tmux().arg("kill-server").status();
        let _ = nightcrow(self.home()).arg("stop").output();
    }
}

/// `nightcrow ARGS`, then what the restore tests read: its exit code and the terminal's
/// modes after it.
fn then_report(args: &str) -> String {
    format!(
        "{} {args}; echo EXITED $?; stty -a | tr ' ' '\\n' | grep -x -e '-\\?icanon' -e '-\\?echo'; exec sleep 600",
        env!("CARGO_BIN_EXE_nightcrow")
    )
}

fn signal(pid: u32, name: &str) {
    let status = Command::new("kill")
        .args(["-s", name, &pid.to_string()])
        .status()
        .unwrap();
    assert!(status.success());
}

/// A config whose panes run in a plain POSIX shell, so no profile prints anything.
pub(crate) const PLAIN_SHELL: &str = "[shell]\nprogram = \"/bin/sh\"\ncommand_args = [\"-c\"]\n";

#[test]
fn attach_types_switches_panes_detaches_and_comes_back() {
    let Some(tui) = Tui::attach_shell() else {
        return;
    };
    tui.type_line("echo hi-$((40+2))");
    tui.wait_for_text("hi-42");

    tui.leader("c");
    tui.wait_for("a second tab", |screen| screen.contains("2:shell"));
    tui.type_line("echo two-$((1+1))");
    let second = tui.wait_for_text("two-2");
    assert!(!Tui::pane_text(&second).contains("hi-42"), "{second}");

    tui.leader("1");
    let first = tui.wait_for("the first pane again", |screen| {
        Tui::pane_text(screen).contains("hi-42")
    });
    assert!(!Tui::pane_text(&first).contains("two-2"), "{first}");
    tui.leader("n");
    tui.wait_for("the second pane again", |screen| {
        Tui::pane_text(screen).contains("two-2")
    });
    tui.leader("p");
    tui.wait_for("the first pane by p", |screen| {
        Tui::pane_text(screen).contains("hi-42")
    });

    // The help lists the keys; any key closes it.
    tui.leader("?");
    tui.wait_for_text("detach (panes keep running)");
    tui.keys(&["q"]);
    tui.wait_for("the help to close", |screen| {
        !screen.contains("detach (panes keep running)")
    });

    tui.leader("d");
    let detached = tui.assert_ended_and_restored();
    assert!(detached.contains("detached from"), "{detached}");
    assert!(detached.contains("EXITED 0"), "{detached}");

    // Both panes kept running; re-attaching shows the screen as it was.
    tui.tmux()
        .args(["respawn-pane", "-k"])
        .arg(format!("{} attach", env!("CARGO_BIN_EXE_nightcrow")))
        .status()
        .unwrap();
    let back = tui.wait_for("the replayed screen", |screen| {
        Tui::pane_text(screen).contains("hi-42")
    });
    assert!(back.starts_with(" 1:shell │ 2:shell"), "{back}");
    tui.leader("2");
    tui.wait_for("the second pane's replay", |screen| {
        Tui::pane_text(screen).contains("two-2")
    });
}

#[test]
fn full_screen_programs_render_and_the_pane_follows_resizes() {
    let Some(tui) = Tui::attach_shell() else {
        return;
    };
    tui.type_line("seq 1 500 | less");
    let less = tui.wait_for("less", |screen| {
        screen.lines().nth(1) == Some("1") && screen.contains("\n27\n")
    });
    assert_eq!(tui.display("#{alternate_on}"), "1", "{less}");
    tui.keys(&["q"]);
    let after = tui.wait_for("the shell after less", |screen| {
        screen.contains("seq 1 500 | less\n")
    });
    assert!(
        !after.contains("\n27\n"),
        "less left its screen behind:\n{after}"
    );

    tui.type_line("vim -u NONE -N notes.txt");
    tui.wait_for_text("\"notes.txt\" [New]");
    tui.keys(&["i"]);
    tui.tmux()
        .args(["send-keys", "-l", "written in vim 漢字"])
        .status()
        .unwrap();
    tui.keys(&["Escape"]);
    tui.wait_for_text("written in vim 漢字");
    tui.type_line(":wq");
    tui.wait_for("the shell after vim", |screen| {
        !screen.contains("written in vim")
    });
    let saved = std::fs::read_to_string(tui.repo().join("notes.txt")).unwrap();
    assert_eq!(saved, "written in vim 漢字\n");

    // The pane area is the window less the tab row and the notice row.
    tui.type_line("stty size");
    tui.wait_for_text("\n28 100\n");
    tui.tmux()
        .args(["resize-window", "-x", "72", "-y", "20"])
        .status()
        .unwrap();
    tui.type_line("clear; stty size");
    tui.wait_for_text("\n18 72\n");

    // Scrollback mode shows history the screen has scrolled past, and q leaves it.
    tui.type_line("seq 1000 1100");
    tui.wait_for_text("\n1100\n");
    tui.leader("[");
    tui.keys(&["PageUp", "PageUp"]);
    let history = tui.wait_for("history in scrollback mode", |screen| {
        screen.contains("\n1066\n") && screen.contains("scrollback: 34 lines up")
    });
    assert!(!history.contains("\n1100\n"), "{history}");
    tui.keys(&["q"]);
    tui.wait_for("the live screen again", |screen| {
        screen.contains("\n1100\n") && !screen.contains("scrollback:")
    });
}

/// Two watched panes: one whose plugin reports a deadline, one whose plugin reports none;
/// the second also calls for attention while the first is in view.
pub(crate) const RECOVERY: &str = r#"
[shell]
program = "/bin/sh"
command_args = ["-c"]

[[plugin]]
name = "timed"
command = "SCRIPTED"
enabled = true
args = ["exit_status=waiting_for_reset"]

[[plugin]]
name = "untimed"
command = "SCRIPTED"
enabled = true
args = ["exit_status=backoff", "no_deadline", "attention_on=PING"]

[[startup_command]]
name = "timed"
command = "echo timed-ready; read go; exit 0"
plugin = "timed"

[[startup_command]]
name = "untimed"
command = "echo untimed-ready; while [ ! -e ping ]; do sleep 0.1; done; echo PING; read go; exit 0"
plugin = "untimed"
"#;

#[test]
fn recovery_shows_as_markers_and_chips_attention_marks_and_cancel_ends_a_hold() {
    let config = RECOVERY.replace("SCRIPTED", guests::SCRIPTED_WASM);
    let Some(tui) = Tui::attach(&config) else {
        return;
    };
    tui.wait_for("both startup panes", |screen| {
        screen.starts_with(" 1:timed │ 2:untimed")
    });
    tui.wait_for_text("timed-ready");

    // Attention on the pane not in view marks its tab until it is viewed.
    std::fs::write(tui.repo().join("ping"), "").unwrap();
    tui.wait_for("the unread mark", |screen| {
        screen.starts_with(" 1:timed │ 2:untimed! │")
    });
    tui.leader("2");
    tui.wait_for("PING in view", |screen| {
        Tui::pane_text(screen).contains("PING")
    });
    tui.wait_for("the mark cleared", |screen| {
        screen.starts_with(" 1:timed │ 2:untimed │")
    });

    // Leader r on a running pane with nothing held says so, and cancels nothing.
    tui.leader("r");
    tui.wait_for("the nothing-to-cancel notice", |screen| {
        screen.contains("nothing to cancel: 2:untimed is running, nothing is held")
    });

    // The untimed pane exits: held, a marker with the attempt but no time.
    tui.type_line("go");
    let untimed = tui.wait_for("the untimed marker", |screen| {
        screen.contains("2:untimed⚠1 ")
    });
    let chip = untimed.lines().last().unwrap();
    assert!(
        chip.contains("exited with code 0 · backoff · attempt 1 · scripted"),
        "{untimed}"
    );
    assert!(
        !shows_deadline(chip, "backoff") && !chip.contains(" ago)"),
        "no deadline, no time: {untimed}"
    );

    // The timed pane exits: its deadline (1771890527 is 23:48 UTC) and attempt.
    tui.leader("1");
    tui.wait_for("the timed pane", |screen| {
        Tui::pane_text(screen).contains("timed-ready")
    });
    tui.type_line("go");
    let timed = tui.wait_for("the timed marker", |screen| {
        screen.contains("1:timed⏳23:48⚠1 ")
    });
    let chip = timed.lines().last().unwrap();
    assert!(
        chip.contains("waiting_for_reset · 2026-02-23 23:48 (")
            && chip.contains(" ago) · attempt 1 · scripted"),
        "{timed}"
    );

    // Leader r on the exited held pane asks first; any key but y keeps the hold.
    tui.leader("r");
    tui.wait_for("the question", |screen| {
        screen.contains("cancel this pane's recovery?")
    });
    tui.keys(&["n"]);
    tui.wait_for("the hold kept", |screen| {
        !screen.contains("cancel this pane's recovery?") && screen.contains("1:timed⏳23:48⚠1 ")
    });
    // y ends the hold: the marker goes, the pane stays with its screen, plainly exited.
    tui.leader("r");
    tui.wait_for("the question again", |screen| {
        screen.contains("cancel this pane's recovery?")
    });
    tui.keys(&["y"]);
    let ended = tui.wait_for("the cancelled hold's marker to go", |screen| {
        screen.starts_with(" 1:timed │ 2:untimed⚠1 │")
            && screen.contains("1:timed: recovery ended; it stays exited")
    });
    assert!(
        Tui::pane_text(&ended).contains("timed-ready"),
        "the transcript stays: {ended}"
    );
    let status = tui.status();
    assert_eq!(status.matches("hold on pane").count(), 1, "{status}");
}

/// `plugin remove` + `reload` stops the plugin: its hold ends and its marker goes, on the
/// client attached before and on one attached after.
#[test]
fn a_removed_plugin_leaves_no_marker_before_or_after_re_attach() {
    let home = tempfile::tempdir().unwrap();
    let installed = nightcrow(home.path())
        .args([
            "plugin",
            "install",
            guests::SCRIPTED_WASM,
            "--name",
            "scripted",
        ])
        .output()
        .unwrap();
    assert!(installed.status.success(), "{installed:?}");
    let config = RECOVERY.replace("SCRIPTED", "scripted");
    let Some(tui) = Tui::run_in(home, &config, "attach", 100, 30) else {
        return;
    };
    tui.wait_for_text("timed-ready");
    tui.type_line("go");
    tui.wait_for("the timed marker", |screen| {
        screen.contains("1:timed⏳23:48⚠1 ")
    });

    for args in [&["plugin", "remove", "scripted"][..], &["reload"]] {
        let done = nightcrow(tui.home()).args(args).output().unwrap();
        assert!(done.status.success(), "{args:?}: {done:?}");
    }
    let cleared = tui.wait_for("the marker to go", |screen| {
        screen.starts_with(" 1:timed │ 2:untimed │")
    });
    assert!(
        cleared
            .lines()
            .last()
            .unwrap()
            .contains("exited with code 0 · Ctrl+F x closes it"),
        "plainly exited: {cleared}"
    );
    assert!(!tui.status().contains("hold on pane"));

    tui.leader("d");
    tui.assert_ended_and_restored();
    tui.tmux()
        .args(["respawn-pane", "-k"])
        .arg(format!("{} attach", env!("CARGO_BIN_EXE_nightcrow")))
        .status()
        .unwrap();
    let back = tui.wait_for("the re-attached tabs", |screen| {
        screen.starts_with(" 1:timed")
    });
    assert!(back.starts_with(" 1:timed │ 2:untimed │"), "{back}");
    assert!(
        Tui::pane_text(&back).contains("timed-ready"),
        "the exited pane's screen: {back}"
    );
}

#[test]
fn a_flooding_pane_leaves_the_tui_responsive_and_attached() {
    let Some(tui) = Tui::attach_shell() else {
        return;
    };
    tui.leader("c");
    tui.wait_for("a second tab", |screen| screen.contains("2:shell"));
    tui.type_line("echo quiet-pane");
    tui.wait_for_text("quiet-pane");
    tui.leader("1");
    tui.type_line("timeout 10 yes flood-line; echo flood-over");
    tui.wait_for_text("flood-line");
    // Switching tabs works while the flood runs.
    let started = Instant::now();
    let mut switches = 0;
    while started.elapsed() < Duration::from_secs(6) {
        tui.leader("2");
        tui.wait_for("the quiet pane during the flood", |screen| {
            Tui::pane_text(screen).contains("quiet-pane")
        });
        tui.leader("1");
        tui.wait_for("the flood in view", |screen| {
            Tui::pane_text(screen).contains("flood-line")
        });
        switches += 1;
    }
    assert!(
        switches >= 2,
        "only {switches} round trips of tab switching in 6 s"
    );
    tui.wait_for_text("flood-over");
    // Still attached: the same client takes input and draws it.
    tui.type_line("clear; echo after-$((6*7))");
    tui.wait_for_text("after-42");
    assert!(!tui.screen().contains("EXITED"));
    let log = std::fs::read_to_string(tui.home().join("daemon.log")).unwrap_or_default();
    assert!(!log.contains("fell behind"), "{log}");
}

/// A client that cannot keep up (here: stopped for 2 s during a flood) is dropped by the
/// hub; the TUI attaches again by itself and carries on with a fresh replay. What was
/// written over its screen while it was stopped (as a shell does when its job stops) is
/// gone once it goes on: it draws the whole screen again.
#[test]
fn a_client_the_hub_dropped_attaches_again_by_itself() {
    let Some(tui) = Tui::attach_shell() else {
        return;
    };
    tui.type_line("timeout 8 yes dropped-flood; clear; echo flood-over");
    tui.wait_for_text("dropped-flood");
    let client = tui.client_pid();
    signal(client, "STOP");
    let tty = tui.display("#{pane_tty}");
    std::fs::write(&tty, "\x1b[H\x1b[2JWRITTEN-WHILE-STOPPED\r\n").expect("the pane's tty");
    tui.wait_for_text("WRITTEN-WHILE-STOPPED");
    std::thread::sleep(Duration::from_secs(2));
    signal(client, "CONT");
    tui.wait_for_text("reattached: the hub had dropped this client");
    tui.wait_for("the whole screen drawn again", |screen| {
        !screen.contains("WRITTEN-WHILE-STOPPED") && screen.starts_with(" 1:shell")
    });
    let log = std::fs::read_to_string(tui.home().join("daemon.log")).unwrap_or_default();
    assert!(
        log.contains("fell behind"),
        "the hub never dropped the client:\n{log}"
    );
    tui.wait_for_text("flood-over");
    tui.type_line("echo back-$((2*21))");
    tui.wait_for_text("back-42");
    assert!(!tui.screen().contains("EXITED"));
}

#[test]
fn the_terminal_is_restored_after_sigterm_and_after_the_daemon_dies() {
    let Some(tui) = Tui::attach_shell() else {
        return;
    };
    assert_eq!(tui.display("#{alternate_on}"), "1");
    signal(tui.client_pid(), "TERM");
    let ended = tui.assert_ended_and_restored();
    assert!(ended.contains("stopped by a signal"), "{ended}");

    tui.tmux()
        .args(["respawn-pane", "-k"])
        .arg(then_report("attach"))
        .status()
        .unwrap();
    tui.wait_for("the pane again", |screen| screen.starts_with(" 1:shell"));
    signal(tui.daemon_pid().expect("the daemon's pid"), "KILL");
    let ended = tui.assert_ended_and_restored();
    assert!(
        ended.contains("the daemon closed the connection"),
        "{ended}"
    );
}

#[test]
fn the_demo_in_the_tui_counts_down_on_the_tab_and_relaunches_in_the_same_tab() {
    let Some(tui) = Tui::run("", "demo", 100, 30) else {
        return;
    };
    tui.wait_for("the countdown marker beside the limit", |screen| {
        screen.starts_with(" 1:codex⏳")
            && screen.contains("You've hit your usage limit")
            && shows_deadline(screen.lines().last().unwrap(), "waiting_for_reset")
    });
    // The stand-in's limit resets in 10 s, and the plugin waits 30 s more.
    let relaunched = tui.wait_within(Duration::from_secs(120), "the relaunched tab", |screen| {
        screen.contains("carrying on")
    });
    assert!(
        relaunched.starts_with(" 1:codex │") && !relaunched.contains("2:codex"),
        "the relaunch takes the held pane's tab:\n{relaunched}"
    );
    let ended = tui.assert_ended_and_restored();
    assert!(
        ended.contains("recovered: the session was resumed in pane 1."),
        "{ended}"
    );
    assert!(ended.contains("EXITED 0"), "{ended}");
}

/// The demo is watched, not typed into: q, Esc and Ctrl+C end it (each in a demo of its
/// own, all at once), and its help says what the leader's `d` does there.
#[test]
fn q_esc_and_ctrl_c_end_the_demo_and_its_help_says_so() {
    let demos: Vec<(&str, Tui)> = ["q", "Escape", "C-c"]
        .into_iter()
        .filter_map(|key| Some((key, Tui::run("", "demo", 100, 30)?)))
        .collect();
    for (key, tui) in &demos {
        tui.wait_for("the demo's pane", |screen| screen.starts_with(" 1:codex"));
        if *key == "q" {
            tui.leader("?");
            let help = tui.wait_for_text("end the demo");
            assert!(!help.contains("detach"), "{help}");
            tui.keys(&["Space"]);
            tui.wait_for("the help to close", |screen| {
                !screen.contains("end the demo")
            });
        }
        tui.keys(&[key]);
        let ended = tui.assert_ended_and_restored();
        assert!(
            ended.contains("demo left before the recovery"),
            "{key}: {ended}"
        );
        assert!(ended.contains("EXITED 0"), "{key}: {ended}");
    }
}

/// A config that does not parse does not keep `attach` from a healthy daemon: it says
/// where the problem is and attaches with the default client settings.
#[test]
fn attach_with_a_broken_config_warns_and_attaches_to_the_running_daemon() {
    let home = tempfile::tempdir().unwrap();
    std::fs::write(home.path().join("config.toml"), PLAIN_SHELL).unwrap();
    let started = nightcrow(home.path()).arg("-d").output().unwrap();
    assert!(started.status.success(), "{started:?}");
    let config = home.path().join("config.toml");
    let Some(tui) = Tui::run_in(home, &format!("{PLAIN_SHELL}[tui\n"), "attach", 100, 30) else {
        return;
    };
    tui.wait_for("the first pane's tab", |screen| {
        screen.starts_with(" 1:shell")
    });
    tui.leader("d");
    let detached = tui.assert_ended_and_restored();
    assert!(detached.contains("detached from"), "{detached}");
    assert!(detached.contains("EXITED 0"), "{detached}");
    assert!(
        detached.contains(&format!("{}:4:", config.display()))
            && detached.contains("default client settings"),
        "{detached}"
    );
}

/// `web passwd` at a terminal refuses a short password at once, without asking again.
#[test]
fn web_passwd_refuses_a_short_password_before_asking_again() {
    let Some(tui) = Tui::run("", "web passwd", 100, 30) else {
        return;
    };
    tui.wait_for_text("New web client password:");
    tui.type_line("short");
    let ended = tui.wait_for_text("EXITED");
    assert!(ended.contains("shorter than 8 characters"), "{ended}");
    assert!(!ended.contains("Again"), "{ended}");
    assert!(ended.contains("EXITED 1"), "{ended}");
}

/// Whether `line` shows `state` with its deadline: `state · HH:MM (…)`, or with the date,
/// `state · YYYY-MM-DD HH:MM (…)`.
pub(crate) fn shows_deadline(line: &str, state: &str) -> bool {
    let prefix = format!("{state} · ");
    line.match_indices(&prefix).any(|(at, _)| {
        let rest = &line[at + prefix.len()..];
        let Some((time, _)) = rest.split_once(" (") else {
            return false;
        };
        let shape: String = time
            .chars()
            .map(|c| if c.is_ascii_digit() { '9' } else { c })
            .collect();
        shape == "99:99" || shape == "9999-99-99 99:99"
    })
}

/// A pane whose plugin (the scripted guest) calls for attention on `PING` and, when the
/// pane exits, reports a wait until `DEADLINE`; notifications by OSC 777.
const COUNTDOWN: &str = r#"
[shell]
program = "/bin/sh"
command_args = ["-c"]

[tui]
notify = "osc777"

[[plugin]]
name = "timed"
command = "SCRIPTED"
enabled = true
args = ["exit_status=waiting_for_reset", "deadline_epoch=DEADLINE", "attention_on=PING"]

[[startup_command]]
name = "timed"
command = "echo timed-ready; while [ ! -e ping ]; do sleep 0.1; done; echo PING; read go; exit 0"
plugin = "timed"
"#;

/// The chip counts down between two looks at the screen, the tab marker stays `⏳HH:MM`,
/// and an attention reaches the outer terminal as one OSC 777 notification, wrapped for
/// tmux's passthrough (the TUI runs inside tmux), read from the bytes the TUI wrote.
#[test]
fn the_chip_counts_down_and_attention_reaches_the_outer_terminal_as_a_notification() {
    let now = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap()
        .as_secs();
    // Under a minute away by the time the pane exits: the chip counts in seconds.
    let deadline = now + 50;
    let until = format!("{:02}:{:02}", deadline / 3600 % 24, deadline / 60 % 60);
    let config = COUNTDOWN
        .replace("SCRIPTED", guests::SCRIPTED_WASM)
        .replace("DEADLINE", &deadline.to_string());
    let Some(tui) = Tui::attach(&config) else {
        return;
    };
    tui.wait_for_text("timed-ready");
    let written = tui.home().join("written-to-the-terminal");
    let piped = tui
        .tmux()
        .args(["pipe-pane", "-O"])
        .arg(format!("cat >> '{}'", written.display()))
        .status()
        .unwrap();
    assert!(piped.success());

    std::fs::write(tui.repo().join("ping"), "").unwrap();
    let wrapped = "\x1bPtmux;\x1b\x1b]777;notify;nightcrow;pane 1 wants you back\x07\x1b\\";
    let started = Instant::now();
    loop {
        let bytes = std::fs::read(&written).unwrap_or_default();
        if String::from_utf8_lossy(&bytes).contains(wrapped) {
            break;
        }
        assert!(
            started.elapsed() < PATIENCE,
            "no notification in what the TUI wrote: {:?}",
            String::from_utf8_lossy(&bytes)
        );
        std::thread::sleep(Duration::from_millis(50));
    }
    let screen = tui.wait_for_text("1:timed wants you back");
    assert!(!screen.contains("notify"), "the sequence shows: {screen}");

    tui.type_line("go");
    let chip_of = |screen: &str| screen.lines().last().unwrap().to_owned();
    let first = tui.wait_for("the countdown chip", |screen| {
        screen.starts_with(&format!(" 1:timed⏳{until}⚠1 "))
            && chip_of(screen).contains(&format!("waiting_for_reset · {until} ("))
            && chip_of(screen).contains(" s) · attempt 1 · scripted")
    });
    let later = tui.wait_within(Duration::from_secs(5), "the chip to count down", |screen| {
        chip_of(screen) != chip_of(&first)
    });
    let seconds = |screen: &str| -> u64 {
        let chip = chip_of(screen);
        let left = chip.split_once(" (in ").expect("time left").1;
        left.split_once(" s)").expect("seconds").0.parse().unwrap()
    };
    assert!(seconds(&later) < seconds(&first), "{first}\n{later}");
    assert!(
        later.starts_with(&format!(" 1:timed⏳{until}⚠1 ")),
        "the marker stays short: {later}"
    );
    // One event, one notification.
    let all = String::from_utf8_lossy(&std::fs::read(&written).unwrap()).into_owned();
    assert_eq!(all.matches("]777;").count(), 1, "{all:?}");
}

/// The first row of `screen`, without the blanks after it.
fn tab_row(screen: &str) -> &str {
    screen.lines().next().unwrap_or_default().trim_end()
}

/// A program's title (OSC 2) names its tab, and an empty one gives the configured name
/// back; at 60 columns, 8 panes do not fit: the tab in view is always drawn, with a count
/// of the hidden ones at either end, and the help offers only keys for tabs there can be.
#[test]
fn program_titles_name_tabs_and_the_tab_in_view_is_drawn_however_many_there_are() {
    let Some(tui) = Tui::run(PLAIN_SHELL, "attach", 60, 30) else {
        return;
    };
    tui.wait_for("the first tab", |screen| screen.starts_with(" 1:shell"));
    tui.type_line("printf '\\033]2;build\\007'");
    tui.wait_for("the program's title on its tab", |screen| {
        tab_row(screen) == " 1:build │"
    });
    let status = tui.status();
    assert!(status.contains("  pane 1:build running"), "{status}");
    for n in 2..=8 {
        tui.leader("c");
        tui.wait_for(&format!("tab {n} in view"), |screen| {
            tab_row(screen).ends_with(&format!(" {n}:shell │"))
        });
    }
    let eighth = tui.screen();
    eprintln!("8 panes at 60 columns, the 8th in view:\n{eighth}");
    assert_eq!(
        tab_row(&eighth),
        "<3 │ 4:shell │ 5:shell │ 6:shell │ 7:shell │ 8:shell │"
    );
    tui.leader("1");
    let first = tui.wait_for("tab 1 in view", |screen| screen.starts_with(" 1:build"));
    eprintln!("the 1st in view:\n{first}");
    assert_eq!(
        tab_row(&first),
        " 1:build │ 2:shell │ 3:shell │ 4:shell │ 5:shell │ 3>"
    );
    tui.type_line("printf '\\033]2;\\007'");
    tui.wait_for("the configured name again", |screen| {
        screen.starts_with(" 1:shell │")
    });
    tui.leader("?");
    let help = tui.wait_for_text("go to pane");
    eprintln!("the help:\n{help}");
    assert!(help.contains("Ctrl+F 1-8"), "{help}");
    assert!(!help.contains("1-9"), "{help}");
}

/// A ZWJ family the emulator spreads over three wide cells: the outer terminal shows them
/// side by side, the bar right after them as tmux puts it after the same emoji in a plain
/// pane, and nothing of them is left on another row, nor after `clear`.
#[test]
fn emoji_clusters_leave_nothing_stray_and_the_text_after_them_where_tmux_puts_it() {
    let Some(tui) = Tui::attach_shell() else {
        return;
    };
    let family = "👨\u{200D}👩\u{200D}👧";
    let echo = format!("echo '{family}|'");
    // The same bytes in a plain pane of the same tmux server.
    let plain = tui
        .tmux()
        .args(["new-window", "-d", "-P", "-F", "#{window_id}", "/bin/sh"])
        .output()
        .unwrap();
    let plain = String::from_utf8(plain.stdout).unwrap().trim().to_owned();
    let plain_screen = || {
        let captured = tui
            .tmux()
            .args(["capture-pane", "-p", "-t", &plain])
            .output()
            .unwrap();
        String::from_utf8_lossy(&captured.stdout).into_owned()
    };
    // Keys typed before the shell's prompt are echoed ahead of it, and the output then
    // lands after the prompt, on the prompt's row.
    let started = Instant::now();
    while plain_screen().trim().is_empty() {
        assert!(
            started.elapsed() < PATIENCE,
            "the plain pane never prompted"
        );
        std::thread::sleep(Duration::from_millis(50));
    }
    let status = tui
        .tmux()
        .args(["send-keys", "-t", &plain, "-l", &echo])
        .status()
        .unwrap();
    assert!(status.success());
    tui.tmux()
        .args(["send-keys", "-t", &plain, "Enter"])
        .status()
        .unwrap();
    let output_line = |screen: &str| {
        screen
            .lines()
            .find(|line| line.ends_with('|') && !line.contains("echo"))
            .map(str::to_owned)
    };
    let started = Instant::now();
    let in_tmux = loop {
        if let Some(line) = output_line(&plain_screen()) {
            break line;
        }
        assert!(started.elapsed() < PATIENCE, "the plain pane never echoed");
        std::thread::sleep(Duration::from_millis(50));
    };

    tui.type_line(&echo);
    let screen = tui.wait_for("the echoed family", |screen| {
        output_line(&Tui::pane_text(screen)).is_some()
    });
    eprintln!("plain tmux: {in_tmux:?}\nthe TUI:\n{screen}");
    let pane = Tui::pane_text(&screen);
    let shown = output_line(&pane).unwrap();
    // tmux joins the family into one glyph; the TUI writes its three emoji apart (the
    // emulator gave each its own columns), with the bar as close after them.
    assert_eq!(shown, in_tmux.replace('\u{200D}', ""), "{screen}");
    // Every row but the command line and its output.
    for line in pane
        .lines()
        .filter(|line| *line != shown && !line.contains("echo"))
    {
        assert!(
            !line.contains('👧') && !line.contains('\u{200D}'),
            "stray emoji on {line:?}:\n{screen}"
        );
    }

    tui.type_line("clear; echo after-$((1+1))");
    let cleared = tui.wait_for_text("after-2");
    eprintln!("after clear:\n{cleared}");
    let pane = Tui::pane_text(&cleared);
    assert!(
        !pane.contains('👧') && !pane.contains('👨') && !pane.contains('\u{200D}'),
        "the family survived clear:\n{cleared}"
    );
    assert!(pane.lines().any(|line| line == "after-2"), "{cleared}");
}

/// The split, zoom and grid as a person sees them at 100×30: each pane's program is told
/// the size of its cell (its screen under a header row, a rule between cells side by side).
#[test]
fn a_split_zoom_and_grid_show_panes_each_at_the_size_of_its_cell() {
    let Some(tui) = Tui::attach_shell() else {
        return;
    };
    let size = "echo size-$(stty size | tr ' ' x)";
    tui.leader("s");
    tui.wait_for("two cells", |screen| {
        screen
            .lines()
            .nth(1)
            .is_some_and(|line| line.starts_with("─ 1:shell ") && line.contains("┬─ 2:shell "))
    });
    tui.type_line(size);
    let split = tui.wait_for_text("size-27x50");
    // The new pane's output is right of the rule, in its own cell.
    let line = split
        .lines()
        .find(|line| line.contains("size-27x50"))
        .unwrap();
    assert_eq!(
        line.find('│').map(|at| line[..at].chars().count()),
        Some(49),
        "{split}"
    );

    tui.leader("h");
    tui.type_line(size);
    let left = tui.wait_for_text("size-27x49");
    let line = left
        .lines()
        .find(|line| line.contains("size-27x49"))
        .unwrap();
    assert!(line.starts_with("size-27x49"), "left of the rule:\n{left}");

    tui.leader("f");
    tui.wait_for("the pane alone", |screen| {
        !screen.contains("┬") && screen.contains("zoomed")
    });
    tui.type_line(&format!("clear; {size}"));
    tui.wait_for_text("size-28x100");
    tui.leader("f");
    tui.wait_for("the split again", |screen| screen.contains("┬─ 2:shell "));

    tui.leader("g");
    let grid = tui.wait_for("the grid without a tab row", |screen| {
        screen.starts_with("─ 1:shell ")
    });
    assert!(!grid.contains(" 1:shell │ 2:shell │"), "{grid}");
    tui.type_line(&format!("clear; {size}"));
    tui.wait_for_text("size-28x49");
}

impl Tui {
    /// Bytes as the outer terminal would send them (`send-keys -H`: each byte as it is,
    /// where `send-keys` would name keys), e.g. an SGR mouse report.
    fn raw(&self, bytes: &str) {
        let hex: Vec<String> = bytes.bytes().map(|b| format!("{b:02x}")).collect();
        let status = self
            .tmux()
            .args(["send-keys", "-H"])
            .args(&hex)
            .status()
            .unwrap();
        assert!(status.success());
    }
}

#[test]
fn the_mouse_picks_tabs_and_cells_scrolls_history_and_reaches_a_program_that_asks() {
    let Some(tui) = Tui::attach_shell() else {
        return;
    };
    tui.type_line("seq 1 100");
    tui.wait_for("the numbers", |screen| screen.lines().any(|l| l == "100"));
    tui.leader("c");
    tui.wait_for("a second tab in view", |screen| {
        screen.starts_with(" 1:shell │ 2:shell │") && !screen.lines().any(|l| l == "100")
    });
    // A click on tab 1 (columns 1-10) brings it back.
    tui.raw("\x1b[<0;3;1M\x1b[<0;3;1m");
    tui.wait_for("tab 1 in view again", |screen| {
        screen.lines().any(|l| l == "100")
    });

    // Four notches up: twelve lines of history, and scrollback mode says so.
    let last_line = |screen: &str| screen.lines().last().unwrap_or_default().to_owned();
    assert!(!tui.screen().lines().any(|l| l == "65"));
    for _ in 0..4 {
        tui.raw("\x1b[<64;10;10M");
    }
    let scrolled = tui.wait_for("older lines", |screen| {
        screen.lines().any(|l| l == "65") && last_line(screen).contains("scrollback")
    });
    assert!(!scrolled.lines().any(|l| l == "100"), "{scrolled}");
    for _ in 0..4 {
        tui.raw("\x1b[<65;10;10M");
    }
    tui.wait_for("the live screen", |screen| {
        screen.lines().any(|l| l == "100") && !last_line(screen).contains("scrollback")
    });

    // A split: tab 1 left (49 columns), a new pane right of the rule from column 51.
    tui.leader("s");
    tui.wait_for("two cells", |screen| screen.contains("┬─ 3:shell "));
    tui.type_line("printf '\\033[?1000h\\033[?1006h'; echo mouse-$((1+1)); cat -v");
    tui.wait_for_text("mouse-2");
    // Column 60, row 8 of the terminal: column 10, row 6 of that pane's screen (the tab
    // row and its header above it).
    tui.raw("\x1b[<0;60;8M\x1b[<0;60;8m");
    tui.wait_for_text("^[[<0;10;6M^[[<0;10;6m");
    // A click on the left cell takes the focus there and is not sent.
    tui.raw("\x1b[<0;10;10M\x1b[<0;10;10m");
    tui.type_line("echo left-$((2+2))");
    let screen = tui.wait_for("typing in the left cell", |screen| {
        screen.lines().any(|l| l.starts_with("left-4 "))
    });
    assert_eq!(
        screen.matches("^[[<").count(),
        2,
        "only the first click reached the program:\n{screen}"
    );
}

/// Copy mode in real tmux: a search finds a line far up the history and brings it into
/// view; a selection of three lines copied with `y` leaves as one OSC 52 sequence, which
/// tmux (`set-clipboard on`) takes into its paste buffer: what a person would paste.
#[test]
fn copy_mode_finds_a_line_far_up_and_copies_a_selection_to_the_clipboard() {
    use base64::Engine;
    let Some(tui) = Tui::attach_shell() else {
        return;
    };
    let set = tui
        .tmux()
        .args(["set", "-g", "set-clipboard", "on"])
        .status()
        .unwrap();
    assert!(set.success());
    tui.type_line("seq -f 'row %g' 1 3000");
    tui.wait_for_text("\nrow 3000\n");
    let written = tui.home().join("written-to-the-terminal");
    let piped = tui
        .tmux()
        .args(["pipe-pane", "-O"])
        .arg(format!("cat >> '{}'", written.display()))
        .status()
        .unwrap();
    assert!(piped.success());

    tui.leader("[");
    tui.wait_for_text("scrollback: 0 lines up");
    let typed = tui
        .tmux()
        .args(["send-keys", "-l", "/row 1234"])
        .status()
        .unwrap();
    assert!(typed.success());
    tui.wait_for_text("search up: row 1234");
    tui.keys(&["Enter"]);
    let found = tui.wait_for("the match in view", |screen| {
        screen.contains("\nrow 1234\n") && screen.contains("scrollback: ")
    });
    assert!(!found.contains("\nrow 3000\n"), "{found}");
    assert!(!found.contains("not found"), "{found}");

    tui.keys(&["v", "j", "j", "$", "y"]);
    let copied = tui.wait_for_text("copied 3 lines");
    assert!(!copied.contains("scrollback:"), "copy mode left: {copied}");
    assert!(
        copied.contains("\nrow 3000\n"),
        "the live screen again: {copied}"
    );

    let expected = "row 1234\nrow 1235\nrow 1236";
    let started = Instant::now();
    let sequence = loop {
        let bytes = std::fs::read(&written).unwrap_or_default();
        let text = String::from_utf8_lossy(&bytes).into_owned();
        if let Some(at) = text.find("\x1b]52;c;")
            && let Some(len) = text[at..].find('\x07')
        {
            break text[at..at + len + 1].to_owned();
        }
        assert!(
            started.elapsed() < PATIENCE,
            "no OSC 52 in what the TUI wrote: {text:?}"
        );
        std::thread::sleep(Duration::from_millis(50));
    };
    let encoded = &sequence["\x1b]52;c;".len()..sequence.len() - 1];
    let decoded = base64::engine::general_purpose::STANDARD
        .decode(encoded)
        .unwrap();
    assert_eq!(String::from_utf8(decoded).unwrap(), expected);
    let buffer = tui.tmux().arg("show-buffer").output().unwrap();
    assert_eq!(String::from_utf8_lossy(&buffer.stdout), expected);
}

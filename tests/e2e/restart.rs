//! The daemon going away and coming back (issue "Nothing lost when the daemon goes away"):
//! `kill -9` at the limit and a new daemon resuming the session at the reset, in the same
//! tab of a TUI that stayed attached; `nightcrow restart`; `kill -9` in a loop while state
//! changes, never leaving a journal that cannot be read; and journals that cannot be
//! trusted, dropped piece by piece with one line each.

use std::path::Path;
use std::time::Duration;

use nightcrow_client::{Connection, Home};
use serde_json::{Value, json};

use crate::daemon::{TestDaemon, attach, tokio_runtime, until, wait_until};
use crate::overnight::Codex;
use crate::tui::{Tui, shows_deadline};
use crate::util::nightcrow;

fn journal(home: &Path) -> Option<Value> {
    let bytes = std::fs::read(home.join("state.json")).ok()?;
    Some(serde_json::from_slice(&bytes).expect("the journal is always whole"))
}

fn kill_9(pid: u32) {
    let killed = std::process::Command::new("kill")
        .args(["-9", &pid.to_string()])
        .status()
        .unwrap();
    assert!(killed.success());
}

#[test]
fn a_daemon_killed_at_the_limit_comes_back_and_resumes_the_session_at_the_reset() {
    let Some(codex) = Codex::attach() else {
        return;
    };
    let tui = &codex.tui;
    let (session, deadline) = codex.hit_the_limit();
    // The wait is in the journal (with the screen of that moment) before the daemon dies.
    wait_until("the wait never reached the journal", || {
        journal(tui.home()).is_some_and(|journal| {
            journal
                .to_string()
                .contains("\"state\":\"waiting_for_reset\"")
        })
    });
    let killed = tui.daemon_pid().expect("a daemon");
    kill_9(killed);
    // A new daemon, as a service manager after a reboot (or the person) starts one. The TUI
    // was never told to leave: it finds the new daemon by itself.
    let started = nightcrow(tui.home()).arg("-d").output().unwrap();
    assert!(started.status.success(), "{started:?}");
    assert_ne!(tui.daemon_pid(), Some(killed));
    tui.wait_for(
        "the pane back, exited, with its last screen and its wait",
        |screen| {
            screen.starts_with(" 1:agent⏳")
                && Tui::pane_text(screen).contains("You've hit your usage limit")
                && shows_deadline(screen.lines().last().unwrap(), "waiting_for_reset")
        },
    );
    // At the original reset + 30 s, not before: the session, resumed in the same tab.
    codex.expect_held_then_resumed(&session, deadline);
    codex.expect_resumed_in_place();
    // Once: the slot stays at its second generation.
    std::thread::sleep(Duration::from_secs(3));
    codex.expect_resumed_in_place();
}

#[test]
fn restart_brings_every_pane_back_to_the_attached_tui() {
    let Some(tui) = Tui::attach_shell() else {
        return;
    };
    tui.type_line("echo before-$((6*7))");
    tui.wait_for_text("before-42");
    let old = tui.daemon_pid();
    let restarted = nightcrow(tui.home()).arg("restart").output().unwrap();
    assert!(restarted.status.success(), "{restarted:?}");
    let said = String::from_utf8_lossy(&restarted.stdout);
    assert!(said.contains("nightcrow daemon stopped"), "{said}");
    assert!(
        said.contains("back: 1 repository, 1 pane, 0 held for a relaunch"),
        "{said}"
    );
    assert_ne!(tui.daemon_pid(), old);
    // The shell ended with the old daemon; its screen is still there, in the same client.
    let back = tui.wait_for("the pane back, ended, with its screen", |screen| {
        screen.starts_with(" 1:shell")
            && screen.lines().last().unwrap().contains("ended")
            && Tui::pane_text(screen).contains("before-42")
    });
    assert!(!back.contains("EXITED"), "the TUI stayed: {back}");
    // A new pane works as ever.
    tui.leader("c");
    tui.wait_for("the second tab", |screen| screen.contains("2:shell"));
    tui.type_line("echo after-$((6*7))");
    tui.wait_for_text("after-42");
}

/// A startup pane printing all the time, one that exits at once, one held for the bundled
/// plugin once it exits, and repositories opened one after another: the daemon is killed at
/// a random moment after each change and the journal must always read whole; the next daemon
/// takes everything back.
#[test]
fn kill_9_during_churn_never_leaves_a_journal_that_cannot_be_read() {
    let config = "[shell]\nprogram = \"/bin/sh\"\ncommand_args = [\"-c\"]\n\n\
                  [[startup_command]]\nname = \"ticker\"\n\
                  command = \"while :; do echo tick; sleep 0.01; done\"\n\n\
                  [[startup_command]]\nname = \"brief\"\ncommand = \"exit 3\"\n\n\
                  [[startup_command]]\nname = \"held\"\ncommand = \"sleep 0.1; exit 1\"\n\
                  plugin = \"nightcrow-recovery\"\n\n\
                  [[plugin]]\nname = \"nightcrow-recovery\"\n\
                  command = \"builtin:nightcrow-recovery\"\nenabled = true\n";
    let mut daemon = TestDaemon::start(config);
    let mut repos = Vec::new();
    let seed = std::process::id() as u64;
    for round in 0..8u64 {
        repos.push(daemon.open_repo());
        let pause =
            (seed.wrapping_mul(6_364_136_223_846_793_005) >> 33).wrapping_add(round * 97) % 400;
        std::thread::sleep(Duration::from_millis(pause));
        kill_9(daemon.pid());
        daemon.wait();
        let written = journal(daemon.home()).expect("a journal");
        assert_eq!(written["nightcrow_state"], 1, "{written}");
        daemon.spawn();
    }
    // Every repository back, each with its ticker running again and its brief pane shown
    // exited, in their places (a brief pane journaled while running runs again first). The
    // held pane: held while the daemons ran; its plugin never had anything pending, so a
    // restart after its exit leaves it plainly exited.
    let roots: Vec<String> = repos
        .iter()
        .map(|repo| format!("{}\n", repo.path().canonicalize().unwrap().display()))
        .collect();
    let mut status = String::new();
    let settled = std::time::Instant::now();
    while settled.elapsed() < Duration::from_secs(30) {
        status = String::from_utf8_lossy(&daemon.run(&["status"]).stdout).into_owned();
        let all = |needle: &str| status.matches(needle).count() == 8;
        if roots.iter().all(|root| status.contains(root))
            && all("pane 1:ticker running")
            && all("pane 2:brief exited")
            && all("pane 3:held exited")
        {
            break;
        }
        std::thread::sleep(Duration::from_millis(100));
    }
    for root in &roots {
        assert!(status.contains(root), "{root} not back: {status}");
    }
    for needle in [
        "pane 1:ticker running",
        "pane 2:brief exited",
        "pane 3:held exited",
    ] {
        assert_eq!(status.matches(needle).count(), 8, "{needle}: {status}");
    }
    let leftovers: Vec<_> = std::fs::read_dir(daemon.home())
        .unwrap()
        .filter_map(|entry| entry.ok())
        .filter(|entry| entry.file_name().to_string_lossy().ends_with(".tmp"))
        .collect();
    assert!(leftovers.is_empty(), "torn writes left: {leftovers:?}");
}

/// A pane as the journal writes it.
fn journaled_pane(token: &str, title: &str, startup: Value, screen: &str) -> Value {
    use base64::Engine as _;
    json!({
        "token": token,
        "generation": 1,
        "title": title,
        "startup": startup,
        "owner": null,
        "opened_ms": 1_796_000_000_000_i64,
        "rows": 24,
        "cols": 80,
        "exit": {"code": 0},
        "hold_until_ms": null,
        "report": null,
        "sends_ms": [],
        "relaunches_ms": [],
        "screen": base64::engine::general_purpose::STANDARD.encode(screen),
    })
}

#[test]
fn a_journal_that_cannot_be_trusted_is_dropped_piece_by_piece_with_one_line_each() {
    let home = tempfile::tempdir().unwrap();
    let repo = tempfile::tempdir().unwrap();
    let now_a_file = repo.path().join("was-a-repository");
    std::fs::write(&now_a_file, "").unwrap();
    let marker = repo.path().join("never-run");
    let bad_token = "0123456789abcdef0123456789abcdeX";
    let foreign = format!("touch '{}'", marker.display());
    // A command the config does not have, running when the daemon went away, for a plugin
    // that would relaunch it.
    let mut foreign_pane = journaled_pane(
        "00000000000000000000000000000002",
        "foreign",
        json!({"name": "foreign", "command": foreign, "plugin": "nightcrow-recovery"}),
        "",
    );
    foreign_pane["exit"] = Value::Null;
    let file = json!({
        "nightcrow_state": 1,
        "written_by": "0.1.0",
        "repos": [
            {"root": repo.path(), "panes": [
                journaled_pane("00000000000000000000000000000001", "kept", Value::Null, "kept-screen-42\r\n"),
                journaled_pane(bad_token, "forged", Value::Null, ""),
                foreign_pane,
                {"token": "00000000000000000000000000000003", "generation": 1},
            ]},
            {"root": "/nonexistent/nightcrow/repository", "panes": []},
            {"root": now_a_file, "panes": []},
            "not a repository",
        ],
    });
    std::fs::write(home.path().join("state.json"), file.to_string()).unwrap();
    let config = "[shell]\nprogram = \"/bin/sh\"\ncommand_args = [\"-c\"]\n\n\
                  [[plugin]]\nname = \"nightcrow-recovery\"\n\
                  command = \"builtin:nightcrow-recovery\"\nenabled = true\n\
                  allowed_resume_flags = [\"resume\", \"--session\"]\n";
    std::fs::write(home.path().join("config.toml"), config).unwrap();
    let daemon = TestDaemon::start_in(home);
    let log = std::fs::read_to_string(daemon.home().join("test-daemon.log")).unwrap();
    let dropped: Vec<&str> = log
        .lines()
        .filter(|line| line.contains("WARN") && line.contains("dropped"))
        .collect();
    assert_eq!(dropped.len(), 5, "one line each:\n{log}");
    for expected in [
        "pane 2 dropped",
        "pane 4 dropped: missing field",
        "/nonexistent/nightcrow/repository dropped",
        "was-a-repository dropped: it is not a directory now",
        "repository 4 dropped",
    ] {
        assert!(log.contains(expected), "{expected:?} not said:\n{log}");
    }
    assert!(
        !log.contains(&bad_token[..31]),
        "a token in the log:\n{log}"
    );
    assert!(
        log.contains("no longer a startup command in the config; shown exited, never relaunched"),
        "{log}"
    );
    let status = String::from_utf8_lossy(&daemon.run(&["status"]).stdout).into_owned();
    assert!(status.contains("pane 1:kept exited"), "{status}");
    assert!(status.contains("pane 2:foreign exited"), "{status}");
    assert!(!status.contains("hold on"), "nothing held: {status}");
    // What the journal said the pane showed is what a client gets.
    let home = Home::new(daemon.home().to_owned());
    tokio_runtime().block_on(async {
        let mut connection = Connection::open(&home).await.unwrap();
        attach(&mut connection, repo.path()).await;
        let mut output = String::new();
        until(&mut connection, &mut output, |_, out| {
            out.contains("kept-screen-42")
        })
        .await;
    });
    std::thread::sleep(Duration::from_secs(1));
    assert!(!marker.exists(), "a journaled command ran");
}

#[test]
fn a_journal_of_another_format_or_none_is_set_aside_and_said() {
    let cases: [(&str, &str, &str); 4] = [
        (
            r#"{"nightcrow_state":2,"written_by":"9.0.0","repos":[]}"#,
            "was written by nightcrow 9.0.0 in format 2; nightcrow",
            "state.json.format-2",
        ),
        (
            r#"{"repos":[]}"#,
            "is not a nightcrow state journal (no format field)",
            "state.json.unreadable",
        ),
        (
            "\u{0}\u{1}garbage",
            "is unreadable",
            "state.json.unreadable",
        ),
        (
            r#"{"nightcrow_state":1,"written_by":"0.1.0","repos":[{"root":"/tm"#,
            "is unreadable",
            "state.json.unreadable",
        ),
    ];
    for (content, said, aside) in cases {
        let home = tempfile::tempdir().unwrap();
        std::fs::write(home.path().join("state.json"), content).unwrap();
        let daemon = TestDaemon::start_in(home);
        let log = std::fs::read_to_string(daemon.home().join("test-daemon.log")).unwrap();
        assert!(
            log.contains(said),
            "{said:?} not said for {content:?}:\n{log}"
        );
        assert_eq!(
            std::fs::read_to_string(daemon.home().join(aside)).unwrap(),
            content,
            "kept as it was"
        );
        let status = String::from_utf8_lossy(&daemon.run(&["status"]).stdout).into_owned();
        assert!(status.contains("no repository open"), "{status}");
        // The daemon writes a good journal of its own from then on.
        wait_until("no new journal", || {
            journal(daemon.home()).is_some_and(|journal| journal["nightcrow_state"] == 1)
        });
    }
}

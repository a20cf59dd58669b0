//! The pane layer on real PTYs (Unix): one test binary, so it links once.
//!
//! Timeouts here only detect hangs. The one time checked is a lower bound (the meter's
//! pace), which a slow machine cannot break; no test asserts that anything was quick.
#![cfg(unix)]

use std::path::PathBuf;
use std::time::{Duration, Instant};

use nightcrow_guard::{
    Approved, ApprovedRelaunch, Guard, GuardLimits, PaneFacts, PaneId, PaneOwner, PaneState,
    PluginPolicy,
};
use nightcrow_pane::{
    EXIT_DRAIN_TIMEOUT, METERED_BYTES_PER_SECOND, PaneError, PaneEvent, PaneSize, PaneTable,
    SCROLLBACK_BYTES, Shell,
};
use nightcrow_protocol::{Command, Token};
use tokio::sync::mpsc;
use tokio::time::timeout;

const HANG: Duration = Duration::from_secs(60);

fn sh() -> Shell {
    Shell {
        program: PathBuf::from("/bin/sh"),
        command_args: vec!["-c".to_owned()],
    }
}

/// A relaunch of `token` to `line`, approved by a real guard: the table takes nothing
/// else. The line is the launch command the guard is told of, with no resume args.
fn approved(token: &Token, line: &str) -> ApprovedRelaunch {
    let policy = PluginPolicy {
        name: "test".to_owned(),
        allowed_resume_flags: Vec::new(),
        watch_on_signal: false,
    };
    let command = Command::Relaunch {
        token: token.clone(),
        generation: 1,
        resume_args: Vec::new(),
    };
    let facts = PaneFacts {
        pane: PaneId::new(0),
        generation: 1,
        owner: PaneOwner::ThisPlugin,
        state: PaneState::Exited,
        launch_command: Some(line),
    };
    match Guard::new(GuardLimits::default()).judge(&policy, &command, Some(facts), Instant::now()) {
        Ok(Approved::Relaunch(relaunch)) => relaunch,
        other => panic!("the guard refused a plain relaunch: {other:?}"),
    }
}

fn size() -> PaneSize {
    PaneSize::new(24, 80).unwrap()
}

struct Harness {
    table: PaneTable,
    events: mpsc::Receiver<PaneEvent>,
    root: PathBuf,
    runtime_dir: PathBuf,
    temp: tempfile::TempDir,
}

/// What one pane did until it exited.
struct Run {
    raw: Vec<u8>,
    text: String,
    code: Option<u32>,
}

impl Harness {
    fn new() -> Harness {
        Harness::with(|table| table)
    }

    fn with(configure: impl FnOnce(PaneTable) -> PaneTable) -> Harness {
        let temp = tempfile::tempdir().unwrap();
        let root = temp.path().join("repo");
        std::fs::create_dir(&root).unwrap();
        let runtime_dir = temp.path().join("run");
        let (sender, events) = mpsc::channel(256);
        let table = PaneTable::new(root.clone(), sh(), runtime_dir.clone(), sender).unwrap();
        Harness {
            table: configure(table),
            events,
            root: root.canonicalize().unwrap(),
            runtime_dir,
            temp,
        }
    }

    fn open(&mut self, command: &str) -> PaneId {
        self.table.open(Some(command.to_owned()), size()).unwrap()
    }

    async fn event(&mut self) -> PaneEvent {
        timeout(HANG, self.events.recv())
            .await
            .expect("no pane event: hang")
            .expect("event queue closed")
    }

    /// Passes events through the table, as the hub does, until `pane` exits.
    async fn run_to_exit(&mut self, pane: PaneId) -> Run {
        let mut run = Run {
            raw: Vec::new(),
            text: String::new(),
            code: None,
        };
        loop {
            match self.event().await {
                PaneEvent::Output { pane: from, bytes } => {
                    let text = self.table.record_output(from, &bytes).text;
                    if from == pane {
                        run.raw.extend_from_slice(&bytes);
                        run.text.extend(text);
                    }
                }
                PaneEvent::Exited { pane: from, code } => {
                    self.table.release_process(from);
                    if from == pane {
                        run.code = code;
                        return run;
                    }
                }
            }
        }
    }

    /// Passes events through the table until `pane`'s text contains `needle`.
    async fn text_until(&mut self, pane: PaneId, needle: &str) -> String {
        let mut seen = String::new();
        while !seen.contains(needle) {
            match self.event().await {
                PaneEvent::Output { pane: from, bytes } => {
                    let text = self.table.record_output(from, &bytes).text;
                    if from == pane {
                        seen.extend(text);
                    }
                }
                PaneEvent::Exited { pane: from, .. } => {
                    assert_ne!(from, pane, "exited before printing {needle:?}: {seen:?}");
                    self.table.release_process(from);
                }
            }
        }
        seen
    }
}

fn process_exists(pid: u32) -> bool {
    std::process::Command::new("kill")
        .args(["-0", &pid.to_string()])
        .stderr(std::process::Stdio::null())
        .status()
        .unwrap()
        .success()
}

/// Running, not a zombie waiting for its parent (an orphaned job's parent may be slow to
/// reap it; what matters here is that it no longer runs).
fn process_alive(pid: u32) -> bool {
    let output = std::process::Command::new("ps")
        .args(["-o", "stat=", "-p", &pid.to_string()])
        .output()
        .unwrap();
    let state = String::from_utf8_lossy(&output.stdout);
    !state.trim().is_empty() && !state.trim().starts_with('Z')
}

#[tokio::test]
async fn a_command_reads_input_and_its_output_arrives_as_events() {
    let mut h = Harness::new();
    let pane = h.open("read x; echo got:$x");
    h.table.write_typed(pane, b"hello\n").unwrap();
    let text = h.text_until(pane, "got:hello").await;
    assert!(!text.contains('\u{1b}'), "{text:?}");
}

#[tokio::test]
async fn without_a_command_the_shell_runs_interactively() {
    let mut h = Harness::new();
    let pane = h.table.open(None, size()).unwrap();
    h.table.write_typed(pane, b"echo $((6*7))\n").unwrap();
    h.text_until(pane, "42").await;
    h.table.write_typed(pane, b"exit 5\n").unwrap();
    assert_eq!(h.run_to_exit(pane).await.code, Some(5));
}

const ENV_TEST: &str = "the_pane_environment_is_set_and_no_color_is_dropped";

#[test]
fn the_pane_environment_is_set_and_no_color_is_dropped() {
    // Setting a variable in this multi-threaded process would be unsound, so the test
    // re-runs itself in a child process that has NO_COLOR from the start.
    if std::env::var_os("NO_COLOR").is_none() {
        let output = std::process::Command::new(std::env::current_exe().unwrap())
            .args(["--exact", ENV_TEST, "--nocapture", "--test-threads=1"])
            .env("NO_COLOR", "1")
            .output()
            .unwrap();
        let stdout = String::from_utf8_lossy(&output.stdout);
        assert!(
            output.status.success() && stdout.contains("1 passed"),
            "{stdout}\n{}",
            String::from_utf8_lossy(&output.stderr)
        );
        return;
    }
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    runtime.block_on(async {
        let mut h = Harness::new();
        let pane = h.open("env");
        let token = h.table.slot(pane).unwrap().token().clone();
        let run = h.run_to_exit(pane).await;
        let lines: Vec<&str> = run
            .text
            .lines()
            .map(|line| line.trim_end_matches('\r'))
            .collect();
        let runtime_dir = format!("NIGHTCROW_PLUGIN_RUNTIME_DIR={}", h.runtime_dir.display());
        let token_line = format!("NIGHTCROW_PANE_TOKEN={token}");
        for expected in [
            "TERM=xterm-256color",
            "COLORTERM=truecolor",
            &token_line,
            &runtime_dir,
        ] {
            assert!(
                lines.contains(&expected),
                "{expected} missing from {lines:?}"
            );
        }
        assert!(
            !lines.iter().any(|line| line.starts_with("NO_COLOR=")),
            "{lines:?}"
        );
    });
}

#[tokio::test]
async fn the_pane_runs_in_the_canonical_root_even_through_a_symlink() {
    let mut h = Harness::new();
    let link = h.temp.path().join("link");
    std::os::unix::fs::symlink(&h.root, &link).unwrap();
    let (sender, events) = mpsc::channel(256);
    h.events = events;
    h.table = PaneTable::new(link, sh(), h.runtime_dir.clone(), sender).unwrap();
    assert_eq!(h.table.repo_root(), h.root);
    let pane = h.open("pwd -P; pwd");
    let run = h.run_to_exit(pane).await;
    let root = h.root.display().to_string();
    let lines: Vec<&str> = run
        .text
        .lines()
        .map(|line| line.trim_end_matches('\r'))
        .collect();
    assert_eq!(lines, [root.as_str(), root.as_str()]);
}

#[test]
fn a_repository_root_must_be_an_existing_directory() {
    let temp = tempfile::tempdir().unwrap();
    let file = temp.path().join("file");
    std::fs::write(&file, "").unwrap();
    let (sender, _events) = mpsc::channel(1);
    let error = PaneTable::new(file.clone(), sh(), temp.path().into(), sender.clone()).unwrap_err();
    assert!(
        matches!(error, PaneError::RepoRootNotADirectory { .. }),
        "{error}"
    );
    let missing = temp.path().join("missing");
    let error = PaneTable::new(missing.clone(), sh(), temp.path().into(), sender).unwrap_err();
    assert!(
        error.to_string().contains(&missing.display().to_string()),
        "{error}"
    );
}

#[tokio::test]
async fn the_pty_has_the_requested_size_and_follows_resizes() {
    let mut h = Harness::new();
    for (rows, cols) in [(0, 80), (501, 80), (24, 0), (24, 1101)] {
        assert!(PaneSize::new(rows, cols).is_err(), "{rows}x{cols} accepted");
    }
    let pane = h
        .table
        .open(
            Some("stty size; read x; stty size".to_owned()),
            PaneSize::new(30, 100).unwrap(),
        )
        .unwrap();
    h.text_until(pane, "30 100").await;
    h.table
        .resize(pane, PaneSize::new(500, 1100).unwrap())
        .unwrap();
    h.table.write_typed(pane, b"\n").unwrap();
    h.text_until(pane, "500 1100").await;
}

#[tokio::test]
async fn at_most_eight_ptys_by_default() {
    let mut h = Harness::new();
    let panes: Vec<PaneId> = (0..8).map(|_| h.open("sleep 1000")).collect();
    let error = h
        .table
        .open(Some("sleep 1000".to_owned()), size())
        .unwrap_err();
    assert!(
        matches!(error, PaneError::TooManyPanes { max: 8 }),
        "{error}"
    );
    h.table.destroy(panes[3]);
    let ninth = h.open("sleep 1000");
    assert_eq!(h.table.position(ninth), Some(7));
    assert!(!h.table.panes().contains(&panes[3]));
}

#[tokio::test]
async fn the_cap_counts_ptys_not_slots() {
    let mut h = Harness::with(|table| table.with_max_panes(2));
    let first = h.open("sleep 1000");
    let second = h.open("sleep 1000");
    assert!(matches!(
        h.table.open(None, size()),
        Err(PaneError::TooManyPanes { max: 2 })
    ));
    // A relaunch replaces the slot's own PTY, so it fits under a full cap.
    let token = h.table.slot(first).unwrap().token().clone();
    let relaunched = h.table.relaunch(&approved(&token, "exit 0")).unwrap();
    h.run_to_exit(relaunched).await;
    assert!(
        h.table.slot(relaunched).is_some(),
        "the slot outlives its process"
    );
    let third = h.open("sleep 1000");
    // The released slot cannot come back while the cap is full.
    assert!(matches!(
        h.table.relaunch(&approved(&token, "exit 0")),
        Err(PaneError::TooManyPanes { max: 2 })
    ));
    assert_eq!(h.table.panes(), [relaunched, second, third]);
}

#[tokio::test]
async fn every_output_byte_arrives_before_the_exit_code() {
    let mut h = Harness::new();
    let pane = h.open("printf 'a%.0s' $(seq 1 100000); exit 3");
    let run = h.run_to_exit(pane).await;
    assert_eq!(run.code, Some(3));
    assert_eq!(run.raw.iter().filter(|&&b| b == b'a').count(), 100_000);
    assert!(!h.table.slot(pane).unwrap().is_alive());
}

/// A held pane hands on nothing while another pane's output flows; released, every byte it
/// printed arrives, in order, before its exit, though the child exited during the hold and
/// the hold outlasted the exit's drain timeout.
#[tokio::test]
async fn a_held_pane_waits_while_others_flow_and_loses_nothing() {
    let mut h = Harness::new();
    // More than one read, little enough for the PTY to buffer, so the child exits while the
    // reader waits.
    let held = h.open("seq 1 3000; exit 4");
    let pid = h.table.pid(held).unwrap();
    h.table.hold_output(held);
    let other = h.open("read x; echo got:$x");
    h.table.write_typed(other, b"hi\r").unwrap();
    let mut held_bytes = 0;
    let mut seen = String::new();
    while !seen.contains("got:hi") {
        match h.event().await {
            PaneEvent::Output { pane, bytes } if pane == held => held_bytes += bytes.len(),
            PaneEvent::Output { pane, bytes } => {
                seen.extend(h.table.record_output(pane, &bytes).text)
            }
            PaneEvent::Exited { pane, .. } => panic!("pane {pane} exited early"),
        }
    }
    tokio::time::sleep(EXIT_DRAIN_TIMEOUT * 2).await;
    assert!(
        !process_alive(pid),
        "the child did not exit during the hold"
    );
    while let Ok(event) = h.events.try_recv() {
        match event {
            PaneEvent::Output { pane, bytes } if pane == held => held_bytes += bytes.len(),
            PaneEvent::Exited { pane, .. } => assert_ne!(pane, held, "exited while held"),
            PaneEvent::Output { .. } => {}
        }
    }
    assert!(
        held_bytes <= 16 * 1024,
        "{held_bytes} bytes got past the hold"
    );

    h.table.release_output(held);
    let run = h.run_to_exit(held).await;
    assert_eq!(run.code, Some(4));
    let text = String::from_utf8(run.raw).expect("seq prints ASCII");
    let lines: Vec<&str> = text
        .lines()
        .map(|line| line.trim_end_matches('\r'))
        .collect();
    let expected: Vec<String> = (1..=3000).map(|n| n.to_string()).collect();
    assert_eq!(lines.len(), expected.len(), "lines lost or added");
    assert!(
        lines.iter().zip(&expected).all(|(line, want)| line == want),
        "out of order"
    );
}

/// Only a lower bound on the time is checked: a slow machine makes the flood slower, never
/// faster than the meter lets it be. Unmetered, the 8 MiB crossed a PTY here in 123 ms
/// (debug build), a quarter of the half second they must take metered.
#[tokio::test]
async fn a_flood_beside_a_pane_being_typed_into_goes_at_the_metered_pace_and_loses_nothing() {
    let mut h = Harness::new();
    let typed = h.open("cat");
    h.table.write_typed(typed, b"k").unwrap();
    let flood_bytes = 8 * 1024 * 1024;
    let opened = Instant::now();
    let flood = h.open(&format!(
        "head -c {flood_bytes} /dev/zero | tr '\\0' x; exit 3"
    ));
    // Counted, not recorded: the table's text work would slow an unmetered flood too.
    let (mut xs, mut others) = (0, 0);
    let code = loop {
        match h.event().await {
            PaneEvent::Output { pane, bytes } if pane == flood => {
                let x_count = bytes.iter().filter(|&&byte| byte == b'x').count();
                xs += x_count;
                others += bytes.len() - x_count;
            }
            PaneEvent::Exited { pane, code } if pane == flood => break code,
            _ => {}
        }
    };
    let took = opened.elapsed();
    assert_eq!(code, Some(3));
    assert_eq!((xs, others), (flood_bytes, 0), "bytes lost or added");
    let metered = Duration::from_secs_f64(flood_bytes as f64 / METERED_BYTES_PER_SECOND as f64);
    assert!(
        took >= metered - Duration::from_millis(50),
        "{flood_bytes} bytes went in {took:?} while another pane was typed into"
    );
}

#[tokio::test]
async fn relaunches_keep_the_token_and_position() {
    let mut h = Harness::new();
    let before = h.open("sleep 1000");
    let original = "echo first; exit 1";
    let mut pane = h.open(original);
    let after = h.open("sleep 1000");
    let token = h.table.slot(pane).unwrap().token().clone();
    let mut seen = vec![pane];
    for (generation, line) in [(2, "echo second; exit 2"), (3, "echo third; exit 3")] {
        h.run_to_exit(pane).await;
        let old = pane;
        pane = h.table.relaunch(&approved(&token, line)).unwrap();
        assert!(!seen.contains(&pane), "pane id {pane} reused");
        seen.push(pane);
        let slot = h.table.slot(pane).unwrap();
        assert_eq!(slot.generation(), generation);
        assert_eq!(slot.token(), &token);
        assert!(slot.is_alive());
        assert_eq!(h.table.resolve(&token), Some(pane));
        assert_eq!(h.table.position(pane), Some(1));
        assert_eq!(h.table.position(old), None);
        assert!(h.table.slot(old).is_none());
    }
    let run = h.run_to_exit(pane).await;
    assert_eq!((run.code, run.text.trim()), (Some(3), "third"));
    assert_eq!(h.table.panes(), [before, pane, after]);
}

#[tokio::test]
async fn a_failed_spawn_changes_nothing_and_uses_no_id() {
    let mut h = Harness::new();
    let first = h.open("exit 0");
    let token = h.table.slot(first).unwrap().token().clone();
    h.run_to_exit(first).await;
    std::fs::remove_dir(&h.root).unwrap();
    let error = h.table.relaunch(&approved(&token, "exit 0")).unwrap_err();
    assert!(
        matches!(error, PaneError::RepoRootNotADirectory { .. }),
        "{error}"
    );
    assert!(h.table.open(None, size()).is_err());
    assert_eq!(h.table.resolve(&token), Some(first));
    assert_eq!(h.table.slot(first).unwrap().generation(), 1);
    std::fs::create_dir(&h.root).unwrap();
    let next = h.table.relaunch(&approved(&token, "exit 0")).unwrap();
    assert_eq!(next.get(), first.get() + 1);

    let (sender, _events) = mpsc::channel(1);
    let missing = Shell {
        program: PathBuf::from("/nonexistent/shell"),
        command_args: vec![],
    };
    let mut table = PaneTable::new(h.root.clone(), missing, h.runtime_dir.clone(), sender).unwrap();
    let error = table.open(None, size()).unwrap_err();
    assert!(error.to_string().contains("/nonexistent/shell"), "{error}");
    assert!(table.panes().is_empty());
}

#[test]
fn input_to_a_child_that_never_reads_fills_the_queue_without_blocking() {
    let (done, finished) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        // The event receiver stays alive, unread, so nothing drains on our behalf either.
        let mut h = Harness::new();
        let pane = h.open("sleep 1000");
        let line = [b'x'; 1023]
            .iter()
            .chain(b"\n")
            .copied()
            .collect::<Vec<u8>>();
        let outcome = loop {
            match h.table.write_typed(pane, &line) {
                Ok(()) => {}
                Err(error) => break error,
            }
        };
        h.table.destroy(pane);
        let _ = done.send(outcome.to_string());
    });
    let outcome = finished
        .recv_timeout(HANG)
        .expect("write_typed blocked: hang");
    assert!(outcome.contains("input queue is full"), "{outcome}");
}

#[tokio::test]
async fn the_scrollback_keeps_the_last_256_kib() {
    let mut h = Harness::new();
    let pane = h.open("seq 1 70000");
    let run = h.run_to_exit(pane).await;
    assert!(run.raw.len() > SCROLLBACK_BYTES);
    let scrollback = h.table.scrollback(pane);
    assert_eq!(scrollback, run.raw[run.raw.len() - SCROLLBACK_BYTES..]);
    assert!(scrollback.ends_with(b"70000\r\n"));
}

#[tokio::test]
async fn a_quiet_pane_is_reported_idle_once_per_quiet_period() {
    let threshold = Duration::from_millis(200);
    let mut h = Harness::with(|table| table.with_idle_threshold(threshold));
    let quiet = h.open("sleep 1000");
    let spawned = h.table.slot(quiet).unwrap().last_output();
    assert_eq!(h.table.next_idle_deadline(), Some(spawned + threshold));
    assert!(h.table.take_idle(spawned).is_empty());

    let idle = h.table.take_idle(spawned + threshold);
    assert_eq!(idle.len(), 1);
    assert_eq!(
        (idle[0].pane, idle[0].generation, idle[0].idle),
        (quiet, 1, threshold)
    );
    assert_eq!(&idle[0].token, h.table.slot(quiet).unwrap().token());
    assert!(
        h.table.take_idle(spawned + threshold * 10).is_empty(),
        "reported twice"
    );
    assert_eq!(h.table.next_idle_deadline(), None);
    assert_eq!(
        h.table.idle_for(quiet, spawned + threshold),
        Some(threshold)
    );

    h.table.clear_idle(quiet);
    assert_eq!(h.table.take_idle(spawned + threshold).len(), 1);

    // Output re-arms it, for a new quiet period measured from the output.
    assert_eq!(h.table.record_output(quiet, b"\x1b[m").text, None);
    let output = h.table.slot(quiet).unwrap().last_output();
    assert!(output >= spawned);
    assert_eq!(h.table.next_idle_deadline(), Some(output + threshold));
    assert!(h.table.take_idle(output).is_empty());
    assert_eq!(h.table.take_idle(output + threshold).len(), 1);

    // Waiting for the deadline itself is what the hub does.
    let printing = h.open("read x; echo tick; sleep 1000");
    h.table.write_typed(printing, b"\n").unwrap();
    h.text_until(printing, "tick").await;
    let deadline = h.table.next_idle_deadline().unwrap();
    tokio::time::sleep_until(deadline.into()).await;
    let idle = h.table.take_idle(Instant::now());
    assert_eq!(
        idle.iter().map(|idle| idle.pane).collect::<Vec<_>>(),
        [printing]
    );
}

#[tokio::test]
async fn exited_panes_are_never_idle() {
    let threshold = Duration::from_millis(200);
    let mut h = Harness::with(|table| table.with_idle_threshold(threshold));
    let pane = h.open("exit 0");
    let spawned = h.table.slot(pane).unwrap().last_output();
    h.run_to_exit(pane).await;
    assert_eq!(h.table.next_idle_deadline(), None);
    assert!(h.table.take_idle(spawned + threshold * 100).is_empty());
    assert_eq!(h.table.idle_for(pane, spawned + threshold), None);
}

/// Waits for `pane`'s `Exited`, which the waiter sends only after reaping the child.
async fn exit_code(events: &mut mpsc::Receiver<PaneEvent>, pane: PaneId) -> Option<u32> {
    loop {
        let event = timeout(HANG, events.recv()).await.expect("no exit: hang");
        if let Some(PaneEvent::Exited { pane: from, code }) = event
            && from == pane
        {
            return code;
        }
    }
}

#[tokio::test]
async fn destroying_a_pane_or_dropping_the_table_kills_and_reaps_the_child() {
    let mut h = Harness::new();
    let destroyed = h.open("sleep 1000");
    let dropped = h.open("sleep 1000");
    let released = h.open("sleep 1000");
    let pids = [destroyed, dropped, released].map(|pane| h.table.pid(pane).unwrap());
    for pid in pids {
        assert!(process_exists(pid));
    }
    // Held output does not keep a pane's threads or its exit waiting once it is ended.
    for pane in [destroyed, dropped, released] {
        h.table.hold_output(pane);
    }
    h.table.destroy(destroyed);
    assert_eq!(
        exit_code(&mut h.events, destroyed).await,
        None,
        "not by a signal"
    );
    assert!(!process_exists(pids[0]));
    h.table.release_process(released);
    assert_eq!(h.table.pid(released), None);
    exit_code(&mut h.events, released).await;
    assert!(!process_exists(pids[2]));
    drop(h.table);
    exit_code(&mut h.events, dropped).await;
    assert!(!process_exists(pids[1]));
}

/// A pane whose shell and background job ignore SIGHUP and SIGTERM still dies: after the
/// grace its process group gets SIGKILL. `end_all` returns only once the group is gone;
/// `destroy` gets there on its own.
#[tokio::test]
async fn panes_that_ignore_hup_and_term_die_with_their_pane() {
    let stubborn = "trap '' HUP TERM; sleep 1000 & echo job=$!.; while :; do sleep 1; done";
    let mut h = Harness::new();
    let mut pids = Vec::new();
    let mut panes = Vec::new();
    for _ in 0..2 {
        // One at a time: waiting for one pane's output discards the other's.
        let pane = h.open(stubborn);
        panes.push(pane);
        let text = h.text_until(pane, ".").await;
        let job: u32 = text
            .split("job=")
            .nth(1)
            .and_then(|rest| rest.split('.').next())
            .and_then(|pid| pid.parse().ok())
            .unwrap_or_else(|| panic!("no job pid in {text:?}"));
        pids.push((h.table.pid(pane).unwrap(), job));
    }
    for &(shell, job) in &pids {
        assert!(process_alive(shell) && process_alive(job));
    }

    h.table.destroy(panes[1]);
    let (shell, job) = pids[1];
    let started = Instant::now();
    while process_alive(shell) || process_alive(job) {
        assert!(
            started.elapsed() < HANG,
            "the destroyed pane's processes live on"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }

    let endings = h.table.end_all();
    assert_eq!(endings.len(), 1);
    tokio::task::spawn_blocking(move || endings.into_iter().for_each(|e| e.wait()))
        .await
        .unwrap();
    let (shell, job) = pids[0];
    assert!(!process_alive(job), "end_all returned with the job alive");
    // The shell itself is gone too, though its waiter may take a moment to reap it.
    let started = Instant::now();
    while process_alive(shell) {
        assert!(started.elapsed() < HANG, "the ended pane's shell lives on");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    assert!(h.table.panes().is_empty());
}

#[tokio::test]
async fn a_background_child_holding_the_pty_delays_the_exit_only_boundedly() {
    let mut h = Harness::new();
    // The background sleep ignores the hangup that the shell's exit sends, so it keeps
    // the PTY open and the reader never reaches end of file.
    let pane = h.open("trap '' HUP; sleep 1000 & echo bg:$!; exit 4");
    let run = h.run_to_exit(pane).await;
    assert_eq!(run.code, Some(4));
    let pid: u32 = run
        .text
        .trim()
        .strip_prefix("bg:")
        .unwrap()
        .parse()
        .unwrap();
    assert!(process_exists(pid), "the test did not hold the PTY open");
    std::process::Command::new("kill")
        .args(["-9", &pid.to_string()])
        .status()
        .unwrap();
}

/// The same with a background job that goes on writing, while the pane is held and
/// released over and over (as for a client that keeps falling behind): the exit still
/// comes, after about [`EXIT_DRAIN_TIMEOUT`] of time the pane was not held.
#[tokio::test]
async fn a_writing_background_job_delays_a_held_panes_exit_only_boundedly() {
    let mut h = Harness::new();
    let pane = h.open("trap '' HUP; (while :; do echo x; sleep 0.01; done) & exit 4");
    let hold = EXIT_DRAIN_TIMEOUT / 2;
    let release = EXIT_DRAIN_TIMEOUT / 5;
    // Without counting free time alone, every wait for end of file would have a hold in
    // it and the exit would never come; counted, it comes after about five releases.
    let code = timeout(HANG, async {
        loop {
            h.table.hold_output(pane);
            tokio::time::sleep(hold).await;
            h.table.release_output(pane);
            let released = tokio::time::sleep(release);
            tokio::pin!(released);
            loop {
                tokio::select! {
                    () = &mut released => break,
                    event = h.events.recv() => match event.expect("event queue closed") {
                        PaneEvent::Exited { pane: from, code } if from == pane => return code,
                        _ => {}
                    },
                }
            }
        }
    })
    .await
    .expect("the exit never came");
    assert_eq!(code, Some(4));
    h.table.destroy(pane);
}

#[tokio::test]
async fn a_released_pane_keeps_its_slot_and_screen_until_destroyed() {
    let mut h = Harness::new();
    let kept = h.open("sleep 1000");
    let released = h.open("echo last words; exit 0");
    let tokens = [kept, released].map(|pane| h.table.slot(pane).unwrap().token().clone());
    assert_ne!(tokens[0], tokens[1]);
    assert!(nightcrow_protocol::Token::parse(tokens[0].as_str()).is_ok());

    h.run_to_exit(released).await;
    assert!(matches!(
        h.table.write_typed(released, b"x"),
        Err(PaneError::NoProcess(_))
    ));
    assert_eq!(h.table.resolve(&tokens[1]), Some(released));
    assert!(!h.table.slot(released).unwrap().is_alive());
    assert!(String::from_utf8_lossy(&h.table.scrollback(released)).contains("last words"));
    assert_eq!(h.table.panes(), [kept, released]);

    h.table.destroy(released);
    assert_eq!(h.table.resolve(&tokens[1]), None);
    assert_eq!(h.table.panes(), [kept]);
    assert!(matches!(
        h.table.relaunch(&approved(&tokens[1], "exit 0")),
        Err(PaneError::UnknownToken(_))
    ));
    h.table.destroy(kept);
    assert!(h.table.panes().is_empty());
    assert!(matches!(
        h.table.write_typed(kept, b"x"),
        Err(PaneError::UnknownPane(_))
    ));
}

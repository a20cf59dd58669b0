//! Codex panes: the real 0.169 rollouts appended to a temp `CODEX_HOME` as Codex writes them.

use std::io::Write;

use nightcrow_protocol::Event;

use super::harness::{Grants, PANE, Plugin, Runtime, on_both_runtimes, token};

on_both_runtimes!(
    exec_limit_then_exit_is_relaunched_with_resume_uuid_and_confirmed,
    a_live_tui_at_the_limit_is_called_back_and_a_later_normal_turn_ends_the_episode,
    no_rate_limit_headers_backs_off_without_a_deadline_and_keys_do_not_cancel,
    two_candidate_rollouts_never_resume,
    at_most_64_panes_are_tracked_and_the_overflow_is_logged_once,
    after_a_daemon_restart_a_session_at_its_limit_is_resumed_at_the_reset,
    after_a_daemon_restart_a_session_that_was_running_is_resumed_at_once
);

/// When the new daemon's plugin starts, after the pane first opened at `T0_MS`: after the
/// fixtures' rollouts were written (16:09–16:10), before their reset (16:20).
const RESTARTED_AFTER_MS: i64 = 12 * 60 * 1000;

/// A plugin of a daemon started again [`RESTARTED_AFTER_MS`] after the pane opened, with the
/// first `records` of `rollout` already written; told of the pane as the new daemon tells
/// it: opened (since the first daemon's time, or unsaid) and exited at once.
fn restarted(
    runtime: Runtime,
    env: &[(&str, &str)],
    rollout: &str,
    records: usize,
    opened_ms: Option<i64>,
) -> Plugin {
    let mut grants = Grants {
        wall_ms: super::harness::T0_MS + RESTARTED_AFTER_MS,
        ..Grants::default()
    };
    for (key, value) in env {
        grants = grants.env(key, value);
    }
    let mut plugin = Plugin::start_with(runtime, grants);
    let (path, lines) = plugin.rollout(rollout);
    let records = &lines[..records.min(lines.len())];
    std::fs::write(&path, records.concat()).expect("the rollout so far");
    plugin.open_since(1, "codex", opened_ms);
    plugin.exit(1);
    plugin
}

fn after_a_daemon_restart_a_session_at_its_limit_is_resumed_at_the_reset(runtime: Runtime) {
    let opened = Some(super::harness::T0_MS);
    let mut plugin = restarted(runtime, &[], LIMIT_ROLLOUT, 21, opened);
    assert_eq!(
        plugin.sync(),
        [
            "g1 limit_detected usage limit 1796228415 #0",
            "g1 waiting_for_reset usage limit 1796228445 #0",
        ],
        "the limit found again in the rollout the pane started"
    );
    expect_relaunch_at_the_reset(&mut plugin);
    plugin.finish();
    // A host that does not say when the slot opened: the rollout predates the plugin's
    // pane, so it is not the pane's, and nothing is resumed.
    let mut plugin = restarted(runtime, &[], LIMIT_ROLLOUT, 21, None);
    plugin.advance(3600);
    assert!(plugin.sync().is_empty());
    plugin.finish();
}

fn after_a_daemon_restart_a_session_that_was_running_is_resumed_at_once(runtime: Runtime) {
    let opened = Some(super::harness::T0_MS);
    let uuid = "01a23784-fe56-70f1-80cd-3fa99065980c";
    let mut plugin = restarted(runtime, &[], NORMAL_ROLLOUT, usize::MAX, opened);
    assert_eq!(
        plugin.sync(),
        [
            "g1 ready_to_resume ended while unwatched - #0".to_owned(),
            "g1 resuming resuming session - #1".to_owned(),
            format!("g1 relaunch resume {uuid}"),
        ]
    );
    plugin.advance(2);
    plugin.open(2, "codex");
    assert_eq!(plugin.sync(), ["g2 idle resumed - #0"]);
    plugin.finish();
    // Turned off in the plugin's env: the exit stays an exit.
    let off = [("RESUME_AFTER_RESTART", "false")];
    let mut plugin = restarted(runtime, &off, NORMAL_ROLLOUT, usize::MAX, opened);
    plugin.advance(3600);
    assert!(plugin.sync().is_empty());
    plugin.finish();
}

const LIMIT_ROLLOUT: &str = "real-0.169-mock-backend/exec-c-normal-then-limit/rollout-2026-12-02T16-10-09-01a23785-4104-78f1-b4f0-247bed73e273.jsonl";
const LIMIT_UUID: &str = "01a23785-4104-78f1-b4f0-247bed73e273";
const NO_HEADERS_ROLLOUT: &str = "real-0.169-mock-backend/exec-b-variant-no-rate-limit-headers/rollout-2026-12-02T16-10-08-01a23785-3c47-7c32-9d29-4a0452622344.jsonl";
const NORMAL_ROLLOUT: &str = "real-0.169-mock-backend/exec-a-normal/rollout-2026-12-02T16-09-52-01a23784-fe56-70f1-80cd-3fa99065980c.jsonl";

fn exec_limit_then_exit_is_relaunched_with_resume_uuid_and_confirmed(runtime: Runtime) {
    let mut plugin = Plugin::start(runtime);
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
    expect_relaunch_at_the_reset(&mut plugin);
    plugin.advance(3);
    plugin.open(2, "codex exec 'do the thing'");
    assert_eq!(plugin.sync(), ["g2 idle resumed - #0"]);
    // The resumed session's next turn is normal: nothing more to say.
    assert!(plugin.replay(&path, &records[21..]).is_empty());
    plugin.finish();
}

/// The fixture's limit resets at 1796228415: the relaunch comes at + 30 s, not a second
/// before.
fn expect_relaunch_at_the_reset(plugin: &mut Plugin) {
    let left = 1_796_228_445 - plugin.wall_ms / 1000;
    plugin.advance(left as u64 - 1);
    assert!(plugin.sync().is_empty(), "not a second early");
    plugin.advance(1);
    assert_eq!(
        plugin.sync(),
        [
            "g1 ready_to_resume limit reset - #0".to_owned(),
            "g1 resuming resuming session - #1".to_owned(),
            format!("g1 relaunch resume {LIMIT_UUID}"),
        ]
    );
}

fn a_live_tui_at_the_limit_is_called_back_and_a_later_normal_turn_ends_the_episode(
    runtime: Runtime,
) {
    let mut plugin = Plugin::start(runtime);
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
    // The person dismisses the popup and types a new prompt: keys alone end nothing.
    plugin.send(Event::UserInput {
        token: token(PANE),
        generation: 1,
    });
    assert!(plugin.sync().is_empty(), "a key is not a cancel");
    // Turn 3 is a normal turn in the bound rollout: the person carried on.
    assert_eq!(
        plugin.replay(&path, &records[21..]),
        ["g1 idle continued - #0"]
    );
    // Quitting Codex now is a plain exit: the episode is over.
    plugin.send(Event::PaneExited {
        token: token(PANE),
        generation: 1,
    });
    plugin.advance(86_400);
    assert!(
        plugin.sync().is_empty(),
        "no relaunch after the episode ended"
    );
    plugin.finish();
}

fn no_rate_limit_headers_backs_off_without_a_deadline_and_keys_do_not_cancel(runtime: Runtime) {
    let mut plugin = Plugin::start(runtime);
    plugin.open(1, "/usr/local/bin/codex exec");
    let (path, records) = plugin.rollout(NO_HEADERS_ROLLOUT);
    assert_eq!(
        plugin.replay(&path, &records),
        [
            "g1 limit_detected usage limit - #0",
            "g1 backoff usage limit; no reset time - #0"
        ]
    );
    // Keys (say, Esc on the popup) keep the backoff.
    plugin.send(Event::UserInput {
        token: token(PANE),
        generation: 1,
    });
    assert!(plugin.sync().is_empty(), "a key is not a cancel");
    // `codex exec` exits at the limit; after the 30 s backoff the session is resumed.
    plugin.send(Event::PaneExited {
        token: token(PANE),
        generation: 1,
    });
    plugin.advance(29);
    assert!(plugin.sync().is_empty(), "still backing off");
    plugin.advance(1);
    let out = plugin.sync();
    assert_eq!(
        out.last().map(String::as_str),
        Some("g1 relaunch resume 01a23785-3c47-7c32-9d29-4a0452622344"),
        "{out:?}"
    );
    plugin.finish();
}

fn two_candidate_rollouts_never_resume(runtime: Runtime) {
    let mut plugin = Plugin::start(runtime);
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

/// Native only: the wasm runtime's own decoder never passes a bad line on.
#[test]
fn other_panes_bad_lines_and_unknown_tokens() {
    let mut plugin = Plugin::start(Runtime::Native);
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
    // An unrecognised command is said once per pane, in the log: the pane (one token here)
    // first ran `bash`; `opencode-x` and `bash` again add nothing.
    plugin.open(1, "bash");
    plugin.sync();
    let said: Vec<&String> = plugin
        .seen
        .iter()
        .filter(|line| line.contains("not a Codex or OpenCode command"))
        .collect();
    assert_eq!(said.len(), 1, "{said:?}");
    assert!(
        said[0].contains("no recovery: bash (recognised forms"),
        "{said:?}"
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
        screen: None,
    });
    assert_eq!(plugin.sync(), [format!("watch {}", stranger.as_str())]);
    plugin
        .stderr_until(|stderr| stderr.contains("version mismatch") && stderr.contains("not UTF-8"));
    plugin.finish();
}

fn at_most_64_panes_are_tracked_and_the_overflow_is_logged_once(runtime: Runtime) {
    let mut plugin = Plugin::start(runtime);
    for n in 0..66u32 {
        plugin.send(Event::PaneOpened {
            token: token(&format!("{:032x}", 0xa000 + n)),
            generation: 1,
            title: None,
            command: Some("codex".into()),
            cwd: plugin.cwd.clone(),
            opened_ms: None,
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

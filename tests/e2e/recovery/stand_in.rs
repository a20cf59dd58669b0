//! The scripted Codex stand-in that `nightcrow demo` runs (`examples/demo/codex`): what it
//! writes must be what the plugin recognises, on both runtimes, or the demo shows nothing.

use std::process::Command;

use super::harness::{Grants, PANE, Plugin, Runtime, on_both_runtimes, token};

const STAND_IN: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/examples/demo/codex");

on_both_runtimes!(the_stand_in_limit_is_detected_and_resumed_with_its_session);

fn run_stand_in(plugin: &Plugin, args: &[&str]) -> std::process::Output {
    Command::new(STAND_IN)
        .args(args)
        .current_dir(&plugin.cwd)
        .env("CODEX_HOME", plugin.codex_home())
        .env("RESET_IN", "10")
        .output()
        .expect("the stand-in runs")
}

fn the_stand_in_limit_is_detected_and_resumed_with_its_session(runtime: Runtime) {
    let now_ms = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .expect("after 1970")
        .as_millis() as i64;
    let mut plugin = Plugin::start_with(
        runtime,
        Grants {
            wall_ms: now_ms,
            ..Grants::default()
        },
    );
    let command = format!("{STAND_IN} exec 'fix the tests'");
    plugin.open(1, &command);
    assert!(plugin.sync().is_empty());
    let first = run_stand_in(&plugin, &["exec", "fix the tests"]);
    assert_eq!(
        first.status.code(),
        Some(1),
        "exits at the limit: {first:?}"
    );
    plugin.files_written_by_the_test();
    let stdout = String::from_utf8_lossy(&first.stdout);
    let session = stdout
        .split_whitespace()
        .find(|word| word.len() == 36 && word.matches('-').count() == 4)
        .expect("it names its session")
        .to_owned();

    // The plugin polls every 2 s; within two polls it has read the limit turn.
    plugin.advance(2);
    let mut out = plugin.sync();
    plugin.advance(2);
    out.extend(plugin.sync());
    assert_eq!(out.len(), 2, "{out:?}");
    assert!(
        out[0].starts_with("g1 limit_detected usage limit "),
        "{out:?}"
    );
    let deadline: i64 = out[1]
        .strip_prefix("g1 waiting_for_reset usage limit ")
        .and_then(|rest| rest.split(' ').next())
        .and_then(|deadline| deadline.parse().ok())
        .unwrap_or_else(|| panic!("a deadline: {out:?}"));
    let reset: i64 = out[0].split(' ').nth(4).unwrap().parse().unwrap();
    assert_eq!(deadline, reset + 30, "{out:?}");
    assert!(
        (reset - now_ms / 1000 - 10).abs() <= 3,
        "reset ~10 s ahead: {out:?}"
    );

    plugin.send(nightcrow_protocol::Event::PaneExited {
        token: token(PANE),
        generation: 1,
    });
    assert!(plugin.sync().is_empty(), "waits for the reset");
    let left = deadline - plugin.wall_ms / 1000;
    plugin.advance(left.max(0) as u64);
    assert_eq!(
        plugin.sync(),
        [
            "g1 ready_to_resume limit reset - #0".to_owned(),
            "g1 resuming resuming session - #1".to_owned(),
            format!("g1 relaunch resume {session}"),
        ]
    );
    // The stand-in accepts what the plugin asked for, and resumes that session.
    let mut resumed = Command::new(STAND_IN);
    resumed
        .args(["exec", "fix the tests", "resume", &session])
        .current_dir(&plugin.cwd)
        .env("CODEX_HOME", plugin.codex_home());
    let mut child = resumed
        .stdout(std::process::Stdio::piped())
        .spawn()
        .expect("runs");
    let mut line = String::new();
    std::io::BufRead::read_line(
        &mut std::io::BufReader::new(child.stdout.take().unwrap()),
        &mut line,
    )
    .unwrap();
    assert!(
        line.contains(&format!("resuming session {session}")),
        "{line}"
    );
    child.kill().unwrap();
    child.wait().unwrap();
    plugin.files_written_by_the_test();
    plugin.finish();
}

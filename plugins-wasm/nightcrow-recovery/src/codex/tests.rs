//! The Codex adapter against the real rollouts in `tests/fixtures/codex/`.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::time::Duration;

use super::*;
use crate::provider::Observation::{Ambiguous, Continued, LimitHit};

const LIMIT_ROLLOUT: &str = "real-0.169-mock-backend/exec-c-normal-then-limit/rollout-2026-12-02T16-10-09-01a23785-4104-78f1-b4f0-247bed73e273.jsonl";
const LIMIT_UUID: &str = "01a23785-4104-78f1-b4f0-247bed73e273";
const NO_HEADERS_ROLLOUT: &str = "real-0.169-mock-backend/exec-b-variant-no-rate-limit-headers/rollout-2026-12-02T16-10-08-01a23785-3c47-7c32-9d29-4a0452622344.jsonl";
const NORMAL_ROLLOUT: &str = "real-0.169-mock-backend/exec-a-normal/rollout-2026-12-02T16-09-52-01a23784-fe56-70f1-80cd-3fa99065980c.jsonl";
/// 2026-12-02T16:00:00Z, before every 0.169 rollout was created.
const BEFORE_0169_MS: i64 = 1_796_227_200_000;

fn fixture(relative: &str) -> String {
    let path = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/codex")
        .join(relative);
    std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

struct Home {
    dir: tempfile::TempDir,
    cwd: String,
}

impl Home {
    fn new() -> Home {
        let dir = tempfile::tempdir().expect("temp dir");
        let cwd = dir.path().join("repo").display().to_string();
        Home { dir, cwd }
    }

    fn day(&self, date: &str) -> PathBuf {
        let path = self.dir.path().join("sessions").join(date);
        std::fs::create_dir_all(&path).expect("day dir");
        path
    }

    /// Puts a fixture rollout in `date` with `$WORKDIR` rewritten to the pane cwd.
    fn put(&self, date: &str, relative: &str) -> PathBuf {
        let name = Path::new(relative).file_name().expect("name");
        let path = self.day(date).join(name);
        std::fs::write(&path, fixture(relative).replace("$WORKDIR", &self.cwd)).expect("write");
        path
    }

    fn env(&self) -> Env {
        Env::from_pairs([(
            "CODEX_HOME".to_owned(),
            self.dir.path().display().to_string(),
        )])
    }

    fn codex(&self, cwd: &str, opened_wall_ms: i64) -> Codex {
        let facts = OpenedPane {
            command: "codex".into(),
            cwd: cwd.into(),
            opened: at(0, opened_wall_ms),
        };
        Codex::new(&facts, &self.env(), &mut Sink::default())
    }
}

fn at(mono_s: u64, wall_ms: i64) -> Now {
    Now {
        mono: Duration::from_secs(mono_s),
        wall_ms,
    }
}

/// What a poll observed of turn ends (turn starts matter only to auto-continue, which
/// `rollout::tests` and the machine's tests cover).
fn poll(codex: &mut Codex, now: Now) -> Vec<Observation> {
    let mut sink = Sink::default();
    codex.poll(now, &mut sink);
    sink.observations
        .into_iter()
        .filter(|observation| *observation != Observation::TurnStarted)
        .collect()
}

fn append(path: &Path, text: &str) {
    let mut file = std::fs::OpenOptions::new()
        .append(true)
        .open(path)
        .expect("open");
    file.write_all(text.as_bytes()).expect("append");
}

#[test]
fn real_0104_rollouts_bind_by_cwd_and_show_no_limit() {
    let home = Home::new();
    for name in [
        "rollout-2026-02-23T12-41-04-019c8a4d-8f45-7010-8b5d-7fad920aa6f9.jsonl",
        "rollout-2026-02-23T13-19-38-019c8a70-dda7-7f33-98ea-f30553347322.jsonl",
        "rollout-2026-02-23T20-34-25-019c8bfe-ec25-79e0-97d7-bda6a9c575ff.jsonl",
    ] {
        home.put("2026/02/23", &format!("localpush-2026-02-23/{name}"));
    }
    let day_ms = |h: i64| 1_771_804_800_000 + h * 3_600_000; // 2026-02-23T00:00Z + h hours
    let now = at(10, day_ms(23));
    // One session in this cwd: it is the pane's; its turns are normal.
    let mut codex = home.codex("/redacted/path/ea96e59ed9", day_ms(19));
    let seen = poll(&mut codex, now);
    assert!(
        !seen.is_empty() && seen.iter().all(|o| *o == Continued),
        "{seen:?}"
    );
    assert_eq!(
        codex.resume_args(),
        Some(vec![
            "resume".to_owned(),
            "019c8bfe-ec25-79e0-97d7-bda6a9c575ff".to_owned()
        ])
    );
    // Two sessions of another cwd created after the pane opened: ambiguous, no resume.
    let mut codex = home.codex("/redacted/path/da0ba47443", day_ms(11));
    assert!(
        !poll(&mut codex, now).contains(&Ambiguous),
        "no limit, so nothing to report"
    );
    assert_eq!(codex.resume_args(), None);
    // Opened between them: only the later one was created after the pane opened.
    let mut codex = home.codex("/redacted/path/da0ba47443", day_ms(12));
    poll(&mut codex, now);
    assert_eq!(
        codex.resume_args(),
        Some(vec![
            "resume".to_owned(),
            "019c8a70-dda7-7f33-98ea-f30553347322".to_owned()
        ])
    );
    // A cwd nobody used: nothing.
    let mut codex = home.codex("/elsewhere", day_ms(0));
    assert!(poll(&mut codex, now).is_empty());
    assert_eq!(codex.resume_args(), None);
}

#[test]
fn the_0169_limit_rollout_replayed_as_written_gives_limit_then_recovery() {
    let home = Home::new();
    let text = fixture(LIMIT_ROLLOUT).replace("$WORKDIR", &home.cwd);
    let path = home
        .day("2026/12/02")
        .join(Path::new(LIMIT_ROLLOUT).file_name().expect("name"));
    std::fs::write(&path, "").expect("create");
    let mut codex = home.codex(&home.cwd, BEFORE_0169_MS);
    let mut seen = Vec::new();
    for (n, line) in text.split_inclusive('\n').enumerate() {
        // Half a line, then the rest: a record is never read before it is complete.
        let (a, b) = line.split_at(line.len() / 2);
        append(&path, a);
        seen.extend(poll(&mut codex, at(2 * n as u64, BEFORE_0169_MS + 600_000)));
        append(&path, b);
        seen.extend(poll(
            &mut codex,
            at(2 * n as u64 + 1, BEFORE_0169_MS + 600_000),
        ));
    }
    assert_eq!(
        seen,
        [
            Continued,
            LimitHit {
                reset_epoch: Some(1_796_228_415)
            },
            Continued
        ]
    );
    assert_eq!(
        codex.resume_args(),
        Some(vec!["resume".to_owned(), LIMIT_UUID.to_owned()])
    );
}

#[test]
fn no_rate_limit_headers_means_no_reset_time() {
    let home = Home::new();
    home.put("2026/12/02", NO_HEADERS_ROLLOUT);
    let mut codex = home.codex(&home.cwd, BEFORE_0169_MS);
    assert_eq!(
        poll(&mut codex, at(1, BEFORE_0169_MS + 600_000)),
        [LimitHit { reset_epoch: None }]
    );
}

#[test]
fn workspace_credits_depleted_is_a_limit_with_the_exhausted_windows_reset() {
    let home = Home::new();
    home.put(
        "2026/12/02",
        "real-0.169-mock-backend/exec-b-variant-reached-type-workspace_owner_credits_depleted/rollout-2026-12-02T16-10-03-01a23785-288d-7d80-a7bf-1f415fe59c6d.jsonl",
    );
    let mut codex = home.codex(&home.cwd, BEFORE_0169_MS);
    assert_eq!(
        poll(&mut codex, at(1, BEFORE_0169_MS + 600_000)),
        [LimitHit {
            reset_epoch: Some(1_796_228_403)
        }]
    );
}

#[test]
fn two_candidates_make_a_limit_ambiguous() {
    let home = Home::new();
    home.put("2026/12/02", NORMAL_ROLLOUT);
    home.put("2026/12/02", LIMIT_ROLLOUT);
    let mut codex = home.codex(&home.cwd, BEFORE_0169_MS);
    let seen = poll(&mut codex, at(1, BEFORE_0169_MS + 600_000));
    assert!(
        seen.contains(&Ambiguous) && !seen.iter().any(|o| matches!(o, LimitHit { .. })),
        "{seen:?}"
    );
    assert_eq!(codex.resume_args(), None);
}

#[test]
fn subagents_and_older_rollouts_are_not_candidates() {
    let home = Home::new();
    home.put("2026/12/02", LIMIT_ROLLOUT);
    let subagent = fixture(NORMAL_ROLLOUT)
        .replace("$WORKDIR", &home.cwd)
        .replacen(
            r#""thread_source":"user""#,
            r#""thread_source":"subagent""#,
            1,
        );
    assert!(subagent.contains(r#""thread_source":"subagent""#));
    std::fs::write(
        home.day("2026/12/02")
            .join("rollout-2026-12-02T16-09-52-01a23784-fe56-70f1-80cd-3fa99065980c.jsonl"),
        subagent,
    )
    .expect("write");
    let mut codex = home.codex(&home.cwd, BEFORE_0169_MS);
    poll(&mut codex, at(1, BEFORE_0169_MS + 600_000));
    assert_eq!(
        codex.resume_args(),
        Some(vec!["resume".to_owned(), LIMIT_UUID.to_owned()])
    );
    // Opened after the rollout was created (16:10:09): not the pane's.
    let mut late = home.codex(&home.cwd, BEFORE_0169_MS + 700_000);
    assert!(poll(&mut late, at(1, BEFORE_0169_MS + 800_000)).is_empty());
    assert_eq!(late.resume_args(), None);
}

#[test]
fn a_resumed_session_is_found_by_uuid_in_another_day_and_read_on() {
    let home = Home::new();
    let first = home.put("2026/12/02", LIMIT_ROLLOUT);
    let mut codex = home.codex(&home.cwd, BEFORE_0169_MS);
    poll(&mut codex, at(1, BEFORE_0169_MS + 600_000));
    // The file moves (another day directory); then the resumed Codex appends a limit turn.
    let moved = home
        .day("2026/11/30")
        .join(first.file_name().expect("name"));
    std::fs::rename(&first, &moved).expect("move");
    let mut sink = Sink::default();
    codex.relaunched(at(2, BEFORE_0169_MS + 700_000), &mut sink);
    assert!(
        sink.observations.is_empty(),
        "the old turns are not read again"
    );
    let limit_turn: String = fixture(LIMIT_ROLLOUT)
        .split_inclusive('\n')
        .skip(15)
        .take(6)
        .collect();
    append(&moved, &limit_turn);
    assert_eq!(
        poll(&mut codex, at(3, BEFORE_0169_MS + 710_000)),
        [LimitHit {
            reset_epoch: Some(1_796_228_415)
        }]
    );
    assert_eq!(
        codex.resume_args(),
        Some(vec!["resume".to_owned(), LIMIT_UUID.to_owned()])
    );
}

#[test]
fn reads_are_capped_per_poll_and_per_record() {
    let home = Home::new();
    let limit: String = fixture(LIMIT_ROLLOUT).replace("$WORKDIR", &home.cwd);
    let lines: Vec<&str> = limit.split_inclusive('\n').collect();
    let mut text = lines[0].to_owned();
    // A 70 KiB record (over the 64 KiB cap) is skipped whole; what follows still counts.
    text += &format!(
        "{{\"type\":\"event_msg\",\"payload\":{{\"type\":\"agent_message\",\"message\":\"{}\"}}}}\n",
        "x".repeat(70 * 1024)
    );
    let filler = r#"{"timestamp":"2026-12-02T16:10:10.000Z","type":"response_item","payload":{"type":"reasoning","summary":[]}}"#;
    while text.len() < 400 * 1024 {
        text += filler;
        text.push('\n');
    }
    text.extend(lines[15..=20].iter().copied());
    std::fs::write(
        home.day("2026/12/02")
            .join(Path::new(LIMIT_ROLLOUT).file_name().expect("name")),
        &text,
    )
    .expect("write");
    let mut codex = home.codex(&home.cwd, BEFORE_0169_MS);
    let now = at(1, BEFORE_0169_MS + 600_000);
    assert!(
        poll(&mut codex, now).is_empty(),
        "the limit lies beyond the first 256 KiB"
    );
    assert_eq!(
        codex.next_poll(),
        Some(now.mono),
        "more to read: poll again at once"
    );
    assert_eq!(
        poll(&mut codex, now),
        [LimitHit {
            reset_epoch: Some(1_796_228_415)
        }]
    );
    assert_eq!(codex.next_poll(), Some(now.mono + POLL_EVERY));
    assert_eq!(codex.bad_records, 1);
}

#[test]
fn an_unreadable_sessions_directory_is_logged_once() {
    let dir = tempfile::tempdir().expect("temp dir");
    let env = Env::from_pairs([(
        "CODEX_HOME".to_owned(),
        dir.path().join("absent").display().to_string(),
    )]);
    let facts = OpenedPane {
        command: "codex".into(),
        cwd: "/r".into(),
        opened: at(0, BEFORE_0169_MS),
    };
    let mut codex = Codex::new(&facts, &env, &mut Sink::default());
    let mut sink = Sink::default();
    codex.poll(at(1, BEFORE_0169_MS), &mut sink);
    codex.poll(at(3, BEFORE_0169_MS), &mut sink);
    assert_eq!(sink.logs.len(), 1, "{:?}", sink.logs);
    let logged = &sink.logs[0].1;
    assert!(
        logged.starts_with("codex: no sessions directory at ")
            && logged.contains(&dir.path().join("absent").display().to_string())
            && logged.contains("codex makes it on its first run")
            && logged.contains("grant it in read_dirs"),
        "{logged}"
    );
    // Without CODEX_HOME and HOME there is nothing to poll.
    let mut sink = Sink::default();
    let codex = Codex::new(&facts, &Env::default(), &mut sink);
    assert_eq!(codex.next_poll(), None);
    assert_eq!(sink.logs.len(), 1);
}

#[test]
fn codex_home_defaults_and_tilde() {
    let env = |pairs: &[(&str, &str)]| {
        Env::from_pairs(pairs.iter().map(|(k, v)| (k.to_string(), v.to_string())))
    };
    assert_eq!(
        codex_home(&env(&[("HOME", "/h")])),
        Some(PathBuf::from("/h/.codex"))
    );
    assert_eq!(
        codex_home(&env(&[("HOME", "/h"), ("CODEX_HOME", "~/c")])),
        Some(PathBuf::from("/h/c"))
    );
    assert_eq!(
        codex_home(&env(&[("CODEX_HOME", "/c")])),
        Some(PathBuf::from("/c"))
    );
    assert_eq!(codex_home(&env(&[("CODEX_HOME", "~/c")])), None);
    assert_eq!(codex_home(&env(&[])), None);
}

//! SPEC §3 rule by rule, through the public API only.

use std::time::{Duration, Instant};

use nightcrow_guard::{
    Approved, BudgetKind, Guard, GuardLimits, PaneFacts, PluginPolicy, Refused, ResumeArgsError,
    Severity,
};
use nightcrow_protocol::{Command, LogLevel, PaneId, Token};

fn token() -> Token {
    Token::from_bytes([0x4f; 16])
}

fn other_token() -> Token {
    Token::from_bytes([0x11; 16])
}

/// An owned, live pane at generation 2, quiet for 30 s, launched as `codex`.
fn pane() -> PaneFacts {
    PaneFacts {
        pane: PaneId(9),
        generation: 2,
        opted_in: true,
        watched_by_another: false,
        alive: true,
        idle: Duration::from_secs(30),
        launch_command: Some("codex".to_owned()),
    }
}

fn exited() -> PaneFacts {
    PaneFacts {
        alive: false,
        ..pane()
    }
}

fn policy() -> PluginPolicy {
    PluginPolicy {
        name: "recovery".to_owned(),
        allowed_resume_flags: vec!["resume".to_owned(), "--session".to_owned()],
        watch_on_signal: true,
    }
}

fn send(data: &str) -> Command {
    Command::SendInput {
        token: token(),
        generation: 2,
        data: data.to_owned(),
    }
}

fn relaunch(args: &[&str]) -> Command {
    Command::Relaunch {
        token: token(),
        generation: 2,
        resume_args: args.iter().map(|a| a.to_string()).collect(),
    }
}

fn status() -> Command {
    Command::Status {
        token: token(),
        generation: 2,
        state: "waiting_for_reset".to_owned(),
        detail: Some("usage limit".to_owned()),
        deadline_epoch: Some(1_771_890_527),
        attempt: 1,
    }
}

fn attention() -> Command {
    Command::Attention {
        token: token(),
        generation: 2,
    }
}

fn watch() -> Command {
    Command::WatchPane { token: token() }
}

/// What a verdict looks like, comparable in a table.
#[derive(Debug, PartialEq)]
enum Outcome {
    SendInput(String),
    Relaunch(String),
    Status,
    Attention,
    Watch,
    Log(String),
    Refused(Refused),
}

fn outcome(verdict: Result<Approved, Refused>) -> Outcome {
    match verdict {
        Ok(Approved::SendInput(a)) => {
            assert_eq!((a.pane(), a.token()), (PaneId(9), &token()));
            Outcome::SendInput(a.data().to_owned())
        }
        Ok(Approved::Relaunch(a)) => {
            assert_eq!(
                (a.pane(), a.token(), a.generation()),
                (PaneId(9), &token(), 2)
            );
            Outcome::Relaunch(a.line().to_owned())
        }
        Ok(Approved::Status(a)) => {
            assert_eq!(a.pane(), PaneId(9));
            Outcome::Status
        }
        Ok(Approved::Attention(a)) => {
            assert_eq!(a.pane(), PaneId(9));
            Outcome::Attention
        }
        Ok(Approved::WatchPane(a)) => {
            assert_eq!((a.pane(), a.token()), (PaneId(9), &token()));
            Outcome::Watch
        }
        Ok(Approved::Log(a)) => Outcome::Log(a.message().to_owned()),
        Err(refused) => Outcome::Refused(refused),
    }
}

/// Judges `command` once on a fresh guard with default limits.
#[track_caller]
fn check(facts: Option<PaneFacts>, command: Command, expected: Outcome) {
    check_with(&policy(), facts, command, expected);
}

#[track_caller]
fn check_with(
    policy: &PluginPolicy,
    facts: Option<PaneFacts>,
    command: Command,
    expected: Outcome,
) {
    let mut guard = Guard::new(GuardLimits::default());
    let verdict = guard.judge(policy, &command, facts.as_ref(), Instant::now());
    assert_eq!(outcome(verdict), expected, "{command:?} with {facts:?}");
}

fn refused(reason: Refused) -> Outcome {
    Outcome::Refused(reason)
}

#[test]
fn identity_comes_first_for_every_pane_command() {
    for command in [send("x"), relaunch(&[]), status(), attention()] {
        check(None, command.clone(), refused(Refused::UnknownPane));
        let other_plugins = PaneFacts {
            opted_in: false,
            watched_by_another: true,
            ..pane()
        };
        check(
            Some(other_plugins),
            command.clone(),
            refused(Refused::NotOptedIn),
        );
        for current in [1, 3] {
            check(
                Some(PaneFacts {
                    generation: current,
                    ..exited()
                }),
                command.clone(),
                refused(Refused::StaleGeneration {
                    requested: 2,
                    current,
                }),
            );
        }
    }
}

#[test]
fn status_and_attention_need_identity_only() {
    let held = PaneFacts {
        launch_command: None,
        ..exited()
    };
    check(Some(held.clone()), status(), Outcome::Status);
    check(Some(held), attention(), Outcome::Attention);
    check(Some(pane()), status(), Outcome::Status);
}

#[test]
fn status_is_relayed_as_sent() {
    let mut guard = Guard::new(GuardLimits::default());
    let Ok(Approved::Status(status)) =
        guard.judge(&policy(), &status(), Some(&pane()), Instant::now())
    else {
        panic!("status refused");
    };
    assert_eq!(
        (
            status.state(),
            status.detail(),
            status.deadline_epoch(),
            status.attempt()
        ),
        (
            "waiting_for_reset",
            Some("usage limit"),
            Some(1_771_890_527),
            1
        )
    );
}

#[test]
fn log_needs_no_pane_and_is_truncated_on_a_char_boundary() {
    let log = |message: String| Command::Log {
        level: LogLevel::Warn,
        message,
    };
    check(None, log("hello".into()), Outcome::Log("hello".into()));
    let exact = "a".repeat(2048);
    check(None, log(exact.clone()), Outcome::Log(exact));
    // 2047 ASCII bytes and then a 3-byte char straddling the limit: the char goes whole.
    let straddling = format!("{}한tail", "a".repeat(2047));
    check(None, log(straddling), Outcome::Log("a".repeat(2047)));
    let korean = "한".repeat(1000);
    let Outcome::Log(kept) = outcome(Guard::new(GuardLimits::default()).judge(
        &policy(),
        &log(korean),
        None,
        Instant::now(),
    )) else {
        panic!("log refused");
    };
    assert_eq!(kept, "한".repeat(682));
}

#[test]
fn send_input_rules_in_order() {
    let busy = |idle_ms| PaneFacts {
        idle: Duration::from_millis(idle_ms),
        ..pane()
    };
    check(Some(exited()), send("x"), refused(Refused::PaneNotRunning));
    check(
        Some(busy(9_999)),
        send("x"),
        refused(Refused::PaneBusy {
            idle: Duration::from_millis(9_999),
            needed: Duration::from_secs(10),
        }),
    );
    check(
        Some(busy(10_000)),
        send("x"),
        Outcome::SendInput("x".into()),
    );
    // A dead pane is reported before a busy one, a busy one before oversize data.
    check(
        Some(PaneFacts {
            alive: false,
            ..busy(0)
        }),
        send(&"\u{1b}".repeat(9000)),
        refused(Refused::PaneNotRunning),
    );
    check(
        Some(busy(0)),
        send(&"\u{1b}".repeat(9000)),
        refused(Refused::PaneBusy {
            idle: Duration::ZERO,
            needed: Duration::from_secs(10),
        }),
    );
}

#[test]
fn send_input_size_limit_is_8192_bytes() {
    let exact = "x".repeat(8192);
    check(
        Some(pane()),
        send(&exact),
        Outcome::SendInput(exact.clone()),
    );
    check(
        Some(pane()),
        send(&"x".repeat(8193)),
        refused(Refused::InputTooLarge {
            len: 8193,
            max: 8192,
        }),
    );
    check(Some(pane()), send(""), Outcome::SendInput(String::new()));
}

#[test]
fn send_input_refuses_every_control_class_but_cr_lf_tab() {
    for (found, name) in [
        ('\u{1b}', "ESC"),
        ('\u{7}', "BEL"),
        ('\0', "NUL"),
        ('\u{7f}', "DEL"),
        ('\u{8}', "BS"),
        ('\u{b}', "VT"),
        ('\u{9b}', "C1 CSI"),
        ('\u{85}', "C1 NEL"),
    ] {
        let data = format!("ok{found}[2J");
        let mut guard = Guard::new(GuardLimits::default());
        let verdict = guard.judge(&policy(), &send(&data), Some(&pane()), Instant::now());
        assert_eq!(
            verdict.unwrap_err(),
            Refused::ControlCharacter { found, at: 2 },
            "{name}"
        );
    }
    let plain = "계속 진행해 주세요\r\n\tcontinue\r";
    check(Some(pane()), send(plain), Outcome::SendInput(plain.into()));
}

#[test]
fn relaunch_rules_in_order() {
    // Alive is refused before the args are even looked at.
    check(
        Some(pane()),
        relaunch(&["rm", "-rf", "$HOME"]),
        refused(Refused::PaneStillRunning),
    );
    // No launch command beats any allowlist.
    let bare = PaneFacts {
        launch_command: None,
        ..exited()
    };
    check(
        Some(bare),
        relaunch(&["resume"]),
        refused(Refused::NoLaunchCommand),
    );
    check(
        Some(exited()),
        relaunch(&["resume", "019c8bfe-ec25-79e0-97d7-bda6a9c575ff"]),
        Outcome::Relaunch("codex resume 019c8bfe-ec25-79e0-97d7-bda6a9c575ff".into()),
    );
    check(
        Some(exited()),
        relaunch(&[]),
        Outcome::Relaunch("codex".into()),
    );
}

#[track_caller]
fn check_args(allowed: &[&str], args: &[&str], expected: Result<&str, ResumeArgsError>) {
    let policy = PluginPolicy {
        allowed_resume_flags: allowed.iter().map(|a| a.to_string()).collect(),
        ..policy()
    };
    let expected = match expected {
        Ok(line) => Outcome::Relaunch(line.to_owned()),
        Err(error) => refused(Refused::ResumeArgsRejected(error)),
    };
    check_with(&policy, Some(exited()), relaunch(args), expected);
}

#[test]
fn relaunch_args_are_validated() {
    let allowed = ["resume", "--session", "/C"];
    let six = ["resume", "a", "b", "c", "d", "e"];
    check_args(&allowed, &six, Ok("codex resume a b c d e"));
    check_args(
        &allowed,
        &["resume", "a", "b", "c", "d", "e", "f"],
        Err(ResumeArgsError::TooMany { count: 7 }),
    );
    let long = format!("codex resume {}", "v".repeat(256));
    check_args(&allowed, &["resume", &"v".repeat(256)], Ok(&long));
    check_args(
        &allowed,
        &["resume", &"v".repeat(257)],
        Err(ResumeArgsError::TooLong { index: 1, len: 257 }),
    );
    check_args(
        &allowed,
        &["resume", ""],
        Err(ResumeArgsError::Empty { index: 1 }),
    );
    for found in [
        ' ', '"', '\'', '$', ';', '|', '&', '>', '<', '`', '\n', '*', '한', '\\',
    ] {
        check_args(
            &allowed,
            &["resume", &format!("id{found}x")],
            Err(ResumeArgsError::ForbiddenCharacter { index: 1, found }),
        );
    }
    check_args(
        &allowed,
        &["resume", "a.b_c-d:e/f=g@h+i"],
        Ok("codex resume a.b_c-d:e/f=g@h+i"),
    );
}

#[test]
fn flags_and_arg_zero_must_be_allowed_exactly_values_need_not() {
    let allowed = ["resume", "--session", "/C"];
    let not_allowed = |index: usize, arg: &str| {
        Err(ResumeArgsError::NotAllowed {
            index,
            arg: arg.to_owned(),
        })
    };
    check_args(&allowed, &["exec"], not_allowed(0, "exec"));
    check_args(&allowed, &["Resume"], not_allowed(0, "Resume"));
    check_args(
        &allowed,
        &["--session", "ses_3ce42bdb9ffeEIUUu08AuKTJms"],
        Ok("codex --session ses_3ce42bdb9ffeEIUUu08AuKTJms"),
    );
    check_args(&allowed, &["resume", "--yolo"], not_allowed(1, "--yolo"));
    check_args(&allowed, &["resume", "-x"], not_allowed(1, "-x"));
    check_args(&allowed, &["resume", "/x"], not_allowed(1, "/x"));
    check_args(&allowed, &["resume", "/C"], Ok("codex resume /C"));
    // Empty allowlist: no args at all, but a bare relaunch is fine.
    check_args(&[], &["resume"], not_allowed(0, "resume"));
    check_args(&[], &[], Ok("codex"));
}

#[test]
fn the_line_is_always_composed_from_the_original_command() {
    let mut guard = Guard::new(GuardLimits::default());
    let now = Instant::now();
    for (generation, id) in [(2, "aaa"), (3, "bbb")] {
        let facts = PaneFacts {
            generation,
            ..exited()
        };
        let command = Command::Relaunch {
            token: token(),
            generation,
            resume_args: vec!["resume".into(), id.into()],
        };
        let Ok(Approved::Relaunch(approved)) = guard.judge(&policy(), &command, Some(&facts), now)
        else {
            panic!("refused");
        };
        assert_eq!(approved.line(), format!("codex resume {id}"));
    }
}

#[test]
fn watch_pane_rules_in_order() {
    check(None, watch(), refused(Refused::UnknownPane));
    let not_watcher = PluginPolicy {
        watch_on_signal: false,
        ..policy()
    };
    let foreign = PaneFacts {
        opted_in: false,
        ..pane()
    };
    check_with(
        &not_watcher,
        Some(foreign.clone()),
        watch(),
        refused(Refused::WatchNotAllowed),
    );
    check(
        Some(PaneFacts {
            watched_by_another: true,
            alive: false,
            ..foreign.clone()
        }),
        watch(),
        refused(Refused::PaneWatchedByAnother),
    );
    check(
        Some(PaneFacts {
            alive: false,
            ..foreign.clone()
        }),
        watch(),
        refused(Refused::PaneNotRunning),
    );
    check(Some(foreign), watch(), Outcome::Watch);
    // Already its own: approved again, so the plugin gets a fresh `pane_opened`.
    check(Some(pane()), watch(), Outcome::Watch);
}

#[test]
fn watch_pane_charges_no_budget() {
    let mut guard = Guard::new(GuardLimits {
        max_sends_per_window: 1,
        ..GuardLimits::default()
    });
    let now = Instant::now();
    for _ in 0..20 {
        assert!(guard.judge(&policy(), &watch(), Some(&pane()), now).is_ok());
    }
    assert!(
        guard
            .judge(&policy(), &send("x"), Some(&pane()), now)
            .is_ok()
    );
}

fn judge_at(
    guard: &mut Guard,
    command: &Command,
    facts: &PaneFacts,
    at: Instant,
) -> Result<(), Refused> {
    guard.judge(&policy(), command, Some(facts), at).map(drop)
}

fn rate_limited(kind: BudgetKind, limit: u32) -> Refused {
    Refused::RateLimited {
        kind,
        limit,
        window: Duration::from_secs(60),
    }
}

#[test]
fn five_sends_per_minute_then_refused_and_free_again_exactly_a_window_later() {
    let mut guard = Guard::new(GuardLimits::default());
    let start = Instant::now();
    for second in 0..5 {
        judge_at(
            &mut guard,
            &send("x"),
            &pane(),
            start + Duration::from_secs(second),
        )
        .unwrap();
    }
    let sixth = judge_at(
        &mut guard,
        &send("x"),
        &pane(),
        start + Duration::from_secs(59),
    );
    assert_eq!(sixth, Err(rate_limited(BudgetKind::SendInput, 5)));
    // The first charge leaves the window exactly 60 s after it was made.
    let just_before = start + Duration::from_secs(60) - Duration::from_nanos(1);
    assert!(judge_at(&mut guard, &send("x"), &pane(), just_before).is_err());
    judge_at(
        &mut guard,
        &send("x"),
        &pane(),
        start + Duration::from_secs(60),
    )
    .unwrap();
    assert!(
        judge_at(
            &mut guard,
            &send("x"),
            &pane(),
            start + Duration::from_secs(60)
        )
        .is_err()
    );
}

#[test]
fn refusals_are_not_charged() {
    let mut guard = Guard::new(GuardLimits::default());
    let now = Instant::now();
    let busy = PaneFacts {
        idle: Duration::ZERO,
        ..pane()
    };
    for _ in 0..50 {
        assert!(judge_at(&mut guard, &send("x"), &busy, now).is_err());
        assert!(judge_at(&mut guard, &send("\u{1b}"), &pane(), now).is_err());
        assert!(judge_at(&mut guard, &relaunch(&["nope"]), &exited(), now).is_err());
    }
    assert_eq!(guard.tracked_tokens(), 0);
    for _ in 0..5 {
        judge_at(&mut guard, &send("x"), &pane(), now).unwrap();
    }
    for _ in 0..3 {
        judge_at(&mut guard, &relaunch(&[]), &exited(), now).unwrap();
    }
}

#[test]
fn sends_and_relaunches_have_separate_counters_per_token() {
    let mut guard = Guard::new(GuardLimits::default());
    let now = Instant::now();
    for _ in 0..3 {
        judge_at(&mut guard, &relaunch(&["resume", "id"]), &exited(), now).unwrap();
    }
    assert_eq!(
        judge_at(&mut guard, &relaunch(&["resume", "id"]), &exited(), now),
        Err(rate_limited(BudgetKind::Relaunch, 3))
    );
    for _ in 0..5 {
        judge_at(&mut guard, &send("x"), &pane(), now).unwrap();
    }
    // Another token has its own budget.
    let other = Command::SendInput {
        token: other_token(),
        generation: 2,
        data: "x".into(),
    };
    judge_at(&mut guard, &other, &pane(), now).unwrap();
}

#[test]
fn cancel_clears_the_budget_and_relaunch_does_not() {
    let mut guard = Guard::new(GuardLimits::default());
    let now = Instant::now();
    for _ in 0..5 {
        judge_at(&mut guard, &send("x"), &pane(), now).unwrap();
    }
    // The pane was relaunched: same token, new generation; the budget is still spent.
    let relaunched = PaneFacts {
        generation: 3,
        pane: PaneId(10),
        ..pane()
    };
    let next_generation = Command::SendInput {
        token: token(),
        generation: 3,
        data: "x".into(),
    };
    assert!(judge_at(&mut guard, &next_generation, &relaunched, now).is_err());
    guard.cancel(&token());
    assert_eq!(guard.tracked_tokens(), 0);
    judge_at(&mut guard, &next_generation, &relaunched, now).unwrap();
}

#[test]
fn a_zero_limit_refuses_all() {
    let mut guard = Guard::new(GuardLimits {
        max_sends_per_window: 0,
        max_relaunches_per_window: 0,
        window_secs: 60,
    });
    let now = Instant::now();
    assert!(matches!(
        judge_at(&mut guard, &send("x"), &pane(), now),
        Err(Refused::RateLimited { limit: 0, .. })
    ));
    assert!(matches!(
        judge_at(&mut guard, &relaunch(&[]), &exited(), now),
        Err(Refused::RateLimited { limit: 0, .. })
    ));
}

#[test]
fn expired_budgets_are_forgotten() {
    let mut guard = Guard::new(GuardLimits::default());
    let start = Instant::now();
    for byte in 0..100u8 {
        let command = Command::SendInput {
            token: Token::from_bytes([byte; 16]),
            generation: 2,
            data: "x".into(),
        };
        judge_at(&mut guard, &command, &pane(), start).unwrap();
    }
    assert_eq!(guard.tracked_tokens(), 100);
    judge_at(
        &mut guard,
        &send("x"),
        &pane(),
        start + Duration::from_secs(60),
    )
    .unwrap();
    assert_eq!(guard.tracked_tokens(), 1);
}

#[test]
fn severity_separates_late_traffic_from_forbidden_requests() {
    let args = ResumeArgsError::Empty { index: 0 };
    let cases = [
        (Refused::UnknownPane, Severity::Debug),
        (
            Refused::StaleGeneration {
                requested: 1,
                current: 2,
            },
            Severity::Debug,
        ),
        (Refused::PaneNotRunning, Severity::Debug),
        (
            Refused::PaneBusy {
                idle: Duration::ZERO,
                needed: Duration::ZERO,
            },
            Severity::Debug,
        ),
        (Refused::PaneStillRunning, Severity::Debug),
        (Refused::PaneWatchedByAnother, Severity::Debug),
        (Refused::NotOptedIn, Severity::Warn),
        (Refused::InputTooLarge { len: 1, max: 0 }, Severity::Warn),
        (
            Refused::ControlCharacter { found: '\0', at: 0 },
            Severity::Warn,
        ),
        (Refused::NoLaunchCommand, Severity::Warn),
        (Refused::ResumeArgsRejected(args), Severity::Warn),
        (Refused::WatchNotAllowed, Severity::Warn),
        (rate_limited(BudgetKind::SendInput, 5), Severity::Warn),
    ];
    for (reason, severity) in cases {
        assert_eq!(reason.severity(), severity, "{reason:?}");
    }
}

#[test]
fn refusal_messages_name_the_numbers() {
    let shown = [
        (
            Refused::StaleGeneration {
                requested: 1,
                current: 2,
            },
            "generation 1 is stale; the pane is at generation 2",
        ),
        (
            Refused::PaneBusy {
                idle: Duration::from_millis(9_999),
                needed: Duration::from_secs(10),
            },
            "the pane printed output 9999ms ago; input needs 10000ms of quiet",
        ),
        (
            Refused::InputTooLarge {
                len: 8193,
                max: 8192,
            },
            "input is 8193 bytes, at most 8192 allowed",
        ),
        (
            Refused::ControlCharacter {
                found: '\u{9b}',
                at: 4,
            },
            "input contains control character U+009B at byte 4",
        ),
        (
            rate_limited(BudgetKind::Relaunch, 3),
            "Relaunch budget spent: 3 per 60s for this pane",
        ),
        (
            Refused::ResumeArgsRejected(ResumeArgsError::TooMany { count: 7 }),
            "resume args rejected: 7 resume args, at most 6 allowed",
        ),
    ];
    for (reason, text) in shown {
        assert_eq!(reason.to_string(), text);
    }
}

#[test]
fn limits_deserialize_with_defaults_and_refuse_unknown_keys() {
    #[derive(serde::Deserialize)]
    struct Config {
        guard: GuardLimits,
    }
    let parsed: Config = serde_json::from_str(r#"{"guard":{"window_secs":30}}"#).unwrap();
    assert_eq!(
        parsed.guard,
        GuardLimits {
            window_secs: 30,
            ..GuardLimits::default()
        }
    );
    assert!(serde_json::from_str::<Config>(r#"{"guard":{"max_send":1}}"#).is_err());
}

//! Table tests of SPEC §3 through the public API, one `check` per case, plus properties.

use std::time::{Duration, Instant};

use nightcrow_protocol::{Command, Generation, LogLevel, Token};
use proptest::prelude::*;

use crate::{
    Approved, BudgetCharges, BudgetKind, Guard, GuardLimits, IDLE_THRESHOLD, PaneFacts, PaneId,
    PaneOwner, PaneState, PluginPolicy, Refused, ResumeArgsError, Severity,
};

const UUID: &str = "019c8bfe-ec25-79e0-97d7-bda6a9c575ff";
const QUIET: PaneState = PaneState::Running {
    idle: Duration::from_secs(10),
};

fn token(n: u8) -> Token {
    Token::from_bytes([n; 16])
}

fn plugin() -> PluginPolicy {
    PluginPolicy {
        name: "recovery".to_owned(),
        allowed_resume_flags: vec!["resume".to_owned(), "--session".to_owned()],
        watch_on_signal: true,
    }
}

/// A live, quiet generation-1 pane owned by the plugin being judged.
fn owned() -> PaneFacts<'static> {
    PaneFacts {
        pane: PaneId::new(1),
        generation: 1,
        owner: PaneOwner::ThisPlugin,
        state: QUIET,
        launch_command: Some("codex"),
    }
}

fn exited() -> PaneFacts<'static> {
    PaneFacts {
        state: PaneState::Exited,
        ..owned()
    }
}

fn idle_ms(ms: u64) -> PaneState {
    PaneState::Running {
        idle: Duration::from_millis(ms),
    }
}

fn send(data: &str) -> Command {
    Command::SendInput {
        token: token(1),
        generation: 1,
        data: data.to_owned(),
    }
}

fn relaunch(args: &[&str]) -> Command {
    Command::Relaunch {
        token: token(1),
        generation: 1,
        resume_args: args.iter().map(|&arg| arg.to_owned()).collect(),
    }
}

fn status() -> Command {
    Command::Status {
        token: token(1),
        generation: 1,
        state: "waiting_for_reset".to_owned(),
        detail: Some("usage limit".to_owned()),
        deadline_epoch: Some(1_771_890_527),
        attempt: 2,
    }
}

fn attention() -> Command {
    Command::Attention {
        token: token(1),
        generation: 1,
    }
}

fn watch() -> Command {
    Command::WatchPane { token: token(1) }
}

fn log(message: &str) -> Command {
    Command::Log {
        level: LogLevel::Warn,
        message: message.to_owned(),
    }
}

/// The same command for another token or generation.
fn with(command: Command, new_token: Token, new_generation: Generation) -> Command {
    match command {
        Command::SendInput { data, .. } => Command::SendInput {
            token: new_token,
            generation: new_generation,
            data,
        },
        Command::Relaunch { resume_args, .. } => Command::Relaunch {
            token: new_token,
            generation: new_generation,
            resume_args,
        },
        Command::Status {
            state,
            detail,
            deadline_epoch,
            attempt,
            ..
        } => Command::Status {
            token: new_token,
            generation: new_generation,
            state,
            detail,
            deadline_epoch,
            attempt,
        },
        Command::Attention { .. } => Command::Attention {
            token: new_token,
            generation: new_generation,
        },
        Command::WatchPane { .. } => Command::WatchPane { token: new_token },
        log @ Command::Log { .. } => log,
    }
}

fn generation(command: Command, new_generation: Generation) -> Command {
    with(command, token(1), new_generation)
}

/// What an approval is, in one line: the command tag and the value the hub acts on.
fn describe(approved: &Approved) -> String {
    match approved {
        Approved::SendInput(send) => format!("send_input {:?}", send.data()),
        Approved::Relaunch(relaunch) => format!("relaunch {}", relaunch.line()),
        Approved::Status(status) => format!(
            "status {} {:?} {:?} {}",
            status.state(),
            status.detail(),
            status.deadline_epoch(),
            status.attempt()
        ),
        Approved::Attention(_) => "attention".to_owned(),
        Approved::WatchPane(watch) => format!("watch_pane by {}", watch.plugin()),
        Approved::Log(log) => format!(
            "log {:?} by {} ({} bytes)",
            log.level(),
            log.plugin(),
            log.message().len()
        ),
    }
}

type Expected = Result<&'static str, Refused>;

/// One guard and one clock for a sequence of judgements.
struct Harness {
    guard: Guard,
    start: Instant,
    plugin: PluginPolicy,
}

impl Harness {
    fn new() -> Harness {
        Harness::with_limits(GuardLimits::default())
    }

    fn with_limits(limits: GuardLimits) -> Harness {
        Harness {
            guard: Guard::new(limits),
            start: Instant::now(),
            plugin: plugin(),
        }
    }

    fn at(&self, ms: u64) -> Instant {
        self.start + Duration::from_millis(ms)
    }

    /// Judges `command` at `ms` after the start and compares the verdict. For an approval
    /// that names a pane, also checks that it names exactly the judged token, pane and
    /// current generation.
    #[track_caller]
    fn check(
        &mut self,
        ms: u64,
        command: Command,
        facts: Option<PaneFacts<'_>>,
        expected: Expected,
    ) {
        let verdict = self.guard.judge(&self.plugin, &command, facts, self.at(ms));
        let target = match &verdict {
            Ok(Approved::SendInput(a)) => Some(a.target()),
            Ok(Approved::Relaunch(a)) => Some(a.target()),
            Ok(Approved::Status(a)) => Some(a.target()),
            Ok(Approved::Attention(a)) => Some(a.target()),
            Ok(Approved::WatchPane(a)) => Some(a.target()),
            Ok(Approved::Log(_)) | Err(_) => None,
        };
        if let Some(target) = target {
            let facts = facts.expect("a pane approval without facts");
            assert_eq!(
                (target.pane(), target.generation()),
                (facts.pane, facts.generation)
            );
            assert_eq!(Some(target.token()), command.token());
        }
        let verdict = verdict.map(|approved| describe(&approved));
        let expected = expected.map(str::to_owned);
        assert_eq!(verdict, expected, "judging {command:?} with {facts:?}");
    }
}

/// Judges once on a fresh guard.
#[track_caller]
fn check(command: Command, facts: Option<PaneFacts<'_>>, expected: Expected) {
    Harness::new().check(0, command, facts, expected);
}

fn rate_limited(kind: BudgetKind, limit: u32, free_in_ms: Option<u64>) -> Refused {
    Refused::RateLimited {
        kind,
        limit,
        window: Duration::from_secs(60),
        free_in: free_in_ms.map(Duration::from_millis),
    }
}

fn not_allowed(index: usize, arg: &str) -> Refused {
    Refused::ResumeArgsRejected(ResumeArgsError::NotAllowed {
        index,
        arg: arg.to_owned(),
    })
}

const STATUS: &str = "status waiting_for_reset Some(\"usage limit\") Some(1771890527) 2";
const RELAUNCHED: &str = "relaunch codex resume 019c8bfe-ec25-79e0-97d7-bda6a9c575ff";

#[test]
fn identity_comes_first_for_every_pane_command() {
    let approved = [
        (send("y\r"), "send_input \"y\\r\""),
        (status(), STATUS),
        (attention(), "attention"),
    ];
    for (command, expected) in approved {
        check(command, Some(owned()), Ok(expected));
    }
    check(relaunch(&["resume", UUID]), Some(exited()), Ok(RELAUNCHED));

    let by_another = PaneFacts {
        owner: PaneOwner::AnotherPlugin,
        ..owned()
    };
    let by_nobody = PaneFacts {
        owner: PaneOwner::Nobody,
        ..owned()
    };
    let at_two = PaneFacts {
        generation: 2,
        ..owned()
    };
    for command in [send("y\r"), relaunch(&["resume"]), status(), attention()] {
        check(command.clone(), None, Err(Refused::UnknownPane));
        check(command.clone(), Some(by_another), Err(Refused::NotOptedIn));
        check(command.clone(), Some(by_nobody), Err(Refused::NotOptedIn));
        let older = Refused::StaleGeneration {
            sent: 1,
            current: 2,
        };
        check(command.clone(), Some(at_two), Err(older));
        let newer = Refused::StaleGeneration {
            sent: 3,
            current: 2,
        };
        check(generation(command.clone(), 3), Some(at_two), Err(newer));
        // Identity is judged before anything about the pane's state or the command's data.
        let exited_elsewhere = PaneFacts {
            state: PaneState::Exited,
            ..by_another
        };
        check(
            command.clone(),
            Some(exited_elsewhere),
            Err(Refused::NotOptedIn),
        );
        let stale_and_busy = PaneFacts {
            state: idle_ms(0),
            ..at_two
        };
        let older = Refused::StaleGeneration {
            sent: 1,
            current: 2,
        };
        check(command, Some(stale_and_busy), Err(older));
    }
}

#[test]
fn status_and_attention_need_no_live_pane_and_no_budget() {
    let mut harness = Harness::new();
    for _ in 0..10 {
        harness.check(0, status(), Some(exited()), Ok(STATUS));
        harness.check(0, attention(), Some(exited()), Ok("attention"));
        let busy = PaneFacts {
            state: idle_ms(0),
            ..owned()
        };
        harness.check(0, attention(), Some(busy), Ok("attention"));
    }
    // None of that was charged.
    for _ in 0..5 {
        harness.check(0, send(""), Some(owned()), Ok("send_input \"\""));
    }
}

#[test]
fn status_text_and_log_messages_reach_nobody_with_a_control_character() {
    let hostile = "\u{1b}]0;pwned\u{7}\u{1b}[31mred\r\nfake line\u{9b}";
    let command = Command::Status {
        token: token(1),
        generation: 1,
        state: format!("{hostile}{}", "s".repeat(100)),
        detail: Some(format!("{hostile}{}", "d".repeat(1000))),
        deadline_epoch: None,
        attempt: 0,
    };
    let verdict = Guard::default().judge(&plugin(), &command, Some(owned()), Instant::now());
    let Ok(Approved::Status(approved)) = verdict else {
        panic!("{verdict:?}");
    };
    let detail = approved.detail().unwrap();
    for text in [approved.state(), detail] {
        assert!(!text.chars().any(char::is_control), "{text:?}");
        assert!(
            text.starts_with("\\u{1b}]0;pwned\\u{7}\\u{1b}[31mred\\r\\nfake line\\u{9b}"),
            "{text:?}"
        );
    }
    assert_eq!(
        approved.state().chars().count(),
        crate::MAX_STATUS_STATE_CHARS
    );
    assert_eq!(detail.chars().count(), crate::MAX_STATUS_DETAIL_CHARS);

    let verdict = Guard::default().judge(&plugin(), &log(hostile), None, Instant::now());
    let Ok(Approved::Log(approved)) = verdict else {
        panic!("{verdict:?}");
    };
    assert!(!approved.message().chars().any(char::is_control));
    assert!(approved.message().ends_with("\\r\\nfake line\\u{9b}"));
}

#[test]
fn send_input_needs_a_live_pane_quiet_for_ten_seconds() {
    check(send("y"), Some(exited()), Err(Refused::PaneNotRunning));
    let busy = |ms| PaneFacts {
        state: idle_ms(ms),
        ..owned()
    };
    let refused = |ms| Refused::PaneBusy {
        idle: Duration::from_millis(ms),
        required: Duration::from_secs(10),
    };
    check(send("y"), Some(busy(0)), Err(refused(0)));
    check(send("y"), Some(busy(9_999)), Err(refused(9_999)));
    let just_short = PaneFacts {
        state: PaneState::Running {
            idle: Duration::from_secs(10) - Duration::from_nanos(1),
        },
        ..owned()
    };
    assert!(matches!(
        Harness::new()
            .guard
            .judge(&plugin(), &send("y"), Some(just_short), Instant::now()),
        Err(Refused::PaneBusy { .. })
    ));
    check(send("y"), Some(busy(10_000)), Ok("send_input \"y\""));
    check(send("y"), Some(busy(3_600_000)), Ok("send_input \"y\""));
}

#[test]
fn a_shorter_idle_threshold_is_the_one_the_busy_rule_uses() {
    let limits = GuardLimits::default().with_idle_threshold(Duration::from_millis(200));
    assert_eq!(GuardLimits::default().idle_threshold(), IDLE_THRESHOLD);
    let mut harness = Harness::with_limits(limits);
    let busy = |ms| PaneFacts {
        state: idle_ms(ms),
        ..owned()
    };
    let now = Instant::now();
    assert_eq!(
        harness
            .guard
            .judge(&plugin(), &send("y"), Some(busy(199)), now)
            .unwrap_err(),
        Refused::PaneBusy {
            idle: Duration::from_millis(199),
            required: Duration::from_millis(200),
        }
    );
    assert!(
        harness
            .guard
            .judge(&plugin(), &send("y"), Some(busy(200)), now)
            .is_ok()
    );
}

#[test]
fn send_input_data_size_and_characters() {
    check(
        send(&"a".repeat(8192)),
        Some(owned()),
        Ok(leak(format!("send_input {:?}", "a".repeat(8192)))),
    );
    let too_large = Refused::InputTooLarge {
        len: 8193,
        max: 8192,
    };
    check(send(&"a".repeat(8193)), Some(owned()), Err(too_large));
    // 2731 three-byte chars are 8193 bytes: the limit is bytes, not chars.
    let korean_too_large = Refused::InputTooLarge {
        len: 8193,
        max: 8192,
    };
    check(
        send(&"한".repeat(2731)),
        Some(owned()),
        Err(korean_too_large),
    );

    check(send(""), Some(owned()), Ok("send_input \"\""));
    check(
        send("\r\n\t"),
        Some(owned()),
        Ok("send_input \"\\r\\n\\t\""),
    );
    check(
        send("계속 진행해\r"),
        Some(owned()),
        Ok("send_input \"계속 진행해\\r\""),
    );
    for character in [
        '\u{1b}', '\u{7}', '\0', '\u{7f}', '\u{8}', '\u{b}', '\u{c}', '\u{9b}', '\u{85}', '\u{1f}',
        '\u{80}', '\u{9f}',
    ] {
        let refused = Refused::ControlCharacter {
            character,
            offset: 3,
        };
        check(
            send(&format!("ok\r{character}[2J")),
            Some(owned()),
            Err(refused),
        );
    }
    // The offset is in bytes, after multi-byte text.
    let after_korean = Refused::ControlCharacter {
        character: '\u{1b}',
        offset: 3,
    };
    check(send("한\u{1b}"), Some(owned()), Err(after_korean));
}

#[test]
fn send_input_rules_apply_in_order() {
    let dead_and_bad = format!("{}\u{1b}", "a".repeat(9000));
    check(
        send(&dead_and_bad),
        Some(exited()),
        Err(Refused::PaneNotRunning),
    );
    let busy = PaneFacts {
        state: idle_ms(5),
        ..owned()
    };
    let refused = Refused::PaneBusy {
        idle: Duration::from_millis(5),
        required: Duration::from_secs(10),
    };
    check(send(&dead_and_bad), Some(busy), Err(refused));
    let too_large = Refused::InputTooLarge {
        len: 9001,
        max: 8192,
    };
    check(send(&dead_and_bad), Some(owned()), Err(too_large));

    let mut harness = Harness::new();
    for _ in 0..5 {
        harness.check(0, send("y"), Some(owned()), Ok("send_input \"y\""));
    }
    let control = Refused::ControlCharacter {
        character: '\u{7}',
        offset: 0,
    };
    harness.check(1, send("\u{7}"), Some(owned()), Err(control));
    let limited = rate_limited(BudgetKind::SendInput, 5, Some(59_999));
    harness.check(1, send("y"), Some(owned()), Err(limited));
}

#[test]
fn send_budget_slides_and_only_approvals_are_charged() {
    let mut harness = Harness::new();
    let busy = PaneFacts {
        state: idle_ms(0),
        ..owned()
    };
    // Refusals before the limit is reached cost nothing.
    for ms in 0..20 {
        let refused = Refused::PaneBusy {
            idle: Duration::ZERO,
            required: Duration::from_secs(10),
        };
        harness.check(ms, send("y"), Some(busy), Err(refused));
        let control = Refused::ControlCharacter {
            character: '\0',
            offset: 0,
        };
        harness.check(ms, send("\0"), Some(owned()), Err(control));
    }
    for second in 0..5 {
        harness.check(
            second * 1000,
            send("y"),
            Some(owned()),
            Ok("send_input \"y\""),
        );
    }
    // Rate-limited refusals are not charged either: the first charge (at 0 s) frees the
    // first slot at exactly 60 s, not later.
    for ms in [5_000, 30_000, 59_999] {
        let limited = rate_limited(BudgetKind::SendInput, 5, Some(60_000 - ms));
        harness.check(ms, send("y"), Some(owned()), Err(limited));
    }
    harness.check(60_000, send("y"), Some(owned()), Ok("send_input \"y\""));
    // Now the oldest charge in the window is the one at 1 s.
    let limited = rate_limited(BudgetKind::SendInput, 5, Some(1_000));
    harness.check(60_000, send("y"), Some(owned()), Err(limited));
    harness.check(61_000, send("y"), Some(owned()), Ok("send_input \"y\""));
    // Long after, the whole budget is back.
    for _ in 0..5 {
        harness.check(500_000, send("y"), Some(owned()), Ok("send_input \"y\""));
    }
}

#[test]
fn budgets_are_per_token_and_per_kind() {
    let mut harness = Harness::new();
    for _ in 0..5 {
        harness.check(0, send("y"), Some(owned()), Ok("send_input \"y\""));
    }
    for _ in 0..3 {
        harness.check(
            0,
            relaunch(&["resume", UUID]),
            Some(exited()),
            Ok(RELAUNCHED),
        );
    }
    let limited = rate_limited(BudgetKind::Relaunch, 3, Some(60_000));
    harness.check(0, relaunch(&["resume", UUID]), Some(exited()), Err(limited));
    let limited = rate_limited(BudgetKind::SendInput, 5, Some(60_000));
    harness.check(0, send("y"), Some(owned()), Err(limited));
    // Another token has budgets of its own.
    let other = PaneFacts {
        pane: PaneId::new(9),
        ..owned()
    };
    for _ in 0..5 {
        let command = with(send("y"), token(2), 1);
        harness.check(0, command, Some(other), Ok("send_input \"y\""));
    }
}

#[test]
fn cancel_clears_a_tokens_budgets_and_nothing_else() {
    let mut harness = Harness::new();
    for _ in 0..5 {
        harness.check(0, send("y"), Some(owned()), Ok("send_input \"y\""));
        harness.check(
            0,
            with(send("y"), token(2), 1),
            Some(owned()),
            Ok("send_input \"y\""),
        );
    }
    for _ in 0..3 {
        harness.check(
            0,
            relaunch(&["resume", UUID]),
            Some(exited()),
            Ok(RELAUNCHED),
        );
    }
    harness.guard.cancel(&token(1));
    for _ in 0..5 {
        harness.check(1, send("y"), Some(owned()), Ok("send_input \"y\""));
    }
    for _ in 0..3 {
        harness.check(
            1,
            relaunch(&["resume", UUID]),
            Some(exited()),
            Ok(RELAUNCHED),
        );
    }
    let limited = rate_limited(BudgetKind::SendInput, 5, Some(59_999));
    harness.check(1, with(send("y"), token(2), 1), Some(owned()), Err(limited));
}

#[test]
fn budget_survives_a_relaunch_of_the_slot() {
    let mut harness = Harness::new();
    for _ in 0..3 {
        harness.check(0, send("y"), Some(owned()), Ok("send_input \"y\""));
    }
    harness.check(
        0,
        relaunch(&["resume", UUID]),
        Some(exited()),
        Ok(RELAUNCHED),
    );
    // The hub relaunched: same token, generation 2, a new pane id.
    let relaunched = PaneFacts {
        pane: PaneId::new(2),
        generation: 2,
        ..owned()
    };
    for _ in 0..2 {
        harness.check(
            1,
            generation(send("y"), 2),
            Some(relaunched),
            Ok("send_input \"y\""),
        );
    }
    let limited = rate_limited(BudgetKind::SendInput, 5, Some(59_999));
    harness.check(1, generation(send("y"), 2), Some(relaunched), Err(limited));
    let exited_again = PaneFacts {
        state: PaneState::Exited,
        ..relaunched
    };
    for _ in 0..2 {
        let command = generation(relaunch(&["resume", UUID]), 2);
        harness.check(2, command, Some(exited_again), Ok(RELAUNCHED));
    }
    let limited = rate_limited(BudgetKind::Relaunch, 3, Some(59_998));
    let command = generation(relaunch(&["resume", UUID]), 2);
    harness.check(2, command, Some(exited_again), Err(limited));
}

#[test]
fn journaled_charges_carry_over_to_a_new_guard_and_stay_bounded() {
    let mut before = Harness::new();
    for ms in [0, 1_000] {
        let command = relaunch(&["resume", UUID]);
        before.check(ms, command, Some(exited()), Ok(RELAUNCHED));
    }
    // The daemon journals the charges at 5 s and dies; a new one starts 20 s later.
    let charges = before.guard.charges(&token(1), before.at(5_000));
    let ms = Duration::from_millis;
    assert_eq!(charges.relaunches, [ms(5_000), ms(4_000)]);
    assert!(charges.sends.is_empty());
    let mut after = Harness::new();
    let downtime = ms(20_000);
    let aged = BudgetCharges {
        sends: Vec::new(),
        relaunches: charges
            .relaunches
            .iter()
            .map(|age| *age + downtime)
            .collect(),
    };
    after.guard.restore_charges(&token(1), &aged, after.at(0));
    // One relaunch is left in the window, not three: the restart refilled nothing.
    after.check(
        0,
        relaunch(&["resume", UUID]),
        Some(exited()),
        Ok(RELAUNCHED),
    );
    let limited = rate_limited(BudgetKind::Relaunch, 3, Some(35_000));
    after.check(0, relaunch(&["resume", UUID]), Some(exited()), Err(limited));
    // Charges a window old are dropped, and never more than the limit is kept.
    let mut bounded = Harness::new();
    let many = BudgetCharges {
        sends: (0..50).map(|n| ms(n * 100)).collect(),
        relaunches: vec![ms(60_000), ms(90_000)],
    };
    bounded
        .guard
        .restore_charges(&token(1), &many, bounded.at(100_000));
    let kept = bounded.guard.charges(&token(1), bounded.at(100_000));
    assert_eq!(kept.sends.len(), 5);
    assert_eq!(kept.sends[4], Duration::ZERO);
    assert!(kept.relaunches.is_empty());
}

#[test]
fn zero_limits_refuse_everything_and_lowered_limits_apply_at_once() {
    let limits = GuardLimits::new(0, 0, Duration::from_secs(60)).unwrap();
    let mut harness = Harness::with_limits(limits);
    let limited = rate_limited(BudgetKind::SendInput, 0, None);
    harness.check(0, send("y"), Some(owned()), Err(limited));
    let limited = rate_limited(BudgetKind::Relaunch, 0, None);
    harness.check(0, relaunch(&[]), Some(exited()), Err(limited));

    let mut harness = Harness::new();
    for second in 0..5 {
        harness.check(
            second * 1000,
            send("y"),
            Some(owned()),
            Ok("send_input \"y\""),
        );
    }
    harness
        .guard
        .set_limits(GuardLimits::new(2, 3, Duration::from_secs(60)).unwrap());
    // Five charges, limit two: the next fits once the charge at 3 s has expired.
    let limited = rate_limited(BudgetKind::SendInput, 2, Some(58_000));
    harness.check(5_000, send("y"), Some(owned()), Err(limited));
    harness.check(63_000, send("y"), Some(owned()), Ok("send_input \"y\""));
}

#[test]
fn relaunch_needs_an_exited_pane_with_a_launch_command_before_args_are_looked_at() {
    let bad_args = &["rm", "-rf", "~;", "$(x)"];
    check(
        relaunch(bad_args),
        Some(owned()),
        Err(Refused::PaneStillRunning),
    );
    let busy = PaneFacts {
        state: idle_ms(0),
        ..owned()
    };
    check(
        relaunch(&["resume", UUID]),
        Some(busy),
        Err(Refused::PaneStillRunning),
    );
    for launch_command in [None, Some(""), Some("  \t")] {
        let bare = PaneFacts {
            launch_command,
            ..exited()
        };
        check(
            relaunch(bad_args),
            Some(bare),
            Err(Refused::NoLaunchCommand),
        );
        check(relaunch(&[]), Some(bare), Err(Refused::NoLaunchCommand));
        check(
            relaunch(&["resume", UUID]),
            Some(bare),
            Err(Refused::NoLaunchCommand),
        );
    }
    // An allowlist that would allow everything does not help a bare shell either.
    let mut harness = Harness::new();
    harness.plugin.allowed_resume_flags = vec!["resume".to_owned(), "sh".to_owned()];
    let bare = PaneFacts {
        launch_command: None,
        ..exited()
    };
    harness.check(
        0,
        relaunch(&["sh"]),
        Some(bare),
        Err(Refused::NoLaunchCommand),
    );
}

#[test]
fn relaunch_args_count_length_and_charset() {
    let values = ["resume", "a", "b", "c", "d", "e", "f"];
    for count in 0..=6 {
        let args = &values[..count];
        let line = std::iter::once("codex")
            .chain(args.iter().copied())
            .collect::<Vec<_>>()
            .join(" ");
        check(
            relaunch(args),
            Some(exited()),
            Ok(leak(format!("relaunch {line}"))),
        );
    }
    let too_many = Refused::ResumeArgsRejected(ResumeArgsError::TooMany { count: 7, max: 6 });
    check(relaunch(&values), Some(exited()), Err(too_many));

    let longest = "a".repeat(256);
    check(
        relaunch(&["resume", &longest]),
        Some(exited()),
        Ok(leak(format!("relaunch codex resume {longest}"))),
    );
    let too_long = Refused::ResumeArgsRejected(ResumeArgsError::TooLong {
        index: 1,
        len: 257,
        max: 256,
    });
    check(
        relaunch(&["resume", &"a".repeat(257)]),
        Some(exited()),
        Err(too_long),
    );
    let empty = Refused::ResumeArgsRejected(ResumeArgsError::Empty { index: 1 });
    check(relaunch(&["resume", ""]), Some(exited()), Err(empty));

    let every_allowed = "AZaz09._-:/=@+";
    check(
        relaunch(&["resume", every_allowed]),
        Some(exited()),
        Ok(leak(format!("relaunch codex resume {every_allowed}"))),
    );
    for character in [
        ' ', '"', '\'', '$', ';', '|', '&', '>', '<', '`', '\n', '\r', '\t', '\\', '*', '?', '(',
        ')', '{', '}', '[', ']', '!', '#', '~', '%', '^', ',', '\0', '\u{1b}', 'é', '한', '\u{a0}',
    ] {
        let refused = Refused::ResumeArgsRejected(ResumeArgsError::ForbiddenCharacter {
            index: 1,
            offset: 2,
            character,
        });
        let arg = format!("ab{character}cd");
        check(relaunch(&["resume", &arg]), Some(exited()), Err(refused));
    }
}

#[test]
fn relaunch_arg_charset_is_exactly_the_spec_list_over_all_of_ascii() {
    let allowed = |c: char| c.is_ascii_alphanumeric() || "._-:/=@+".contains(c);
    for character in (0..=127u8).map(char::from) {
        let arg = format!("a{character}");
        let expected = if allowed(character) {
            Ok(leak(format!("relaunch codex resume {arg}")))
        } else {
            Err(Refused::ResumeArgsRejected(
                ResumeArgsError::ForbiddenCharacter {
                    index: 1,
                    offset: 1,
                    character,
                },
            ))
        };
        check(relaunch(&["resume", &arg]), Some(exited()), expected);
    }
}

#[test]
fn relaunch_flags_must_be_allowed_exactly() {
    check(relaunch(&["x"]), Some(exited()), Err(not_allowed(0, "x")));
    check(relaunch(&[UUID]), Some(exited()), Err(not_allowed(0, UUID)));
    check(
        relaunch(&["resume", "-x"]),
        Some(exited()),
        Err(not_allowed(1, "-x")),
    );
    check(
        relaunch(&["resume", "/x"]),
        Some(exited()),
        Err(not_allowed(1, "/x")),
    );
    check(
        relaunch(&["resume", "--session=x"]),
        Some(exited()),
        Err(not_allowed(1, "--session=x")),
    );
    check(
        relaunch(&["Resume"]),
        Some(exited()),
        Err(not_allowed(0, "Resume")),
    );
    check(
        relaunch(&["resum"]),
        Some(exited()),
        Err(not_allowed(0, "resum")),
    );
    // Values need no approval, allowed flags may appear anywhere, repeatedly.
    check(
        relaunch(&["--session", "ses_abc", "--session", "x"]),
        Some(exited()),
        Ok("relaunch codex --session ses_abc --session x"),
    );
    check(
        relaunch(&["resume", "x-y"]),
        Some(exited()),
        Ok("relaunch codex resume x-y"),
    );
    // The first offending arg is reported.
    check(
        relaunch(&["resume", "-a", "-b"]),
        Some(exited()),
        Err(not_allowed(1, "-a")),
    );

    let mut harness = Harness::new();
    harness.plugin.allowed_resume_flags.clear();
    harness.check(0, relaunch(&[]), Some(exited()), Ok("relaunch codex"));
    harness.check(
        0,
        relaunch(&["resume"]),
        Some(exited()),
        Err(not_allowed(0, "resume")),
    );
}

#[test]
fn relaunch_line_is_always_composed_from_the_original_command() {
    let mut harness = Harness::new();
    let with_args = PaneFacts {
        launch_command: Some("codex --model o3"),
        ..exited()
    };
    let expected = "relaunch codex --model o3 resume 019c8bfe-ec25-79e0-97d7-bda6a9c575ff";
    for (ms, generation_now) in [(0, 1), (1, 2), (2, 3)] {
        let facts = PaneFacts {
            generation: generation_now,
            ..with_args
        };
        let command = generation(relaunch(&["resume", UUID]), generation_now);
        harness.check(ms, command, Some(facts), Ok(expected));
    }
    let limited = rate_limited(BudgetKind::Relaunch, 3, Some(60_000));
    harness.check(
        0,
        relaunch(&["resume", UUID]),
        Some(with_args),
        Err(limited),
    );
}

#[test]
fn relaunch_approval_carries_the_validated_args() {
    let mut guard = Guard::default();
    let verdict = guard.judge(
        &plugin(),
        &relaunch(&["resume", UUID]),
        Some(exited()),
        Instant::now(),
    );
    let Ok(Approved::Relaunch(approved)) = verdict else {
        panic!("{verdict:?}");
    };
    // The line is the original command plus the validated args, as composed alone.
    let composed = crate::compose_relaunch_line(
        Some("codex"),
        &["resume".to_owned(), UUID.to_owned()],
        &plugin().allowed_resume_flags,
    );
    assert_eq!(composed.as_ref(), Ok(approved.line()));
}

#[test]
fn watch_pane_rules_in_order_with_no_budget() {
    let another = PaneFacts {
        owner: PaneOwner::AnotherPlugin,
        ..owned()
    };
    let nobodys = PaneFacts {
        owner: PaneOwner::Nobody,
        generation: 4,
        ..owned()
    };
    let nobodys_exited = PaneFacts {
        state: PaneState::Exited,
        ..nobodys
    };
    let another_exited = PaneFacts {
        state: PaneState::Exited,
        ..another
    };
    let mut harness = Harness::new();
    harness.check(0, watch(), None, Err(Refused::UnknownPane));
    harness.check(
        0,
        watch(),
        Some(another),
        Err(Refused::PaneWatchedByAnother),
    );
    harness.check(
        0,
        watch(),
        Some(another_exited),
        Err(Refused::PaneWatchedByAnother),
    );
    harness.check(
        0,
        watch(),
        Some(nobodys_exited),
        Err(Refused::PaneNotRunning),
    );
    harness.check(0, watch(), Some(exited()), Err(Refused::PaneNotRunning));
    // Approved for a pane nobody owns, at its current generation, busy or not.
    harness.check(0, watch(), Some(nobodys), Ok("watch_pane by recovery"));
    let busy = PaneFacts {
        state: idle_ms(0),
        ..nobodys
    };
    harness.check(0, watch(), Some(busy), Ok("watch_pane by recovery"));
    // Also for one this plugin already owns: that is how it gets a fresh `pane_opened`.
    for _ in 0..10 {
        harness.check(0, watch(), Some(owned()), Ok("watch_pane by recovery"));
    }
    // None of it was charged.
    for _ in 0..5 {
        harness.check(0, send("y"), Some(owned()), Ok("send_input \"y\""));
    }

    let mut harness = Harness::new();
    harness.plugin.watch_on_signal = false;
    harness.check(0, watch(), None, Err(Refused::UnknownPane));
    for facts in [nobodys, owned(), another, nobodys_exited] {
        harness.check(0, watch(), Some(facts), Err(Refused::WatchNotAllowed));
    }
}

#[test]
fn log_is_approved_without_a_pane_and_truncated_on_a_char_boundary() {
    for facts in [None, Some(owned())] {
        check(log("hello"), facts, Ok("log Warn by recovery (5 bytes)"));
    }
    let mut harness = Harness::new();
    harness.plugin.watch_on_signal = false;
    harness.plugin.allowed_resume_flags.clear();
    harness.check(0, log(""), None, Ok("log Warn by recovery (0 bytes)"));

    let cases = [
        ("a".repeat(2048), 2048),
        ("a".repeat(2049), 2048),
        ("a".repeat(100_000), 2048),
        // 2046 + 3 = 2049: the Korean char would straddle the limit and goes whole.
        (format!("{}한", "a".repeat(2046)), 2046),
        (format!("{}한", "a".repeat(2045)), 2048),
        (format!("{}é", "a".repeat(2047)), 2047),
        ("😀".repeat(600), 2048),
    ];
    for (message, kept) in cases {
        let verdict = Guard::default().judge(&plugin(), &log(&message), None, Instant::now());
        let Ok(Approved::Log(approved)) = verdict else {
            panic!("{verdict:?}");
        };
        assert_eq!(approved.message(), &message[..kept]);
        assert_eq!(approved.level(), LogLevel::Warn);
    }
}

#[test]
fn every_refusal_has_the_severity_of_spec_3_and_a_message_with_its_numbers() {
    let cases: [(Refused, Severity, &str); 13] = [
        (
            Refused::UnknownPane,
            Severity::Debug,
            "the token names no pane",
        ),
        (
            Refused::NotOptedIn,
            Severity::Warn,
            "not owned by this plugin",
        ),
        (
            Refused::StaleGeneration {
                sent: 1,
                current: 2,
            },
            Severity::Debug,
            "stale generation 1: the pane is at generation 2",
        ),
        (Refused::PaneNotRunning, Severity::Debug, "not running"),
        (
            Refused::PaneBusy {
                idle: Duration::from_millis(9_999),
                required: Duration::from_secs(10),
            },
            Severity::Debug,
            "last output 9.999s ago, input needs 10s of quiet",
        ),
        (
            Refused::InputTooLarge {
                len: 8193,
                max: 8192,
            },
            Severity::Warn,
            "input is 8193 bytes, at most 8192 allowed",
        ),
        (
            Refused::ControlCharacter {
                character: '\u{9b}',
                offset: 4,
            },
            Severity::Warn,
            "control character U+009B at byte 4",
        ),
        (
            rate_limited(BudgetKind::SendInput, 5, Some(1_500)),
            Severity::Warn,
            "5 send_input approvals per 60s already used; the next fits in 1.5s",
        ),
        (Refused::PaneStillRunning, Severity::Debug, "still running"),
        (
            Refused::NoLaunchCommand,
            Severity::Warn,
            "no launch command",
        ),
        (
            Refused::ResumeArgsRejected(ResumeArgsError::TooMany { count: 7, max: 6 }),
            Severity::Warn,
            "7 resume args, at most 6 allowed",
        ),
        (
            Refused::WatchNotAllowed,
            Severity::Warn,
            "watch_on_signal = true",
        ),
        (
            Refused::PaneWatchedByAnother,
            Severity::Debug,
            "another plugin",
        ),
    ];
    for (refused, severity, message) in cases {
        assert_eq!(refused.severity(), severity, "{refused:?}");
        let shown = refused.to_string();
        assert!(shown.contains(message), "{shown:?} lacks {message:?}");
    }
    let disabled = rate_limited(BudgetKind::Relaunch, 0, None).to_string();
    assert!(
        disabled.contains("relaunch is disabled (0 approvals per 60s)"),
        "{disabled}"
    );
    let hostile = Refused::ResumeArgsRejected(ResumeArgsError::ForbiddenCharacter {
        index: 1,
        offset: 0,
        character: '\n',
    });
    assert!(!hostile.to_string().contains('\n'), "{hostile}");
    let long = ResumeArgsError::TooLong {
        index: 2,
        len: 257,
        max: 256,
    }
    .to_string();
    assert_eq!(long, "resume arg 2 is 257 bytes, at most 256 allowed");
}

#[test]
fn guard_limits_come_from_the_guard_table() {
    let parse = |json: &str| serde_json::from_str::<GuardLimits>(json);
    assert_eq!(parse("{}").unwrap(), GuardLimits::default());
    let defaults = GuardLimits::default();
    assert_eq!(
        (
            defaults.max_sends_per_window(),
            defaults.max_relaunches_per_window(),
            defaults.window()
        ),
        (5, 3, Duration::from_secs(60))
    );
    let custom =
        parse(r#"{"max_sends_per_window":0,"max_relaunches_per_window":1000,"window_secs":1}"#)
            .unwrap();
    assert_eq!(
        custom,
        GuardLimits::new(0, 1000, Duration::from_secs(1)).unwrap()
    );
    for (json, error) in [
        (
            r#"{"max_send_per_window":5}"#,
            "unknown field `max_send_per_window`",
        ),
        (r#"{"window_secs":0}"#, "window_secs must be at least 1"),
        (
            r#"{"max_sends_per_window":1001}"#,
            "max_sends_per_window = 1001 is above the maximum of 1000",
        ),
        (r#"{"max_relaunches_per_window":-1}"#, "invalid value"),
    ] {
        let shown = parse(json).unwrap_err().to_string();
        assert!(shown.contains(error), "{json}: {shown:?} lacks {error:?}");
    }
}

#[test]
fn budget_memory_drops_expired_charges_and_forgotten_tokens() {
    let mut harness = Harness::new();
    for n in 0..100 {
        harness.check(
            0,
            with(send("y"), token(n), 1),
            Some(owned()),
            Ok("send_input \"y\""),
        );
    }
    assert_eq!(harness.guard.tracked_tokens(), 100);
    harness.guard.cancel(&token(0));
    assert_eq!(harness.guard.tracked_tokens(), 99);
    // The next charge, a window later, sweeps every token with nothing left in the window.
    harness.check(
        60_000,
        with(send("y"), token(200), 1),
        Some(owned()),
        Ok("send_input \"y\""),
    );
    assert_eq!(harness.guard.tracked_tokens(), 1);
}

/// Test data in the `&'static str` that `Expected` holds.
fn leak(text: String) -> &'static str {
    Box::leak(text.into_boxed_str())
}

#[derive(Debug, Clone)]
enum Step {
    Judge {
        token: u8,
        command: Command,
        facts: Option<(PaneOwner, Generation, PaneState, bool)>,
        watch_on_signal: bool,
    },
    Cancel(u8),
}

fn arb_command(token_index: u8) -> impl Strategy<Value = Command> {
    let generation = 1..4u32;
    let data = prop_oneof![
        prop::sample::select(vec!["", "y\r", "\u{1b}[A", "한국어\n", "\u{9b}"])
            .prop_map(str::to_owned),
        (8190..8195usize).prop_map(|len| "a".repeat(len)),
    ];
    let args = prop::collection::vec(
        prop::sample::select(vec!["resume", UUID, "-x", "--session", "a b", ""]),
        0..8,
    );
    let token = token(token_index);
    prop_oneof![
        (generation.clone(), data).prop_map({
            let token = token.clone();
            move |(generation, data)| Command::SendInput {
                token: token.clone(),
                generation,
                data: data.clone(),
            }
        }),
        (generation.clone(), args).prop_map({
            let token = token.clone();
            move |(generation, args)| Command::Relaunch {
                token: token.clone(),
                generation,
                resume_args: args.into_iter().map(str::to_owned).collect(),
            }
        }),
        generation.clone().prop_map({
            let token = token.clone();
            move |generation| Command::Attention {
                token: token.clone(),
                generation,
            }
        }),
        generation.prop_map({
            let token = token.clone();
            move |generation| with(status(), token.clone(), generation)
        }),
        Just(Command::WatchPane { token }),
        ".{0,40}".prop_map(|message| Command::Log {
            level: LogLevel::Info,
            message,
        }),
    ]
}

fn arb_step() -> impl Strategy<Value = (Step, u64)> {
    let owner = prop_oneof![
        Just(PaneOwner::ThisPlugin),
        Just(PaneOwner::AnotherPlugin),
        Just(PaneOwner::Nobody)
    ];
    let state = prop_oneof![Just(PaneState::Exited), (0..20_000u64).prop_map(idle_ms),];
    let facts = prop::option::of((owner, 1..4u32, state, any::<bool>()));
    let judge = (0..3u8)
        .prop_flat_map(move |token| {
            (
                Just(token),
                arb_command(token),
                facts.clone(),
                any::<bool>(),
            )
        })
        .prop_map(|(token, command, facts, watch_on_signal)| Step::Judge {
            token,
            command,
            facts,
            watch_on_signal,
        });
    let step = prop_oneof![20 => judge, 1 => (0..3u8).prop_map(Step::Cancel)];
    (step, 0..20_000u64)
}

proptest! {
    #[test]
    fn a_composed_line_is_the_command_and_literal_args(
        args in prop::collection::vec(
            prop_oneof![
                prop::sample::select(vec!["-v", "/x", "resume"]).prop_map(str::to_owned),
                "[a-z0-9 ;$/-]{0,6}",
            ],
            0..8,
        ),
    ) {
        let flags = ["-v".to_owned(), "/x".to_owned(), "resume".to_owned()];
        if let Ok(line) = crate::compose_relaunch_line(Some("codex"), &args, &flags) {
            prop_assert!(args.len() <= 6);
            let expected = std::iter::once("codex".to_owned()).chain(args.iter().cloned()).collect::<Vec<_>>().join(" ");
            prop_assert_eq!(line.as_str(), expected);
            for (index, arg) in args.iter().enumerate() {
                prop_assert!(!arg.is_empty() && !arg.contains([' ', ';', '$']));
                if index == 0 || arg.starts_with(['-', '/']) {
                    prop_assert!(flags.contains(arg));
                }
            }
        }
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]

    #[test]
    fn nothing_is_approved_without_identity_or_beyond_the_budget(
        steps in prop::collection::vec(arb_step(), 1..60),
        max_sends in 0..4u32,
        max_relaunches in 0..3u32,
        window_secs in 1..90u64,
    ) {
        let limits = GuardLimits::new(max_sends, max_relaunches, Duration::from_secs(window_secs)).unwrap();
        let mut guard = Guard::new(limits);
        let start = Instant::now();
        let mut elapsed = Duration::ZERO;
        // Approval times per (token, kind) since the token's last cancel.
        let mut approvals: Vec<(u8, BudgetKind, Duration)> = Vec::new();
        for (step, advance_ms) in steps {
            elapsed += Duration::from_millis(advance_ms);
            let (token, command, facts, watch_on_signal) = match step {
                Step::Cancel(token_index) => {
                    guard.cancel(&token(token_index));
                    approvals.retain(|&(t, _, _)| t != token_index);
                    continue;
                }
                Step::Judge { token, command, facts, watch_on_signal } => (token, command, facts, watch_on_signal),
            };
            let facts = facts.map(|(owner, generation, state, has_command)| PaneFacts {
                pane: PaneId::new(u64::from(token)),
                generation,
                owner,
                state,
                launch_command: has_command.then_some("codex"),
            });
            let policy = PluginPolicy { watch_on_signal, ..plugin() };
            let verdict = guard.judge(&policy, &command, facts, start + elapsed);
            let identified = |generation: Generation| {
                facts.is_some_and(|f| f.owner == PaneOwner::ThisPlugin && f.generation == generation)
            };
            match (&command, &verdict) {
                (_, Err(_)) | (Command::Log { .. }, Ok(Approved::Log(_))) => {}
                (Command::Status { generation, .. }, Ok(Approved::Status(_)))
                | (Command::Attention { generation, .. }, Ok(Approved::Attention(_))) => {
                    prop_assert!(identified(*generation));
                }
                (Command::SendInput { generation, data, .. }, Ok(Approved::SendInput(a))) => {
                    prop_assert!(identified(*generation));
                    let quiet = matches!(facts.unwrap().state, PaneState::Running { idle } if idle >= Duration::from_secs(10));
                    prop_assert!(quiet);
                    prop_assert_eq!(a.data(), data);
                    prop_assert!(data.len() <= 8192);
                    prop_assert!(!data.chars().any(|c| c.is_control() && !"\r\n\t".contains(c)));
                    approvals.push((token, BudgetKind::SendInput, elapsed));
                }
                (Command::Relaunch { generation, .. }, Ok(Approved::Relaunch(a))) => {
                    prop_assert!(identified(*generation));
                    let facts = facts.unwrap();
                    prop_assert_eq!(facts.state, PaneState::Exited);
                    prop_assert!(a.line().as_str().starts_with("codex"));
                    approvals.push((token, BudgetKind::Relaunch, elapsed));
                }
                (Command::WatchPane { .. }, Ok(Approved::WatchPane(_))) => {
                    let facts = facts.unwrap();
                    prop_assert!(watch_on_signal);
                    prop_assert_ne!(facts.owner, PaneOwner::AnotherPlugin);
                    prop_assert_ne!(facts.state, PaneState::Exited);
                }
                (command, Ok(approved)) => prop_assert!(false, "{command:?} approved as {approved:?}"),
            }
        }
        let window = Duration::from_secs(window_secs);
        for &(token, kind, at) in &approvals {
            let in_window = approvals
                .iter()
                .filter(|&&(t, k, other)| t == token && k == kind && other >= at && other - at < window)
                .count();
            let limit = match kind {
                BudgetKind::SendInput => max_sends,
                BudgetKind::Relaunch => max_relaunches,
            };
            prop_assert!(in_window <= limit as usize, "{in_window} {kind:?} for token {token} within {window:?} of {at:?}");
        }
    }
}

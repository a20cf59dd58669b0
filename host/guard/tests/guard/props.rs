//! Properties of `Guard::judge` over arbitrary command sequences and facts.

use std::collections::HashMap;
use std::time::{Duration, Instant};

use nightcrow_guard::{Approved, Guard, GuardLimits, PaneFacts, PluginPolicy};
use nightcrow_protocol::{Command, LogLevel, PaneId, Token};
use proptest::prelude::*;

fn facts() -> impl Strategy<Value = PaneFacts> {
    (
        1u32..4,
        any::<bool>(),
        any::<bool>(),
        any::<bool>(),
        0u64..20_000,
        proptest::option::of(Just("codex".to_owned())),
    )
        .prop_map(
            |(generation, opted_in, watched_by_another, alive, idle_ms, launch_command)| {
                PaneFacts {
                    pane: PaneId(1),
                    generation,
                    opted_in,
                    watched_by_another,
                    alive,
                    idle: Duration::from_millis(idle_ms),
                    launch_command,
                }
            },
        )
}

fn command() -> impl Strategy<Value = Command> {
    let token = (0u8..3).prop_map(|b| Token::from_bytes([b; 16]));
    let data = prop_oneof![Just("x".to_owned()), Just("\u{1b}".to_owned()), ".{0,4}"];
    let args = proptest::collection::vec(
        prop_oneof![
            Just("resume".to_owned()),
            Just("-x".to_owned()),
            "[a-z$ ]{0,4}"
        ],
        0..8,
    );
    prop_oneof![
        (token.clone(), 1u32..4, data).prop_map(|(token, generation, data)| Command::SendInput {
            token,
            generation,
            data
        }),
        (token.clone(), 1u32..4, args).prop_map(|(token, generation, resume_args)| {
            Command::Relaunch {
                token,
                generation,
                resume_args,
            }
        }),
        (token.clone(), 1u32..4)
            .prop_map(|(token, generation)| Command::Attention { token, generation }),
        (token.clone(), 1u32..4).prop_map(|(token, generation)| Command::Status {
            token,
            generation,
            state: "idle".into(),
            detail: None,
            deadline_epoch: None,
            attempt: 0,
        }),
        token.prop_map(|token| Command::WatchPane { token }),
        ".{0,3000}".prop_map(|message| Command::Log {
            level: LogLevel::Info,
            message
        }),
    ]
}

/// One step: a command, the facts the hub resolved (or none), and seconds since the last step.
fn steps() -> impl Strategy<Value = Vec<(Command, Option<PaneFacts>, u64)>> {
    proptest::collection::vec((command(), proptest::option::of(facts()), 0u64..30), 0..64)
}

fn token_of(command: &Command) -> Option<&Token> {
    match command {
        Command::SendInput { token, .. }
        | Command::Relaunch { token, .. }
        | Command::Status { token, .. }
        | Command::WatchPane { token }
        | Command::Attention { token, .. } => Some(token),
        Command::Log { .. } => None,
    }
}

proptest! {
    #[test]
    fn nothing_is_approved_without_identity_and_budgets_hold(
        steps in steps(),
        watch_on_signal in any::<bool>(),
    ) {
        let limits = GuardLimits::default();
        let mut guard = Guard::new(limits);
        let policy = PluginPolicy {
            name: "p".into(),
            allowed_resume_flags: vec!["resume".into()],
            watch_on_signal,
        };
        let start = Instant::now();
        let mut now = start;
        let mut approvals: HashMap<(Token, &'static str), Vec<Instant>> = HashMap::new();
        for (command, facts, advance) in &steps {
            now += Duration::from_secs(*advance);
            let verdict = guard.judge(&policy, command, facts.as_ref(), now);
            let Ok(approved) = verdict else { continue };
            match (&approved, facts) {
                (Approved::Log(log), _) => prop_assert!(log.message().len() <= 2048),
                (Approved::WatchPane(_), Some(facts)) => {
                    prop_assert!(watch_on_signal && facts.alive && !facts.watched_by_another);
                }
                (Approved::WatchPane(_), None) => prop_assert!(false, "watch without a pane"),
                (_, None) => prop_assert!(false, "approved without a pane: {command:?}"),
                (_, Some(facts)) => {
                    prop_assert!(facts.opted_in);
                    let generation = match command {
                        Command::SendInput { generation, .. }
                        | Command::Relaunch { generation, .. }
                        | Command::Status { generation, .. }
                        | Command::Attention { generation, .. } => *generation,
                        _ => unreachable!("log and watch_pane handled above"),
                    };
                    prop_assert_eq!(generation, facts.generation);
                }
            }
            let kind = match approved {
                Approved::SendInput(_) => "send",
                Approved::Relaunch(_) => "relaunch",
                _ => continue,
            };
            let token = token_of(command).unwrap().clone();
            let times = approvals.entry((token, kind)).or_default();
            times.push(now);
            let window = Duration::from_secs(limits.window_secs);
            let recent = times.iter().filter(|&&t| now.duration_since(t) < window).count();
            let limit = if kind == "send" { limits.max_sends_per_window } else { limits.max_relaunches_per_window };
            prop_assert!(recent <= limit as usize, "{recent} {kind}s within a window");
        }
    }
}

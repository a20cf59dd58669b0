//! The hostile-plugin suite (SPEC §10): one case per guest of `tests/plugins`, each on both
//! runtimes where the behaviour applies (the sandbox and its limits are wasm-only: a native
//! plugin is trusted code). Every case checks that
//! - the host stays responsive: a companion echo plugin on the same runtime keeps answering,
//!   during the misbehaviour and after it;
//! - host memory stays bounded: queue lengths and this process's RSS;
//! - the violation is logged with its cause (captured tracing output);
//! - nothing becomes a command that should not: the exact commands received are compared.

use std::time::Duration;

use nightcrow_plugin_host::{
    ExitCause, INBOUND_QUEUE, Lifecycle, PluginSource, RestartPolicy, RuntimeKind, SHUTDOWN_GRACE,
    StartError, Supervised, Supervisor,
};
use nightcrow_protocol::{Command, Event, LogLevel};
use nightcrow_test_plugin_artifacts as guests;

use crate::util::{
    Companion, log_message, logged, memory_exclusive, next_command, pane_opened, rss_bytes,
    runtime, spec, start, token, within,
};

/// A guest without a case here fails to compile.
macro_rules! guest_has_case {
    ($guest:ident) => {
        #[allow(unused_imports, reason = "only proves that a case of this name exists")]
        use self::$guest as _;
    };
}
nightcrow_test_plugin_artifacts::foreach_guest!(guest_has_case);

/// Runs each named `async fn case(kind: RuntimeKind)` as `case::wasm` and `case::native`
/// (STYLE item 4).
macro_rules! on_both_runtimes {
    ($($case:ident),* $(,)?) => {$(
        mod $case {
            #[tokio::test]
            async fn wasm() {
                super::$case(nightcrow_plugin_host::RuntimeKind::Wasm).await;
            }
            #[tokio::test]
            async fn native() {
                super::$case(nightcrow_plugin_host::RuntimeKind::Native).await;
            }
        }
    )*};
}

/// Runs each named `async fn case(kind: RuntimeKind)` on wasm only, as `case::wasm`.
macro_rules! on_wasm_only {
    ($($case:ident),* $(,)?) => {$(
        mod $case {
            #[tokio::test]
            async fn wasm() {
                super::$case(nightcrow_plugin_host::RuntimeKind::Wasm).await;
            }
        }
    )*};
}

on_both_runtimes!(
    echo,
    spin_at_start,
    spin_after_event,
    newline_free_flood,
    command_flood,
    long_lines,
    invalid_utf8,
    wrong_version,
    exit_failure,
    trap,
    ignore_shutdown,
    token_guesser,
    env_not_granted,
    restart_loop,
    scripted,
    spin_with_pauses,
);
on_wasm_only!(
    memory_bomb,
    probe,
    read_outside_grants,
    write_into_read_only_grant,
    connect_not_granted,
    foreign_import,
    hoard_handles,
);

/// A plugin name unique to this case and runtime, so captured logs do not mix.
fn name(case: &str, kind: RuntimeKind) -> String {
    format!("{case}-{kind:?}").to_lowercase()
}

/// RSS growth tolerated while a case runs: far below what its guest writes (100 MiB, 4 MiB…),
/// far above allocator noise.
const RSS_SLACK: u64 = 24 << 20;

#[track_caller]
fn assert_rss_bounded(before: u64, what: &str) {
    let after = rss_bytes();
    let grown = after.saturating_sub(before);
    assert!(grown < RSS_SLACK, "{what}: RSS grew by {} KiB", grown >> 10);
}

/// The hub's scriptable guest: it logs each event as its own protocol line and answers as
/// its arguments say (here: a relaunch with the given args on `pane_exited`).
async fn scripted(kind: RuntimeKind) {
    let name = name("scripted", kind);
    let mut plugin = start(&spec(
        &name,
        guests::SCRIPTED,
        kind,
        &["exit_relaunch=resume,abc"],
    ))
    .await;
    let exited = Event::PaneExited {
        token: token(1),
        generation: 2,
    };
    assert!(plugin.send(exited.clone()));
    let line = nightcrow_protocol::encode_event(&exited).expect("encodes");
    assert_eq!(
        log_message(next_command(&mut plugin).await),
        format!("event {}", line.trim_end())
    );
    assert_eq!(
        next_command(&mut plugin).await,
        Command::Relaunch {
            token: token(1),
            generation: 2,
            resume_args: vec!["resume".to_owned(), "abc".to_owned()],
        }
    );
    plugin.shutdown().await;
}

/// Conformance: every event kind is answered in order with its payload; `shutdown` ends the
/// plugin cleanly and is not counted as a failure.
async fn echo(kind: RuntimeKind) {
    let name = name("echo", kind);
    let mut plugin = start(&spec(&name, guests::ECHO, kind, &[])).await;
    let t = token(1);
    let events = [
        (pane_opened(1, 3), "pane_opened", Some("/repo")),
        (
            Event::PaneOutput {
                token: t.clone(),
                generation: 3,
                text: "héllo\r\n".into(),
            },
            "pane_output",
            Some("héllo\r\n"),
        ),
        (
            Event::PaneIdle {
                token: t.clone(),
                generation: 3,
                idle_ms: 10_000,
                screen: None,
            },
            "pane_idle",
            Some("10000"),
        ),
        (
            Event::UserInput {
                token: t.clone(),
                generation: 3,
            },
            "user_input",
            None,
        ),
        (
            Event::PaneExited {
                token: t.clone(),
                generation: 3,
            },
            "pane_exited",
            None,
        ),
        (
            Event::PaneClosed {
                token: t.clone(),
                generation: 3,
            },
            "pane_closed",
            None,
        ),
    ];
    for (event, _, _) in &events {
        assert!(plugin.send(event.clone()));
    }
    for (number, (_, tag, detail)) in (1..).zip(&events) {
        let expected = Command::Status {
            token: t.clone(),
            generation: 3,
            state: (*tag).to_owned(),
            detail: detail.map(str::to_owned),
            deadline_epoch: None,
            attempt: number,
        };
        assert_eq!(next_command(&mut plugin).await, expected);
    }
    assert!(plugin.send(Event::Shutdown));
    assert_eq!(
        log_message(next_command(&mut plugin).await),
        "echo: shutdown after 7 events"
    );
    let (cause, requested) = within("echo ends", plugin.ended()).await;
    assert_eq!((cause, requested), (ExitCause::Exited { code: 0 }, true));
    assert_eq!(plugin.health().rejected_lines, 0);
    logged(&name, &["plugin stopped", "exited with code 0"]).await;
}

/// Spinning from the start: wasm is killed by its CPU slice; a native child (no limits, it is
/// trusted) is forced at shutdown. Either way the host keeps serving.
async fn spin_at_start(kind: RuntimeKind) {
    let name = name("spin_at_start", kind);
    let mut companion = Companion::start(&name, kind).await;
    let mut case = spec(&name, guests::SPIN_AT_START, kind, &[]);
    case.sandbox.cpu_slice_ms = 100;
    let plugin = start(&case).await;
    companion.answers().await;
    expect_runaway_end(&name, kind, &plugin, 100).await;
    companion.answers().await;
}

/// Answers its first event, then spins.
async fn spin_after_event(kind: RuntimeKind) {
    let name = name("spin_after_event", kind);
    let mut companion = Companion::start(&name, kind).await;
    let mut case = spec(&name, guests::SPIN_AFTER_EVENT, kind, &[]);
    case.sandbox.cpu_slice_ms = 100;
    let mut plugin = start(&case).await;
    assert!(plugin.send(pane_opened(2, 1)));
    assert!(matches!(
        next_command(&mut plugin).await,
        Command::Status { attempt: 1, .. }
    ));
    companion.answers().await;
    expect_runaway_end(&name, kind, &plugin, 100).await;
    companion.answers().await;
    assert_eq!(plugin.try_recv(), None, "a spinning guest said more");
}

/// 80 ms of work, 1 ms of sleep: no slice catches it (each sleep starts a new one), the CPU
/// budget (25 % of a core over 10 s) does, within the window, on both runtimes.
async fn spin_with_pauses(kind: RuntimeKind) {
    let name = name("spin_with_pauses", kind);
    let mut companion = Companion::start(&name, kind).await;
    let case = spec(
        &name,
        guests::SPIN_AT_START,
        kind,
        &["spin_ms=80", "sleep_ms=1"],
    );
    let plugin = start(&case).await;
    let began = std::time::Instant::now();
    companion.answers().await;
    let (cause, requested) = within("the CPU budget to stop the guest", plugin.ended()).await;
    assert_eq!(
        (cause, requested),
        (
            ExitCause::CpuBudget {
                percent: 25,
                window_secs: 10
            },
            false
        )
    );
    assert!(
        began.elapsed() < Duration::from_secs(10),
        "{:?}",
        began.elapsed()
    );
    logged(
        &name,
        &[
            "plugin failed",
            "CPU budget hit",
            "25 % of a core over 10 s",
        ],
    )
    .await;
    companion.answers().await;
}

async fn expect_runaway_end(
    name: &str,
    kind: RuntimeKind,
    plugin: &nightcrow_plugin_host::Plugin,
    slice_ms: u32,
) {
    match kind {
        RuntimeKind::Wasm => {
            let (cause, requested) =
                within("the CPU slice to stop the guest", plugin.ended()).await;
            assert_eq!(
                (cause, requested),
                (ExitCause::CpuLimit { slice_ms }, false)
            );
            logged(name, &["plugin failed", "CPU limit hit"]).await;
        }
        RuntimeKind::Native => {
            let cause = within("the forced stop", plugin.shutdown()).await;
            assert_eq!(cause, ExitCause::Killed);
            logged(name, &["plugin stopped", "stopped by the host"]).await;
        }
    }
}

/// Grows memory until the 64 MiB limit traps it; never gets to say it went unchecked.
async fn memory_bomb(kind: RuntimeKind) {
    let _exclusive = memory_exclusive().await;
    let name = name("memory_bomb", kind);
    let mut companion = Companion::start(&name, kind).await;
    let mut plugin = start(&spec(&name, guests::MEMORY_BOMB, kind, &[])).await;
    let mut held = Vec::new();
    while let Some(command) = within("the bomb's reports", plugin.recv()).await {
        held.push(log_message(command));
    }
    let limit = nightcrow_plugin_host::Sandbox::DEFAULT_MEMORY_MIB;
    let expected: Vec<String> = (1..limit / 16)
        .map(|n| format!("memory_bomb: holding {} MiB", n * 16))
        .collect();
    assert_eq!(held, expected, "the guest grew to the limit and no further");
    let (cause, requested) = within("the memory limit", plugin.ended()).await;
    assert_eq!(
        (cause, requested),
        (ExitCause::MemoryLimit { limit_mib: limit }, false)
    );
    logged(&name, &["plugin failed", "memory limit hit"]).await;
    companion.answers().await;
}

/// 100 MiB without a newline: discarded whole while reading, one rejection, the stream
/// resynchronises and the plugin's next line arrives.
async fn newline_free_flood(kind: RuntimeKind) {
    let _exclusive = memory_exclusive().await;
    let name = name("newline_free_flood", kind);
    let mut companion = Companion::start(&name, kind).await;
    let before = rss_bytes();
    let mut plugin = start(&spec(&name, guests::NEWLINE_FREE_FLOOD, kind, &[])).await;
    companion.answers().await;
    assert_eq!(
        log_message(next_command(&mut plugin).await),
        "newline_free_flood: still speaking"
    );
    assert_rss_bounded(before, "after a 100 MiB line");
    assert_eq!(plugin.health().rejected_lines, 1);
    logged(&name, &["plugin line dropped", "longer than 65536 bytes"]).await;
    assert_still_echoes(&mut plugin).await;
    companion.answers().await;
}

/// The sign of life every resynchronised hostile guest falls back to.
async fn assert_still_echoes(plugin: &mut nightcrow_plugin_host::Plugin) {
    assert!(plugin.send(pane_opened(9, 1)));
    assert!(matches!(
        next_command(plugin).await,
        Command::Status { attempt: 1, .. }
    ));
}

/// An endless flood of valid commands is throttled by backpressure: the inbound queue never
/// holds more than its bound, nothing is lost or reordered, memory stays flat, the host
/// serves others, and shutdown still ends the blocked writer.
async fn command_flood(kind: RuntimeKind) {
    let _exclusive = memory_exclusive().await;
    let name = name("command_flood", kind);
    let mut companion = Companion::start(&name, kind).await;
    let before = rss_bytes();
    let mut plugin = start(&spec(&name, guests::COMMAND_FLOOD, kind, &[])).await;
    for n in 1..=20_000u64 {
        let queued = plugin.health().queued_commands;
        assert!(queued <= INBOUND_QUEUE, "{queued} commands queued");
        let message = log_message(next_command(&mut plugin).await);
        assert!(
            message.starts_with(&format!("flood {n:020} ")),
            "command {n} was {message:?}"
        );
        if n % 5_000 == 0 {
            companion.answers().await;
        }
    }
    // Stop taking commands: the queue fills to its bound and the guest waits in its write.
    within("the queue to fill", async {
        while plugin.health().queued_commands < INBOUND_QUEUE {
            tokio::task::yield_now().await;
        }
    })
    .await;
    companion.answers().await;
    assert_eq!(plugin.health().queued_commands, INBOUND_QUEUE);
    assert_rss_bounded(before, "after 20 000 commands and a full queue");
    let cause = within("the flood to stop", plugin.shutdown()).await;
    assert!(
        matches!(cause, ExitCause::Killed | ExitCause::Exited { .. }),
        "{cause:?}"
    );
}

/// Four 1 MiB lines: each discarded whole, counted, logged; the next line arrives.
async fn long_lines(kind: RuntimeKind) {
    let _exclusive = memory_exclusive().await;
    let name = name("long_lines", kind);
    let mut companion = Companion::start(&name, kind).await;
    let before = rss_bytes();
    let mut plugin = start(&spec(&name, guests::LONG_LINES, kind, &[])).await;
    assert_eq!(
        log_message(next_command(&mut plugin).await),
        "long_lines: still speaking"
    );
    assert_rss_bounded(before, "after four 1 MiB lines");
    assert_eq!(plugin.health().rejected_lines, 4);
    logged(&name, &["plugin line dropped", "longer than 65536 bytes"]).await;
    assert_still_echoes(&mut plugin).await;
    companion.answers().await;
}

/// Lines that are not UTF-8 never decode; the stream goes on.
async fn invalid_utf8(kind: RuntimeKind) {
    let name = name("invalid_utf8", kind);
    let mut companion = Companion::start(&name, kind).await;
    let mut plugin = start(&spec(&name, guests::INVALID_UTF8, kind, &[])).await;
    assert_eq!(
        log_message(next_command(&mut plugin).await),
        "invalid_utf8: still speaking"
    );
    assert_eq!(plugin.health().rejected_lines, 4);
    logged(&name, &["plugin line dropped", "is not UTF-8"]).await;
    assert_still_echoes(&mut plugin).await;
    companion.answers().await;
}

/// Commands of other versions (or none) are refused with both versions named.
async fn wrong_version(kind: RuntimeKind) {
    let name = name("wrong_version", kind);
    let mut companion = Companion::start(&name, kind).await;
    let mut plugin = start(&spec(&name, guests::WRONG_VERSION, kind, &[])).await;
    assert_eq!(
        log_message(next_command(&mut plugin).await),
        "wrong_version: still speaking"
    );
    assert_eq!(plugin.health().rejected_lines, 5);
    logged(
        &name,
        &["plugin line dropped", "line says v=2, this side speaks v=3"],
    )
    .await;
    logged(&name, &["plugin line dropped", "line says v=4"]).await;
    logged(&name, &["plugin line dropped", "missing field `v`"]).await;
    assert_still_echoes(&mut plugin).await;
    companion.answers().await;
}

/// Exit code 1 is a failure, logged with the code; its stderr is logged too.
async fn exit_failure(kind: RuntimeKind) {
    let name = name("exit_failure", kind);
    let mut companion = Companion::start(&name, kind).await;
    let mut plugin = start(&spec(&name, guests::EXIT_FAILURE, kind, &[])).await;
    assert_eq!(within("stdout to end", plugin.recv()).await, None);
    let (cause, requested) = within("the exit", plugin.ended()).await;
    assert_eq!((cause, requested), (ExitCause::Exited { code: 1 }, false));
    logged(&name, &["plugin failed", "exited with code 1"]).await;
    logged(&name, &["stderr: exit_failure: exiting with 1"]).await;
    companion.answers().await;
}

/// A trap (wasm `unreachable`) or an abort (native SIGABRT) is a failure naming the cause.
async fn trap(kind: RuntimeKind) {
    let name = name("trap", kind);
    let mut companion = Companion::start(&name, kind).await;
    let plugin = start(&spec(&name, guests::TRAP, kind, &[])).await;
    let (cause, requested) = within("the trap", plugin.ended()).await;
    assert!(!requested);
    match kind {
        RuntimeKind::Wasm => {
            assert!(
                matches!(&cause, ExitCause::Trapped { message } if message.contains("unreachable")),
                "{cause:?}"
            );
            logged(&name, &["plugin failed", "trapped:", "unreachable"]).await;
        }
        RuntimeKind::Native => {
            assert_eq!(
                cause,
                ExitCause::Signalled {
                    signal: libc_sigabrt()
                }
            );
            logged(&name, &["plugin failed", "killed by signal 6"]).await;
        }
    }
    logged(&name, &["stderr: trap: aborting"]).await;
    companion.answers().await;
}

fn libc_sigabrt() -> i32 {
    6
}

/// A plugin that reads `shutdown` and carries on (then parks in a host call) is forced
/// within the grace period.
async fn ignore_shutdown(kind: RuntimeKind) {
    let name = name("ignore_shutdown", kind);
    let mut companion = Companion::start(&name, kind).await;
    let mut plugin = start(&spec(&name, guests::IGNORE_SHUTDOWN, kind, &[])).await;
    assert_still_echoes(&mut plugin).await;
    let cause = tokio::time::timeout(SHUTDOWN_GRACE + Duration::from_secs(5), plugin.shutdown())
        .await
        .expect("forced within the grace (plus the time to kill)");
    assert_eq!(cause, ExitCause::Killed);
    assert_eq!(
        log_message(next_command(&mut plugin).await),
        "ignore_shutdown: ignoring shutdown"
    );
    logged(&name, &["plugin stopped", "stopped by the host"]).await;
    companion.answers().await;
}

/// Commands for tokens it was not given and generations it does not hold decode unchanged:
/// the runtime neither drops nor approves them (only the guard judges).
async fn token_guesser(kind: RuntimeKind) {
    let name = name("token_guesser", kind);
    let mut plugin = start(&spec(&name, guests::TOKEN_GUESSER, kind, &[])).await;
    let given = token(7);
    assert!(plugin.send(pane_opened(7, 2)));
    let invented = [
        "0".repeat(32),
        "f".repeat(32),
        format!("{}0", &given.as_str()[..31]),
    ]
    .map(|text| nightcrow_protocol::Token::parse(&text).expect("hex"));
    let mut expected = Vec::new();
    for token in invented {
        expected.push(Command::SendInput {
            token: token.clone(),
            generation: 2,
            data: "rm -rf ~\r".into(),
        });
        expected.push(Command::WatchPane { token });
    }
    for stale in [0, 1, 3, u32::MAX] {
        expected.push(Command::Relaunch {
            token: given.clone(),
            generation: stale,
            resume_args: vec!["resume".into()],
        });
        expected.push(Command::Attention {
            token: given.clone(),
            generation: stale,
        });
    }
    for guess in expected {
        assert_eq!(next_command(&mut plugin).await, guess);
    }
    assert!(matches!(
        next_command(&mut plugin).await,
        Command::Status { attempt: 1, .. }
    ));
    assert_eq!(plugin.try_recv(), None);
    assert_eq!(plugin.health().rejected_lines, 0);
}

/// Runs the probe with `args` under `sandbox` and returns its findings (up to `probe: done`).
async fn probe_findings(
    name: &str,
    args: &[&str],
    customise: impl FnOnce(&mut nightcrow_plugin_host::PluginSpec),
) -> Vec<String> {
    let mut case = spec(name, guests::PROBE, RuntimeKind::Wasm, args);
    customise(&mut case);
    let mut plugin = start(&case).await;
    let mut findings = Vec::new();
    loop {
        let finding = log_message(next_command(&mut plugin).await);
        if finding == "probe: done" {
            break findings;
        }
        findings.push(finding);
    }
}

/// The defaults grant nothing: no preopens, no network, only the runtime-dir variable, and
/// `argv[0]` is the plugin name.
async fn probe(kind: RuntimeKind) {
    let name = name("probe", kind);
    let findings = probe_findings(
        &name,
        &[
            "args",
            "env",
            "list=/",
            "read=/etc/passwd",
            "connect=127.0.0.1:9",
        ],
        |_| {},
    )
    .await;
    let runtime_dir = std::env::temp_dir()
        .join("nightcrow-e2e-runtime")
        .join(&name);
    assert_eq!(
        findings[0],
        format!(
            r#"args: ["{name}", "args", "env", "list=/", "read=/etc/passwd", "connect=127.0.0.1:9"]"#
        )
    );
    assert_eq!(
        findings[1],
        format!(
            "env: NIGHTCROW_PLUGIN_RUNTIME_DIR={}",
            runtime_dir.display()
        )
    );
    assert_eq!(findings[2], "env: 1 variables");
    for (finding, prefix) in findings[3..].iter().zip([
        "list /: error:",
        "read /etc/passwd: error:",
        "connect 127.0.0.1:9: error:",
    ]) {
        assert!(finding.starts_with(prefix), "{finding:?}");
    }
    assert_eq!(findings.len(), 6);
}

/// Only `[plugin.env]` and the runtime-dir variable reach the guest, on both runtimes; the
/// daemon's own environment (HOME, PATH, API keys) never does, and the plugin cannot
/// override the runtime-dir variable.
async fn env_not_granted(kind: RuntimeKind) {
    let name = name("env_not_granted", kind);
    let mut case = spec(
        &name,
        guests::PROBE,
        kind,
        &["env", "getenv=HOME", "getenv=PATH"],
    );
    case.env = vec![
        ("GRANTED".into(), "yes".into()),
        ("NIGHTCROW_PLUGIN_RUNTIME_DIR".into(), "/elsewhere".into()),
    ];
    let mut plugin = start(&case).await;
    let mut findings = Vec::new();
    loop {
        let finding = log_message(next_command(&mut plugin).await);
        if finding == "probe: done" {
            break;
        }
        findings.push(finding);
    }
    let mut vars: Vec<&String> = findings
        .iter()
        .filter(|f| f.starts_with("env: ") && f.contains('='))
        .collect();
    vars.sort();
    let runtime_dir = format!(
        "env: NIGHTCROW_PLUGIN_RUNTIME_DIR={}",
        case.runtime_dir.display()
    );
    assert_eq!(
        vars,
        [&"env: GRANTED=yes".to_owned(), &runtime_dir],
        "{findings:?}"
    );
    assert!(
        findings.contains(&"getenv HOME: error: not set".to_owned()),
        "{findings:?}"
    );
    assert!(
        findings.contains(&"getenv PATH: error: not set".to_owned()),
        "{findings:?}"
    );
}

/// A granted directory is readable; `/etc/passwd` and `..` escapes out of it are not.
async fn read_outside_grants(kind: RuntimeKind) {
    let name = name("read_outside_grants", kind);
    let granted = tempfile::tempdir().expect("temp dir");
    std::fs::write(granted.path().join("inside.txt"), "12345").expect("write");
    let dir = granted.path().display().to_string();
    let args = [
        format!("read={dir}/inside.txt"),
        "read=/etc/passwd".to_owned(),
        format!("read={dir}/../../etc/passwd"),
        format!("read={dir}/../../../../../../etc/passwd"),
        format!("list={dir}/.."),
    ];
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let findings = probe_findings(&name, &args, |spec| {
        spec.sandbox.read_dirs = vec![granted.path().to_owned()]
    })
    .await;
    assert_eq!(findings[0], format!("read {dir}/inside.txt: ok 5 bytes"));
    for finding in &findings[1..] {
        assert!(
            finding.contains(": error: "),
            "escaped the grant: {finding:?}"
        );
    }
    assert_eq!(findings.len(), args.len());
}

/// Grants are read-only: creating a file fails and nothing appears on the host.
async fn write_into_read_only_grant(kind: RuntimeKind) {
    let name = name("write_into_read_only_grant", kind);
    let granted = tempfile::tempdir().expect("temp dir");
    let target = granted.path().join("planted.txt");
    let arg = format!("write={}", target.display());
    let findings = probe_findings(&name, &[&arg], |spec| {
        spec.sandbox.read_dirs = vec![granted.path().to_owned()]
    })
    .await;
    assert_eq!(findings.len(), 1);
    assert!(
        findings[0].starts_with(&format!("write {}: error: ", target.display())),
        "{findings:?}"
    );
    assert!(!target.exists(), "the guest wrote into a read-only grant");
}

/// A granted loopback port connects; another loopback port and a non-loopback address are
/// refused before any packet leaves (the listeners see nothing).
async fn connect_not_granted(kind: RuntimeKind) {
    let name = name("connect_not_granted", kind);
    let granted = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
    let other = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
    // Reachable from this machine on a non-loopback address, if it has one.
    let wide = std::net::TcpListener::bind("0.0.0.0:0").expect("bind");
    let own_ip = std::net::UdpSocket::bind("0.0.0.0:0")
        .and_then(|socket| socket.connect("192.0.2.1:9").map(|()| socket))
        .and_then(|socket| socket.local_addr())
        .map_or("192.0.2.1".parse().expect("ip"), |addr| addr.ip());
    let (granted_port, other_port, wide_port) = (port(&granted), port(&other), port(&wide));
    let args = [
        format!("connect=127.0.0.1:{granted_port}"),
        format!("connect=127.0.0.1:{other_port}"),
        format!("connect={own_ip}:{wide_port}"),
    ];
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let rule = nightcrow_plugin_host::ConnectRule::parse(&format!("127.0.0.1:{granted_port}"))
        .expect("rule");
    let findings = probe_findings(&name, &args, |spec| spec.sandbox.connect = vec![rule]).await;
    assert_eq!(
        findings[0],
        format!("connect 127.0.0.1:{granted_port}: ok connected")
    );
    assert!(
        findings[1].starts_with(&format!("connect 127.0.0.1:{other_port}: error: ")),
        "{findings:?}"
    );
    assert!(
        findings[2].starts_with(&format!("connect {own_ip}:{wide_port}: error: ")),
        "{findings:?}"
    );
    assert_eq!(findings.len(), 3);
    for (listener, connections) in [(&granted, 1), (&other, 0), (&wide, 0)] {
        listener.set_nonblocking(true).expect("nonblocking");
        let accepted = std::iter::from_fn(|| listener.accept().ok()).count();
        assert_eq!(
            accepted,
            connections,
            "connections on {:?}",
            listener.local_addr()
        );
    }
}

/// Files opened in a read grant, or sockets under a connect grant, held one after another:
/// the guest is failed at [`MAX_HANDLES`](nightcrow_plugin_host::MAX_HANDLES) with that
/// cause, and this process (the daemon's stand-in) never holds many more descriptors.
async fn hoard_handles(kind: RuntimeKind) {
    let dir = tempfile::tempdir().expect("tempdir");
    let file = dir.path().join("held");
    std::fs::write(&file, "x").expect("write");
    let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
    let address = format!("127.0.0.1:{}", port(&listener));
    // Accept and keep every connection, so each connect succeeds at once.
    let accepting = listener.try_clone().expect("clone");
    std::thread::spawn(move || {
        let mut kept = Vec::new();
        while let Ok((stream, _)) = accepting.accept() {
            kept.push(stream);
        }
    });
    let opens = format!("open={}", file.display());
    let connects = format!("connect={address}");
    for (what, arg) in [("files", opens.as_str()), ("sockets", connects.as_str())] {
        let name = format!("{}-{what}", name("hoard_handles", kind));
        let mut companion = Companion::start(&name, kind).await;
        let mut case = spec(&name, guests::HOARD_HANDLES, kind, &[arg]);
        case.sandbox.read_dirs = vec![dir.path().to_owned()];
        case.sandbox.connect =
            vec![nightcrow_plugin_host::ConnectRule::parse(&address).expect("rule")];
        let before = open_fds();
        let mut plugin = start(&case).await;
        let mut said = Vec::new();
        let mut most = 0;
        while let Some(command) = within("the hoard's reports", plugin.recv()).await {
            said.push(log_message(command));
            most = most.max(open_fds());
        }
        assert!(
            said.iter().all(|line| line.contains("holding")) && !said.is_empty(),
            "{what}: {said:?}"
        );
        let (cause, requested) = within("the handle limit", plugin.ended()).await;
        assert_eq!(
            (cause, requested),
            (
                ExitCause::HandleLimit {
                    limit: nightcrow_plugin_host::MAX_HANDLES
                },
                false
            ),
            "{what}"
        );
        logged(&name, &["plugin failed", "handle limit hit"]).await;
        let grown = most.saturating_sub(before);
        assert!(
            grown < 2 * nightcrow_plugin_host::MAX_HANDLES,
            "{what}: {grown} more descriptors"
        );
        companion.answers().await;
    }
}

/// Descriptors this process holds now.
fn open_fds() -> usize {
    std::fs::read_dir("/proc/self/fd").map_or(0, Iterator::count)
}

fn port(listener: &std::net::TcpListener) -> u16 {
    listener.local_addr().expect("bound").port()
}

/// A component importing an interface outside the plugin world is refused at load, and the
/// error names the import; nothing is instantiated.
async fn foreign_import(kind: RuntimeKind) {
    let name = name("foreign_import", kind);
    let case = spec(&name, guests::FOREIGN_IMPORT, kind, &[]);
    let refused = within("the audit", runtime().start(&case))
        .await
        .expect_err("refused at load");
    match &refused {
        StartError::ImportsRefused { offending } => {
            assert_eq!(offending, &["nightcrow:evil/backdoor@1.0.0".to_owned()]);
        }
        other => panic!("refused for another reason: {other}"),
    }
    assert!(
        refused
            .to_string()
            .contains("nightcrow:evil/backdoor@1.0.0"),
        "{refused}"
    );
    let checked = within(
        "the check",
        runtime().check(&PluginSource::Path(guests::FOREIGN_IMPORT_WASM.into())),
    )
    .await;
    assert_eq!(checked, Err(refused));
}

/// Exiting at once, over and over: each failure is reported once with its cause, restarts
/// back off (doubling), and after `max_failures` the supervisor gives up for good.
async fn restart_loop(kind: RuntimeKind) {
    let name = name("restart_loop", kind);
    let mut companion = Companion::start(&name, kind).await;
    let policy = RestartPolicy {
        first_backoff: Duration::from_millis(1),
        max_backoff: Duration::from_millis(4),
        max_failures: 5,
        window: Duration::from_secs(600),
    };
    let mut supervisor = Supervisor::new(
        runtime().clone(),
        spec(&name, guests::EXIT_FAILURE, kind, &[]),
        policy,
    );
    let mut steps = Vec::new();
    while steps.last() != Some(&Lifecycle::GaveUp) {
        match within("the next lifecycle step", supervisor.next()).await {
            Supervised::Lifecycle(step) => steps.push(step),
            Supervised::Command(command) => panic!("exit_failure sent {command:?}"),
        }
    }
    let failed = || Lifecycle::Failed {
        cause: ExitCause::Exited { code: 1 },
    };
    let restarting = |ms| Lifecycle::Restarting {
        after: Duration::from_millis(ms),
    };
    let mut expected = Vec::new();
    for ms in [1, 2, 4, 4] {
        expected.extend([Lifecycle::Started, failed(), restarting(ms)]);
    }
    expected.extend([Lifecycle::Started, failed(), Lifecycle::GaveUp]);
    assert_eq!(steps, expected);
    logged(&name, &["giving up"]).await;
    assert_eq!(
        tokio::time::timeout(Duration::from_millis(50), supervisor.next())
            .await
            .ok(),
        None,
        "nothing after giving up"
    );
    companion.answers().await;
    let _ = LogLevel::Info;
}

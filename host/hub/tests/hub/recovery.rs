//! Exit path, holds, relaunch, cancel, expiry, user input and budgets, `watch_pane`
//! (SPEC §6.2–§6.4, §3.2).

use std::time::Duration;

use nightcrow_client_protocol::{HubMessage, RecoveryReport};
use nightcrow_guard::{GuardLimits, PaneId};
use nightcrow_hub::PENDING_RELAUNCH_TTL;
use nightcrow_plugin_host::RuntimeKind;
use nightcrow_protocol::{Event, Token};

use crate::util::{
    TestHub, after_go, event, events, events_of, logged, opened_token, scripted, scripted_on,
    startup,
};

fn cancelled(pane: PaneId) -> HubMessage {
    HubMessage::Recovery(RecoveryReport::cancelled(pane.get()))
}

crate::on_both_runtimes!(relaunch_keeps_the_slot_and_never_accumulates_args);

/// The next `created` pane id.
async fn next_created(hub: &mut TestHub) -> PaneId {
    let pane = hub
        .client
        .message(|message| match message {
            HubMessage::Created { pane, .. } => Some(*pane),
            _ => None,
        })
        .await;
    PaneId::new(pane)
}

/// An owned, relaunchable pane exits; the plugin relaunches it twice. Each relaunch keeps the
/// token and the position, bumps the generation, gets a new pane id, tells the owner and ends
/// the old pane's recovery; the line is always composed from the original command.
async fn relaunch_keeps_the_slot_and_never_accumulates_args(kind: RuntimeKind) {
    let owner: &str = &format!("relauncher-{kind:?}");
    let (mut config, repo) = TestHub::config();
    config.startup_commands = vec![
        startup("again", &after_go("echo ran"), Some(owner)),
        startup("other", "exec cat", None),
    ];
    config.plugins = vec![scripted_on(owner, kind, &["exit_relaunch=resume,abc"])];
    let mut hub = TestHub::start(config, repo).await;
    let first = hub.startup_pane(0).await;
    let _other = next_created(&mut hub).await;
    hub.go();
    let (token, generation) = opened_token(owner, "again").await;
    assert_eq!(generation, 1);

    let second = next_created(&mut hub).await;
    hub.client.saw(cancelled(first)).await;
    let third = next_created(&mut hub).await;
    hub.client.saw(cancelled(second)).await;
    assert!(first < second && second < third, "{first} {second} {third}");
    hub.client.output_contains(second, "ran resume abc").await;
    let output = hub.client.output_contains(third, "ran resume abc").await;
    assert!(
        !output.contains("abc resume"),
        "args accumulated: {output:?}"
    );

    let opened: Vec<(Token, u32, Option<String>)> = events(owner, 3, |event| match event {
        Event::PaneOpened {
            token,
            generation,
            command,
            ..
        } => Some((token.clone(), *generation, command.clone())),
        _ => None,
    })
    .await;
    let command = Some(after_go("echo ran"));
    assert_eq!(
        &opened[..3],
        [
            (token.clone(), 1, command.clone()),
            (token.clone(), 2, command.clone()),
            (token.clone(), 3, command)
        ]
    );
    let status = hub.hub.status().await.expect("status");
    let ids: Vec<PaneId> = status.panes.iter().map(|pane| pane.pane).collect();
    assert!(
        ids.first() >= Some(&third) && ids.len() == 2,
        "the relaunched slot keeps the first position: {ids:?}"
    );
    hub.shutdown().await;
}

/// The relaunch budget is per token and is not reset by a relaunch.
#[tokio::test]
async fn the_budget_persists_across_a_relaunch() {
    let (mut config, repo) = TestHub::config();
    config.guard_limits = GuardLimits::new(5, 1, Duration::from_secs(60))
        .expect("limits")
        .with_idle_threshold(crate::util::IDLE);
    config.startup_commands = vec![startup("once", &after_go("echo ran"), Some("budgeted"))];
    config.plugins = vec![scripted("budgeted", &["exit_relaunch=resume"])];
    let mut hub = TestHub::start(config, repo).await;
    let first = hub.startup_pane(0).await;
    hub.go();
    let second = next_created(&mut hub).await;
    hub.client.saw(cancelled(first)).await;
    logged("budgeted", &["refused", "rate limited"]).await;
    let status = hub.hub.status().await.expect("status");
    assert_eq!(status.holds.len(), 1, "{:?}", status.holds);
    assert_eq!(status.holds[0].pane, second);
    hub.shutdown().await;
}

/// A client pane adopted by `watch_pane` is a bare shell: its exit closes the slot (no hold).
/// `watch_pane` needs `watch_on_signal`, and a pane has one watcher.
#[tokio::test]
async fn watch_pane_rules_and_a_bare_shell_exit() {
    let (mut config, repo) = TestHub::config();
    config.startup_commands = vec![
        startup("w", "exec sh", Some("watcher")),
        startup("n", "exec sh", Some("not-allowed")),
        startup("s", "exec sh", Some("second")),
    ];
    let mut watcher = scripted("watcher", &["watch_echoed"]);
    watcher.watch_on_signal = true;
    let not_allowed = scripted("not-allowed", &["watch_echoed"]);
    let mut second = scripted("second", &["watch_echoed"]);
    second.watch_on_signal = true;
    config.plugins = vec![watcher, not_allowed, second];
    let mut hub = TestHub::start(config, repo).await;
    let w = hub.startup_pane(0).await;
    let n = hub.startup_pane(1).await;
    let s = hub.startup_pane(2).await;
    let shell = hub.hub.create(None, None).await.expect("client pane");
    hub.input(shell, "echo T=$NIGHTCROW_PANE_TOKEN.\r").await;
    let token = crate::util::within("the client pane's token", async {
        loop {
            let output = hub.client.output_contains(shell, "T=").await;
            if let Some(token) = token_in(&output) {
                return token;
            }
            hub.client.take_one().await;
        }
    })
    .await;
    // The typed line never contains `watch:` itself, only its output does.
    let ask = format!("printf 'wa%sch:%s\\n' t {token}\r");

    hub.input(n, &ask).await;
    logged("not-allowed", &["refused", "watch_on_signal"]).await;
    hub.input(w, &ask).await;
    let command = event("watcher", |event| match event {
        Event::PaneOpened {
            token: t, command, ..
        } if *t == token => Some(command.clone()),
        _ => None,
    })
    .await;
    assert_eq!(command, None, "a client pane has no launch command");
    hub.input(s, &ask).await;
    logged("second", &["refused", "watched by another"]).await;

    hub.input(shell, "exit\r").await;
    hub.client.saw(cancelled(shell)).await;
    hub.client
        .saw(HubMessage::Exited {
            pane: shell.get(),
            code: Some(0),
            held: false,
        })
        .await;
    event("watcher", |event| match event {
        Event::PaneClosed { token: t, .. } if *t == token => Some(()),
        _ => None,
    })
    .await;
    assert!(hub.hub.status().await.expect("status").holds.is_empty());
    hub.shutdown().await;
}

/// The token printed as `T=<token>.` (the typed command line itself shows `T=$NIGHT…`).
fn token_in(output: &str) -> Option<Token> {
    output.match_indices("T=").find_map(|(at, _)| {
        let hex = output.get(at + 2..at + 34)?;
        Token::parse(hex).ok()
    })
}

/// A hold keeps the latest report for a later client, which sees the exited pane as it was;
/// `cancel_recovery` ends it with `pane_closed` to the owner and `cancelled` to clients; the
/// pane stays, plainly exited.
#[tokio::test]
async fn a_hold_replays_its_report_and_cancel_ends_it() {
    let (mut config, repo) = TestHub::config();
    config.startup_commands = vec![startup("held", &after_go("echo bye"), Some("holder"))];
    config.plugins = vec![scripted("holder", &["exit_status=waiting_for_reset"])];
    let mut hub = TestHub::start(config, repo).await;
    let pane = hub.startup_pane(0).await;
    hub.go();
    // Clients learn at once that the pane stays for a relaunch, before any report.
    hub.client
        .saw(HubMessage::Exited {
            pane: pane.get(),
            code: Some(0),
            held: true,
        })
        .await;
    let report = HubMessage::Recovery(RecoveryReport {
        pane: pane.get(),
        state: "waiting_for_reset".into(),
        detail: Some("scripted".to_owned()),
        deadline_epoch: Some(1_771_890_527),
        attempt: 1,
    });
    hub.client.saw(report.clone()).await;

    let mut late = crate::util::Watcher::new(hub.hub.attach().await.expect("attach"));
    late.saw(report).await;
    assert!(
        late.messages.iter().any(
            |message| matches!(message, HubMessage::Created { pane: p, .. } if *p == pane.get())
        ),
        "the exited pane is replayed with its name: {:?}",
        late.messages
    );
    assert!(
        late.messages.contains(&HubMessage::Exited {
            pane: pane.get(),
            code: Some(0),
            held: true,
        }),
        "{:?}",
        late.messages
    );

    hub.hub.cancel_recovery(pane).await.expect("cancel");
    hub.client.saw(cancelled(pane)).await;
    event("holder", |event| {
        matches!(event, Event::PaneClosed { .. }).then_some(())
    })
    .await;
    let status = hub.hub.status().await.expect("status");
    assert!(
        status.holds.is_empty() && status.panes.len() == 1 && status.panes[0].owner.is_none(),
        "{status:?}"
    );
    assert!(
        hub.hub.cancel_recovery(pane).await.is_err(),
        "nothing is held any more, and the answer says so"
    );
    hub.shutdown().await;
}

/// A running pane's latest report reaches a client that attaches after it was sent, as it
/// would have reached one attached all along (docs/hub.md).
#[tokio::test]
async fn a_running_panes_latest_report_is_replayed_to_a_later_client() {
    let (mut config, repo) = TestHub::config();
    config.startup_commands = vec![startup("watched", "sleep 30", Some("watcher"))];
    config.plugins = vec![scripted("watcher", &["open_status=waiting_for_reset"])];
    let mut hub = TestHub::start(config, repo).await;
    let pane = hub.startup_pane(0).await;
    let report = HubMessage::Recovery(RecoveryReport {
        pane: pane.get(),
        state: "waiting_for_reset".into(),
        detail: None,
        deadline_epoch: Some(1_771_890_527),
        attempt: 0,
    });
    hub.client.saw(report.clone()).await;

    let mut late = crate::util::Watcher::new(hub.hub.attach().await.expect("attach"));
    late.saw(report).await;
    hub.shutdown().await;
}

/// A hold expires after its TTL: `pane_closed`, `cancelled`; the pane stays, plainly exited.
#[tokio::test]
async fn a_hold_expires_after_its_ttl() {
    let (mut config, repo) = TestHub::config();
    config.pending_relaunch_ttl = Duration::from_millis(300);
    config.startup_commands = vec![startup("expiring", &after_go("echo bye"), Some("expiry"))];
    config.plugins = vec![scripted("expiry", &[])];
    let mut hub = TestHub::start(config, repo).await;
    let pane = hub.startup_pane(0).await;
    hub.go();
    event("expiry", |event| {
        matches!(event, Event::PaneExited { .. }).then_some(())
    })
    .await;
    hub.client.saw(cancelled(pane)).await;
    event("expiry", |event| {
        matches!(event, Event::PaneClosed { .. }).then_some(())
    })
    .await;
    let status = hub.hub.status().await.expect("status");
    assert!(
        status.holds.is_empty() && status.panes.len() == 1 && !status.panes[0].alive,
        "{status:?}"
    );
    hub.shutdown().await;
}

/// A hold lasts the whole of SPEC §6.2's nine days, measured on the hub's clock, which is
/// tokio's: with time paused and moved on, the hold is there a second before its end and
/// gone, with its marker, a second after.
#[tokio::test]
async fn a_hold_lasts_nine_days_on_the_hubs_clock() {
    let (mut config, repo) = TestHub::config();
    assert_eq!(config.pending_relaunch_ttl, PENDING_RELAUNCH_TTL);
    config.startup_commands = vec![startup("nine days", &after_go("echo bye"), Some("nine"))];
    config.plugins = vec![scripted("nine", &[])];
    let mut hub = TestHub::start(config, repo).await;
    let pane = hub.startup_pane(0).await;
    hub.go();
    event("nine", |event| {
        matches!(event, Event::PaneExited { .. }).then_some(())
    })
    .await;
    let second = Duration::from_secs(1);
    tokio::time::pause();
    tokio::time::advance(PENDING_RELAUNCH_TTL - second).await;
    let status = hub.hub.status().await.expect("status");
    assert!(
        status.holds.len() == 1 && status.holds[0].expires_in <= second,
        "{status:?}"
    );
    tokio::time::advance(2 * second).await;
    hub.client.saw(cancelled(pane)).await;
    let status = hub.hub.status().await.expect("status");
    assert!(status.holds.is_empty(), "{status:?}");
    tokio::time::resume();
    event("nine", |event| {
        matches!(event, Event::PaneClosed { .. }).then_some(())
    })
    .await;
    hub.shutdown().await;
}

/// Human input reaches the owner as `user_input` before the bytes are written, and clears the
/// token's budget: a plugin out of sends may type again.
#[tokio::test]
async fn user_input_comes_first_and_clears_the_budget() {
    let (mut config, repo) = TestHub::config();
    config.guard_limits = GuardLimits::new(1, 3, Duration::from_secs(60))
        .expect("limits")
        .with_idle_threshold(crate::util::IDLE);
    config.startup_commands = vec![startup("typed", "exec cat", Some("typer"))];
    config.plugins = vec![scripted("typer", &["idle_send=auto"])];
    let mut hub = TestHub::start(config, repo).await;
    let pane = hub.startup_pane(0).await;
    hub.client.output_contains(pane, "auto").await;
    logged("typer", &["refused", "rate limited"]).await;

    hub.input(pane, "typed\r").await;
    let output = event("typer", |event| match event {
        Event::PaneOutput { text, .. } if text.contains("typed") => Some(()),
        _ => None,
    });
    output.await;
    let tags: Vec<String> = events_of("typer")
        .iter()
        .map(|event| match event {
            Event::PaneOutput { text, .. } if text.contains("typed") => "typed".to_owned(),
            other => other.tag().to_owned(),
        })
        .collect();
    let user = tags
        .iter()
        .position(|tag| tag == "user_input")
        .expect("user_input");
    let typed = tags
        .iter()
        .position(|tag| tag == "typed")
        .expect("typed output");
    assert!(user < typed, "{tags:?}");

    // The budget was cleared: the next quiet period's send is approved again.
    within_output_count(&mut hub, pane, "auto", 2).await;
    hub.shutdown().await;
}

async fn within_output_count(hub: &mut TestHub, pane: PaneId, needle: &str, count: usize) {
    crate::util::within(&format!("{count} × {needle:?}"), async {
        loop {
            let text = hub.client.output_contains(pane, needle).await;
            // `cat` echoes each line twice (the tty's echo and cat's copy).
            if text.matches(needle).count() >= 2 * count {
                return;
            }
            hub.client.take_one().await;
        }
    })
    .await;
}

/// With the pane cap full a relaunch puts the hold back (WARN); once there is room the same
/// hold relaunches.
#[tokio::test]
async fn a_full_pane_cap_puts_the_hold_back() {
    let (mut config, repo) = TestHub::config();
    config.startup_commands = vec![
        startup("held", &after_go("echo bye"), Some("capped")),
        startup("trigger", "exec cat", Some("capped")),
    ];
    config.plugins = vec![scripted("capped", &["relaunch_on=again"])];
    let mut hub = TestHub::start(config, repo).await;
    let held = hub.startup_pane(0).await;
    let trigger = hub.startup_pane(1).await;
    hub.go();
    event("capped", |event| {
        matches!(event, Event::PaneExited { .. }).then_some(())
    })
    .await;
    let mut fillers = Vec::new();
    for _ in 0..nightcrow_pane::MAX_PANES - 1 {
        fillers.push(
            hub.hub
                .create(None, Some("exec cat".into()))
                .await
                .expect("room"),
        );
    }
    hub.input(trigger, "again\r").await;
    logged("capped", &["relaunch failed", "panes"]).await;
    assert_eq!(hub.hub.status().await.expect("status").holds[0].pane, held);

    hub.hub.close(fillers[0]).await.expect("close");
    hub.input(trigger, "again\r").await;
    hub.client.saw(cancelled(held)).await;
    // The relaunched `echo bye` may already have exited and be held again, under its new
    // pane id; the old hold is gone either way.
    let holds = hub.hub.status().await.expect("status").holds;
    assert!(holds.iter().all(|hold| hold.pane != held), "{holds:?}");
    hub.shutdown().await;
}

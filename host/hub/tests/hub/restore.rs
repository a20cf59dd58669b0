//! A hub started with a previous daemon's panes (`Hub::spawn_restored`): a restart is an
//! exit of every pane. Held panes go to the plugin their startup command names, whose budget
//! carries over; a startup pane nobody takes up runs again in its place; a command the
//! config no longer has is shown but never run; the snapshots give it all back.

use std::time::{Duration, SystemTime, UNIX_EPOCH};

use nightcrow_guard::{GuardLimits, PaneId};
use nightcrow_hub::{Charged, Hub, HubMessage, PaneExit, PaneSnapshot, StartupCommand};
use nightcrow_pane::PaneSize;
use nightcrow_protocol::{Event, Token};

use crate::util::{TestHub, event, logged, runtime, scripted, startup, within};

fn now_ms() -> i64 {
    let since = SystemTime::now().duration_since(UNIX_EPOCH).unwrap();
    i64::try_from(since.as_millis()).unwrap()
}

fn journaled(n: u8, title: &str, startup: Option<StartupCommand>) -> PaneSnapshot {
    PaneSnapshot {
        token: Token::from_bytes([n; 16]),
        generation: 1,
        title: Some(title.to_owned()),
        startup,
        owner: None,
        opened_ms: now_ms() - 3_600_000,
        size: PaneSize::new(24, 80).unwrap(),
        exit: None,
        hold_until_ms: None,
        report: None,
        charged: Charged::default(),
        screen: format!("{title} before the restart\r\n").into_bytes(),
    }
}

#[tokio::test]
async fn restored_panes_come_back_exited_and_their_plugin_takes_them_up_within_its_budget() {
    let owner = "restorer";
    let (mut config, repo) = TestHub::config();
    config.guard_limits = GuardLimits::new(5, 2, Duration::from_secs(60)).expect("limits");
    let agent = startup("agent", "echo ran", Some(owner));
    let server = startup("server", "echo serving; exec cat", None);
    config.startup_commands = vec![agent.clone(), server.clone()];
    config.plugins = vec![scripted(owner, &["exit_relaunch=resume,abc"])];
    let pwned = repo.path().join("pwned");
    // Running when the daemon died, relaunched once a minute ago (one of two in the window).
    let mut held = journaled(1, "agent", Some(agent));
    held.generation = 2;
    held.charged.relaunches_ms = vec![now_ms() - 10_000];
    let mut foreign = journaled(
        2,
        "foreign",
        Some(startup(
            "foreign",
            &format!("touch '{}'", pwned.display()),
            Some(owner),
        )),
    );
    foreign.exit = None;
    let mut plain = journaled(3, "plain", None);
    plain.exit = Some(PaneExit { code: Some(0) });
    let restarted = journaled(4, "server", Some(server));
    let hub = Hub::spawn_restored(
        config.clone(),
        runtime(),
        vec![held, foreign, plain, restarted],
    )
    .expect("hub spawns");
    let mut hub = TestHub::attach(hub, config, repo).await;
    // In their places: the held agent, the foreign and plain panes exited with their
    // screens; the server's command running again.
    let panes: Vec<PaneId> = [
        hub.startup_pane(0).await,
        hub.startup_pane(1).await,
        hub.startup_pane(2).await,
        hub.startup_pane(3).await,
    ]
    .into();
    for (pane, screen) in panes.iter().zip(["agent", "foreign", "plain"]) {
        hub.client
            .output_contains(*pane, &format!("{screen} before the restart"))
            .await;
    }
    hub.client.output_contains(panes[3], "serving").await;
    // The plugin hears of the agent as opened (since the first daemon's time) and exited.
    let opened = event(owner, |event| match event {
        Event::PaneOpened {
            token,
            generation,
            opened_ms,
            ..
        } if *token == Token::from_bytes([1; 16]) => Some((*generation, *opened_ms)),
        _ => None,
    })
    .await;
    assert_eq!(opened.0, 2);
    assert!(
        opened.1.is_some_and(|ms| ms < now_ms() - 3_000_000),
        "{opened:?}"
    );
    event(owner, |event| {
        matches!(event, Event::PaneExited { generation: 2, .. }).then_some(())
    })
    .await;
    // Its relaunch takes the pane's place, composed from the config's command.
    let relaunched = hub
        .client
        .message(|message| match message {
            HubMessage::Created {
                pane,
                replaces: Some(old),
                ..
            } if *old == panes[0].get() => Some(PaneId::new(*pane)),
            _ => None,
        })
        .await;
    hub.client
        .output_contains(relaunched, "ran resume abc")
        .await;
    // It exits again at once; the journaled charge and this one use up the budget of two.
    logged(owner, &["refused", "rate limited"]).await;
    let status = within("status", hub.hub.status()).await.expect("status");
    assert_eq!(status.holds.len(), 1, "{:?}", status.holds);
    assert_eq!(status.holds[0].pane, relaunched);
    // The foreign pane has no hold and never ran its command; the snapshot says all of it.
    let snapshot = within("snapshot", hub.hub.snapshot())
        .await
        .expect("snapshot");
    let titles: Vec<_> = snapshot
        .panes
        .iter()
        .map(|pane| {
            (
                pane.title.as_deref().unwrap_or(""),
                pane.generation,
                pane.exit.is_some(),
            )
        })
        .collect();
    assert_eq!(
        titles,
        [
            ("agent", 3, true),
            ("foreign", 1, true),
            ("plain", 1, true),
            ("server", 1, false)
        ]
    );
    assert_eq!(snapshot.panes[0].charged.relaunches_ms.len(), 2);
    assert!(snapshot.panes[0].hold_until_ms.is_some());
    assert_eq!(
        snapshot.panes[1].startup, None,
        "the journal's command is not kept"
    );
    assert!(snapshot.panes[1].hold_until_ms.is_none());
    assert!(!pwned.exists(), "a journaled command ran");
    hub.shutdown().await;
}

//! A hub started with a previous daemon's panes (`Hub::spawn_restored`): a restart is an
//! exit of every pane. Held panes go to the plugin their startup command names, whose budget
//! carries over; a hold that lapsed while no daemon ran, or whose plugin had nothing
//! pending, is dropped; a startup pane nobody takes up runs again in its place; a command
//! the config no longer has is shown but never run; the snapshots give it all back.

use std::time::{Duration, SystemTime, UNIX_EPOCH};

use nightcrow_client_protocol::RecoveryReport;
use nightcrow_guard::{GuardLimits, PaneId};
use nightcrow_hub::{Charged, Hub, PaneExit, PaneSnapshot, StartupCommand};
use nightcrow_pane::PaneSize;
use nightcrow_protocol::{Event, Token};

use crate::util::{TestHub, event, logged, runtime, scripted, startup, within};

fn now_ms() -> i64 {
    let since = SystemTime::now().duration_since(UNIX_EPOCH).unwrap();
    i64::try_from(since.as_millis()).unwrap()
}

pub(crate) fn journaled(n: u8, title: &str, startup: Option<StartupCommand>) -> PaneSnapshot {
    PaneSnapshot {
        token: Token::from_bytes([n; 16]),
        generation: 1,
        title: Some(title.to_owned()),
        program_title: None,
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
    config.guard_limits = GuardLimits::new(5, 2, Duration::from_secs(60))
        .expect("limits")
        .with_idle_threshold(crate::util::IDLE);
    let agent = startup("agent", "echo ran", Some(owner));
    let server = startup("server", "echo serving; exec cat", None);
    let lapsed = startup("lapsed", "echo lapsed", Some("patient"));
    let waiting = startup("waiting", "echo waiting", Some("patient"));
    let quit = startup("quit", "echo quit", Some("patient"));
    config.startup_commands = vec![
        agent.clone(),
        server.clone(),
        lapsed.clone(),
        waiting.clone(),
        quit.clone(),
    ];
    config.plugins = vec![
        scripted(owner, &["exit_relaunch=resume,abc"]),
        scripted("patient", &[]),
    ];
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
    // Exited and held by the first daemon: one whose hold ran out while no daemon ran, one
    // still waiting, and one whose plugin had nothing pending (the person quit it).
    let exited_held = |n: u8, title: &str, startup: StartupCommand, until_ms: i64, state: &str| {
        let mut pane = journaled(n, title, Some(startup));
        pane.exit = Some(PaneExit { code: Some(1) });
        pane.hold_until_ms = Some(until_ms);
        pane.report = Some(RecoveryReport {
            pane: u64::from(n),
            state: state.into(),
            detail: None,
            deadline_epoch: None,
            attempt: 0,
        });
        pane
    };
    let later = now_ms() + 3_600_000;
    let hub = Hub::spawn_restored(
        config.clone(),
        runtime(),
        vec![
            held,
            foreign,
            plain,
            restarted,
            exited_held(5, "lapsed", lapsed, now_ms() - 1_000, "waiting_for_reset"),
            exited_held(6, "waiting", waiting, later, "waiting_for_reset"),
            exited_held(7, "quit", quit, later, "idle"),
        ],
    )
    .expect("hub spawns");
    let mut hub = TestHub::attach(hub, config, repo).await;
    // In their places: the foreign and plain panes exited with their screens, the server's
    // command running again. (The agent's plugin may have relaunched it before this client
    // attached: it acts as soon as it starts.)
    let mut panes = Vec::new();
    for n in 0..7 {
        panes.push(hub.startup_pane(n).await);
    }
    for (pane, screen) in panes[1..3].iter().zip(["foreign", "plain"]) {
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
    // Its relaunch exits again at once; the journaled charge and that relaunch use up the
    // budget of two.
    logged(owner, &["refused", "rate limited"]).await;
    let status = within("status", hub.hub.status()).await.expect("status");
    // Relaunched once, in the agent's place, composed from the config's command.
    let agent = &status.panes[0];
    assert_eq!(
        (agent.title.as_deref(), agent.generation),
        (Some("agent"), 3)
    );
    hub.client
        .output_contains(agent.pane, "ran resume abc")
        .await;
    let mut held: Vec<PaneId> = status.holds.iter().map(|hold| hold.pane).collect();
    held.sort();
    let mut expected = [panes[5], agent.pane];
    expected.sort();
    assert_eq!(held, expected, "{:?}", status.holds);
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
            ("server", 1, false),
            ("lapsed", 1, true),
            ("waiting", 1, true),
            ("quit", 1, true),
        ]
    );
    assert_eq!(snapshot.panes[0].charged.relaunches_ms.len(), 2);
    assert!(snapshot.panes[0].hold_until_ms.is_some());
    assert_eq!(
        snapshot.panes[1].startup, None,
        "the journal's command is not kept"
    );
    assert!(snapshot.panes[1].hold_until_ms.is_none());
    assert_eq!(
        snapshot.panes[4].hold_until_ms, None,
        "a lapsed hold is dropped"
    );
    assert_eq!(snapshot.panes[4].owner, None);
    let kept = snapshot.panes[5]
        .hold_until_ms
        .expect("still waiting, still held");
    assert!(
        (kept - later).abs() < 1_000,
        "the first daemon's deadline: {kept} {later}"
    );
    assert_eq!(snapshot.panes[5].owner.as_deref(), Some("patient"));
    assert_eq!(
        snapshot.panes[6].hold_until_ms, None,
        "nothing was pending: plain"
    );
    assert_eq!(snapshot.panes[6].owner, None);
    assert!(!pwned.exists(), "a journaled command ran");
    hub.shutdown().await;
}

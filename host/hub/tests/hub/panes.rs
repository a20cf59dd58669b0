//! Panes through the hub: output to clients and (stripped) to the owner, the pane token,
//! idleness, and the guard's idle rule for plugin input.

use nightcrow_client_protocol::{ClientRequest, HubMessage};
use nightcrow_guard::PaneId;
use nightcrow_plugin_host::RuntimeKind;
use nightcrow_protocol::Event;

use crate::util::{
    TestHub, event, events_of, logged, logs_of, opened_token, plugin, scripted, scripted_on,
    startup, within,
};

crate::on_both_runtimes!(
    the_last_words_before_idle_and_exit_reach_the_owner_under_a_flood,
    output_reaches_clients_raw_and_the_owner_stripped,
    the_token_is_in_the_pane_env_and_never_in_a_plugins
);

/// Output reaches the owner coalesced (docs/hub.md), but never without its tail: after
/// 100 MB of flood each, the line printed just before the pane goes quiet and the line
/// printed just before it exits both reach the plugin, which calls for attention on them;
/// the second call comes before the status it sends when it hears of the exit.
async fn the_last_words_before_idle_and_exit_reach_the_owner_under_a_flood(kind: RuntimeKind) {
    let owner: &str = &format!("last-words-{kind:?}");
    let (mut config, repo) = TestHub::config();
    config.startup_commands = vec![startup(
        "flood",
        &crate::util::after_go(
            "yes flood | head -c 100000000; echo last-words; \
             until [ -e again ]; do sleep 0.05; done; \
             yes flood | head -c 100000000; echo last-words",
        ),
        Some(owner),
    )];
    config.plugins = vec![scripted_on(
        owner,
        kind,
        &["attention_on=last-words", "exit_status=held"],
    )];
    let mut hub = TestHub::start(config, repo).await;
    let pane = hub.startup_pane(0).await;
    opened_token(owner, "flood").await;
    let attention = HubMessage::Attention { pane: pane.get() };
    let flooding = std::time::Instant::now();
    hub.go();
    // The pane waits, quiet, until the plugin has heard its last words.
    hub.client.saw(attention.clone()).await;
    hub.touch("again");
    hub.client
        .message(|message| match message {
            HubMessage::Recovery(report) if report.pane == pane.get() => Some(()),
            _ => None,
        })
        .await;
    let attentions = hub
        .client
        .messages
        .iter()
        .take_while(|message| !matches!(message, HubMessage::Recovery(_)))
        .filter(|message| **message == attention)
        .count();
    assert_eq!(
        attentions, 2,
        "the last words before the exit came late or never"
    );
    // At most one event per 50 ms, plus the flushes before idle and exit: a bound the
    // design guarantees however fast or slow the machine is.
    let bound = flooding.elapsed().as_millis() / 50 + 4;
    let outputs = crate::util::events_of(owner)
        .iter()
        .filter(|event| matches!(event, Event::PaneOutput { .. }))
        .count();
    assert!(
        outputs as u128 <= bound,
        "{outputs} pane_output events in {:?}: not coalesced",
        flooding.elapsed()
    );
    hub.shutdown().await;
}

/// Raw bytes reach the client, typed input is echoed, and the owner gets the same output as
/// plain text (escape sequences stripped).
async fn output_reaches_clients_raw_and_the_owner_stripped(kind: RuntimeKind) {
    let owner: &str = &format!("out-owner-{kind:?}");
    let (mut config, repo) = TestHub::config();
    config.startup_commands = vec![startup(
        "colour",
        r"printf '\033[31mred\033[0m\n'; exec cat",
        Some(owner),
    )];
    config.plugins = vec![scripted_on(owner, kind, &[])];
    let mut hub = TestHub::start(config, repo).await;
    let pane = hub.startup_pane(0).await;
    hub.client.output_contains(pane, "\u{1b}[31mred").await;
    let (token, _) = opened_token(owner, "colour").await;
    let text = event(owner, |event| match event {
        Event::PaneOutput { token: t, text, .. } if *t == token && text.contains("red") => {
            Some(text.clone())
        }
        _ => None,
    })
    .await;
    assert!(!text.contains('\u{1b}'), "not stripped: {text:?}");

    hub.input(pane, "hello there\r").await;
    hub.client.output_contains(pane, "hello there").await;
    event(owner, |event| match event {
        Event::PaneOutput { text, .. } if text.contains("hello there") => Some(()),
        _ => None,
    })
    .await;
    hub.shutdown().await;
}

/// Every pane has its token in `NIGHTCROW_PANE_TOKEN`; a plugin's environment has neither
/// the variable nor the value.
async fn the_token_is_in_the_pane_env_and_never_in_a_plugins(kind: RuntimeKind) {
    let owner: &str = &format!("tok-owner-{kind:?}");
    let probe_name: &str = &format!("tok-probe-{kind:?}");
    let (mut config, repo) = TestHub::config();
    config.startup_commands = vec![startup(
        "tok",
        "echo TOKEN=$NIGHTCROW_PANE_TOKEN.; exec cat",
        Some(owner),
    )];
    let mut probe = plugin(
        probe_name,
        nightcrow_test_plugin_artifacts::PROBE,
        kind,
        &["env"],
    );
    probe.watch_on_signal = true;
    config.plugins = vec![scripted_on(owner, kind, &[]), probe];
    let mut hub = TestHub::start(config, repo).await;
    let pane = hub.startup_pane(0).await;
    let (token, _) = opened_token(owner, "tok").await;
    hub.client
        .output_contains(pane, &format!("TOKEN={token}."))
        .await;

    logged(probe_name, &["env: ", "variables"]).await;
    let env: Vec<String> = logs_of(probe_name)
        .into_iter()
        .filter_map(|line| line.plugin_text)
        .filter(|text| text.starts_with("env: "))
        .collect();
    assert!(
        env.iter()
            .any(|line| line.contains("NIGHTCROW_PLUGIN_RUNTIME_DIR")),
        "{env:?}"
    );
    for line in &env {
        assert!(!line.contains("NIGHTCROW_PANE_TOKEN"), "{line}");
        assert!(!line.contains(token.as_str()), "{line}");
    }
    hub.shutdown().await;
}

/// `pane_idle` comes once per quiet period: output re-arms it.
#[tokio::test]
async fn pane_idle_comes_once_per_quiet_period() {
    let (mut config, repo) = TestHub::config();
    config.startup_commands = vec![startup("quiet", "exec cat", Some("idle-owner"))];
    config.plugins = vec![scripted("idle-owner", &[])];
    let mut hub = TestHub::start(config, repo).await;
    let pane = hub.startup_pane(0).await;
    let idle = |event: &Event| matches!(event, Event::PaneIdle { .. }).then_some(());
    crate::util::events("idle-owner", 1, idle).await;
    hub.input(pane, "wake\r").await;
    crate::util::events("idle-owner", 2, idle).await;

    let tags: Vec<&str> = events_of("idle-owner")
        .iter()
        .map(Event::tag)
        .collect::<Vec<_>>();
    let tags: Vec<&str> = tags
        .into_iter()
        .filter(|tag| *tag != "pane_output")
        .collect();
    assert_eq!(
        &tags[..4],
        ["pane_opened", "pane_idle", "user_input", "pane_idle"],
        "{tags:?}"
    );
    hub.shutdown().await;
}

/// A plugin's `send_input` is refused while the pane is busy and approved once it is idle.
#[tokio::test]
async fn send_input_is_approved_only_when_the_pane_is_idle() {
    let (mut config, repo) = TestHub::config();
    config.startup_commands = vec![startup("typist", "exec cat", Some("typist"))];
    config.plugins = vec![scripted(
        "typist",
        &["open_send=too-early", "idle_send=just-right"],
    )];
    let mut hub = TestHub::start(config, repo).await;
    let pane = hub.startup_pane(0).await;
    let output = hub.client.output_contains(pane, "just-right").await;
    assert!(!output.contains("too-early"), "{output:?}");
    logged("typist", &["refused", "busy"]).await;
    hub.shutdown().await;
}

/// Bad client requests get an `error` and the hub carries on.
#[tokio::test]
async fn malformed_requests_are_answered_with_errors() {
    let (config, repo) = TestHub::config();
    let mut hub = TestHub::start(config, repo).await;
    for bad in [
        "not json",
        r#"{"type":"explode"}"#,
        r#"{"type":"input","pane":99,"data":"x"}"#,
        r#"{"type":"resize","pane":99,"rows":0,"cols":0}"#,
    ] {
        within("send", hub.client.client.send_json(bad))
            .await
            .expect("the hub runs");
        hub.client
            .message(|message| matches!(message, HubMessage::Error { .. }).then_some(()))
            .await;
    }
    let pane = within(
        "create",
        hub.hub.request(ClientRequest::Create {
            title: None,
            command: None,
            rows: Some(0),
            cols: Some(80),
        }),
    )
    .await;
    assert!(pane.is_err(), "{pane:?}");
    let pane: PaneId = within("create", hub.hub.create(Some("sh".into()), None))
        .await
        .expect("a bare shell");
    hub.input(pane, "echo still-here\r").await;
    hub.client.output_contains(pane, "still-here").await;
    hub.shutdown().await;
}

/// An approved `attention` reaches clients as `{"type":"attention","pane":N}`.
#[tokio::test]
async fn attention_is_broadcast_to_clients() {
    let (mut config, repo) = TestHub::config();
    config.startup_commands = vec![startup("bell", "exec cat", Some("bell"))];
    config.plugins = vec![scripted("bell", &["attention_on=ring"])];
    let mut hub = TestHub::start(config, repo).await;
    let pane = hub.startup_pane(0).await;
    opened_token("bell", "bell").await;
    hub.input(pane, "ring\r").await;
    hub.client
        .saw(HubMessage::Attention { pane: pane.get() })
        .await;
    hub.shutdown().await;
}

/// After `shutdown` the client stream ends and the handle reports the hub gone.
#[tokio::test]
async fn shutdown_ends_clients_and_the_handle() {
    let (mut config, repo) = TestHub::config();
    config.startup_commands = vec![startup("bye", "exec cat", Some("stopped"))];
    config.plugins = vec![scripted("stopped", &[])];
    let mut hub = TestHub::start(config, repo).await;
    hub.startup_pane(0).await;
    opened_token("stopped", "bye").await;
    let handle = hub.hub.clone();
    within("shutdown", handle.shutdown()).await;
    within("the stream's end", async {
        while hub.client.take_one().await {}
    })
    .await;
    assert!(matches!(
        handle.status().await,
        Err(nightcrow_hub::HubError::Gone)
    ));
    handle.shutdown().await;
}

/// An unowned pane that exits stays, exited, with its screen for a later client, until a
/// client closes it; clients get its exit code.
#[tokio::test]
async fn an_unowned_pane_exit_is_reported_and_the_pane_stays_until_closed() {
    let (config, repo) = TestHub::config();
    let mut hub = TestHub::start(config, repo).await;
    let pane = within("create", hub.hub.create(None, Some("exit 3".into())))
        .await
        .expect("a client pane");
    hub.client
        .saw(HubMessage::Exited {
            pane: pane.get(),
            code: Some(3),
            held: false,
        })
        .await;
    let status = hub.hub.status().await.expect("status");
    assert!(
        status.panes.len() == 1 && !status.panes[0].alive,
        "{status:?}"
    );
    let mut late = crate::util::Watcher::new(hub.hub.attach().await.expect("attach"));
    late.saw(HubMessage::Exited {
        pane: pane.get(),
        code: Some(3),
        held: false,
    })
    .await;
    hub.hub.close(pane).await.expect("close");
    hub.client
        .saw(HubMessage::Closed { pane: pane.get() })
        .await;
    assert!(hub.hub.status().await.expect("status").panes.is_empty());
    hub.shutdown().await;
}

/// `start` reopens a startup command whose pane was closed, and only that one.
#[tokio::test]
async fn start_reopens_missing_startup_panes() {
    let (mut config, repo) = TestHub::config();
    config.startup_commands = vec![
        startup("one", "exec cat", Some("starter")),
        startup("two", "exec cat", None),
    ];
    config.plugins = vec![scripted("starter", &[])];
    let mut hub = TestHub::start(config, repo).await;
    let one = hub.startup_pane(0).await;
    hub.startup_pane(1).await;
    let (token, _) = opened_token("starter", "one").await;
    within("close", hub.hub.close(one)).await.expect("close");
    event("starter", |event| match event {
        Event::PaneClosed { token: t, .. } if *t == token => Some(()),
        _ => None,
    })
    .await;

    let opened = within("start", hub.hub.start()).await.expect("start");
    assert_eq!(opened.len(), 1, "{opened:?}");
    let titles: Vec<Option<String>> = hub
        .hub
        .status()
        .await
        .expect("status")
        .panes
        .into_iter()
        .map(|pane| pane.title)
        .collect();
    assert_eq!(titles, [Some("two".to_owned()), Some("one".to_owned())]);
    // The reopened pane is opted in again: its plugin is given it.
    crate::util::events("starter", 2, |event| {
        matches!(event, Event::PaneOpened { title: Some(t), .. } if t == "one").then_some(())
    })
    .await;
    assert!(
        within("start again", hub.hub.start())
            .await
            .expect("start")
            .is_empty()
    );
    hub.shutdown().await;
}

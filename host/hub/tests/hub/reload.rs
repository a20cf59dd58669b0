//! Which plugins run across reloads (SPEC §6.5), and supervision of a crashing one (§4.6).

use std::path::PathBuf;

use nightcrow_client_protocol::{HubMessage, PluginHealth, RecoveryReport};
use nightcrow_guard::PaneId;
use nightcrow_hub::ReloadReport;
use nightcrow_plugin_host::PluginSource;
use nightcrow_plugin_host::RuntimeKind;
use nightcrow_protocol::{Event, Token};

use crate::util::{
    TestHub, after_go, event, events, events_of, logged, opened_token, scripted, scripted_on,
    startup,
};

crate::on_both_runtimes!(a_crash_retires_holds_and_the_successor_gets_live_panes);

/// How many `pane_opened` for `token` the scripted plugin `plugin` has received.
fn opened_count(plugin: &str, token: &Token) -> usize {
    events_of(plugin)
        .iter()
        .filter(|event| matches!(event, Event::PaneOpened { token: t, .. } if t == token))
        .count()
}

async fn owner_of(hub: &TestHub, pane: PaneId) -> Option<String> {
    let status = hub.hub.status().await.expect("status");
    let pane = status.panes.iter().find(|status| status.pane == pane);
    pane.and_then(|pane| pane.owner.clone())
}

/// Waits until clients hear that `plugin` failed.
async fn plugin_failed(hub: &mut TestHub, plugin: &str) {
    hub.client
        .message(|message| match message {
            HubMessage::Plugin { name, state, .. }
                if name == plugin && *state == PluginHealth::Failed =>
            {
                Some(())
            }
            _ => None,
        })
        .await;
}

async fn reload(hub: &TestHub) -> ReloadReport {
    crate::util::within("reload", hub.hub.reload(hub.config.clone()))
        .await
        .expect("the hub runs")
}

/// `watch_on_signal` changes apply at the next judgement, in the same instance.
#[tokio::test]
async fn policy_changes_apply_in_place() {
    let (mut config, repo) = TestHub::config();
    config.startup_commands = vec![startup("flags", "exec sh", Some("flags"))];
    config.plugins = vec![scripted("flags", &["watch_echoed"])];
    let mut hub = TestHub::start(config, repo).await;
    let pane = hub.startup_pane(0).await;
    let (own, _) = opened_token("flags", "flags").await;
    let ask = format!("printf 'wa%sch:%s\\n' t {own}\r");
    // Watching its own pane is approved (a fresh `pane_opened`) only with `watch_on_signal`.
    hub.input(pane, &ask).await;
    logged("flags", &["refused", "watch_on_signal"]).await;

    hub.config.plugins[0].watch_on_signal = true;
    assert_eq!(reload(&hub).await, ReloadReport::default());
    hub.input(pane, &ask).await;
    events("flags", 2, |event| match event {
        Event::PaneOpened { token, .. } if *token == own => Some(()),
        _ => None,
    })
    .await;
    hub.shutdown().await;
}

/// A changed `args` replaces the instance: stop first (its holds retired), then start; the
/// successor keeps and is given the live panes.
#[tokio::test]
async fn changed_args_replace_the_instance_and_retire_its_holds() {
    let (mut config, repo) = TestHub::config();
    config.startup_commands = vec![
        startup("live", "exec cat", Some("replaced")),
        startup("gone", &after_go("echo bye"), Some("replaced")),
    ];
    config.plugins = vec![scripted("replaced", &[])];
    let mut hub = TestHub::start(config, repo).await;
    let live = hub.startup_pane(0).await;
    let gone = hub.startup_pane(1).await;
    hub.go();
    let (token, _) = opened_token("replaced", "live").await;
    event("replaced", |event| {
        matches!(event, Event::PaneExited { .. }).then_some(())
    })
    .await;

    hub.config.plugins[0].spec.args = vec!["idle_send=x".to_owned()];
    let report = reload(&hub).await;
    assert_eq!(
        report,
        ReloadReport {
            restarted: vec!["replaced".to_owned()],
            retired: vec![gone],
            ..ReloadReport::default()
        }
    );
    hub.client
        .saw(HubMessage::Recovery(RecoveryReport::cancelled(gone.get())))
        .await;
    events("replaced", 2, |event| match event {
        Event::PaneOpened { token: t, .. } if *t == token => Some(()),
        _ => None,
    })
    .await;
    assert_eq!(owner_of(&hub, live).await.as_deref(), Some("replaced"));
    hub.shutdown().await;
}

/// Disabling stops the plugin and releases its panes; enabling it again hands it the live
/// panes whose startup command named it.
#[tokio::test]
async fn disabling_releases_and_enabling_adopts_intended_panes() {
    let (mut config, repo) = TestHub::config();
    config.startup_commands = vec![startup("named", "exec cat", Some("toggled"))];
    let mut plugin = scripted("toggled", &[]);
    plugin.enabled = false;
    config.plugins = vec![plugin];
    let mut hub = TestHub::start(config, repo).await;
    let pane = hub.startup_pane(0).await;
    assert_eq!(owner_of(&hub, pane).await, None);

    hub.config.plugins[0].enabled = true;
    let report = reload(&hub).await;
    assert_eq!(report.started, ["toggled"]);
    let (token, _) = opened_token("toggled", "named").await;
    assert_eq!(owner_of(&hub, pane).await.as_deref(), Some("toggled"));

    hub.config.plugins[0].enabled = false;
    let report = reload(&hub).await;
    assert_eq!(report.stopped, ["toggled"]);
    assert_eq!(owner_of(&hub, pane).await, None);
    assert_eq!(opened_count("toggled", &token), 1);
    hub.shutdown().await;
}

/// A successor that fails to start drops the panes it was to keep.
#[tokio::test]
async fn a_failing_successor_leaves_no_owned_panes() {
    let (mut config, repo) = TestHub::config();
    config.startup_commands = vec![startup("kept", "exec cat", Some("fragile"))];
    config.plugins = vec![scripted("fragile", &[])];
    let mut hub = TestHub::start(config, repo).await;
    let pane = hub.startup_pane(0).await;
    opened_token("fragile", "kept").await;

    hub.config.plugins[0].spec.source =
        PluginSource::Path(PathBuf::from("/nonexistent/fragile.wasm"));
    let report = reload(&hub).await;
    assert_eq!(report.restarted, ["fragile"]);
    assert_eq!(report.failed, ["fragile"]);
    assert_eq!(owner_of(&hub, pane).await, None);
    hub.shutdown().await;
}

/// A crash retires the plugin's holds (cancelled), keeps its live panes, and the restarted
/// instance is given them again.
async fn a_crash_retires_holds_and_the_successor_gets_live_panes(kind: RuntimeKind) {
    let owner: &str = &format!("crashy-{kind:?}");
    let (mut config, repo) = TestHub::config();
    config.startup_commands = vec![
        startup("survivor", "exec sh", Some(owner)),
        startup("held", &after_go("echo bye"), Some(owner)),
    ];
    config.plugins = vec![scripted_on(owner, kind, &["exit_on=boom"])];
    let mut hub = TestHub::start(config, repo).await;
    let survivor = hub.startup_pane(0).await;
    let held = hub.startup_pane(1).await;
    hub.go();
    let (token, _) = opened_token(owner, "survivor").await;
    event(owner, |event| {
        matches!(event, Event::PaneExited { .. }).then_some(())
    })
    .await;

    hub.input(survivor, "echo boom\r").await;
    hub.client
        .saw(HubMessage::Recovery(RecoveryReport::cancelled(held.get())))
        .await;
    plugin_failed(&mut hub, owner).await;
    events(owner, 2, |event| match event {
        Event::PaneOpened { token: t, .. } if *t == token => Some(()),
        _ => None,
    })
    .await;
    assert_eq!(owner_of(&hub, survivor).await.as_deref(), Some(owner));
    assert!(hub.hub.status().await.expect("status").holds.is_empty());
    hub.shutdown().await;
}

/// A pane that exits while its plugin is down (restart backoff) is held for it; the
/// restarted instance hears of it as opened and then exited, so it can act on the hold.
#[tokio::test]
async fn a_pane_held_during_a_restart_is_replayed_to_the_successor() {
    let owner = "restarting";
    let (mut config, repo) = TestHub::config();
    // Long enough for the held pane to exit while the instance is gone.
    config.restart_policy.first_backoff = std::time::Duration::from_millis(1500);
    config.startup_commands = vec![
        startup("survivor", "exec sh", Some(owner)),
        startup("held", &after_go("echo bye"), Some(owner)),
    ];
    config.plugins = vec![scripted(owner, &["exit_on=boom"])];
    let mut hub = TestHub::start(config, repo).await;
    let survivor = hub.startup_pane(0).await;
    let held = hub.startup_pane(1).await;
    let (token, generation) = opened_token(owner, "held").await;

    hub.input(survivor, "echo boom\r").await;
    plugin_failed(&mut hub, owner).await;
    hub.go();
    hub.client
        .saw(HubMessage::Exited {
            pane: held.get(),
            code: Some(0),
            held: true,
        })
        .await;

    let replay = events(owner, 3, |event| match event {
        Event::PaneOpened {
            token: t,
            generation: g,
            ..
        } if *t == token => Some(("opened", *g)),
        Event::PaneExited {
            token: t,
            generation: g,
        } if *t == token => Some(("exited", *g)),
        _ => None,
    })
    .await;
    assert_eq!(
        replay[..3],
        [
            ("opened", generation),
            ("opened", generation),
            ("exited", generation)
        ],
        "the first instance saw it opened; the successor, opened then exited"
    );
    let status = hub.hub.status().await.expect("status");
    assert_eq!(status.holds.len(), 1, "{status:?}");
    assert_eq!(owner_of(&hub, held).await.as_deref(), Some(owner));
    hub.shutdown().await;
}

/// A plugin that keeps failing is given up: clients hear of it, its panes run unwatched.
#[tokio::test]
async fn a_plugin_given_up_releases_its_panes_and_clients_hear_of_it() {
    let (mut config, repo) = TestHub::config();
    config.startup_commands = vec![startup("orphan", "exec cat", Some("failing"))];
    config.plugins = vec![crate::util::plugin(
        "failing",
        nightcrow_test_plugin_artifacts::EXIT_FAILURE,
        nightcrow_plugin_host::RuntimeKind::Wasm,
        &[],
    )];
    let mut hub = TestHub::start(config, repo).await;
    let pane = hub.startup_pane(0).await;
    hub.client
        .message(|message| match message {
            HubMessage::Plugin { name, state, .. }
                if name == "failing" && *state == PluginHealth::GaveUp =>
            {
                Some(())
            }
            _ => None,
        })
        .await;
    assert_eq!(owner_of(&hub, pane).await, None);
    let status = hub.hub.status().await.expect("status");
    assert!(status.plugins[0].gave_up, "{:?}", status.plugins);
    hub.input(pane, "unwatched\r").await;
    hub.client.output_contains(pane, "unwatched").await;
    hub.shutdown().await;
}

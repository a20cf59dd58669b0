//! Titles a pane's program sets (OSC 0 and 2): every client hears them as `title`, one that
//! attaches later gets the current one after the pane's scrollback, an empty title gives
//! the configured one back, and the journal keeps them across a restart.

use nightcrow_client_protocol::HubMessage;
use nightcrow_guard::PaneId;
use nightcrow_hub::Hub;

use crate::restore::journaled;
use crate::util::{TestHub, Watcher, runtime, startup, within};

fn title(pane: PaneId, title: Option<&str>) -> HubMessage {
    HubMessage::Title {
        pane: pane.get(),
        title: title.map(str::to_owned),
    }
}

/// What a client attaching now is told about `pane`, from `created` to the end of the
/// replay.
async fn replay_of(hub: &TestHub, pane: PaneId) -> Vec<HubMessage> {
    let mut late = Watcher::new(within("attach", hub.hub.attach()).await.expect("attach"));
    late.saw(HubMessage::Live).await;
    late.messages
        .into_iter()
        .skip_while(
            |message| !matches!(message, HubMessage::Created { pane: p, .. } if *p == pane.get()),
        )
        .filter(|message| !matches!(message, HubMessage::Live))
        .collect()
}

#[tokio::test]
async fn a_title_reaches_every_client_and_an_empty_one_gives_the_configured_back() {
    let (mut config, repo) = TestHub::config();
    config.startup_commands = vec![startup(
        "build",
        "printf 'one\\033]2;first\\007two\\033]0;compiling \\001crate\\033\\\\'; \
         until [ -e clear ]; do sleep 0.05; done; printf '\\033]2;\\007cleared'; exec cat",
        None,
    )];
    let mut hub = TestHub::start(config, repo).await;
    let pane = hub.startup_pane(0).await;
    hub.client.output_contains(pane, "two").await;
    // Both titles came in one read or in two: the last one is what the pane is titled.
    hub.client.saw(title(pane, Some("compiling crate"))).await;
    let status = within("status", hub.hub.status()).await.expect("status");
    assert_eq!(
        status.panes[0].program_title.as_deref(),
        Some("compiling crate")
    );
    assert_eq!(status.panes[0].title.as_deref(), Some("build"));

    let replay = replay_of(&hub, pane).await;
    assert!(
        matches!(&replay[0], HubMessage::Created { title: Some(t), .. } if t == "build"),
        "{replay:?}"
    );
    assert_eq!(replay[1..], [title(pane, Some("compiling crate"))]);

    hub.touch("clear");
    hub.client.output_contains(pane, "cleared").await;
    hub.client.saw(title(pane, None)).await;
    let replay = replay_of(&hub, pane).await;
    assert_eq!(replay.len(), 1, "no title after created: {replay:?}");
    let snapshot = within("snapshot", hub.hub.snapshot())
        .await
        .expect("snapshot");
    assert_eq!(snapshot.panes[0].program_title, None);
    hub.shutdown().await;
}

#[tokio::test]
async fn the_journal_keeps_a_title_across_a_restart() {
    let (config, repo) = TestHub::config();
    let mut pane = journaled(1, "agent", None);
    pane.program_title = Some("codex: fixing tests".to_owned());
    let hub = Hub::spawn_restored(config.clone(), runtime(), vec![pane]).expect("hub spawns");
    let mut hub = TestHub::attach(hub, config, repo).await;
    let restored = hub.startup_pane(0).await;
    hub.client
        .saw(title(restored, Some("codex: fixing tests")))
        .await;
    let snapshot = within("snapshot", hub.hub.snapshot())
        .await
        .expect("snapshot");
    assert_eq!(
        snapshot.panes[0].program_title.as_deref(),
        Some("codex: fixing tests")
    );
    hub.shutdown().await;
}

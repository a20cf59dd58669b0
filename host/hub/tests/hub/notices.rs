//! The hub's notices (`HubHandle::notices`): the moments worth telling a person who is away,
//! published whether or not a client is attached, from real plugins' `status` and
//! `attention`; what a restored pane last said is a baseline, not news.

use nightcrow_client_protocol::{Notice, NoticeEvent, RecoveryReport};
use nightcrow_hub::Hub;
use tokio::sync::broadcast;

use crate::util::{TestHub, after_go, runtime, scripted, startup, within};

async fn next_notice(notices: &mut broadcast::Receiver<Notice>) -> Notice {
    within("a notice", notices.recv())
        .await
        .expect("the hub publishes notices")
}

#[tokio::test]
async fn needs_attention_and_attention_are_published_with_no_client_attached() {
    let (mut config, repo) = TestHub::config();
    config.startup_commands = vec![
        startup("agent", "sleep 30", Some("caller")),
        startup(
            "bell",
            &after_go("echo ring-$((6*7)); sleep 30"),
            Some("bell"),
        ),
    ];
    config.plugins = vec![
        scripted("caller", &["open_status=needs_attention"]),
        scripted("bell", &["attention_on=ring-42"]),
    ];
    let hub = Hub::spawn(config, runtime()).expect("hub spawns");
    let mut notices = hub.notices();
    let called = next_notice(&mut notices).await;
    assert_eq!(
        called,
        Notice {
            pane: 1,
            event: NoticeEvent::NeedsAttention,
            report: Some(RecoveryReport {
                pane: 1,
                state: "needs_attention".into(),
                detail: None,
                deadline_epoch: Some(1_771_890_527),
                attempt: 0,
            }),
        }
    );
    std::fs::write(repo.path().join("go"), "").expect("go");
    let rang = next_notice(&mut notices).await;
    assert_eq!((rang.pane, rang.event), (2, NoticeEvent::Attention));
    assert_eq!(rang.text(), "pane 2 wants you back");
    let status = within("status", hub.status()).await.expect("status");
    assert!(
        status.panes.iter().all(|pane| pane.alive),
        "nothing but notices happened: {status:?}"
    );
    within("shutdown", hub.shutdown()).await;
}

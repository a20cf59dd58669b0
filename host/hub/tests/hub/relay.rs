//! The one relay between a hub client and a connection, over a transport made of channels:
//! requests pass to the hub, refusals and broken streams are answered, keep-alives are
//! written, flow control holds frames back, and a peer the hub dropped is attached again
//! on the same connection.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::time::Duration;

use nightcrow_client_protocol::{Frame, HubMessage};
use nightcrow_hub::relay::{Inbound, PeerGone, Transport, relay};
use tokio::sync::mpsc;

use crate::util::{TestHub, startup, within, within_longer};

/// The far end of a [`Channels`] transport, as a test drives it.
struct Peer {
    frames: mpsc::UnboundedReceiver<Frame>,
    says: mpsc::UnboundedSender<Inbound>,
    ready: Arc<AtomicBool>,
    keep_alives: Arc<AtomicUsize>,
}

impl Peer {
    /// The next control message, skipping output.
    async fn message(&mut self) -> HubMessage {
        loop {
            match within("a frame", self.frames.recv()).await {
                Some(Frame::Message(message)) => return message,
                Some(Frame::Output { .. }) => {}
                None => panic!("the relay ended"),
            }
        }
    }

    fn say(&self, inbound: Inbound) {
        self.says.send(inbound).expect("the relay listens");
    }
}

struct Channels {
    frames: mpsc::UnboundedSender<Frame>,
    says: mpsc::UnboundedReceiver<Inbound>,
    ready: Arc<AtomicBool>,
    keep_alives: Arc<AtomicUsize>,
}

impl Transport for Channels {
    async fn send(&mut self, frame: Frame) -> Result<(), PeerGone> {
        self.frames.send(frame).map_err(|_| PeerGone)
    }

    async fn recv(&mut self) -> Inbound {
        self.says.recv().await.unwrap_or(Inbound::Closed)
    }

    fn ready(&self) -> bool {
        self.ready.load(Ordering::SeqCst)
    }

    async fn keep_alive(&mut self) -> Result<(), PeerGone> {
        self.keep_alives.fetch_add(1, Ordering::SeqCst);
        Ok(())
    }
}

/// A relay of `hub` over channels, running; `ready` is where its flow control starts.
fn start(hub: &TestHub, ready: bool) -> (Peer, tokio::task::JoinHandle<()>) {
    let (frames_tx, frames) = mpsc::unbounded_channel();
    let (says, says_rx) = mpsc::unbounded_channel();
    let ready = Arc::new(AtomicBool::new(ready));
    let keep_alives = Arc::new(AtomicUsize::new(0));
    let mut transport = Channels {
        frames: frames_tx,
        says: says_rx,
        ready: Arc::clone(&ready),
        keep_alives: Arc::clone(&keep_alives),
    };
    let handle = hub.hub.clone();
    let relay = tokio::spawn(async move { relay(&handle, &mut transport).await });
    let peer = Peer {
        frames,
        says,
        ready,
        keep_alives,
    };
    (peer, relay)
}

fn is_hello(message: &HubMessage) -> bool {
    matches!(message, HubMessage::Hello { .. })
}

fn error_text(message: HubMessage) -> String {
    match message {
        HubMessage::Error { message } => message,
        other => panic!("expected an error, got {other:?}"),
    }
}

#[tokio::test]
async fn requests_pass_refusals_are_answered_and_a_broken_stream_ends_the_relay() {
    let (config, repo) = TestHub::config();
    let hub = TestHub::start(config, repo).await;
    let (mut peer, relay) = start(&hub, true);
    assert!(is_hello(&peer.message().await));
    assert_eq!(peer.message().await, HubMessage::Live);

    peer.say(Inbound::Request(
        r#"{"type":"create","title":"t"}"#.to_owned(),
    ));
    assert!(matches!(peer.message().await, HubMessage::Created { .. }));
    peer.say(Inbound::Request("not json".to_owned()));
    assert!(error_text(peer.message().await).starts_with("bad request: "));
    peer.say(Inbound::Refused("binary frames are output".to_owned()));
    assert_eq!(error_text(peer.message().await), "binary frames are output");
    peer.say(Inbound::KeepAliveDue);
    peer.say(Inbound::Handled);
    peer.say(Inbound::KeepAliveDue);
    peer.say(Inbound::Broken("frame of unknown kind 9".to_owned()));
    assert_eq!(error_text(peer.message().await), "frame of unknown kind 9");
    within("the relay to end", relay).await.unwrap();
    assert_eq!(peer.keep_alives.load(Ordering::SeqCst), 2);
    hub.shutdown().await;
}

/// A peer that stops taking frames during a flood is dropped by the hub (it fell behind);
/// the relay takes nothing while the transport is not ready, then attaches the peer again
/// on the same connection, which then starts over at a second `hello`.
#[tokio::test]
async fn a_peer_the_hub_dropped_is_attached_again_on_the_same_connection() {
    let (mut config, repo) = TestHub::config();
    config.startup_commands = vec![startup("flood", "yes relay-flood", None)];
    let hub = TestHub::start(config, repo).await;
    let (mut peer, relay) = start(&hub, false);
    tokio::time::sleep(Duration::from_millis(500)).await;
    assert!(
        peer.frames.try_recv().is_err(),
        "a transport that is not ready was given a frame"
    );
    // Stretches of not reading, each longer than the hub's stall limit (1 s after it
    // pauses for this client), until the hub has dropped it and the relay attached again.
    let mut hellos = 0;
    within_longer(Duration::from_secs(30), "a second hello", async {
        while hellos < 2 {
            peer.ready.store(true, Ordering::SeqCst);
            peer.say(Inbound::Handled);
            tokio::time::sleep(Duration::from_millis(300)).await;
            peer.ready.store(false, Ordering::SeqCst);
            while let Ok(frame) = peer.frames.try_recv() {
                if let Frame::Message(message) = frame
                    && is_hello(&message)
                {
                    hellos += 1;
                }
            }
            if hellos < 2 {
                tokio::time::sleep(Duration::from_millis(1500)).await;
            }
        }
    })
    .await;
    assert!(
        !relay.is_finished(),
        "the relay ended instead of attaching again"
    );
    // The relay goes round once more while its peer is not ready, so it takes no frame:
    // the end of the hub must reach it all the same.
    peer.say(Inbound::Handled);
    hub.shutdown().await;
    within("the relay to end with the hub", relay)
        .await
        .unwrap();
}

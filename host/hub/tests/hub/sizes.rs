//! Shared sizes (docs/hub.md): two clients of different sizes on one real pane; `stty size`
//! in the pane says which one the PTY follows.

use nightcrow_client_protocol::HubMessage;
use nightcrow_guard::PaneId;

use crate::util::{TestHub, Watcher, within};

const BIG: (u16, u16) = (48, 200);
const SMALL: (u16, u16) = (28, 100);

/// A hub with one shell pane that the test's client (`big`) opened at its size, and a
/// second client (`small`) that attached later and sized the pane to itself.
async fn two_clients() -> (TestHub, Watcher, PaneId) {
    let (config, repo) = TestHub::config();
    let mut hub = TestHub::start(config, repo).await;
    send(&hub.client, &create(BIG)).await;
    let pane = PaneId::new(hub.client.nth_created(0).await);
    let mut small = Watcher::new(within("attach", hub.hub.attach()).await.expect("attach"));
    small.nth_created(0).await;
    send(&small, &resize(pane, SMALL)).await;
    hub.client.saw(resized(pane, SMALL)).await;
    (hub, small, pane)
}

fn create((rows, cols): (u16, u16)) -> String {
    format!(r#"{{"type":"create","command":"exec sh","rows":{rows},"cols":{cols}}}"#)
}

fn resize(pane: PaneId, (rows, cols): (u16, u16)) -> String {
    format!(r#"{{"type":"resize","pane":{pane},"rows":{rows},"cols":{cols}}}"#)
}

fn input(pane: PaneId, data: &str) -> String {
    serde_json::json!({ "type": "input", "pane": pane.get(), "data": data }).to_string()
}

fn resized(pane: PaneId, (rows, cols): (u16, u16)) -> HubMessage {
    HubMessage::Resized {
        pane: pane.get(),
        rows,
        cols,
    }
}

async fn send(client: &Watcher, json: &str) {
    within("send", client.client.send_json(json))
        .await
        .expect("the hub takes requests");
}

/// Has `typist` make the pane print `tag` and its PTY size (typing is activity).
async fn ask_size(typist: &Watcher, pane: PaneId, tag: &str) {
    send(typist, &input(pane, &print_size(tag))).await;
}

/// A command line that prints `=TAG ROWS COLS`.
fn print_size(tag: &str) -> String {
    format!("echo \"={tag}\" $(stty size)\r")
}

/// What the pane printed for `tag`, e.g. `B1 48 200`, once it is whole in `reader`'s
/// stream (the echo of the command has a quote after the tag, never a space).
async fn reported(reader: &mut Watcher, pane: PaneId, tag: &str) -> String {
    let start = format!("={tag} ");
    within(&format!("{tag} in the output"), async {
        loop {
            let output = reader
                .output
                .get(&pane.get())
                .map_or(&[][..], Vec::as_slice);
            let text = String::from_utf8_lossy(output);
            if let Some(at) = text.find(&start).map(|at| at + 1)
                && let Some(len) = text[at..].find(['\r', '\n'])
            {
                return text[at..at + len].to_owned();
            }
            assert!(reader.take_one().await, "the client stream ended");
        }
    })
    .await
}

/// tmux's `latest`: the client that typed or resized last sets the size; typing from the
/// other one gives the pane that one's size.
#[tokio::test]
async fn the_most_recently_active_client_sets_the_size() {
    let (mut hub, small, pane) = two_clients().await;
    ask_size(&small, pane, "S1").await;
    assert_eq!(reported(&mut hub.client, pane, "S1").await, "S1 28 100");
    ask_size(&hub.client, pane, "B1").await;
    assert_eq!(reported(&mut hub.client, pane, "B1").await, "B1 48 200");
    hub.client.saw(resized(pane, BIG)).await;
    ask_size(&small, pane, "S2").await;
    assert_eq!(reported(&mut hub.client, pane, "S2").await, "S2 28 100");
    hub.shutdown().await;
}

/// The smaller client detaches: the pane goes back to the size of the client that is left.
#[tokio::test]
async fn a_client_that_detaches_gives_the_size_back() {
    let (mut hub, small, pane) = two_clients().await;
    drop(small);
    hub.client.saw(resized(pane, BIG)).await;
    // Typed through the handle, which is no client: nothing but the detach resized it.
    within("input", hub.hub.input(pane, &print_size("D")))
        .await
        .expect("input");
    assert_eq!(reported(&mut hub.client, pane, "D").await, "D 48 200");
    hub.shutdown().await;
}

/// A client's first size for a pane someone else just opened only says what it would
/// want: the pane keeps the size of the client that opened it, and the other client is told.
#[tokio::test]
async fn following_a_pane_another_client_opened_does_not_take_it() {
    let (mut hub, mut small, first) = two_clients().await;
    send(&hub.client, &create(BIG)).await;
    let pane = PaneId::new(hub.client.nth_created(1).await);
    assert_ne!(pane, first);
    small.nth_created(1).await;
    send(&small, &resize(pane, SMALL)).await;
    small.saw(resized(pane, BIG)).await;
    within("input", hub.hub.input(pane, &print_size("N")))
        .await
        .expect("input");
    assert_eq!(reported(&mut hub.client, pane, "N").await, "N 48 200");
    hub.shutdown().await;
}

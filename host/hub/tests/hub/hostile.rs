//! Plugins that flood, spin and bomb memory never hold back pane output: every byte a pane
//! writes reaches the client, in order (SPEC §4.4, §5.5). Measured in bytes, never in time.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use nightcrow_client_protocol::Frame;
use nightcrow_guard::PaneId;
use nightcrow_hub::Hub;
use nightcrow_plugin_host::RuntimeKind;
use nightcrow_test_plugin_artifacts as guests;

use crate::util::{TestHub, plugin, runtime, startup, within, within_longer};

/// The stream waits for a line of input, so that it starts once the client is attached
/// (before that, output is kept only as far as the scrollback reaches).
///
/// Reads the client stream until pane `pane` has printed `last` (one number per line, as
/// `seq` writes them through the PTY), then checks that every line `1..=last` came, in
/// order. The reading loop only copies bytes: the check runs after it, so a test built
/// without optimisations still reads as fast as a client must — unless `pace` (bytes a
/// second) makes it a slow client on purpose.
async fn expect_sequence(hub: &mut TestHub, pane: PaneId, last: u64, pace: Option<u64>) {
    let end = format!("\n{last}\r\n");
    let mut output: Vec<u8> = Vec::new();
    let started = tokio::time::Instant::now();
    // Below ten million a line is at most 9 bytes: 7 digits and `\r\n`.
    let paced_for = pace.map_or(Duration::ZERO, |pace| Duration::from_secs(last * 9 / pace));
    within_longer(
        paced_for,
        &format!("seq 1 {last} from pane {pane}"),
        async {
            while !output.ends_with(end.as_bytes()) {
                let frame = hub.client.client.recv().await;
                let frame =
                    frame.unwrap_or_else(|| panic!("disconnected after {} bytes", output.len()));
                if let Frame::Output { pane: from, bytes } = frame
                    && from == pane.get()
                {
                    output.extend_from_slice(&bytes);
                    if let Some(pace) = pace {
                        keep_pace(started, output.len(), pace).await;
                    }
                }
            }
        },
    )
    .await;
    let text = std::str::from_utf8(&output).expect("seq prints ASCII");
    // The echo of the line that started the stream comes first.
    let numbers: Vec<&str> = text
        .trim_start_matches("\r\n")
        .split_terminator("\r\n")
        .collect();
    assert_eq!(numbers.len() as u64, last, "lines lost or added");
    for (expected, line) in (1..=last).zip(numbers) {
        assert_eq!(line, expected.to_string(), "out of order or lost");
    }
}

/// Waits until `bytes` taken since `started` are at most `per_second`: a slow client on
/// purpose. Paced on the total, not per frame: a timer rounds each short sleep up.
async fn keep_pace(started: tokio::time::Instant, bytes: usize, per_second: u64) {
    let due = Duration::from_micros(bytes as u64 * 1_000_000 / per_second);
    tokio::time::sleep_until(started + due).await;
}

/// A plugin flooding commands owns a pane that streams 5 MB: all of it arrives, although the
/// plugin reads none of the events it is sent (it floods forever): they wait in, or are
/// dropped from, its bounded queue, never in front of the pane.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_flooding_plugin_does_not_hold_back_its_pane() {
    const LAST: u64 = 700_000;
    let (mut config, repo) = TestHub::config();
    config.startup_commands = vec![startup(
        "stream",
        &format!("read go; seq 1 {LAST}; exec cat"),
        Some("flood"),
    )];
    config.plugins = vec![plugin(
        "flood",
        guests::COMMAND_FLOOD,
        RuntimeKind::Wasm,
        &[],
    )];
    let mut hub = TestHub::start(config, repo).await;
    let pane = hub.startup_pane(0).await;
    hub.input(pane, "\r").await;
    expect_sequence(&mut hub, pane, LAST, None).await;
    let status = hub.hub.status().await.expect("status");
    let health = status.plugins[0].health.as_ref().expect("the flood runs");
    assert_eq!(
        health.state,
        nightcrow_plugin_host::PluginState::Running,
        "{health:?}"
    );
    hub.shutdown().await;
}

/// A flooding, a spinning and a memory-bombing plugin in the same hub while a pane streams
/// about 50 MB: every byte arrives in order, and the hub still serves the other pane.
///
/// The hub and its plugins run on a runtime of their own and the client reads on the test's
/// thread, as a daemon's socket writer would: a guest spinning on a shared worker thread
/// until its CPU slice ends must not be what makes the client fall behind.
#[test]
fn hostile_plugins_do_not_disturb_a_large_stream() {
    const LAST: u64 = 6_000_000;
    let (mut config, repo) = TestHub::config();
    config.startup_commands = vec![
        startup(
            "stream",
            &format!("read go; seq 1 {LAST}; exec cat"),
            Some("flood"),
        ),
        startup("spun", "exec cat", Some("spin")),
    ];
    let mut bomb = plugin("bomb", guests::MEMORY_BOMB, RuntimeKind::Wasm, &[]);
    bomb.watch_on_signal = true;
    config.plugins = vec![
        plugin("flood", guests::COMMAND_FLOOD, RuntimeKind::Wasm, &[]),
        plugin("spin", guests::SPIN_AFTER_EVENT, RuntimeKind::Wasm, &[]),
        bomb,
    ];
    let hub_runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("hub runtime");
    let hub = {
        let _context = hub_runtime.enter();
        Hub::spawn(config.clone(), runtime()).expect("hub spawns")
    };
    let client_runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("client runtime");
    client_runtime.block_on(async {
        let mut hub = TestHub::attach(hub, config, repo).await;
        let stream = hub.startup_pane(0).await;
        let other = hub.startup_pane(1).await;
        hub.input(stream, "\r").await;
        expect_sequence(&mut hub, stream, LAST, None).await;
        hub.input(other, "still served\r").await;
        hub.client.output_contains(other, "still served").await;
        hub.shutdown().await;
    });
}

/// About 26 MB of output: more than a client may have queued (CLIENT_QUEUE_BYTES).
const FLOOD_LINES: u64 = 3_000_000;

/// A hub with one pane that prints `seq 1 FLOOD_LINES` once it gets a line of input.
async fn hub_with_a_flood() -> (TestHub, PaneId) {
    let (config, repo) = TestHub::config();
    let hub = TestHub::start(config, repo).await;
    let pane = within(
        "create",
        hub.hub
            .create(None, Some(format!("read go; seq 1 {FLOOD_LINES}"))),
    )
    .await
    .expect("a pane");
    (hub, pane)
}

/// A client slower than the flood (3 MB/s; the pane's `seq` is faster) is not
/// disconnected: the hub waits for it, and it gets every line.
#[tokio::test]
async fn a_client_slower_than_a_flood_slows_the_pane_and_stays() {
    let (mut hub, pane) = hub_with_a_flood().await;
    hub.input(pane, "\r").await;
    expect_sequence(&mut hub, pane, FLOOD_LINES, Some(3_000_000)).await;
    hub.shutdown().await;
}

/// A client that stops reading is disconnected once the hub has waited for it long enough:
/// what it got is a gapless prefix of the stream, and then its stream ends; a client that
/// reads is unaffected.
#[tokio::test]
async fn a_client_that_falls_behind_is_disconnected_without_gaps() {
    let (mut hub, pane) = hub_with_a_flood().await;
    let mut sleeper = within("attach", hub.hub.attach()).await.expect("attach");
    hub.input(pane, "\r").await;
    expect_sequence(&mut hub, pane, FLOOD_LINES, None).await;
    let mut got: Vec<u8> = Vec::new();
    within("the slow client's end", async {
        while let Some(frame) = sleeper.recv().await {
            if let Frame::Output { pane: from, bytes } = frame
                && from == pane.get()
            {
                got.extend_from_slice(&bytes);
            }
        }
    })
    .await;
    let text = std::str::from_utf8(&got).expect("seq prints ASCII");
    let mut lines: Vec<&str> = text.trim_start_matches("\r\n").split("\r\n").collect();
    // The stream may end between a line's `\r` and its `\n`.
    let partial = lines.pop().unwrap_or_default().trim_end_matches('\r');
    assert!((lines.len() as u64) < FLOOD_LINES, "never disconnected");
    for (expected, line) in (1..).zip(&lines) {
        assert_eq!(*line, expected.to_string(), "a gap");
    }
    let next = (lines.len() + 1).to_string();
    assert!(next.starts_with(partial), "a gap at the end: {partial:?}");
    hub.shutdown().await;
}

/// While a client is far behind on one pane's flood, only that pane waits: a line typed into
/// another pane reaches the slow client after at most a frame or two of the flood, not after
/// it has worked its backlog down to 1 MiB, as when every pane of the hub waited for it.
/// Measured in the flood's bytes the slow client took between the typing and the echo
/// (with every pane waiting, as before, over 2.5 MiB).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_client_behind_on_one_panes_flood_still_gets_another_panes_echo() {
    const MIB: usize = 1024 * 1024;
    let (mut hub, flood) = hub_with_a_flood().await;
    let other = within("create", hub.hub.create(None, Some("exec cat".to_owned())))
        .await
        .expect("a pane");
    let slow = within("attach", hub.hub.attach()).await.expect("attach");
    let slow_took = Arc::new(AtomicUsize::new(0));
    let mut slow = tokio::spawn(take_slowly_until_echo(
        slow,
        flood,
        other,
        Arc::clone(&slow_took),
    ));
    hub.input(flood, "\r").await;
    // This client takes every frame at once, so when the flood stops reaching it, the hub
    // holds the flood for the slow one: it is behind, with more than 3 MiB still queued.
    within("the flood waits for the slow client", async {
        let flood_seen = |hub: &TestHub| hub.client.output.get(&flood.get()).map_or(0, Vec::len);
        loop {
            tokio::select! {
                alive = hub.client.take_one() => assert!(alive, "the client stream ended"),
                () = tokio::time::sleep(Duration::from_millis(50)) => {
                    if flood_seen(&hub) > MIB {
                        return;
                    }
                }
            }
        }
    })
    .await;
    let took_at_typing = slow_took.load(Ordering::SeqCst);
    hub.input(other, "ping\r").await;
    let took_at_echo = within("the echo reaches the slow client", async {
        loop {
            tokio::select! {
                took = &mut slow => break took.expect("the slow client's task"),
                // Keeps this client from falling behind as well.
                _ = hub.client.take_one() => {}
            }
        }
    })
    .await;
    let waited = took_at_echo - took_at_typing;
    assert!(
        waited < 2 * MIB,
        "the echo came after {waited} bytes of the flood: the pane waited for the backlog"
    );
    hub.shutdown().await;
}

/// Takes frames at 3 MB/s of `flood`'s output, counting it in `took`, until `other` echoes
/// `ping`; returns how much of the flood it had taken by then.
async fn take_slowly_until_echo(
    mut client: nightcrow_hub::Client,
    flood: PaneId,
    other: PaneId,
    took: Arc<AtomicUsize>,
) -> usize {
    const PACE: u64 = 3_000_000;
    let started = tokio::time::Instant::now();
    let mut echo = Vec::new();
    while !String::from_utf8_lossy(&echo).contains("ping") {
        let frame = client.recv().await;
        let Some(frame) = frame else {
            panic!("the slow client was disconnected");
        };
        match frame {
            Frame::Output { pane, bytes } if pane == flood.get() => {
                let total = took.fetch_add(bytes.len(), Ordering::SeqCst) + bytes.len();
                keep_pace(started, total, PACE).await;
            }
            Frame::Output { pane, bytes } if pane == other.get() => echo.extend_from_slice(&bytes),
            _ => {}
        }
    }
    took.load(Ordering::SeqCst)
}

//! One browser tab's WebSocket: the hub's client protocol as it is on the socket, JSON
//! control messages as text messages and output frames (`u32 LE pane id + bytes`) as binary
//! ones (SPEC §8). The page's requests go to the hub unread, which validates them and
//! answers a bad one with `error` in this stream; the connection carries on.
//!
//! The transport adds two things of its own, as the socket adds its length prefix:
//! - **flow control**: the page acknowledges the output bytes its terminal has finished
//!   drawing (`{"type":"ack","bytes":N}`, a running total, never passed to the hub). More
//!   than [`UNACKED_PAUSE_ABOVE`] bytes unacknowledged, and no more frames are taken from the hub
//!   until fewer than [`UNACKED_RESUME_BELOW`] are: a busy browser is never buried. The hub goes
//!   on producing and drops this client if it falls too far behind; the socket then
//!   attaches again, and the page, on the new `hello`, starts over from the replay (the
//!   current scrollback) — as the TUI does;
//! - **keep-alive**: a ping every [`PING_EVERY`], so that idle proxies keep the socket.

use std::time::Duration;

use axum::extract::ws::{Message, WebSocket};
use nightcrow_hub::{Client, Frame, HubHandle, HubMessage, output_frame};
use serde::Deserialize;

/// Unacknowledged output bytes that pause the stream.
pub const UNACKED_PAUSE_ABOVE: u64 = 1024 * 1024;
/// Unacknowledged output bytes below which a paused stream resumes.
pub const UNACKED_RESUME_BELOW: u64 = 256 * 1024;
/// How often an idle socket is pinged.
pub const PING_EVERY: Duration = Duration::from_secs(30);

/// What the page may send that is the transport's, not the hub's.
#[derive(Deserialize)]
#[serde(tag = "type", rename_all = "snake_case", deny_unknown_fields)]
enum TransportMessage {
    /// The running total of output bytes the page has drawn.
    Ack { bytes: u64 },
}

/// Carries one attachment of `hub` until the page leaves or the hub shuts down.
pub async fn serve(mut socket: WebSocket, hub: HubHandle) {
    let Ok(mut client) = hub.attach().await else {
        let _ = send_error(&mut socket, "the hub has shut down").await;
        return;
    };
    let mut sent: u64 = 0;
    let mut acked: u64 = 0;
    let mut paused = false;
    let mut ping = tokio::time::interval(PING_EVERY);
    ping.tick().await;
    loop {
        tokio::select! {
            frame = client.recv(), if !paused => {
                let message = match frame {
                    Some(Frame::Message(message)) => Message::text(message.to_json()),
                    Some(Frame::Output { pane, bytes }) => {
                        sent += bytes.len() as u64;
                        paused = sent - acked > UNACKED_PAUSE_ABOVE;
                        Message::binary(output_frame(pane, &bytes))
                    }
                    None => match reattach(&hub).await {
                        Some(again) => {
                            client = again;
                            continue;
                        }
                        None => return,
                    },
                };
                if socket.send(message).await.is_err() {
                    return;
                }
            }
            incoming = socket.recv() => match incoming {
                Some(Ok(Message::Text(text))) => {
                    match serde_json::from_str::<TransportMessage>(text.as_str()) {
                        Ok(TransportMessage::Ack { bytes }) => {
                            acked = acked.max(bytes.min(sent));
                            if paused && sent - acked < UNACKED_RESUME_BELOW {
                                paused = false;
                            }
                        }
                        Err(_) => {
                            if client.send_json(text.as_str()).await.is_err() {
                                return;
                            }
                        }
                    }
                }
                Some(Ok(Message::Binary(_))) => {
                    if send_error(&mut socket, "binary messages are output, not requests")
                        .await
                        .is_err()
                    {
                        return;
                    }
                }
                Some(Ok(Message::Ping(_) | Message::Pong(_))) => {}
                // Closed, or broken (an oversize message ends it before it is read).
                Some(Ok(Message::Close(_)) | Err(_)) | None => return,
            },
            _ = ping.tick() => {
                if socket.send(Message::Ping(Default::default())).await.is_err() {
                    return;
                }
            }
        }
    }
}

/// A new attachment after the hub dropped this client (it fell behind); `None` once the
/// hub is gone.
async fn reattach(hub: &HubHandle) -> Option<Client> {
    tracing::debug!("the hub dropped a web client; attaching again");
    hub.attach().await.ok()
}

async fn send_error(socket: &mut WebSocket, message: &str) -> Result<(), axum::Error> {
    let error = HubMessage::Error {
        message: message.to_owned(),
    };
    socket.send(Message::text(error.to_json())).await
}

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
//!
//! The loop is the hub's one relay (`nightcrow_hub::relay`), which the daemon's socket
//! uses too; this module is only the WebSocket's side of it.

use std::time::Duration;

use axum::extract::ws::{Message, WebSocket};
use nightcrow_client_protocol::web::PageTransportMessage;
use nightcrow_client_protocol::{Frame, output_frame};
use nightcrow_hub::HubHandle;
use nightcrow_hub::relay::{Inbound, PeerGone, Transport, relay};

/// Unacknowledged output bytes that pause the stream.
pub const UNACKED_PAUSE_ABOVE: u64 = 1024 * 1024;
/// Unacknowledged output bytes below which a paused stream resumes.
pub const UNACKED_RESUME_BELOW: u64 = 256 * 1024;
/// How often an idle socket is pinged.
pub const PING_EVERY: Duration = Duration::from_secs(30);

/// Carries one attachment of `hub` until the page leaves or the hub shuts down.
pub async fn serve(socket: WebSocket, hub: HubHandle) {
    let mut ping = tokio::time::interval(PING_EVERY);
    ping.tick().await;
    let mut page = PageSocket {
        socket,
        sent: 0,
        acked: 0,
        paused: false,
        ping,
    };
    relay(&hub, &mut page).await;
}

/// The page's WebSocket as a [`Transport`]: output counted against the page's `ack`s.
struct PageSocket {
    socket: WebSocket,
    /// Output bytes sent, and the most of them the page has said it drew.
    sent: u64,
    acked: u64,
    paused: bool,
    ping: tokio::time::Interval,
}

impl Transport for PageSocket {
    async fn send(&mut self, frame: Frame) -> Result<(), PeerGone> {
        let message = match frame {
            Frame::Message(message) => Message::text(message.to_json()),
            Frame::Output { pane, bytes } => {
                self.sent += bytes.len() as u64;
                self.paused = self.sent - self.acked > UNACKED_PAUSE_ABOVE;
                Message::binary(output_frame(pane, &bytes))
            }
        };
        self.socket.send(message).await.map_err(|_| PeerGone)
    }

    async fn recv(&mut self) -> Inbound {
        tokio::select! {
            incoming = self.socket.recv() => match incoming {
                Some(Ok(Message::Text(text))) => match PageTransportMessage::parse(text.as_str()) {
                    Some(PageTransportMessage::Ack { bytes }) => {
                        self.acked = self.acked.max(bytes.min(self.sent));
                        if self.paused && self.sent - self.acked < UNACKED_RESUME_BELOW {
                            self.paused = false;
                        }
                        Inbound::Handled
                    }
                    None => Inbound::Request(text.as_str().to_owned()),
                },
                Some(Ok(Message::Binary(_))) => {
                    Inbound::Refused("binary messages are output, not requests".to_owned())
                }
                Some(Ok(Message::Ping(_) | Message::Pong(_))) => Inbound::Handled,
                // Closed, or broken (an oversize message ends it before it is read).
                Some(Ok(Message::Close(_)) | Err(_)) | None => Inbound::Closed,
            },
            _ = self.ping.tick() => Inbound::KeepAliveDue,
        }
    }

    fn ready(&self) -> bool {
        !self.paused
    }

    async fn keep_alive(&mut self) -> Result<(), PeerGone> {
        let ping = Message::Ping(Default::default());
        self.socket.send(ping).await.map_err(|_| PeerGone)
    }
}

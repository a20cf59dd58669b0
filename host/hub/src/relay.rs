//! The one loop between a hub [`Client`] and a connection (the daemon's socket or pipe, the
//! web client's WebSocket): hub frames out, the peer's requests in, until either side ends.
//! How a frame is written, what the peer may say that is the connection's own (the page's
//! `ack`), keep-alive and flow control are the [`Transport`]'s; the end of the stream,
//! refused input, a broken stream and a client the hub dropped are handled here, once.

use std::future::Future;
use std::ops::ControlFlow;

use nightcrow_client_protocol::{Frame, HubMessage};

use crate::handle::HubHandle;

/// What a transport read from its peer.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Inbound {
    /// A control message for the hub, passed on as the peer wrote it: the hub parses it and
    /// answers a bad one with `error` in this client's stream.
    Request(String),
    /// Something the transport took care of itself (an `ack`, a pong): nothing for the hub.
    Handled,
    /// The transport's keep-alive is due: [`Transport::keep_alive`] is written next.
    KeepAliveDue,
    /// Something the peer may not send: it is told why, and the connection carries on.
    Refused(String),
    /// The stream is out of step (a frame that cannot be read): the peer is told why and
    /// the connection ends.
    Broken(String),
    /// The peer left, or its connection broke.
    Closed,
}

/// A write to the peer failed: it is gone.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PeerGone;

/// One connection's side of an attachment.
pub trait Transport: Send {
    /// Writes one hub frame to the peer.
    fn send(&mut self, frame: Frame) -> impl Future<Output = Result<(), PeerGone>> + Send;

    /// The next thing the peer said. Cancel-safe: it races the hub's next frame.
    fn recv(&mut self) -> impl Future<Output = Inbound> + Send;

    /// Whether the hub's next frame may be taken now. A transport with flow control says no
    /// while its peer is behind; [`recv`](Self::recv) learns when it has caught up.
    fn ready(&self) -> bool {
        true
    }

    /// Writes the keep-alive that [`Inbound::KeepAliveDue`] asked for.
    fn keep_alive(&mut self) -> impl Future<Output = Result<(), PeerGone>> + Send {
        async { Ok(()) }
    }
}

/// Carries an attachment of `hub` over `transport` until the peer leaves or the hub shuts
/// down. When the hub drops the client (it fell behind and stayed there, docs/hub.md) the
/// relay attaches again on the same connection: the peer gets a new `hello` and a fresh
/// replay, which every client takes as "start over".
pub async fn relay(hub: &HubHandle, transport: &mut impl Transport) {
    let Ok(mut client) = hub.attach().await else {
        let _ = transport.send(error("the hub has shut down")).await;
        return;
    };
    loop {
        tokio::select! {
            // A peer that is behind takes no frame, so it would not see the stream end.
            () = hub.closed(), if !transport.ready() => return,
            frame = client.recv(), if transport.ready() => {
                let Some(frame) = frame else {
                    tracing::debug!("the hub dropped a client; attaching again");
                    match hub.attach().await {
                        Ok(again) => client = again,
                        Err(_) => return,
                    }
                    continue;
                };
                if transport.send(frame).await.is_err() {
                    return;
                }
            }
            inbound = transport.recv() => match take(transport, inbound).await {
                ControlFlow::Continue(Some(text)) => {
                    if client.send_json(&text).await.is_err() {
                        return;
                    }
                }
                ControlFlow::Continue(None) => {}
                ControlFlow::Break(()) => return,
            },
        }
    }
}

/// Does what every connection does with `inbound` whoever reads its requests (the relay,
/// or the daemon before `attach`): writes a keep-alive that is due, answers a refusal with
/// `error` and carries on, answers a broken stream and ends. A request comes back to the
/// caller; `Break` means the connection is over.
pub async fn take(
    transport: &mut impl Transport,
    inbound: Inbound,
) -> ControlFlow<(), Option<String>> {
    let written = match inbound {
        Inbound::Request(text) => return ControlFlow::Continue(Some(text)),
        Inbound::Handled => Ok(()),
        Inbound::KeepAliveDue => transport.keep_alive().await,
        Inbound::Refused(why) => transport.send(error(&why)).await,
        Inbound::Broken(why) => {
            let _ = transport.send(error(&why)).await;
            return ControlFlow::Break(());
        }
        Inbound::Closed => return ControlFlow::Break(()),
    };
    match written {
        Ok(()) => ControlFlow::Continue(None),
        Err(PeerGone) => ControlFlow::Break(()),
    }
}

/// The `error` message a peer is told.
fn error(message: &str) -> Frame {
    Frame::Message(HubMessage::Error {
        message: message.to_owned(),
    })
}

//! The CLI's side of a daemon connection: connect, say hello, ask, read the answer; or
//! attach to a hub and speak its client protocol through two channels.

use std::path::Path;

use nightcrow_hub::{ClientRequest, Frame, HubMessage, parse_output_frame};
use tokio::io::{ReadHalf, WriteHalf};
use tokio::sync::mpsc;

use crate::Home;
use crate::frame::{FrameError, WireFrame, read_frame, write_frame};
use crate::message::{DAEMON_PROTOCOL_VERSION, DaemonAnswer, DaemonRequest};
use crate::transport::{self, ClientStream};

/// Why talking to the daemon failed.
#[derive(Debug, thiserror::Error)]
pub enum ClientError {
    #[error(
        "no nightcrow daemon is running for {0} (start one with `nightcrow` or `nightcrow -d`)"
    )]
    NotRunning(String),
    #[error("the daemon refused: {0}")]
    Refused(String),
    #[error("the daemon hung up")]
    HungUp,
    #[error(transparent)]
    WireFrame(#[from] FrameError),
}

/// A greeted connection to the daemon.
pub struct Connection {
    reader: ReadHalf<ClientStream>,
    writer: WriteHalf<ClientStream>,
}

impl Connection {
    /// Connects to the daemon of `home` and exchanges `hello`.
    pub async fn open(home: &Home) -> Result<Connection, ClientError> {
        let stream = transport::connect(home)
            .await
            .map_err(|_| ClientError::NotRunning(home.root().display().to_string()))?;
        let (reader, writer) = tokio::io::split(stream);
        let mut connection = Connection { reader, writer };
        connection
            .ask(&DaemonRequest::Hello {
                version: DAEMON_PROTOCOL_VERSION,
            })
            .await?;
        Ok(connection)
    }

    /// Sends one request and returns its answer; an `error` answer is an `Err`.
    pub async fn ask(&mut self, request: &DaemonRequest) -> Result<DaemonAnswer, ClientError> {
        self.send(&request_json(request)).await?;
        match self.next().await? {
            Some(WireFrame::Control(text)) => match serde_json::from_str(&text) {
                Ok(DaemonAnswer::Error { message }) => Err(ClientError::Refused(message)),
                Ok(answer) => Ok(answer),
                Err(_) => Err(ClientError::Refused(text)),
            },
            Some(WireFrame::Output(_)) | None => Err(ClientError::HungUp),
        }
    }

    /// Sends one control message as it is.
    pub async fn send(&mut self, text: &str) -> Result<(), ClientError> {
        Ok(write_frame(&mut self.writer, &WireFrame::Control(text.to_owned())).await?)
    }

    /// The next frame from the daemon; `None` when it closed the connection.
    pub async fn next(&mut self) -> Result<Option<WireFrame>, ClientError> {
        Ok(read_frame(&mut self.reader).await?)
    }

    /// Attaches to the hub of `repo` (opened if it is not yet). Frames arrive on the first
    /// channel, starting with the hub's `hello`, read as fast as the daemon sends them so
    /// that a client drawing slowly is never the one the hub drops; the channel closes when
    /// the connection does. Requests put on the second are sent in order.
    pub async fn attach(
        mut self,
        repo: &Path,
    ) -> Result<
        (
            mpsc::UnboundedReceiver<Frame>,
            mpsc::UnboundedSender<ClientRequest>,
        ),
        ClientError,
    > {
        let repo = repo.to_owned();
        self.send(&request_json(&DaemonRequest::Attach { repo }))
            .await?;
        let hello = match self.next().await? {
            Some(WireFrame::Control(text)) => match serde_json::from_str::<HubMessage>(&text) {
                Ok(HubMessage::Error { message }) => return Err(ClientError::Refused(message)),
                Ok(message) => message,
                Err(_) => return Err(ClientError::Refused(text)),
            },
            Some(WireFrame::Output(_)) | None => return Err(ClientError::HungUp),
        };
        let (frames_tx, frames) = mpsc::unbounded_channel();
        let (requests, mut requests_rx) = mpsc::unbounded_channel::<ClientRequest>();
        let Connection {
            mut reader,
            mut writer,
        } = self;
        let _ = frames_tx.send(Frame::Message(hello));
        tokio::spawn(async move {
            while let Ok(Some(frame)) = read_frame(&mut reader).await {
                let frame = match frame {
                    WireFrame::Control(text) => match serde_json::from_str(&text) {
                        Ok(message) => Frame::Message(message),
                        Err(error) => {
                            tracing::warn!(%error, %text, "a hub message this client does not know");
                            continue;
                        }
                    },
                    WireFrame::Output(frame) => {
                        let Some((pane, _)) = parse_output_frame(&frame) else {
                            continue;
                        };
                        // The id is the first four bytes; the rest is shared, not copied.
                        let bytes = bytes::Bytes::from(frame).slice(4..);
                        Frame::Output { pane, bytes }
                    }
                };
                if frames_tx.send(frame).is_err() {
                    return;
                }
            }
        });
        tokio::spawn(async move {
            while let Some(request) = requests_rx.recv().await {
                let text = serde_json::to_string(&request).expect("requests serialise");
                if write_frame(&mut writer, &WireFrame::Control(text))
                    .await
                    .is_err()
                {
                    return;
                }
            }
        });
        Ok((frames, requests))
    }
}

fn request_json(request: &DaemonRequest) -> String {
    serde_json::to_string(request).expect("daemon requests serialise")
}

//! The CLI's side of a daemon connection: connect, say hello, ask, read the answer; or
//! attach to a hub and speak its client protocol through two channels.

use std::path::Path;

use futures::StreamExt;
use nightcrow_client_protocol::daemon::{DAEMON_PROTOCOL_VERSION, DaemonAnswer, DaemonRequest};
use nightcrow_client_protocol::frame::{FrameError, WireCodec, WireFrame, write_control};
use nightcrow_client_protocol::{ClientRequest, Frame, HubMessage, parse_output_frame};
use tokio::io::{ReadHalf, WriteHalf};
use tokio::sync::mpsc;
use tokio_util::codec::FramedRead;

use crate::Home;
use crate::endpoint::{self, ClientStream, ConnectError};

/// Why talking to the daemon failed.
#[derive(Debug, thiserror::Error)]
pub enum ClientError {
    #[error(
        "no nightcrow daemon is running for {0} (start one with `nightcrow` or `nightcrow -d`)"
    )]
    NotRunning(String),
    #[error("refusing to talk to the daemon's socket {0}")]
    Untrusted(String),
    #[error("the daemon refused: {0}")]
    Refused(String),
    #[error("the daemon hung up")]
    HungUp,
    #[error(transparent)]
    WireFrame(#[from] FrameError),
}

/// A greeted connection to the daemon.
pub struct Connection {
    home: Home,
    reader: FramedRead<ReadHalf<ClientStream>, WireCodec>,
    writer: WriteHalf<ClientStream>,
}

impl Connection {
    /// Connects to the daemon of `home` and exchanges `hello`.
    pub async fn open(home: &Home) -> Result<Connection, ClientError> {
        let stream = endpoint::connect(home).await.map_err(|error| match error {
            ConnectError::Unreachable(_) => {
                ClientError::NotRunning(home.root().display().to_string())
            }
            ConnectError::Untrusted(why) => ClientError::Untrusted(why),
        })?;
        let (reader, writer) = tokio::io::split(stream);
        let mut connection = Connection {
            home: home.clone(),
            reader: FramedRead::new(reader, WireCodec),
            writer,
        };
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
        Ok(write_control(&mut self.writer, text).await?)
    }

    /// The next frame from the daemon; `None` when it closed the connection.
    pub async fn next(&mut self) -> Result<Option<WireFrame>, ClientError> {
        Ok(self.reader.next().await.transpose()?)
    }

    /// Attaches to the hub of `repo` (opened if it is not yet). Frames arrive on the first
    /// channel, starting with the hub's `hello`, read as fast as the daemon sends them so
    /// that a client drawing slowly is not the one the hub drops; requests put on the
    /// second are sent in order.
    ///
    /// If the hub drops this client anyway (it fell behind, e.g. stopped or starved of CPU)
    /// the daemon attaches it again on the same connection, and if the daemon ends the
    /// connection (a restart) this attaches again by itself: either way the stream carries
    /// on with a new `hello` and a fresh replay, which a client takes as "start over". The
    /// first channel closes only when the daemon cannot be reached any more.
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
        let hello = self.start_attachment(repo).await?;
        let (frames_tx, frames) = mpsc::unbounded_channel();
        let (requests, requests_rx) = mpsc::unbounded_channel::<ClientRequest>();
        let _ = frames_tx.send(Frame::Message(hello));
        tokio::spawn(self.pump(repo.to_owned(), frames_tx, requests_rx));
        Ok((frames, requests))
    }

    /// Sends `attach` and reads the hub's `hello` (or the refusal).
    async fn start_attachment(&mut self, repo: &Path) -> Result<HubMessage, ClientError> {
        let request = DaemonRequest::Attach {
            repo: repo.to_owned(),
        };
        self.send(&request_json(&request)).await?;
        match self.next().await? {
            Some(WireFrame::Control(text)) => match serde_json::from_str::<HubMessage>(&text) {
                Ok(HubMessage::Error { message }) => Err(ClientError::Refused(message)),
                Ok(message) => Ok(message),
                Err(_) => Err(ClientError::Refused(text)),
            },
            Some(WireFrame::Output(_)) | None => Err(ClientError::HungUp),
        }
    }

    /// Moves frames and requests until the client lets go, attaching again when the
    /// daemon ends the stream while it still answers.
    async fn pump(
        self,
        repo: std::path::PathBuf,
        frames: mpsc::UnboundedSender<Frame>,
        mut requests: mpsc::UnboundedReceiver<ClientRequest>,
    ) {
        let Connection {
            home,
            mut reader,
            mut writer,
        } = self;
        loop {
            loop {
                tokio::select! {
                    request = requests.recv() => {
                        let Some(request) = request else {
                            return;
                        };
                        let text = serde_json::to_string(&request).expect("requests serialise");
                        if write_control(&mut writer, &text).await.is_err() {
                            break;
                        }
                    }
                    frame = reader.next() => {
                        let Some(Ok(frame)) = frame else {
                            break;
                        };
                        if let Some(frame) = hub_frame(frame)
                            && frames.send(frame).is_err()
                        {
                            return;
                        }
                    }
                }
            }
            if frames.is_closed() {
                return;
            }
            tracing::warn!("the daemon ended the attachment; attaching again");
            match reattach(&home, &repo).await {
                Some((connection, hello)) => {
                    reader = connection.reader;
                    writer = connection.writer;
                    if frames.send(Frame::Message(hello)).is_err() {
                        return;
                    }
                }
                None => return,
            }
        }
    }
}

/// Tries at attaching again: while a daemon holds the home (busy, or stopping for a
/// restart) and for [`RESTART_GRACE`] after none does (a restarted one coming up), at most
/// [`REATTACH_PATIENCE`] in all; `None` once it is gone.
async fn reattach(home: &Home, repo: &Path) -> Option<(Connection, HubMessage)> {
    let started = std::time::Instant::now();
    let mut unheld_since = None;
    while started.elapsed() < REATTACH_PATIENCE {
        if let Ok(mut connection) = Connection::open(home).await {
            match connection.start_attachment(repo).await {
                Ok(hello) => return Some((connection, hello)),
                Err(ClientError::Refused(_)) => return None,
                Err(_) => {}
            }
        }
        if home.is_held() {
            unheld_since = None;
        } else if unheld_since
            .get_or_insert_with(std::time::Instant::now)
            .elapsed()
            > RESTART_GRACE
        {
            return None;
        }
        tokio::time::sleep(std::time::Duration::from_millis(200)).await;
    }
    None
}

/// How long an attached client waits for a daemon to come back once none holds the home.
const RESTART_GRACE: std::time::Duration = std::time::Duration::from_secs(5);
/// How long it tries at all.
const REATTACH_PATIENCE: std::time::Duration = std::time::Duration::from_secs(60);

/// A frame of the wire as the hub's stream item; `None` for one this client cannot read
/// (logged: a newer daemon may know more messages).
fn hub_frame(frame: WireFrame) -> Option<Frame> {
    match frame {
        WireFrame::Control(text) => match serde_json::from_str(&text) {
            Ok(message) => Some(Frame::Message(message)),
            Err(error) => {
                tracing::warn!(%error, %text, "a hub message this client does not know");
                None
            }
        },
        WireFrame::Output(frame) => {
            let (pane, _) = parse_output_frame(&frame)?;
            // The id is the first four bytes; the rest is shared, not copied.
            let bytes = frame.slice(4..);
            Some(Frame::Output { pane, bytes })
        }
    }
}

fn request_json(request: &DaemonRequest) -> String {
    serde_json::to_string(request).expect("daemon requests serialise")
}

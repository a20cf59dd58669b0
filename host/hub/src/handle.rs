//! The hub's outside: a cheap, cloneable handle whose every call is a message on the
//! worker's bounded queue, and the attached clients' frame streams.

use std::sync::Arc;
use std::time::Duration;

use nightcrow_guard::PaneId;
use nightcrow_plugin_host::Health;
use tokio::sync::{broadcast, mpsc, oneshot, watch};

use crate::config::HubConfig;
use crate::snapshot::HubSnapshot;
use nightcrow_client_protocol::Notice;
use nightcrow_client_protocol::{ClientRequest, Frame, RecoveryReport};

/// Requests waiting for the worker before callers wait in `send` (SPEC §6.1).
pub const REQUEST_QUEUE: usize = 256;

/// Why a request failed; the text is what a client is told in `error`.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum HubError {
    #[error("no pane {0}")]
    UnknownPane(u64),
    #[error("{0}")]
    BadRequest(String),
    #[error("{0}")]
    Pane(String),
    #[error("the hub has shut down")]
    Gone,
}

/// What a request produced.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum RequestOutcome {
    Done,
    /// Panes opened by `create` (one) or `start` (any number).
    Opened(Vec<PaneId>),
}

/// Where the result of a client request goes.
#[derive(Debug)]
pub(crate) enum ReplyTo {
    /// A caller awaiting it.
    Caller(oneshot::Sender<Result<RequestOutcome, HubError>>),
    /// An attached client: errors become an `error` frame in its stream, successes are
    /// visible in the broadcast that follows.
    Client(u64),
}

#[derive(Debug)]
pub(crate) enum Request {
    Attach(oneshot::Sender<Client>),
    Client {
        request: Result<ClientRequest, String>,
        reply: ReplyTo,
    },
    Status(oneshot::Sender<HubStatus>),
    Snapshot(oneshot::Sender<HubSnapshot>),
    Reload {
        config: Box<HubConfig>,
        reply: oneshot::Sender<ReloadReport>,
    },
    Shutdown(oneshot::Sender<()>),
}

/// A snapshot of the hub for `nightcrow status`.
#[derive(Debug, Clone)]
pub struct HubStatus {
    /// In display order, held (exited) panes included.
    pub panes: Vec<PaneStatus>,
    pub plugins: Vec<PluginStatus>,
    pub holds: Vec<HoldStatus>,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PaneStatus {
    pub pane: PaneId,
    pub title: Option<String>,
    /// The title its program set (OSC 0 or 2), shown instead of `title`.
    pub program_title: Option<String>,
    pub generation: u32,
    pub alive: bool,
    /// The plugin that owns it.
    pub owner: Option<String>,
}

#[derive(Debug, Clone)]
pub struct PluginStatus {
    pub name: String,
    /// The running instance's health (state, dropped events, rejected lines…); `None` while
    /// none runs (backing off, or given up).
    pub health: Option<Health>,
    /// Supervision gave up on it (SPEC §4.6).
    pub gave_up: bool,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HoldStatus {
    /// The exited pane the hold keeps.
    pub pane: PaneId,
    /// Time left before the hold expires.
    pub expires_in: Duration,
    pub report: Option<RecoveryReport>,
}

/// What a reload changed (SPEC §6.5), by plugin name and pane id.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ReloadReport {
    pub started: Vec<String>,
    pub stopped: Vec<String>,
    /// Replaced by a new instance because its command, args, env, runtime or sandbox changed.
    pub restarted: Vec<String>,
    /// Panes whose relaunch hold ended because their plugin stopped or was replaced.
    pub retired: Vec<PaneId>,
    /// Plugins (started or restarted) whose instance failed to start; their panes run
    /// unwatched.
    pub failed: Vec<String>,
}

/// The way in to one hub. Cloning is cheap; every clone talks to the same worker.
#[derive(Debug, Clone)]
pub struct HubHandle {
    pub(crate) requests: mpsc::Sender<Request>,
    pub(crate) snapshots: watch::Receiver<Arc<HubSnapshot>>,
    /// Weak, so that a subscriber's stream ends with the worker.
    pub(crate) notices: broadcast::WeakSender<Notice>,
}

impl HubHandle {
    /// Attaches a client: its stream starts with `hello`, then `created` and the scrollback
    /// of every running pane, then the latest report of every hold, then live traffic.
    pub async fn attach(&self) -> Result<Client, HubError> {
        let (reply, client) = oneshot::channel();
        self.send(Request::Attach(reply)).await?;
        client.await.map_err(|_| HubError::Gone)
    }

    /// Carries out one client request and says how it went.
    pub async fn request(&self, request: ClientRequest) -> Result<RequestOutcome, HubError> {
        let (reply, outcome) = oneshot::channel();
        self.send(Request::Client {
            request: Ok(request),
            reply: ReplyTo::Caller(reply),
        })
        .await?;
        outcome.await.map_err(|_| HubError::Gone)?
    }

    /// Opens a client pane; `None` sizes take the hub's default.
    pub async fn create(
        &self,
        title: Option<String>,
        command: Option<String>,
    ) -> Result<PaneId, HubError> {
        let request = ClientRequest::Create {
            title,
            command,
            rows: None,
            cols: None,
        };
        match self.request(request).await? {
            RequestOutcome::Opened(panes) => panes.first().copied().ok_or(HubError::Gone),
            RequestOutcome::Done => Err(HubError::Gone),
        }
    }

    /// Human input: the owning plugin gets `user_input` and the token's budget is cleared
    /// before the bytes are written.
    pub async fn input(&self, pane: PaneId, data: &str) -> Result<(), HubError> {
        self.request(ClientRequest::Input {
            pane: pane.get(),
            data: data.to_owned(),
        })
        .await
        .map(drop)
    }

    pub async fn resize(&self, pane: PaneId, rows: u16, cols: u16) -> Result<(), HubError> {
        self.request(ClientRequest::Resize {
            pane: pane.get(),
            rows,
            cols,
        })
        .await
        .map(drop)
    }

    pub async fn close(&self, pane: PaneId) -> Result<(), HubError> {
        self.request(ClientRequest::Close { pane: pane.get() })
            .await
            .map(drop)
    }

    pub async fn cancel_recovery(&self, pane: PaneId) -> Result<(), HubError> {
        self.request(ClientRequest::CancelRecovery { pane: pane.get() })
            .await
            .map(drop)
    }

    /// Opens the startup commands that have no pane; returns the new panes.
    pub async fn start(&self) -> Result<Vec<PaneId>, HubError> {
        match self.request(ClientRequest::Start).await? {
            RequestOutcome::Opened(panes) => Ok(panes),
            RequestOutcome::Done => Ok(Vec::new()),
        }
    }

    /// The hub's snapshots as it publishes them (see [`HubSnapshot`]): the daemon's journal
    /// follows this.
    pub fn snapshots(&self) -> watch::Receiver<Arc<HubSnapshot>> {
        self.snapshots.clone()
    }

    /// The moments worth telling a person who is away ([`Notice`]), from now on, whether or
    /// not a client is attached: the daemon's `[[notify]]` hooks follow this. What the hub
    /// had before (restored panes included) is not news. A subscriber that reads too slowly
    /// loses the oldest and gets `Lagged` with their number. The stream ends (`Closed`)
    /// when the hub does.
    pub fn notices(&self) -> broadcast::Receiver<Notice> {
        match self.notices.upgrade() {
            Some(sender) => sender.subscribe(),
            None => broadcast::channel(1).1,
        }
    }

    /// A snapshot taken now, screens up to the last byte: for the journal's last write
    /// before a deliberate stop.
    pub async fn snapshot(&self) -> Result<HubSnapshot, HubError> {
        let (reply, snapshot) = oneshot::channel();
        self.send(Request::Snapshot(reply)).await?;
        snapshot.await.map_err(|_| HubError::Gone)
    }

    pub async fn status(&self) -> Result<HubStatus, HubError> {
        let (reply, status) = oneshot::channel();
        self.send(Request::Status(reply)).await?;
        status.await.map_err(|_| HubError::Gone)
    }

    /// Applies a new configuration (SPEC §6.5); the daemon has validated the whole file.
    pub async fn reload(&self, config: HubConfig) -> Result<ReloadReport, HubError> {
        let (reply, report) = oneshot::channel();
        self.send(Request::Reload {
            config: Box::new(config),
            reply,
        })
        .await?;
        report.await.map_err(|_| HubError::Gone)
    }

    /// Resolves once the hub has shut down: its worker, and every client's stream, is gone.
    pub async fn closed(&self) {
        self.requests.closed().await;
    }

    /// Stops the plugins (`shutdown`, grace, force), then the panes, then the worker.
    /// Idempotent: a hub already gone is fine.
    pub async fn shutdown(&self) {
        let (reply, done) = oneshot::channel();
        if self.send(Request::Shutdown(reply)).await.is_ok() {
            let _ = done.await;
        }
    }

    async fn send(&self, request: Request) -> Result<(), HubError> {
        self.requests
            .send(request)
            .await
            .map_err(|_| HubError::Gone)
    }
}

/// One attached client: its ordered frame stream and its way to send requests.
///
/// The stream ends when the hub shuts down, or when the client fell behind and stayed there
/// (docs/hub.md; it is disconnected rather than given a gap, and may attach again). Up to
/// [`CLIENT_QUEUE_BYTES`](crate::CLIENT_QUEUE_BYTES) wait for it.
#[derive(Debug)]
pub struct Client {
    pub(crate) id: u64,
    pub(crate) frames: crate::frames::FrameReceiver,
    pub(crate) hub: HubHandle,
    /// Tells the hub the client is gone, so the sizes it wanted stop counting.
    pub(crate) detach: mpsc::UnboundedSender<u64>,
}

impl Drop for Client {
    fn drop(&mut self) {
        // A hub that has shut down has nothing to give back.
        let _ = self.detach.send(self.id);
    }
}

impl Client {
    /// The next frame; `None` once disconnected.
    pub async fn recv(&mut self) -> Option<Frame> {
        self.frames.recv().await
    }

    /// A frame if one is queued, without waiting.
    pub fn try_recv(&mut self) -> Option<Frame> {
        self.frames.try_recv()
    }

    /// Sends one control message as the client wrote it. A malformed or refused request is
    /// answered with an `error` frame in this client's stream.
    pub async fn send_json(&self, text: &str) -> Result<(), HubError> {
        self.hub
            .send(Request::Client {
                request: ClientRequest::parse(text),
                reply: ReplyTo::Client(self.id),
            })
            .await
    }
}

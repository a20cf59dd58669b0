//! The daemon: owns the hubs (one per open repository) and serves clients on the claimed
//! endpoint, and on the web client's WebSocket when that runs (`[web] enabled`, or a `web`
//! request).
//!
//! A connection starts with `hello` (the versions must match) and then sends daemon requests
//! — `status`, `open`, `reload`, `stop` — each answered with one message, or `attach`, after
//! which it speaks the hub's client protocol (SPEC §8) until it closes. A malformed message is
//! answered with `error`; it never ends the connection, let alone a hub.

use std::collections::BTreeMap;
use std::ops::ControlFlow;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Weak};

use futures::StreamExt;
use nightcrow_client_protocol::Frame;
use nightcrow_client_protocol::daemon::{
    DAEMON_PROTOCOL_VERSION, DaemonAnswer, DaemonRequest, StatusAnswer,
};
use nightcrow_client_protocol::frame::{
    FrameError, WireCodec, WireFrame, write_control, write_output,
};
use nightcrow_config::Config;
use nightcrow_hub::relay::{Inbound, PeerGone, Transport, relay, take};
use nightcrow_hub::{Hub, HubHandle, HubSnapshot, PaneSnapshot};
use nightcrow_plugin_host::PluginRuntime;
use nightcrow_web::accept::AcceptBackoff;
use nightcrow_web::{Hubs, WebServer};
use tokio::io::{AsyncRead, AsyncWrite};
use tokio::sync::{Mutex, Notify, watch};
use tokio_util::codec::FramedRead;

use crate::fdlimit::web_connection_cap;
use crate::journal::Journal;
use crate::mapping::hub_config;
use crate::message::{repo_reload, repo_status};
use crate::notify::Notifier;
use crate::transport::Claim;
use nightcrow_client::Home;

/// How long the journal's writer lets changes gather before it writes them: a burst (a
/// reload, panes opening together) becomes one write.
const JOURNAL_COALESCE: std::time::Duration = std::time::Duration::from_millis(100);

/// How long opening a repository waits for the journal to have it.
const JOURNAL_PATIENCE: std::time::Duration = std::time::Duration::from_secs(5);

/// How the config is (re)read: from which file, with which home for `~`.
#[derive(Debug, Clone)]
pub struct ConfigSource {
    pub path: PathBuf,
    pub user_home: PathBuf,
}

impl ConfigSource {
    /// The config as the file says now; a missing file is the empty config. Errors carry
    /// file, line and column; a file another user owns or may write is refused.
    pub fn load(&self) -> Result<Config, String> {
        crate::check_config_file(&self.path)?;
        if !self.path.exists() {
            return nightcrow_config::parse(&self.path, "", &self.user_home)
                .map_err(|errors| errors.to_string());
        }
        nightcrow_config::load(&self.path, &self.user_home).map_err(|errors| errors.to_string())
    }
}

/// The running daemon's state, shared by its connections.
pub struct Daemon {
    home: Home,
    source: ConfigSource,
    runtime: PluginRuntime,
    state: Mutex<State>,
    stop: Notify,
    /// The open-files limit after raising it at start; the web client's cap follows it.
    open_files: Option<u64>,
    journal: Arc<Journal>,
    /// A hub was opened: the journal follows it from now on.
    hubs_changed: Notify,
    /// The journal's writer is to write no more (the daemon is stopping).
    journal_stop: Notify,
    /// Writes asked for (counted up) and the last one the writer finished: a write
    /// includes every hub open when it was asked for.
    journal_wanted: AtomicU64,
    journal_written: watch::Sender<u64>,
    /// The `[[notify]]` hooks, told every open hub's notices.
    notifier: Arc<Notifier>,
}

struct State {
    config: Config,
    hubs: BTreeMap<PathBuf, HubHandle>,
    web: Option<WebServer>,
}

impl Daemon {
    pub fn new(
        home: Home,
        source: ConfigSource,
        config: Config,
        runtime: PluginRuntime,
    ) -> Arc<Daemon> {
        let home_for_journal = home.clone();
        Arc::new(Daemon {
            home,
            source,
            runtime,
            state: Mutex::new(State {
                config,
                hubs: BTreeMap::new(),
                web: None,
            }),
            stop: Notify::new(),
            open_files: crate::fdlimit::raise_open_files_limit(),
            journal: Arc::new(Journal::new(&home_for_journal)),
            hubs_changed: Notify::new(),
            journal_stop: Notify::new(),
            journal_wanted: AtomicU64::new(0),
            journal_written: watch::Sender::new(0),
            notifier: Arc::new(Notifier::default()),
        })
    }

    /// Serves clients until a `stop` request or `interrupted` resolves (Ctrl-C); then shuts
    /// every hub down — plugins first, then panes — and releases the claim.
    pub async fn serve(
        self: Arc<Daemon>,
        mut claim: Claim,
        interrupted: impl std::future::Future<Output = ()>,
    ) {
        let hooks = self.state.lock().await.config.notify_hooks.clone();
        self.notifier.set_hooks(&hooks);
        // What a previous daemon had open comes back before any client is served.
        self.reopen_from_journal().await;
        let journal = tokio::spawn(Arc::clone(&self).keep_journal());
        tracing::info!(home = %self.home.root().display(), "daemon listening");
        if self.state.lock().await.config.web.enabled
            && let Err(error) = self.start_web(None).await
        {
            tracing::error!(%error, "[web] enabled = true, but the web client did not start");
        }
        tokio::pin!(interrupted);
        let mut backoff = AcceptBackoff::new("daemon socket");
        loop {
            tokio::select! {
                accepted = claim.listener().accept() => match accepted {
                    Ok(stream) => {
                        backoff.accepted();
                        tokio::spawn(Arc::clone(&self).connection(stream));
                    }
                    Err(error) => backoff.failed(&error).await,
                },
                () = self.stop.notified() => break,
                () = &mut interrupted => break,
            }
        }
        tracing::info!("daemon stopping");
        let hubs: Vec<(PathBuf, HubHandle)> = {
            let mut state = self.state.lock().await;
            state.web = None;
            state
                .hubs
                .iter()
                .map(|(root, hub)| (root.clone(), hub.clone()))
                .collect()
        };
        // The last word of the journal, screens to the last byte, before anything is ended:
        // the next daemon takes every pane back as it is now (a stop is a restart's first half).
        self.journal_stop.notify_one();
        let _ = journal.await;
        let mut last = Vec::new();
        for (root, hub) in &hubs {
            // A hub that cannot answer keeps what it last published.
            let snapshot = match hub.snapshot().await {
                Ok(snapshot) => Arc::new(snapshot),
                Err(_) => hub.snapshots().borrow().clone(),
            };
            last.push((root.clone(), snapshot));
        }
        self.write_journal(last).await;
        for (_, hub) in hubs {
            hub.shutdown().await;
        }
        drop(claim);
        tracing::info!("daemon stopped");
    }

    /// The hub of `dir` (canonicalised), started if it is not open yet; a new one is in the
    /// journal before this returns, so a daemon killed right after still reopens it.
    pub async fn open(&self, dir: &Path) -> Result<(PathBuf, HubHandle), String> {
        let (root, hub, new) = self.open_with(dir, Vec::new()).await?;
        if new {
            self.journal_written_now().await;
        }
        Ok((root, hub))
    }

    /// Waits until the journal's writer has written everything open now (a few seconds at
    /// most: a stuck disk must not hang a client).
    async fn journal_written_now(&self) {
        let wanted = self.journal_wanted.fetch_add(1, Ordering::SeqCst) + 1;
        self.hubs_changed.notify_one();
        let mut written = self.journal_written.subscribe();
        let _ = tokio::time::timeout(
            JOURNAL_PATIENCE,
            written.wait_for(|written| *written >= wanted),
        )
        .await;
    }

    /// Reopens the repositories the journal names, each with the panes it can be trusted
    /// with (docs/USER-GUIDE.md, "When the daemon goes away").
    async fn reopen_from_journal(&self) {
        let journal = Arc::clone(&self.journal);
        let repos = tokio::task::spawn_blocking(move || journal.load())
            .await
            .unwrap_or_default();
        for repo in repos {
            let panes = repo.panes.len();
            match self.open_with(&repo.root, repo.panes).await {
                Ok((root, _, _)) => {
                    tracing::info!(repo = %root.display(), panes, "reopened from the state journal");
                }
                Err(message) => {
                    tracing::warn!("state journal: repository not reopened: {message}");
                }
            }
        }
    }

    /// Writes the journal whenever a hub publishes a change (at most every
    /// [`JOURNAL_COALESCE`], so a burst of changes is one write), until told to stop.
    async fn keep_journal(self: Arc<Daemon>) {
        let mut followed: BTreeMap<PathBuf, watch::Receiver<Arc<HubSnapshot>>> = BTreeMap::new();
        loop {
            // What is asked for before the hubs are read is in this write.
            let wanted = self.journal_wanted.load(Ordering::SeqCst);
            for (root, hub) in &self.state.lock().await.hubs {
                followed
                    .entry(root.clone())
                    .or_insert_with(|| hub.snapshots());
            }
            let repos = followed
                .iter_mut()
                .map(|(root, snapshots)| (root.clone(), snapshots.borrow_and_update().clone()))
                .collect();
            self.write_journal(repos).await;
            self.journal_written.send_replace(wanted);
            let changes: Vec<_> = followed
                .values_mut()
                .filter(|snapshots| snapshots.has_changed().is_ok())
                .map(|snapshots| Box::pin(snapshots.changed()))
                .collect();
            let any_change = async {
                if changes.is_empty() {
                    std::future::pending::<()>().await;
                }
                let _ = futures::future::select_all(changes).await;
            };
            tokio::select! {
                () = any_change => {}
                // A new hub is written at once: a client waits for it.
                () = self.hubs_changed.notified() => continue,
                () = self.journal_stop.notified() => return,
            }
            tokio::select! {
                () = tokio::time::sleep(JOURNAL_COALESCE) => {}
                () = self.hubs_changed.notified() => {}
                () = self.journal_stop.notified() => return,
            }
        }
    }

    async fn write_journal(&self, repos: Vec<(PathBuf, Arc<HubSnapshot>)>) {
        let journal = Arc::clone(&self.journal);
        let written = tokio::task::spawn_blocking(move || journal.write(&repos)).await;
        match written {
            Ok(Ok(())) => {}
            Ok(Err(error)) => tracing::warn!(
                path = %self.journal.path().display(),
                %error,
                "state journal not written; a restart would lose what changed since"
            ),
            Err(error) => tracing::warn!(%error, "state journal writer failed"),
        }
    }

    /// The hub of `dir`, started with `restored` if it is not open yet; `true` when it was
    /// started now.
    async fn open_with(
        &self,
        dir: &Path,
        restored: Vec<PaneSnapshot>,
    ) -> Result<(PathBuf, HubHandle, bool), String> {
        let root = dir
            .canonicalize()
            .map_err(|error| format!("{}: {error}", dir.display()))?;
        if !root.is_dir() {
            return Err(format!("{}: not a directory", root.display()));
        }
        let mut state = self.state.lock().await;
        if let Some(hub) = state.hubs.get(&root) {
            return Ok((root, hub.clone(), false));
        }
        let (config, unusable) = hub_config(&state.config, &self.home, &root);
        for problem in unusable {
            tracing::warn!(%problem, "its panes run unwatched");
        }
        crate::mapping::precompile(&self.runtime, &config).await;
        let hub = Hub::spawn_restored(config, self.runtime.clone(), restored)
            .map_err(|error| error.to_string())?;
        tracing::info!(repo = %root.display(), "hub opened");
        self.notifier.follow(root.clone(), hub.notices());
        state.hubs.insert(root.clone(), hub.clone());
        self.hubs_changed.notify_one();
        Ok((root, hub, true))
    }

    /// Starts the web client unless it runs; returns its page's address (showing `repo`).
    async fn start_web(self: &Arc<Daemon>, repo: Option<&Path>) -> Result<String, String> {
        let mut state = self.state.lock().await;
        if state.web.is_none() {
            let hubs = DaemonHubs(Arc::downgrade(self));
            let mut config = state.config.web.clone();
            config.max_connections = web_connection_cap(config.max_connections, self.open_files);
            let server = WebServer::start(&config, hubs)
                .await
                .map_err(|error| error.to_string())?;
            state.web = Some(server);
        }
        let web = state.web.as_ref().expect("started above");
        Ok(web.url(repo))
    }

    /// Re-reads the config; applies it to every hub only if the whole file is valid. The
    /// only error is the file's (with positions): nothing was changed then.
    async fn reload(&self) -> Result<DaemonAnswer, String> {
        let config = self.source.load()?;
        let mut state = self.state.lock().await;
        if let Some(web) = &state.web {
            // A new password applies at once; a new address or port at the next start.
            web.set_password_hash(config.web.password_hash.clone());
        }
        self.notifier.set_hooks(&config.notify_hooks);
        state.config = config;
        let mut repos = Vec::new();
        for (root, hub) in &state.hubs {
            let (hub_config, unusable) = hub_config(&state.config, &self.home, root);
            let report = match hub.reload(hub_config).await {
                Ok(report) => report,
                Err(error) => {
                    tracing::warn!(repo = %root.display(), %error, "reload skipped a hub");
                    continue;
                }
            };
            repos.push(repo_reload(root, report, &unusable));
        }
        Ok(DaemonAnswer::Reloaded { repos })
    }

    async fn status(&self) -> DaemonAnswer {
        let hubs: Vec<(PathBuf, HubHandle)> = self
            .state
            .lock()
            .await
            .hubs
            .iter()
            .map(|(root, hub)| (root.clone(), hub.clone()))
            .collect();
        let mut repos = Vec::new();
        for (root, hub) in hubs {
            if let Ok(status) = hub.status().await {
                repos.push(repo_status(&root, &status));
            }
        }
        DaemonAnswer::Status(StatusAnswer {
            pid: std::process::id(),
            version: env!("CARGO_PKG_VERSION").to_owned(),
            repos,
        })
    }

    async fn connection(self: Arc<Daemon>, stream: impl AsyncRead + AsyncWrite + Send + 'static) {
        let (reader, writer) = tokio::io::split(stream);
        // Both halves are dropped when this returns, so the client sees the socket close,
        // not a silent stream.
        let mut socket = Socket {
            frames: FramedRead::new(reader, WireCodec),
            writer,
        };
        let mut greeted = false;
        loop {
            // A refusal is answered with `error`, as `DaemonAnswer::error` would be.
            let inbound = socket.recv().await;
            let text = match take(&mut socket, inbound).await {
                ControlFlow::Continue(Some(text)) => text,
                ControlFlow::Continue(None) => continue,
                ControlFlow::Break(()) => return,
            };
            let request = match serde_json::from_str::<DaemonRequest>(&text) {
                Ok(request) => request,
                Err(error) => {
                    let error = DaemonAnswer::error(format!("bad request: {error}"));
                    if socket.answer(error).await.is_err() {
                        return;
                    }
                    continue;
                }
            };
            let answer = match request {
                DaemonRequest::Hello { version } if version == DAEMON_PROTOCOL_VERSION => {
                    greeted = true;
                    DaemonAnswer::Hello {
                        version: DAEMON_PROTOCOL_VERSION,
                        daemon: env!("CARGO_PKG_VERSION").to_owned(),
                    }
                }
                DaemonRequest::Hello { version } => {
                    let message = format!(
                        "daemon protocol version {DAEMON_PROTOCOL_VERSION}, client sent {version}"
                    );
                    let _ = socket.answer(DaemonAnswer::error(message)).await;
                    return;
                }
                _ if !greeted => DaemonAnswer::error("say hello first"),
                DaemonRequest::Status => self.status().await,
                DaemonRequest::Open { dir } => match self.open(&dir).await {
                    Ok((repo, _)) => DaemonAnswer::Opened { repo },
                    Err(message) => DaemonAnswer::error(message),
                },
                DaemonRequest::Reload => self.reload().await.unwrap_or_else(DaemonAnswer::error),
                DaemonRequest::Web { repo } => match self.start_web(repo.as_deref()).await {
                    Ok(url) => DaemonAnswer::Web { url },
                    Err(message) => DaemonAnswer::error(message),
                },
                DaemonRequest::Stop => {
                    let _ = socket.answer(DaemonAnswer::Stopping).await;
                    self.stop.notify_one();
                    return;
                }
                DaemonRequest::Attach { repo } => match self.open(&repo).await {
                    Ok((_, hub)) => return relay(&hub, &mut socket).await,
                    Err(message) => DaemonAnswer::error(message),
                },
            };
            if socket.answer(answer).await.is_err() {
                return;
            }
        }
    }
}

/// A client's connection on the socket (or pipe): frames read with the codec, written
/// whole. After `attach` it is the hub relay's [`Transport`].
struct Socket<R, W> {
    frames: FramedRead<R, WireCodec>,
    writer: W,
}

impl<R, W> Socket<R, W>
where
    R: AsyncRead + Unpin + Send,
    W: AsyncWrite + Unpin + Send,
{
    async fn answer(&mut self, answer: DaemonAnswer) -> Result<(), FrameError> {
        write_control(&mut self.writer, &answer.to_json()).await
    }
}

impl<R, W> Transport for Socket<R, W>
where
    R: AsyncRead + Unpin + Send,
    W: AsyncWrite + Unpin + Send,
{
    async fn send(&mut self, frame: Frame) -> Result<(), PeerGone> {
        let written = match frame {
            Frame::Message(message) => write_control(&mut self.writer, &message.to_json()).await,
            Frame::Output { pane, bytes } => write_output(&mut self.writer, pane, &bytes).await,
        };
        written.map_err(|_| PeerGone)
    }

    async fn recv(&mut self) -> Inbound {
        match self.frames.next().await {
            Some(Ok(WireFrame::Control(text))) => Inbound::Request(text),
            Some(Ok(WireFrame::Output(_))) => {
                Inbound::Refused("binary frames are output, not requests".to_owned())
            }
            // The stream is out of step: say why and hang up.
            Some(Err(error)) => Inbound::Broken(error.to_string()),
            None => Inbound::Closed,
        }
    }
}

/// The open repositories as the web client sees them. Weak: the daemon owns the web
/// server, not the other way round.
struct DaemonHubs(Weak<Daemon>);

impl Hubs for DaemonHubs {
    async fn repos(&self) -> Vec<PathBuf> {
        match self.0.upgrade() {
            Some(daemon) => daemon.state.lock().await.hubs.keys().cloned().collect(),
            None => Vec::new(),
        }
    }

    async fn hub(&self, repo: &Path) -> Option<HubHandle> {
        let daemon = self.0.upgrade()?;
        let state = daemon.state.lock().await;
        state.hubs.get(repo).cloned()
    }
}

#[cfg(test)]
mod tests {
    use nightcrow_client_protocol::frame::write_frame;

    use super::*;

    /// Before `attach` the socket answers as the relay does after it: a binary frame is
    /// refused with an `error` the CLI reads as `DaemonAnswer::Error` and the connection
    /// carries on; a frame it cannot read ends it, with the reason.
    #[tokio::test]
    async fn the_socket_refuses_output_from_a_client_and_ends_on_a_broken_stream() {
        let (client, server) = tokio::io::duplex(1024);
        let (reader, writer) = tokio::io::split(server);
        let mut socket = Socket {
            frames: FramedRead::new(reader, WireCodec),
            writer,
        };
        let (client_reader, mut client_writer) = tokio::io::split(client);
        let mut answers = FramedRead::new(client_reader, WireCodec);
        let binary = WireFrame::Output(vec![1, 0, 0, 0, b'x'].into());
        write_frame(&mut client_writer, &binary).await.unwrap();
        write_control(&mut client_writer, "{}").await.unwrap();

        let inbound = socket.recv().await;
        assert_eq!(
            take(&mut socket, inbound).await,
            ControlFlow::Continue(None)
        );
        let Some(Ok(WireFrame::Control(answer))) = answers.next().await else {
            panic!("no answer");
        };
        assert_eq!(
            serde_json::from_str::<DaemonAnswer>(&answer).unwrap(),
            DaemonAnswer::error("binary frames are output, not requests")
        );
        assert_eq!(socket.recv().await, Inbound::Request("{}".to_owned()));

        // A frame of a kind nobody knows: the stream is out of step.
        tokio::io::AsyncWriteExt::write_all(&mut client_writer, &[2, 0, 0, 0, 9, b'x'])
            .await
            .unwrap();
        let inbound = socket.recv().await;
        assert!(matches!(inbound, Inbound::Broken(_)), "{inbound:?}");
        assert_eq!(take(&mut socket, inbound).await, ControlFlow::Break(()));
        assert!(matches!(
            answers.next().await,
            Some(Ok(WireFrame::Control(text))) if text.contains(r#""type":"error""#)
        ));
    }
}

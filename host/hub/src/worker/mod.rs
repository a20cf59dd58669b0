//! The hub's one worker task (SPEC §6.1): it owns the pane table, the plugin supervisors,
//! the guard and one [`SlotRecord`] per pane slot (title, startup command, owner, intended
//! plugin, relaunch hold), and is the only code that touches them. It wakes on a hub
//! request, a pane event, a plugin item, the next idle deadline or the next hold expiry —
//! never on a fixed tick. While a client is far behind it stops taking pane events, so a
//! flood waits for the client instead of the client being dropped (docs/hub.md).
//!
//! Split by job: [`clients`] (client requests, attach, status, broadcasts), [`commands`]
//! (plugin commands through the guard), [`panes`] (opening panes, pane events, holds,
//! adoption), [`output`] (what an owner hears of a pane's output), [`plugins`]
//! (supervision and reload), [`sizes`] (which client's size a shared pane takes).

mod clients;
mod commands;
mod journal;
mod output;
mod panes;
mod plugins;
mod sizes;

use std::collections::HashMap;
use std::sync::Arc;
use std::time::Instant;

use nightcrow_guard::{Guard, PaneId};
use nightcrow_pane::{PaneEvent, PaneSize, PaneTable, Slot};
use nightcrow_plugin_host::{PluginRuntime, RateLimit, Supervised, Supervisor};
use nightcrow_protocol::Token;
use tokio::sync::{broadcast, mpsc, watch};

use crate::config::{HubConfig, HubPlugin, StartupCommand};
use crate::handle::{HubError, HubHandle, ReplyTo, Request};
use crate::snapshot::{Clocks, HubSnapshot, PaneSnapshot};
use nightcrow_client_protocol::{Frame, HubMessage, RecoveryReport};
use nightcrow_client_protocol::{Notice, Notices};

/// Pane events taken in one go: PTY output arrives in bursts, and one wake-up per chunk
/// would spend more on scheduling than on the bytes. Consecutive output of one pane in a
/// round becomes one frame, so a hub that is behind sends clients fewer, larger frames
/// instead of filling their queues with small ones.
const PANE_EVENTS_PER_ROUND: usize = 64;
/// Pane events queued from the pane threads; a full queue slows the children, not the hub.
/// Every pane shares it, so it is short: a pane's echo waits behind at most this many
/// chunks of a flood in another pane (256 of them held a key's echo ~190 ms behind 2 MB;
/// docs/PERFORMANCE.md, "2×2 split with a flood").
const PANE_EVENT_QUEUE: usize = 4;
/// Notices kept for a subscriber that has not read them yet; one that falls further behind
/// loses the oldest and is told how many. Notices are rare (a call-back, a resume), so this
/// is hours of them.
const NOTICE_QUEUE: usize = 64;

/// Everything the hub knows about one pane slot beside the table's own slot. One record
/// per token, so that forgetting a slot is one removal and no map can outlive another.
#[derive(Debug, Clone)]
struct SlotRecord {
    title: Option<String>,
    /// The title the pane's program set last (OSC 0 or 2), shown instead of `title`; kept
    /// across a relaunch until the new process sets its own.
    program_title: Option<String>,
    /// The startup command that opened it; `None` for a client pane, which is never
    /// relaunchable (SPEC §6.5).
    startup: Option<StartupCommand>,
    size: PaneSize,
    /// The plugin that owns the pane.
    owner: Option<String>,
    /// The plugin its startup command named (SPEC §6.5), whether or not it owns it now.
    intended: Option<String>,
    /// Set once the pane's process ended: the pane stays, exited, until a client closes it.
    exit: Option<Exit>,
    /// Set while the exited pane waits for its owner to relaunch it (SPEC §6.2).
    hold: Option<Hold>,
    /// The owner's latest status for the pane, live or held, replayed to clients that
    /// attach later (docs/hub.md: SPEC §6.6 keeps it for holds only).
    report: Option<RecoveryReport>,
    /// When the slot first opened (unix ms), for `pane_opened` and the journal.
    opened_ms: i64,
    /// Output text on its way to the owner.
    output: output::OutputBatch,
}

impl SlotRecord {
    fn owned_by(&self, plugin: &str) -> bool {
        self.owner.as_deref() == Some(plugin)
    }

    /// The original startup command; `None` for bare shells and client panes, which are
    /// therefore never relaunchable.
    fn launch_command(&self) -> Option<&str> {
        self.startup
            .as_ref()
            .map(|startup| startup.command.as_str())
    }
}

/// How a pane's process ended.
#[derive(Debug, Clone, Copy)]
struct Exit {
    /// `None` when a signal ended it.
    code: Option<u32>,
}

/// An exited, owned, relaunchable pane kept for a relaunch (SPEC §6.2).
#[derive(Debug, Clone)]
struct Hold {
    pane: PaneId,
    deadline: Instant,
}

struct PluginSlot {
    config: HubPlugin,
    supervisor: Supervisor,
    gave_up: bool,
    /// Lines logged on the plugin's behalf (its `log` commands, WARN refusals): a plugin
    /// that floods them fills no disk.
    log_lines: RateLimit,
}

struct ClientSlot {
    id: u64,
    frames: crate::frames::FrameSender,
}

pub(crate) struct Worker {
    config: HubConfig,
    runtime: PluginRuntime,
    /// Weak, so the worker ends (shutting everything down) once no handle is left; an
    /// attached client holds a strong one.
    handle: mpsc::WeakSender<Request>,
    requests: mpsc::Receiver<Request>,
    table: PaneTable,
    pane_events: mpsc::Receiver<PaneEvent>,
    guard: Guard,
    plugins: Vec<PluginSlot>,
    slots: HashMap<Token, SlotRecord>,
    clients: Vec<ClientSlot>,
    next_client: u64,
    sizes: sizes::SharedSizes,
    /// Client ids, sent by each [`Client`](crate::Client) as it is dropped.
    detached: mpsc::UnboundedReceiver<u64>,
    detach_sender: mpsc::UnboundedSender<u64>,
    /// Set while pane output waits for a client that fell behind.
    paused: Option<clients::Pause>,
    journal: journal::Journal,
    /// What the broadcasts mean to a person who is away, read once for every subscriber
    /// of [`HubHandle::notices`].
    notices: Notices,
    notice_sender: broadcast::Sender<Notice>,
}

impl Worker {
    pub(crate) fn new(
        config: HubConfig,
        runtime: PluginRuntime,
        handle: mpsc::WeakSender<Request>,
        requests: mpsc::Receiver<Request>,
        restored: Vec<PaneSnapshot>,
    ) -> Result<Worker, HubError> {
        // Plugins are granted paths under it: the same trust rule as the daemon's home.
        nightcrow_plugin_host::private::ensure_private_dir(&config.runtime_dir).map_err(
            |error| {
                HubError::Pane(format!(
                    "runtime dir {}: {error}",
                    config.runtime_dir.display()
                ))
            },
        )?;
        let (events, pane_events) = mpsc::channel(PANE_EVENT_QUEUE);
        let table = PaneTable::new(
            config.repo_root.clone(),
            config.shell.clone(),
            config.runtime_dir.clone(),
            events,
        )
        .map_err(|error| HubError::Pane(error.to_string()))?
        .with_idle_threshold(config.guard_limits.idle_threshold());
        let (detach_sender, detached) = mpsc::unbounded_channel();
        let mut worker = Worker {
            guard: Guard::new(config.guard_limits),
            config,
            runtime,
            handle,
            requests,
            table,
            pane_events,
            plugins: Vec::new(),
            slots: HashMap::new(),
            clients: Vec::new(),
            next_client: 1,
            sizes: sizes::SharedSizes::default(),
            detached,
            detach_sender,
            paused: None,
            journal: journal::Journal::new(),
            notices: Notices::new(),
            notice_sender: broadcast::Sender::new(NOTICE_QUEUE),
        };
        // Before anyone can subscribe, so the journal never sees the hub without its panes.
        worker.restore(restored);
        worker.open_startup_panes();
        worker.notices_from_now();
        worker.publish_snapshot();
        Ok(worker)
    }

    pub(crate) fn snapshots(&self) -> watch::Receiver<Arc<HubSnapshot>> {
        self.journal.subscribe()
    }

    pub(crate) fn notice_sender(&self) -> broadcast::WeakSender<Notice> {
        self.notice_sender.downgrade()
    }

    /// What the restored panes last reported is where the notices start from, as a client's
    /// replay is: a restart tells nobody again what they were told before it.
    fn notices_from_now(&mut self) {
        for record in self.slots.values() {
            if let Some(report) = &record.report {
                self.notices.observe(&HubMessage::Recovery(report.clone()));
            }
        }
        self.notices.observe(&HubMessage::Live);
    }

    pub(crate) async fn run(mut self) {
        let plugins = self.config.plugins.clone();
        for plugin in plugins {
            if self.config.should_run(&plugin, false) {
                self.start_plugin(plugin).await;
            }
        }
        loop {
            self.publish_snapshot();
            let idle_at = self.table.next_idle_deadline();
            let journal_at = self.journal.screens_due();
            let expiry_at = self.holds().map(|(_, hold)| hold.deadline).min();
            let output_at = self.slots.values().filter_map(|r| r.output.due()).min();
            let stall_at = self.paused.as_ref().map(clients::Pause::stall_at);
            tokio::select! {
                request = self.requests.recv() => match request {
                    Some(request) => {
                        if !self.on_request(request).await {
                            return;
                        }
                    }
                    None => return self.shutdown().await,
                },
                Some(event) = self.pane_events.recv(), if self.paused.is_none() => {
                    let mut round = vec![event];
                    while round.len() < PANE_EVENTS_PER_ROUND {
                        match self.pane_events.try_recv() {
                            Ok(event) => round.push(event),
                            Err(_) => break,
                        }
                    }
                    for event in panes::coalesce(round) {
                        self.on_pane_event(event);
                    }
                    self.check_backlog();
                }
                () = clients::caught_up(&self.clients), if self.paused.is_some() => {
                    self.check_backlog();
                }
                () = sleep_until(stall_at) => self.on_stalled_clients(),
                Some(client) = self.detached.recv() => self.client_detached(client),
                (index, item) = next_supervised(&mut self.plugins) => {
                    self.on_supervised(index, item).await;
                }
                () = sleep_until(idle_at) => self.on_idle(),
                () = sleep_until(expiry_at) => self.expire_holds(),
                () = sleep_until(output_at) => self.flush_due_output(),
                // The loop's top publishes the screens.
                () = sleep_until(journal_at) => {}
            }
        }
    }

    /// Carries out one request; `false` once the hub has shut down.
    async fn on_request(&mut self, request: Request) -> bool {
        match request {
            Request::Attach(reply) => {
                // The caller holds a handle while it waits, so the upgrade succeeds.
                if let Some(requests) = self.handle.upgrade() {
                    let hub = HubHandle {
                        requests,
                        snapshots: self.snapshots(),
                        notices: self.notice_sender(),
                    };
                    let _ = reply.send(self.attach(hub));
                }
            }
            Request::Client { request, reply } => {
                let client = match &reply {
                    ReplyTo::Client(id) => Some(*id),
                    ReplyTo::Caller(_) => None,
                };
                let result = match request {
                    Ok(request) => self.on_client_request(request, client),
                    Err(message) => Err(HubError::BadRequest(message)),
                };
                match reply {
                    ReplyTo::Caller(reply) => {
                        let _ = reply.send(result);
                    }
                    ReplyTo::Client(id) => {
                        if let Err(error) = result {
                            let message = HubMessage::Error {
                                message: error.to_string(),
                            };
                            self.send_to_client(id, Frame::Message(message));
                        }
                    }
                }
            }
            Request::Status(reply) => {
                let _ = reply.send(self.status());
            }
            Request::Snapshot(reply) => {
                let _ = reply.send(self.snapshot(Clocks::now(), true));
            }
            Request::Reload { config, reply } => {
                let report = self.reload(*config).await;
                let _ = reply.send(report);
            }
            Request::Shutdown(done) => {
                self.shutdown().await;
                let _ = done.send(());
                return false;
            }
        }
        true
    }

    /// Every pane in display order, with its slot and record.
    fn panes_in_order(&self) -> impl Iterator<Item = (PaneId, &Slot, &SlotRecord)> {
        self.table.panes().into_iter().filter_map(|pane| {
            let slot = self.table.slot(pane)?;
            let record = self.slots.get(slot.token())?;
            Some((pane, slot, record))
        })
    }

    /// Every relaunch hold, with its token.
    fn holds(&self) -> impl Iterator<Item = (&Token, &Hold)> {
        self.slots
            .iter()
            .filter_map(|(token, record)| Some((token, record.hold.as_ref()?)))
    }

    /// The tokens whose record satisfies `keep`.
    fn tokens_where(&self, keep: impl Fn(&SlotRecord) -> bool) -> Vec<Token> {
        self.slots
            .iter()
            .filter(|(_, record)| keep(record))
            .map(|(token, _)| token.clone())
            .collect()
    }

    fn owner_of(&self, token: &Token) -> Option<&str> {
        self.slots.get(token)?.owner.as_deref()
    }

    async fn shutdown(&mut self) {
        futures::future::join_all(
            self.plugins
                .iter_mut()
                .map(|slot| slot.supervisor.shutdown()),
        )
        .await;
        self.clients.clear();
        // Waited for, so that a daemon exiting next does not end the escalation half-way.
        let endings = self.table.end_all();
        let _ = tokio::task::spawn_blocking(move || {
            endings.into_iter().for_each(nightcrow_pane::Ending::wait);
        })
        .await;
    }
}

fn pane_error(error: nightcrow_pane::PaneError) -> HubError {
    HubError::Pane(error.to_string())
}

/// The next item of any supervisor, with its index; pending forever without plugins.
async fn next_supervised(plugins: &mut [PluginSlot]) -> (usize, Supervised) {
    if plugins.is_empty() {
        return std::future::pending().await;
    }
    let nexts = plugins
        .iter_mut()
        .enumerate()
        .map(|(index, slot)| Box::pin(async move { (index, slot.supervisor.next().await) }));
    futures::future::select_all(nexts).await.0
}

async fn sleep_until(deadline: Option<Instant>) {
    match deadline {
        Some(deadline) => tokio::time::sleep_until(tokio::time::Instant::from_std(deadline)).await,
        None => std::future::pending().await,
    }
}

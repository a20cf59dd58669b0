//! The hub's one worker task (SPEC §6.1). It wakes on a hub request, a pane event, a plugin
//! item or the next deadline — never on a fixed tick — and is the only code that touches
//! the hub's state. While a client is far behind it holds the output of the panes it is
//! behind on, so a flood waits for the client instead of the client being dropped, and the
//! other panes go on (docs/hub.md).
//!
//! The state is three parts, each with one job, and the worker only orchestrates them:
//! - [`Slots`](slots::Slots): the pane table, one record per slot (title, startup command,
//!   owner, intended plugin, relaunch hold, report), the guard with each slot's budgets, and
//!   the sizes clients want. Every way a slot's recovery ends goes through one
//!   [`Slots::end`](slots::Slots::end).
//! - [`Plugins`](plugins::Plugins): the supervised instances, which of them is running,
//!   their log limits.
//! - [`Clients`](clients::Clients): attached clients' queues, the broadcast, the panes
//!   held for a client that fell behind, the notices.
//!
//! No part reaches another. What a change means for plugins and clients is written to the
//! worker's [`Outbox`] in the order it happened, and [`Worker::deliver`] — the one place
//! where plugins and clients are both touched — hands it on after each wake-up. No worker
//! method touches more than two parts itself.
//!
//! Orchestration by job: [`requests`] (what clients ask), [`supervision`] (plugin items,
//! the approvals the guard gives, reload), [`journal`] (snapshots for the daemon's journal,
//! taking back a previous daemon's panes).

mod clients;
mod journal;
mod outbox;
mod output;
mod plugins;
mod requests;
mod slots;
mod supervision;

use std::sync::Arc;
use std::time::Instant;

use nightcrow_pane::{PaneEvent, PaneSize, PaneTable};
use nightcrow_plugin_host::PluginRuntime;
use tokio::sync::{broadcast, mpsc, watch};

use crate::config::{HubConfig, StartupCommand};
use crate::handle::{HubError, HubHandle, ReplyTo, Request};
use crate::snapshot::{Clocks, HubSnapshot, PaneSnapshot};
use nightcrow_client_protocol::{Frame, HubMessage, Notice};
use nightcrow_guard::{Guard, PaneId};

use clients::Clients;
use outbox::{Outbox, Parcel};
use plugins::Plugins;
use slots::Slots;

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

pub(crate) struct Worker {
    config: HubConfig,
    /// Weak, so the worker ends (shutting everything down) once no handle is left; an
    /// attached client holds a strong one.
    handle: mpsc::WeakSender<Request>,
    requests: mpsc::Receiver<Request>,
    pane_events: mpsc::Receiver<PaneEvent>,
    /// Client ids, sent by each [`Client`](crate::Client) as it is dropped.
    detached: mpsc::UnboundedReceiver<u64>,
    slots: Slots,
    plugins: Plugins,
    clients: Clients,
    outbox: Outbox,
    journal: journal::Journal,
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
        nightcrow_trust::ensure_private_dir(&config.runtime_dir).map_err(|error| {
            HubError::Pane(format!(
                "runtime dir {}: {error}",
                config.runtime_dir.display()
            ))
        })?;
        let (events, pane_events) = mpsc::channel(PANE_EVENT_QUEUE);
        let table = PaneTable::new(
            config.repo_root.clone(),
            config.shell.clone(),
            config.runtime_dir.clone(),
            events,
        )
        .map_err(pane_error)?
        .with_idle_threshold(config.guard_limits.idle_threshold())
        .with_clock(crate::clock::now);
        let (detach, detached) = mpsc::unbounded_channel();
        let mut worker = Worker {
            slots: Slots::new(
                table,
                Guard::new(config.guard_limits),
                config.pending_relaunch_ttl,
            ),
            plugins: Plugins::new(runtime),
            clients: Clients::new(detach),
            config,
            handle,
            requests,
            pane_events,
            detached,
            outbox: Outbox::default(),
            journal: journal::Journal::new(),
        };
        // Before anyone can subscribe, so the journal never sees the hub without its panes.
        worker.restore(restored);
        worker.open_startup_panes();
        worker.deliver();
        // What the restored panes last reported is where the notices start from, as a
        // client's replay is: a restart tells nobody again what they were told before it.
        worker.clients.notices_from(worker.slots.reports());
        worker.publish_snapshot();
        Ok(worker)
    }

    pub(crate) fn snapshots(&self) -> watch::Receiver<Arc<HubSnapshot>> {
        self.journal.subscribe()
    }

    pub(crate) fn notice_sender(&self) -> broadcast::WeakSender<Notice> {
        self.clients.notice_sender()
    }

    pub(crate) async fn run(mut self) {
        for plugin in self.config.plugins.clone() {
            if self.config.should_run(&plugin, false) {
                self.start_plugin(plugin).await;
            }
        }
        loop {
            self.deliver();
            self.pace_output();
            self.publish_snapshot();
            let due = self.deadlines();
            tokio::select! {
                request = self.requests.recv() => match request {
                    Some(request) => {
                        if !self.on_request(request).await {
                            return;
                        }
                    }
                    None => return self.shutdown().await,
                },
                Some(event) = self.pane_events.recv() => {
                    let mut round = vec![event];
                    while round.len() < PANE_EVENTS_PER_ROUND {
                        match self.pane_events.try_recv() {
                            Ok(event) => round.push(event),
                            Err(_) => break,
                        }
                    }
                    self.on_pane_events(round);
                }
                // The loop's top releases the panes held for it.
                () = self.clients.caught_up() => {}
                () = sleep_until(due.stall) => self.clients.on_stalled(),
                Some(client) = self.detached.recv() => self.on_detached(client),
                (index, item) = self.plugins.next() => self.on_supervised(index, item).await,
                () = sleep_until(due.slots) => self.on_slots_due(),
                // The loop's top publishes the screens.
                () = sleep_until(due.screens) => {}
            }
        }
    }

    /// Holds the output of the panes a client far behind waits on, and only theirs: a key's
    /// echo in another pane goes on (docs/hub.md, "A client that falls behind").
    fn pace_output(&mut self) {
        self.clients.check_backlog();
        self.slots.hold_output_of(self.clients.held_panes());
    }

    fn deadlines(&self) -> Deadlines {
        Deadlines {
            slots: self.slots.next_deadline(),
            stall: self.clients.stall_at(),
            screens: self.journal.screens_due(),
        }
    }

    /// The client's sizes stop counting.
    fn on_detached(&mut self, client: u64) {
        self.slots.client_detached(client, &mut self.outbox);
    }

    fn on_slots_due(&mut self) {
        self.slots
            .on_deadline(crate::clock::now(), &mut self.outbox);
    }

    /// Hands what the parts said on to plugins and clients, in the order they said it.
    fn deliver(&mut self) {
        for parcel in self.outbox.drain() {
            match parcel {
                Parcel::Tell { plugin, event } => self.plugins.send(&plugin, event),
                Parcel::Show(frame) => self.clients.broadcast(frame),
                Parcel::ShowTo { client, frame } => self.clients.send_to(client, frame),
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
                // A caller that hears "done" finds its effects already sent.
                self.deliver();
                match reply {
                    ReplyTo::Caller(reply) => {
                        let _ = reply.send(result);
                    }
                    ReplyTo::Client(id) => {
                        if let Err(error) = result {
                            let message = HubMessage::Error {
                                message: error.to_string(),
                            };
                            self.outbox.show_to(id, Frame::Message(message));
                        }
                    }
                }
            }
            Request::Status(reply) => {
                let _ = reply.send(self.status());
            }
            Request::Snapshot(reply) => {
                let _ = reply.send(self.slots.snapshot(Clocks::now(), true));
            }
            Request::Reload { config, reply } => {
                let report = self.reload(*config).await;
                self.deliver();
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

    fn on_pane_events(&mut self, round: Vec<PaneEvent>) {
        let now = crate::clock::now();
        for event in slots::coalesce(round) {
            if let PaneEvent::Output { .. } = event {
                self.journal.output_arrived();
            }
            self.slots.on_pane_event(event, now, &mut self.outbox);
        }
    }

    /// Opens the startup commands that have no pane yet (a restored one counts).
    fn open_startup_panes(&mut self) {
        for startup in self.startup_commands_without(Slots::has_pane_for) {
            if let Err(error) = self.open_startup_pane(startup.clone()) {
                tracing::warn!(command = %startup.command, %error, "startup pane not opened");
            }
        }
    }

    /// The config's startup commands for which `has` finds no pane.
    fn startup_commands_without(
        &self,
        has: fn(&Slots, &StartupCommand) -> bool,
    ) -> Vec<StartupCommand> {
        let commands = self.config.startup_commands.iter();
        commands
            .filter(|startup| !has(&self.slots, startup))
            .cloned()
            .collect()
    }

    /// Opens a startup command's pane; the plugin it names owns it at once if it runs.
    fn open_startup_pane(&mut self, startup: StartupCommand) -> Result<PaneId, HubError> {
        let adopt = startup
            .plugin
            .as_deref()
            .is_some_and(|plugin| self.plugins.is_running(plugin));
        let size = self.config.default_size;
        self.slots
            .open_startup(startup, size, adopt, &mut self.outbox)
    }

    /// Plugins stop first, so none of them sees the exits the shutdown causes; then the
    /// clients' streams end, then the panes. The one method that touches all three parts,
    /// as tearing down means ending each (`tests/tidy.rs` names it as the exception).
    async fn shutdown(&mut self) {
        self.plugins.shutdown().await;
        self.clients.close_all();
        self.slots.end_all().await;
    }
}

/// When the worker must wake up without being called.
struct Deadlines {
    /// A pane's idleness, a hold's expiry, or output's turn to reach its owner.
    slots: Option<Instant>,
    /// A client has been behind for a second: has it made progress?
    stall: Option<Instant>,
    /// Screens alone are due in the journal.
    screens: Option<Instant>,
}

fn pane_error(error: nightcrow_pane::PaneError) -> HubError {
    HubError::Pane(error.to_string())
}

/// A size a client asked for, checked by the pane layer.
fn pane_size(rows: u16, cols: u16) -> Result<PaneSize, HubError> {
    PaneSize::new(rows, cols).map_err(pane_error)
}

async fn sleep_until(deadline: Option<Instant>) {
    match deadline {
        Some(deadline) => tokio::time::sleep_until(tokio::time::Instant::from_std(deadline)).await,
        None => std::future::pending().await,
    }
}

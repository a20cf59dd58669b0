//! The hub's one worker task (SPEC §6.1): it owns the pane table, the plugin supervisors,
//! the guard, owners, intended opt-ins and holds, and is the only code that touches them.
//! It wakes on a hub request, a pane event, a plugin item, the next idle deadline or the
//! next hold expiry — never on a fixed tick.

use std::collections::HashMap;
use std::time::{Duration, Instant};

use nightcrow_guard::{
    Approved, ApprovedRelaunch, Guard, IDLE_THRESHOLD, PaneFacts, PaneId, PaneOwner, PaneState,
    Refused, Severity,
};
use nightcrow_pane::{PaneEvent, PaneSize, PaneTable};
use nightcrow_plugin_host::{Lifecycle, PluginRuntime, Supervised, Supervisor};
use nightcrow_protocol::{Command, Event, LogLevel, Token};
use tokio::sync::mpsc;

use crate::client::{CLIENT_PROTOCOL_VERSION, ClientRequest, Frame, HubMessage, RecoveryReport};
use crate::config::{HubConfig, HubPlugin, StartupCommand};
use crate::handle::{
    CLIENT_QUEUE, Client, HoldStatus, HubError, HubHandle, HubStatus, Outcome, PaneStatus,
    PluginStatus, ReloadReport, ReplyTo, Request,
};

/// Commands taken from one plugin before other sources are served (SPEC §4.4).
const COMMANDS_PER_ROUND: usize = 8;
/// Pane events taken in one go: PTY output arrives in bursts, and one wake-up per chunk
/// would spend more on scheduling than on the bytes. Consecutive output of one pane in a
/// round becomes one frame, so a hub that is behind sends clients fewer, larger frames
/// instead of filling their queues with small ones.
const PANE_EVENTS_PER_ROUND: usize = 64;
/// Pane events queued from the pane threads; a full queue slows the children, not the hub.
const PANE_EVENT_QUEUE: usize = 256;

/// What the hub remembers about a pane slot beside the table's own slot.
#[derive(Debug, Clone)]
struct PaneMeta {
    title: Option<String>,
    /// The startup command that opened it; `None` for a client pane, which is never
    /// relaunchable (SPEC §6.5).
    startup: Option<StartupCommand>,
    size: PaneSize,
}

/// An exited, owned, relaunchable pane kept for a relaunch (SPEC §6.2).
#[derive(Debug, Clone)]
struct Hold {
    pane: PaneId,
    deadline: Instant,
    /// The latest status for the pane, replayed to clients that attach later (SPEC §6.6).
    report: Option<RecoveryReport>,
}

struct PluginSlot {
    config: HubPlugin,
    supervisor: Supervisor,
    gave_up: bool,
}

struct ClientSlot {
    id: u64,
    frames: mpsc::Sender<Frame>,
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
    panes: HashMap<Token, PaneMeta>,
    owners: HashMap<Token, String>,
    intended: HashMap<Token, String>,
    holds: HashMap<Token, Hold>,
    clients: Vec<ClientSlot>,
    next_client: u64,
}

impl Worker {
    pub(crate) fn new(
        config: HubConfig,
        runtime: PluginRuntime,
        handle: mpsc::WeakSender<Request>,
        requests: mpsc::Receiver<Request>,
    ) -> Result<Worker, HubError> {
        let config = config.with_policy_names();
        nightcrow_pane::ensure_runtime_dir(&config.runtime_dir).map_err(|error| {
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
        .map_err(|error| HubError::Pane(error.to_string()))?
        .with_idle_threshold(config.idle_threshold);
        Ok(Worker {
            guard: Guard::new(config.guard_limits),
            config,
            runtime,
            handle,
            requests,
            table,
            pane_events,
            plugins: Vec::new(),
            panes: HashMap::new(),
            owners: HashMap::new(),
            intended: HashMap::new(),
            holds: HashMap::new(),
            clients: Vec::new(),
            next_client: 1,
        })
    }

    pub(crate) async fn run(mut self) {
        self.open_startup_panes();
        let plugins = self.config.plugins.clone();
        for plugin in plugins {
            if self.config.should_run(&plugin, false) {
                self.start_plugin(plugin).await;
            }
        }
        loop {
            let idle_at = self.table.next_idle_deadline();
            let expiry_at = self.holds.values().map(|hold| hold.deadline).min();
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
                    for event in coalesce(round) {
                        self.on_pane_event(event);
                    }
                }
                (index, item) = next_supervised(&mut self.plugins) => {
                    self.on_supervised(index, item).await;
                }
                () = sleep_until(idle_at) => self.on_idle(),
                () = sleep_until(expiry_at) => self.expire_holds(),
            }
        }
    }

    // --- requests -------------------------------------------------------------------------

    /// Carries out one request; `false` once the hub has shut down.
    async fn on_request(&mut self, request: Request) -> bool {
        match request {
            Request::Attach(reply) => {
                // The caller holds a handle while it waits, so the upgrade succeeds.
                if let Some(requests) = self.handle.upgrade() {
                    let _ = reply.send(self.attach(HubHandle { requests }));
                }
            }
            Request::Client { request, reply } => {
                let result = match request {
                    Ok(request) => self.on_client_request(request),
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

    fn attach(&mut self, hub: HubHandle) -> Client {
        let (frames, receiver) = mpsc::channel(CLIENT_QUEUE);
        let id = self.next_client;
        self.next_client += 1;
        let mut replay = vec![Frame::Message(HubMessage::Hello {
            version: CLIENT_PROTOCOL_VERSION,
        })];
        for pane in self.table.panes() {
            let Some(slot) = self.table.slot(pane).filter(|slot| slot.is_alive()) else {
                continue;
            };
            let Some(meta) = self.panes.get(slot.token()) else {
                continue;
            };
            replay.push(Frame::Message(created(pane, meta)));
            let scrollback = self.table.scrollback(pane);
            if !scrollback.is_empty() {
                replay.push(Frame::Output {
                    pane: pane.get(),
                    bytes: scrollback.into(),
                });
            }
        }
        for hold in self.holds.values() {
            if let Some(report) = &hold.report {
                replay.push(Frame::Message(HubMessage::Recovery(report.clone())));
            }
        }
        // The replay is at most a hello, two frames per pane (8) and one per hold, far below
        // the queue's capacity; a new client cannot be behind yet.
        for frame in replay {
            let _ = frames.try_send(frame);
        }
        self.clients.push(ClientSlot { id, frames });
        Client {
            id,
            frames: receiver,
            hub,
        }
    }

    fn on_client_request(&mut self, request: ClientRequest) -> Result<Outcome, HubError> {
        match request {
            ClientRequest::Create {
                title,
                command,
                rows,
                cols,
            } => {
                let size = match (rows, cols) {
                    (None, None) => self.config.default_size,
                    (rows, cols) => PaneSize::new(
                        rows.unwrap_or(self.config.default_size.rows()),
                        cols.unwrap_or(self.config.default_size.cols()),
                    )
                    .map_err(pane_error)?,
                };
                let pane = self.open_pane(title, command, None, size)?;
                Ok(Outcome::Opened(vec![pane]))
            }
            ClientRequest::Input { pane, data } => {
                let (pane, token) = self.live_pane(pane)?;
                // SPEC §6.4: the owner hears of the person, and its budget is cleared, before
                // the bytes reach the PTY.
                if let Some(event) = self.slot_event(&token, |token, generation| Event::UserInput {
                    token,
                    generation,
                }) {
                    self.send_to_owner(&token, event);
                }
                self.guard.cancel(&token);
                self.table
                    .write_input(pane, data.as_bytes())
                    .map_err(pane_error)?;
                Ok(Outcome::Done)
            }
            ClientRequest::Resize { pane, rows, cols } => {
                let (pane, token) = self.known_pane(pane)?;
                let size = PaneSize::new(rows, cols).map_err(pane_error)?;
                self.table.resize(pane, size).map_err(pane_error)?;
                if let Some(meta) = self.panes.get_mut(&token) {
                    meta.size = size;
                }
                self.broadcast(Frame::Message(HubMessage::Resized {
                    pane: pane.get(),
                    rows,
                    cols,
                }));
                Ok(Outcome::Done)
            }
            ClientRequest::Close { pane } => {
                let (pane, token) = self.known_pane(pane)?;
                if self.owners.contains_key(&token) {
                    self.end_slot(&token);
                } else {
                    self.forget(&token);
                }
                self.table.destroy(pane);
                self.broadcast(Frame::Message(HubMessage::Exited {
                    pane: pane.get(),
                    code: None,
                    held: false,
                }));
                Ok(Outcome::Done)
            }
            ClientRequest::CancelRecovery { pane } => {
                let (_, token) = self.known_pane(pane)?;
                if self.holds.contains_key(&token) {
                    self.end_slot(&token);
                } else {
                    tracing::debug!(pane, "cancel_recovery without a hold; ignored");
                }
                Ok(Outcome::Done)
            }
            ClientRequest::Start => {
                let missing: Vec<StartupCommand> = self
                    .config
                    .startup_commands
                    .iter()
                    .filter(|startup| {
                        !self
                            .panes
                            .values()
                            .any(|meta| meta.startup.as_ref() == Some(*startup))
                    })
                    .cloned()
                    .collect();
                let mut opened = Vec::new();
                for startup in missing {
                    opened.push(self.open_startup_pane(startup)?);
                }
                Ok(Outcome::Opened(opened))
            }
        }
    }

    /// A pane a client names that the hub knows, with its token.
    fn known_pane(&self, pane: u64) -> Result<(PaneId, Token), HubError> {
        let id = PaneId::new(pane);
        let slot = self.table.slot(id).ok_or(HubError::UnknownPane(pane))?;
        Ok((id, slot.token().clone()))
    }

    fn live_pane(&self, pane: u64) -> Result<(PaneId, Token), HubError> {
        let (id, token) = self.known_pane(pane)?;
        match self.table.slot(id) {
            Some(slot) if slot.is_alive() => Ok((id, token)),
            _ => Err(HubError::Pane(format!("pane {pane} is not running"))),
        }
    }

    fn status(&self) -> HubStatus {
        let now = Instant::now();
        let panes = self
            .table
            .panes()
            .into_iter()
            .filter_map(|pane| {
                let slot = self.table.slot(pane)?;
                Some(PaneStatus {
                    pane,
                    title: self.panes.get(slot.token()).and_then(|m| m.title.clone()),
                    generation: slot.generation(),
                    alive: slot.is_alive(),
                    owner: self.owners.get(slot.token()).cloned(),
                })
            })
            .collect();
        let plugins = self
            .plugins
            .iter()
            .map(|slot| PluginStatus {
                name: slot.config.name().to_owned(),
                health: slot.supervisor.plugin().map(|plugin| plugin.health()),
                gave_up: slot.gave_up,
            })
            .collect();
        let holds = self
            .holds
            .values()
            .map(|hold| HoldStatus {
                pane: hold.pane,
                expires_in: hold.deadline.saturating_duration_since(now),
                report: hold.report.clone(),
            })
            .collect();
        HubStatus {
            panes,
            plugins,
            holds,
        }
    }

    // --- panes ----------------------------------------------------------------------------

    fn open_startup_panes(&mut self) {
        for startup in self.config.startup_commands.clone() {
            if let Err(error) = self.open_startup_pane(startup.clone()) {
                tracing::warn!(command = %startup.command, %error, "startup pane not opened");
            }
        }
    }

    fn open_startup_pane(&mut self, startup: StartupCommand) -> Result<PaneId, HubError> {
        let size = self.config.default_size;
        let (title, command) = (startup.name.clone(), startup.command.clone());
        let pane = self.open_pane(title, Some(command), Some(startup.clone()), size)?;
        let Some(plugin) = startup.plugin else {
            return Ok(pane);
        };
        let token = self.token_of(pane);
        self.intended.insert(token.clone(), plugin.clone());
        if self.running(&plugin).is_some() {
            self.adopt(&token, &plugin);
        }
        Ok(pane)
    }

    fn open_pane(
        &mut self,
        title: Option<String>,
        command: Option<String>,
        startup: Option<StartupCommand>,
        size: PaneSize,
    ) -> Result<PaneId, HubError> {
        let pane = self.table.open(command, size).map_err(pane_error)?;
        let meta = PaneMeta {
            title,
            startup,
            size,
        };
        self.broadcast(Frame::Message(created(pane, &meta)));
        self.panes.insert(self.token_of(pane), meta);
        Ok(pane)
    }

    fn token_of(&self, pane: PaneId) -> Token {
        self.table
            .slot(pane)
            .map(|slot| slot.token().clone())
            .expect("a pane just opened or relaunched has a slot")
    }

    fn on_pane_event(&mut self, event: PaneEvent) {
        match event {
            PaneEvent::Output { pane, bytes } => {
                let text = self.table.record_output(pane, &bytes);
                self.broadcast(Frame::Output {
                    pane: pane.get(),
                    bytes,
                });
                let (Some(text), Some(slot)) = (text, self.table.slot(pane)) else {
                    return;
                };
                let event = Event::PaneOutput {
                    token: slot.token().clone(),
                    generation: slot.generation(),
                    text,
                };
                let token = slot.token().clone();
                self.send_to_owner(&token, event);
            }
            PaneEvent::Exited { pane, code } => self.on_exit(pane, code),
        }
    }

    /// SPEC §6.2.
    fn on_exit(&mut self, pane: PaneId, code: Option<u32>) {
        let Some(slot) = self.table.slot(pane) else {
            // Closed or relaunched already: the event is late.
            return;
        };
        let token = slot.token().clone();
        let generation = slot.generation();
        let relaunchable = self.launch_command(&token).is_some();
        self.table.mark_exited(pane);
        let held = self.owners.contains_key(&token) && relaunchable;
        match (self.owners.contains_key(&token), relaunchable) {
            (false, _) => {
                self.forget(&token);
                self.table.destroy(pane);
            }
            (true, true) => {
                self.table.release_process(pane);
                let deadline = Instant::now() + self.config.pending_relaunch_ttl;
                self.holds.insert(
                    token.clone(),
                    Hold {
                        pane,
                        deadline,
                        report: None,
                    },
                );
                self.send_to_owner(
                    &token,
                    Event::PaneExited {
                        token: token.clone(),
                        generation,
                    },
                );
            }
            (true, false) => {
                self.end_slot(&token);
                self.table.destroy(pane);
            }
        }
        self.broadcast(Frame::Message(HubMessage::Exited {
            pane: pane.get(),
            code,
            held,
        }));
    }

    fn on_idle(&mut self) {
        for idle in self.table.take_idle(Instant::now()) {
            let event = Event::PaneIdle {
                token: idle.token.clone(),
                generation: idle.generation,
                idle_ms: u64::try_from(idle.idle.as_millis()).unwrap_or(u64::MAX),
            };
            self.send_to_owner(&idle.token, event);
        }
    }

    fn expire_holds(&mut self) {
        let now = Instant::now();
        let expired: Vec<Token> = self
            .holds
            .iter()
            .filter(|(_, hold)| hold.deadline <= now)
            .map(|(token, _)| token.clone())
            .collect();
        for token in expired {
            if let Some(hold) = self.holds.get(&token) {
                tracing::info!(pane = %hold.pane, "relaunch hold expired");
            }
            self.end_slot(&token);
        }
    }

    /// A slot is going (SPEC §6.4): `pane_closed` to its owner, forget it (budget too),
    /// retire the slot, and tell clients any recovery is over — in that order.
    fn end_slot(&mut self, token: &Token) {
        let pane = self.table.resolve(token);
        if let Some(event) = self.slot_event(token, |token, generation| Event::PaneClosed {
            token,
            generation,
        }) {
            self.send_to_owner(token, event);
        }
        self.forget(token);
        self.table.retire_slot(token);
        if let Some(pane) = pane {
            self.broadcast_cancelled(pane);
        }
    }

    /// Drops everything the hub knows about a token, including its guard budget.
    fn forget(&mut self, token: &Token) {
        self.owners.remove(token);
        self.intended.remove(token);
        self.holds.remove(token);
        self.panes.remove(token);
        self.guard.cancel(token);
    }

    /// The original startup command of a startup pane; `None` for bare shells and client
    /// panes, which are therefore never relaunchable.
    fn launch_command(&self, token: &Token) -> Option<&str> {
        let meta = self.panes.get(token)?;
        meta.startup
            .as_ref()
            .map(|startup| startup.command.as_str())
    }

    /// An event naming the slot's token and current generation.
    fn slot_event(&self, token: &Token, make: impl FnOnce(Token, u32) -> Event) -> Option<Event> {
        let pane = self.table.resolve(token)?;
        let slot = self.table.slot(pane)?;
        Some(make(token.clone(), slot.generation()))
    }

    fn opened_event(&self, token: &Token) -> Option<Event> {
        let pane = self.table.resolve(token)?;
        let slot = self.table.slot(pane)?;
        let meta = self.panes.get(token)?;
        Some(Event::PaneOpened {
            token: token.clone(),
            generation: slot.generation(),
            title: meta.title.clone(),
            command: self.launch_command(token).map(str::to_owned),
            cwd: self.table.repo_root().to_string_lossy().into_owned(),
        })
    }

    /// Gives `plugin` the pane: ownership, fresh idleness, `pane_opened`.
    fn adopt(&mut self, token: &Token, plugin: &str) {
        self.owners.insert(token.clone(), plugin.to_owned());
        if let Some(pane) = self.table.resolve(token) {
            self.table.clear_idle(pane);
        }
        if let Some(event) = self.opened_event(token) {
            self.send_to_plugin(plugin, event);
        }
    }

    // --- plugin commands ------------------------------------------------------------------

    async fn on_supervised(&mut self, index: usize, item: Supervised) {
        match item {
            Supervised::Command(command) => {
                self.on_command(index, command);
                for _ in 1..COMMANDS_PER_ROUND {
                    match self.plugins[index].supervisor.try_recv() {
                        Some(command) => self.on_command(index, command),
                        None => break,
                    }
                }
            }
            Supervised::Lifecycle(step) => self.on_lifecycle(index, step),
        }
    }

    /// The only path from a plugin's request to a pane: facts, judgement, approval.
    fn on_command(&mut self, index: usize, command: Command) {
        let now = Instant::now();
        let plugin = &self.plugins[index].config;
        let facts = command.token().and_then(|token| {
            pane_facts(
                &self.table,
                &self.owners,
                &self.panes,
                plugin.name(),
                token,
                self.config.idle_threshold,
                now,
            )
        });
        match self.guard.judge(&plugin.policy, &command, facts, now) {
            Ok(approved) => self.carry_out(approved),
            Err(refused) => log_refusal(plugin.name(), &command, &refused),
        }
    }

    fn carry_out(&mut self, approved: Approved) {
        match approved {
            Approved::SendInput(send) => {
                let pane = send.target().pane();
                if let Err(error) = self.table.write_input(pane, send.data().as_bytes()) {
                    tracing::warn!(%pane, %error, "approved send_input not written");
                }
            }
            Approved::Relaunch(relaunch) => self.relaunch(&relaunch),
            Approved::Status(status) => {
                let report = RecoveryReport {
                    pane: status.target().pane().get(),
                    state: status.state().to_owned(),
                    detail: status.detail().map(str::to_owned),
                    deadline_epoch: status.deadline_epoch(),
                    attempt: status.attempt(),
                };
                if let Some(hold) = self.holds.get_mut(status.target().token()) {
                    hold.report = Some(report.clone());
                }
                self.broadcast(Frame::Message(HubMessage::Recovery(report)));
            }
            Approved::Attention(attention) => {
                let pane = attention.target().pane().get();
                self.broadcast(Frame::Message(HubMessage::Attention { pane }));
            }
            Approved::WatchPane(watch) => {
                let token = watch.target().token().clone();
                self.adopt(&token, watch.plugin());
            }
            Approved::Log(log) => {
                let (plugin, text) = (log.plugin(), log.message());
                match log.level() {
                    LogLevel::Error => tracing::error!(plugin, text, "plugin log"),
                    LogLevel::Warn => tracing::warn!(plugin, text, "plugin log"),
                    LogLevel::Info => tracing::info!(plugin, text, "plugin log"),
                    LogLevel::Debug => tracing::debug!(plugin, text, "plugin log"),
                }
            }
        }
    }

    /// SPEC §6.3.
    fn relaunch(&mut self, relaunch: &ApprovedRelaunch) {
        let token = relaunch.target().token();
        let Some(hold) = self.holds.remove(token) else {
            tracing::debug!(pane = %relaunch.target().pane(), "relaunch without a hold; ignored");
            return;
        };
        let old = hold.pane;
        match self.table.relaunch(token, relaunch.line().as_str()) {
            Ok(pane) => {
                let Some(meta) = self.panes.get(token).cloned() else {
                    return;
                };
                self.broadcast(Frame::Message(created(pane, &meta)));
                if let Some(event) = self.opened_event(token) {
                    self.send_to_owner(token, event);
                }
                self.broadcast_cancelled(old);
            }
            Err(error) => {
                let plugin = self.owners.get(token).map_or("", String::as_str);
                tracing::warn!(plugin, pane = %old, %error, "relaunch failed; the pane stays held");
                self.holds.insert(token.clone(), hold);
            }
        }
    }

    // --- plugins --------------------------------------------------------------------------

    /// Starts a supervised instance and waits for its first life-cycle step, outside any
    /// `select!`: a first start compiles the component, and a start dropped half-way by a
    /// busier branch would compile again from scratch.
    async fn start_plugin(&mut self, config: HubPlugin) -> bool {
        let supervisor = Supervisor::new(
            self.runtime.clone(),
            config.spec.clone(),
            self.config.restart_policy,
        );
        self.plugins.push(PluginSlot {
            config,
            supervisor,
            gave_up: false,
        });
        let index = self.plugins.len() - 1;
        let first = self.plugins[index].supervisor.next().await;
        let started = first == Supervised::Lifecycle(Lifecycle::Started);
        if !started {
            let name = self.plugins[index].config.name();
            tracing::warn!(
                plugin = name,
                "plugin did not start; its panes run unwatched"
            );
        }
        self.on_supervised(index, first).await;
        started
    }

    fn on_lifecycle(&mut self, index: usize, step: Lifecycle) {
        let name = self.plugins[index].config.name().to_owned();
        match step {
            Lifecycle::Started => {
                // SPEC §4.6 and §6.5: the instance is given every live pane it owns, and the
                // live, unowned panes whose startup command named it.
                let intended: Vec<Token> = self
                    .intended
                    .iter()
                    .filter(|(token, plugin)| **plugin == name && !self.owners.contains_key(*token))
                    .map(|(token, _)| token.clone())
                    .collect();
                for token in intended {
                    self.owners.insert(token, name.clone());
                }
                for token in self.live_owned(&name) {
                    self.adopt(&token, &name);
                }
                self.broadcast_plugin(&name, "running", None);
            }
            Lifecycle::Failed { cause } => {
                self.retire_holds_of(&name);
                self.broadcast_plugin(&name, "failed", Some(cause.to_string()));
            }
            Lifecycle::Restarting { .. } => {}
            Lifecycle::GaveUp => {
                self.plugins[index].gave_up = true;
                self.release_panes_of(&name);
                self.broadcast_plugin(&name, "gave_up", None);
            }
        }
    }

    fn live_owned(&self, plugin: &str) -> Vec<Token> {
        self.owners
            .iter()
            .filter(|(_, owner)| *owner == plugin)
            .map(|(token, _)| token.clone())
            .filter(|token| {
                self.table
                    .resolve(token)
                    .and_then(|pane| self.table.slot(pane))
                    .is_some_and(|slot| slot.is_alive())
            })
            .collect()
    }

    /// Ends the holds of `plugin`'s panes; returns the held pane ids.
    fn retire_holds_of(&mut self, plugin: &str) -> Vec<PaneId> {
        let held: Vec<(Token, PaneId)> = self
            .holds
            .iter()
            .filter(|(token, _)| self.owners.get(*token).map(String::as_str) == Some(plugin))
            .map(|(token, hold)| (token.clone(), hold.pane))
            .collect();
        for (token, _) in &held {
            self.end_slot(token);
        }
        held.into_iter().map(|(_, pane)| pane).collect()
    }

    /// The plugin no longer owns anything: its panes run unwatched, their budgets cleared.
    fn release_panes_of(&mut self, plugin: &str) {
        let owned: Vec<Token> = self
            .owners
            .iter()
            .filter(|(_, owner)| *owner == plugin)
            .map(|(token, _)| token.clone())
            .collect();
        for token in owned {
            self.owners.remove(&token);
            self.guard.cancel(&token);
        }
    }

    fn running(&self, name: &str) -> Option<&PluginSlot> {
        self.plugins
            .iter()
            .find(|slot| slot.config.name() == name && !slot.gave_up)
    }

    fn send_to_plugin(&self, name: &str, event: Event) {
        if let Some(slot) = self.running(name) {
            slot.supervisor.send(event);
        }
    }

    fn send_to_owner(&self, token: &Token, event: Event) {
        if let Some(owner) = self.owners.get(token) {
            self.send_to_plugin(owner, event);
        }
    }

    /// SPEC §6.5: stop first, then start; policies apply in place; guard and budgets stay.
    async fn reload(&mut self, new: HubConfig) -> ReloadReport {
        let mut report = ReloadReport::default();
        self.guard.set_limits(new.guard_limits);
        // What running panes were started with stays (docs/hub.md).
        let old = std::mem::replace(&mut self.config, new.with_policy_names());
        self.config.repo_root = old.repo_root;
        self.config.shell = old.shell;
        self.config.runtime_dir = old.runtime_dir;
        self.config.idle_threshold = old.idle_threshold;
        let mut to_start = Vec::new();
        for slot in std::mem::take(&mut self.plugins) {
            let name = slot.config.name().to_owned();
            let owns = self.owners.values().any(|owner| *owner == name);
            let wanted = self
                .config
                .plugins
                .iter()
                .find(|plugin| plugin.name() == name && self.config.should_run(plugin, owns))
                .cloned();
            match wanted {
                Some(plugin) if !slot.gave_up && slot.config.same_instance(&plugin) => {
                    self.plugins.push(PluginSlot {
                        config: plugin,
                        ..slot
                    });
                }
                Some(plugin) => {
                    report.retired.extend(self.stop_plugin(slot).await);
                    report.restarted.push(name);
                    to_start.push(plugin);
                }
                None => {
                    report.retired.extend(self.stop_plugin(slot).await);
                    self.release_panes_of(&name);
                    report.stopped.push(name);
                }
            }
        }
        let restarted = to_start.len();
        for plugin in self.config.plugins.clone() {
            let known = self
                .plugins
                .iter()
                .any(|slot| slot.config.name() == plugin.name())
                || to_start.iter().any(|other| other.name() == plugin.name());
            if !known && self.config.should_run(&plugin, false) {
                report.started.push(plugin.name().to_owned());
                to_start.push(plugin);
            }
        }
        for (n, plugin) in to_start.into_iter().enumerate() {
            let name = plugin.name().to_owned();
            if !self.start_plugin(plugin).await {
                report.failed.push(name.clone());
                if n < restarted {
                    // A successor that fails drops the panes it was to keep: no owner-less
                    // recovery (SPEC §6.5).
                    self.release_panes_of(&name);
                }
            }
        }
        report
    }

    /// Retires the plugin's holds, then stops its instance.
    async fn stop_plugin(&mut self, mut slot: PluginSlot) -> Vec<PaneId> {
        let retired = self.retire_holds_of(slot.config.name());
        slot.supervisor.shutdown().await;
        retired
    }

    async fn shutdown(&mut self) {
        futures::future::join_all(
            self.plugins
                .iter_mut()
                .map(|slot| slot.supervisor.shutdown()),
        )
        .await;
        self.clients.clear();
        for pane in self.table.panes() {
            self.table.destroy(pane);
        }
    }

    // --- clients --------------------------------------------------------------------------

    /// Queues `frame` for every client; one that is full has fallen behind and is
    /// disconnected (its stream ends) rather than given a gap.
    fn broadcast(&mut self, frame: Frame) {
        self.clients
            .retain(|client| match client.frames.try_send(frame.clone()) {
                Ok(()) => true,
                Err(mpsc::error::TrySendError::Full(_)) => {
                    tracing::warn!(client = client.id, "client fell behind; disconnected");
                    false
                }
                Err(mpsc::error::TrySendError::Closed(_)) => false,
            });
    }

    fn send_to_client(&mut self, id: u64, frame: Frame) {
        self.clients
            .retain(|client| client.id != id || client.frames.try_send(frame.clone()).is_ok());
    }

    fn broadcast_cancelled(&mut self, pane: PaneId) {
        let report = RecoveryReport::cancelled(pane.get());
        self.broadcast(Frame::Message(HubMessage::Recovery(report)));
    }

    fn broadcast_plugin(&mut self, name: &str, state: &str, detail: Option<String>) {
        self.broadcast(Frame::Message(HubMessage::Plugin {
            name: name.to_owned(),
            state: state.to_owned(),
            detail,
        }));
    }
}

/// Joins consecutive `Output` events of the same pane, keeping the order of everything.
fn coalesce(round: Vec<PaneEvent>) -> Vec<PaneEvent> {
    let mut joined: Vec<PaneEvent> = Vec::with_capacity(round.len());
    for event in round {
        match (joined.last_mut(), event) {
            (
                Some(PaneEvent::Output { pane, bytes }),
                PaneEvent::Output {
                    pane: next,
                    bytes: more,
                },
            ) if *pane == next => {
                let mut both = bytes::BytesMut::with_capacity(bytes.len() + more.len());
                both.extend_from_slice(bytes);
                both.extend_from_slice(&more);
                *bytes = both.freeze();
            }
            (_, event) => joined.push(event),
        }
    }
    joined
}

fn created(pane: PaneId, meta: &PaneMeta) -> HubMessage {
    HubMessage::Created {
        pane: pane.get(),
        title: meta.title.clone(),
        rows: meta.size.rows(),
        cols: meta.size.cols(),
    }
}

fn pane_error(error: nightcrow_pane::PaneError) -> HubError {
    HubError::Pane(error.to_string())
}

/// What the guard needs about `token`, relative to `plugin` (SPEC §3).
fn pane_facts<'a>(
    table: &PaneTable,
    owners: &HashMap<Token, String>,
    panes: &'a HashMap<Token, PaneMeta>,
    plugin: &str,
    token: &Token,
    idle_threshold: Duration,
    now: Instant,
) -> Option<PaneFacts<'a>> {
    let pane = table.resolve(token)?;
    let slot = table.slot(pane)?;
    let owner = match owners.get(token) {
        Some(owner) if owner == plugin => PaneOwner::ThisPlugin,
        Some(_) => PaneOwner::AnotherPlugin,
        None => PaneOwner::Nobody,
    };
    let state = match table.idle_for(pane, now) {
        Some(idle) => PaneState::Running {
            idle: guard_idle(idle, idle_threshold),
        },
        None => PaneState::Exited,
    };
    let launch_command = panes
        .get(token)
        .and_then(|meta| meta.startup.as_ref())
        .map(|startup| startup.command.as_str());
    Some(PaneFacts {
        pane,
        generation: slot.generation(),
        owner,
        state,
        launch_command,
    })
}

/// The guard's busy rule is fixed at [`IDLE_THRESHOLD`]; a hub configured with another
/// threshold (tests use a fraction of a second) reports idleness scaled to it, so that
/// `pane_idle` and the guard's `PaneBusy` always agree. With the default threshold the
/// scale is one and the idle time is passed as measured.
fn guard_idle(idle: Duration, threshold: Duration) -> Duration {
    if threshold == IDLE_THRESHOLD || threshold.is_zero() {
        return idle;
    }
    let scaled = idle.as_nanos() * IDLE_THRESHOLD.as_nanos() / threshold.as_nanos();
    Duration::from_nanos(u64::try_from(scaled).unwrap_or(u64::MAX))
}

fn log_refusal(plugin: &str, command: &Command, refused: &Refused) {
    let cmd = command.tag();
    match refused.severity() {
        Severity::Debug => tracing::debug!(plugin, cmd, %refused, "refused"),
        Severity::Warn => tracing::warn!(plugin, cmd, %refused, "refused"),
    }
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn consecutive_output_of_one_pane_is_joined_in_order() {
        let output = |pane: u64, text: &'static str| PaneEvent::Output {
            pane: PaneId::new(pane),
            bytes: bytes::Bytes::from_static(text.as_bytes()),
        };
        let exited = PaneEvent::Exited {
            pane: PaneId::new(1),
            code: Some(0),
        };
        let round = vec![
            output(1, "a"),
            output(1, "b"),
            output(2, "c"),
            output(1, "d"),
            output(1, "e"),
            exited.clone(),
            output(2, "f"),
        ];
        assert_eq!(
            coalesce(round),
            [
                output(1, "ab"),
                output(2, "c"),
                output(1, "de"),
                exited,
                output(2, "f")
            ]
        );
    }

    #[test]
    fn idleness_is_scaled_to_the_guards_threshold() {
        let ms = Duration::from_millis;
        assert_eq!(guard_idle(ms(1234), IDLE_THRESHOLD), ms(1234));
        assert_eq!(guard_idle(ms(200), ms(200)), IDLE_THRESHOLD);
        assert_eq!(guard_idle(ms(100), ms(200)), IDLE_THRESHOLD / 2);
    }
}

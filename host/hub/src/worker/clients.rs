//! The worker's side of clients: attaching (hello and the replay), client requests, status,
//! and the frames it broadcasts. Human input enters panes only here, through the table's
//! `write_typed`, never the plugins' door.

use std::time::Instant;

use super::{ClientSlot, SlotRecord, Worker, pane_error};
use crate::config::StartupCommand;
use crate::frames::{NotQueued, QUEUED_PAUSE_ABOVE, QUEUED_RESUME_BELOW, STALL_LIMIT, frame_queue};
use crate::handle::{
    Client, HoldStatus, HubError, HubHandle, HubStatus, PaneStatus, PluginStatus, RequestOutcome,
};
use nightcrow_client_protocol::{
    CLIENT_PROTOCOL_VERSION, ClientRequest, Frame, HubMessage, PluginHealth, RecoveryReport,
};
use nightcrow_guard::PaneId;
use nightcrow_pane::PaneSize;
use nightcrow_protocol::{Event, Token};

impl Worker {
    pub(super) fn attach(&mut self, hub: HubHandle) -> Client {
        let (frames, receiver) = frame_queue();
        let id = self.next_client;
        self.next_client += 1;
        let mut replay = vec![Frame::Message(HubMessage::Hello {
            version: CLIENT_PROTOCOL_VERSION,
        })];
        for (pane, _, record) in self.panes_in_order() {
            replay.push(Frame::Message(created(pane, record, None)));
            let scrollback = self.table.scrollback(pane);
            if !scrollback.is_empty() {
                replay.push(Frame::Output {
                    pane: pane.get(),
                    bytes: scrollback.into(),
                });
            }
            replay.extend(program_title(pane, record).map(Frame::Message));
            if let Some(exit) = record.exit {
                replay.push(Frame::Message(HubMessage::Exited {
                    pane: pane.get(),
                    code: exit.code,
                    held: record.hold.is_some(),
                }));
            }
            if let Some(report) = &record.report {
                replay.push(Frame::Message(HubMessage::Recovery(report.clone())));
            }
        }
        replay.push(Frame::Message(HubMessage::Live));
        // The replay is at most a hello, five frames per pane and `live` (the scrollback is 256 KiB),
        // far below the queue's budget; a new client cannot be behind yet.
        for frame in replay {
            let _ = frames.try_send(frame);
        }
        self.clients.push(ClientSlot { id, frames });
        self.sizes.attached(id);
        Client {
            id,
            frames: receiver,
            hub,
            detach: self.detach_sender.clone(),
        }
    }

    /// `client`: the attached client that sent it; `None` for a caller of the handle, which
    /// has no size of its own and whose input is no client's activity.
    pub(super) fn on_client_request(
        &mut self,
        request: ClientRequest,
        client: Option<u64>,
    ) -> Result<RequestOutcome, HubError> {
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
                if let Some(client) = client {
                    // Opening a pane is acting, and the pane is opened at this client's size.
                    self.sizes.want(client, pane, size);
                    self.client_acted(client);
                }
                Ok(RequestOutcome::Opened(vec![pane]))
            }
            ClientRequest::Input { pane, data } => {
                let (pane, token) = self.live_pane(pane)?;
                // SPEC §6.4: the owner hears of the person, and its budget is cleared, before
                // the bytes reach the PTY; output the pane printed before comes first.
                self.flush_output(&token);
                if let Some(event) = self.slot_event(&token, |token, generation| Event::UserInput {
                    token,
                    generation,
                }) {
                    self.send_to_owner(&token, event);
                }
                self.guard.cancel(&token);
                if let Some(client) = client {
                    // Before the bytes, so a program reads them at the size it will draw in.
                    self.client_acted(client);
                }
                self.table
                    .write_typed(pane, data.as_bytes())
                    .map_err(pane_error)?;
                Ok(RequestOutcome::Done)
            }
            ClientRequest::Resize { pane, rows, cols } => {
                let (pane, _) = self.known_pane(pane)?;
                let size = PaneSize::new(rows, cols).map_err(pane_error)?;
                match client {
                    Some(client) => self.client_resize(client, pane, size),
                    None => self.set_pane_size(pane, size)?,
                }
                Ok(RequestOutcome::Done)
            }
            ClientRequest::Close { pane } => {
                let (pane, token) = self.known_pane(pane)?;
                self.remove_pane(pane, &token);
                Ok(RequestOutcome::Done)
            }
            ClientRequest::CancelRecovery { pane } => {
                let (id, token) = self.known_pane(pane)?;
                let record = self.slots.get(&token);
                if record.is_some_and(|r| r.hold.is_some()) {
                    self.end_recovery(&token);
                    return Ok(RequestOutcome::Done);
                }
                // Nothing held: say so, and what happens instead, rather than pretend.
                let alive = self.table.slot(id).is_some_and(|slot| slot.is_alive());
                let watcher = record.and_then(|r| r.owner.as_deref());
                Err(HubError::BadRequest(match (alive, watcher) {
                    (true, Some(plugin)) => format!(
                        "nothing to cancel: pane {pane} is running, not held; {plugin} goes on \
                         watching it (close the pane to end it)"
                    ),
                    (true, None) => format!(
                        "nothing to cancel: pane {pane} is running and no plugin watches it"
                    ),
                    (false, _) => format!(
                        "nothing to cancel: pane {pane} has exited and nothing is held for it"
                    ),
                }))
            }
            ClientRequest::Start => {
                let missing: Vec<StartupCommand> = self
                    .config
                    .startup_commands
                    .iter()
                    .filter(|startup| {
                        !self.slots.values().any(|record| {
                            record.startup.as_ref() == Some(*startup)
                                && (record.exit.is_none() || record.hold.is_some())
                        })
                    })
                    .cloned()
                    .collect();
                let mut opened = Vec::new();
                for startup in missing {
                    opened.push(self.open_startup_pane(startup)?);
                }
                Ok(RequestOutcome::Opened(opened))
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

    pub(super) fn status(&self) -> HubStatus {
        let now = Instant::now();
        let panes = self
            .panes_in_order()
            .map(|(pane, slot, record)| PaneStatus {
                pane,
                title: record.title.clone(),
                program_title: record.program_title.clone(),
                generation: slot.generation(),
                alive: slot.is_alive(),
                owner: record.owner.clone(),
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
            .slots
            .values()
            .filter_map(|record| {
                let hold = record.hold.as_ref()?;
                Some(HoldStatus {
                    pane: hold.pane,
                    expires_in: hold.deadline.saturating_duration_since(now),
                    report: record.report.clone(),
                })
            })
            .collect();
        HubStatus {
            panes,
            plugins,
            holds,
        }
    }

    /// Queues `frame` for every client; one that is full has fallen behind and is
    /// disconnected (its stream ends) rather than given a gap. A message that is news for a
    /// person who is away is published as a notice too.
    pub(super) fn broadcast(&mut self, frame: Frame) {
        if let Frame::Message(message) = &frame
            && let Some(notice) = self.notices.observe(message)
        {
            // No subscriber is fine: nobody asked to be told.
            let _ = self.notice_sender.send(notice);
        }
        self.clients
            .retain(|client| match client.frames.try_send(frame.clone()) {
                Ok(()) => true,
                Err(NotQueued::Full) => {
                    tracing::warn!(client = client.id, "client fell behind; disconnected");
                    false
                }
                Err(NotQueued::Closed) => false,
            });
    }

    /// Stops taking pane output while a client holds more than [`QUEUED_PAUSE_ABOVE`] bytes, and
    /// takes it again once every client is down to [`QUEUED_RESUME_BELOW`].
    pub(super) fn check_backlog(&mut self) {
        self.clients.retain(|client| !client.frames.is_closed());
        let most = self.most_queued();
        match &self.paused {
            None if most > QUEUED_PAUSE_ABOVE => {
                self.paused = Some(Pause {
                    since: Instant::now(),
                    queued: most,
                });
            }
            Some(_) if most <= QUEUED_RESUME_BELOW => self.paused = None,
            _ => {}
        }
    }

    /// [`STALL_LIMIT`] has passed in a pause: clients that took less than [`QUEUED_RESUME_BELOW`]
    /// bytes in it are dropped (they get what they have queued, then their stream ends), so
    /// one stopped client cannot hold the panes; if the slowest did drain that much, the
    /// pause goes on with a fresh limit.
    pub(super) fn on_stalled_clients(&mut self) {
        let Some(pause) = self.paused.take() else {
            return;
        };
        let most = self.most_queued();
        if most + QUEUED_RESUME_BELOW <= pause.queued {
            self.paused = Some(Pause {
                since: Instant::now(),
                queued: most,
            });
            return;
        }
        self.clients.retain(|client| {
            let behind = client.frames.queued() > QUEUED_RESUME_BELOW;
            if behind {
                tracing::warn!(client = client.id, "client fell behind; disconnected");
            }
            !behind
        });
    }

    fn most_queued(&self) -> usize {
        let queued = self.clients.iter().map(|client| client.frames.queued());
        queued.max().unwrap_or(0)
    }

    pub(super) fn send_to_client(&mut self, id: u64, frame: Frame) {
        self.clients
            .retain(|client| client.id != id || client.frames.try_send(frame.clone()).is_ok());
    }

    pub(super) fn broadcast_cancelled(&mut self, pane: PaneId) {
        let report = RecoveryReport::cancelled(pane.get());
        self.broadcast(Frame::Message(HubMessage::Recovery(report)));
    }

    pub(super) fn broadcast_plugin(
        &mut self,
        name: &str,
        state: PluginHealth,
        detail: Option<String>,
    ) {
        self.broadcast(Frame::Message(HubMessage::Plugin {
            name: name.to_owned(),
            state,
            detail,
        }));
    }
}

/// `replaces`: the pane a relaunch put this one in place of.
pub(super) fn created(pane: PaneId, record: &SlotRecord, replaces: Option<PaneId>) -> HubMessage {
    HubMessage::Created {
        pane: pane.get(),
        title: record.title.clone(),
        rows: record.size.rows(),
        cols: record.size.cols(),
        replaces: replaces.map(PaneId::get),
    }
}

/// `title` with the title the pane's program set, if it set one: after `created`, for a
/// client that has not heard it (one attaching, or a relaunch's new pane).
pub(super) fn program_title(pane: PaneId, record: &SlotRecord) -> Option<HubMessage> {
    let title = record.program_title.clone()?;
    Some(HubMessage::Title {
        pane: pane.get(),
        title: Some(title),
    })
}

/// Pane output waiting for a client that fell behind.
#[derive(Debug)]
pub(super) struct Pause {
    since: Instant,
    /// The most any client had queued when the pause (or its current limit) began.
    queued: usize,
}

impl Pause {
    pub(super) fn stall_at(&self) -> Instant {
        self.since + STALL_LIMIT
    }
}

/// Resolves when the client furthest behind catches up or goes (or at once without clients).
pub(super) async fn caught_up(clients: &[ClientSlot]) {
    if let Some(client) = clients.iter().max_by_key(|client| client.frames.queued()) {
        client.frames.caught_up().await;
    }
}

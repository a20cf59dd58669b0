//! What clients ask of the worker: attaching (hello and the replay), opening, typing into,
//! resizing, closing panes, ending a hold, starting the startup commands, and status.
//! Human input enters panes only here, through the slots' `write_typed`, never the
//! plugins' door.

use nightcrow_client_protocol::ClientRequest;
use nightcrow_pane::PaneSize;

use super::{Slots, Worker, pane_size};
use crate::handle::{Client, HubError, HubHandle, HubStatus, RequestOutcome};

impl Worker {
    pub(super) fn attach(&mut self, hub: HubHandle) -> Client {
        let client = self.clients.attach(self.slots.replay(), hub);
        self.slots.client_attached(client.id);
        client
    }

    /// `client`: the attached client that sent it; `None` for a caller of the handle, which
    /// has no size of its own and whose input is no client's activity.
    pub(super) fn on_client_request(
        &mut self,
        request: ClientRequest,
        client: Option<u64>,
    ) -> Result<RequestOutcome, HubError> {
        let outbox = &mut self.outbox;
        match request {
            ClientRequest::Create {
                title,
                command,
                rows,
                cols,
            } => {
                let default = self.config.default_size;
                let size = match (rows, cols) {
                    (None, None) => default,
                    (rows, cols) => pane_size(
                        rows.unwrap_or(default.rows()),
                        cols.unwrap_or(default.cols()),
                    )?,
                };
                let pane = self.slots.open(title, command, None, size, outbox)?;
                if let Some(client) = client {
                    self.slots.client_opened(client, pane, size, outbox);
                }
                Ok(RequestOutcome::Opened(vec![pane]))
            }
            ClientRequest::Input { pane, data } => {
                let typed = self.slots.user_typed(pane, outbox)?;
                if let Some(client) = client {
                    // Before the bytes, so a program reads them at the size it will draw in.
                    self.slots.client_acted(client, outbox);
                }
                // SPEC §6.4: the owner hears of the person before the bytes reach the PTY.
                self.deliver();
                self.slots.write_typed(typed, data.as_bytes())?;
                Ok(RequestOutcome::Done)
            }
            ClientRequest::Resize { pane, rows, cols } => {
                // An unknown pane is the answer before a bad size.
                let known = self.slots.known_pane(pane)?;
                let size: PaneSize = pane_size(rows, cols)?;
                match client {
                    Some(client) => self.slots.client_resize(client, known, size, outbox)?,
                    None => self.slots.set_size(known.0, size, outbox)?,
                }
                Ok(RequestOutcome::Done)
            }
            ClientRequest::Close { pane } => {
                self.slots.close(pane, outbox)?;
                Ok(RequestOutcome::Done)
            }
            ClientRequest::CancelRecovery { pane } => {
                self.slots.cancel_hold(pane, outbox)?;
                Ok(RequestOutcome::Done)
            }
            ClientRequest::Start => {
                let mut opened = Vec::new();
                for startup in self.startup_commands_without(Slots::has_live_pane_for) {
                    opened.push(self.open_startup_pane(startup)?);
                }
                Ok(RequestOutcome::Opened(opened))
            }
        }
    }

    pub(super) fn status(&self) -> HubStatus {
        let (panes, holds) = self.slots.status(crate::clock::now());
        HubStatus {
            panes,
            plugins: self.plugins.status(),
            holds,
        }
    }
}

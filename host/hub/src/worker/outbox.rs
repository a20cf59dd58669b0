//! What the worker's parts have to say to plugins and clients, kept in the order it
//! happened until [`Worker::deliver`](super::Worker::deliver) hands it on. A part writes
//! here instead of reaching the others, so no part depends on another, and the outbox lives
//! in the worker rather than in a value a part returns, so an early `?` cannot lose what a
//! change already said.

use nightcrow_client_protocol::{Frame, HubMessage, RecoveryReport};
use nightcrow_guard::PaneId;
use nightcrow_protocol::Event;

#[derive(Debug, Default)]
pub(super) struct Outbox {
    parcels: Vec<Parcel>,
}

#[derive(Debug)]
pub(super) enum Parcel {
    /// An event for the plugin of this name, if it is running when delivered.
    Tell { plugin: String, event: Event },
    /// A frame for every attached client.
    Show(Frame),
    /// A frame for one client.
    ShowTo { client: u64, frame: Frame },
}

impl Outbox {
    pub(super) fn tell(&mut self, plugin: &str, event: Event) {
        self.parcels.push(Parcel::Tell {
            plugin: plugin.to_owned(),
            event,
        });
    }

    pub(super) fn show(&mut self, message: HubMessage) {
        self.parcels.push(Parcel::Show(Frame::Message(message)));
    }

    pub(super) fn show_frame(&mut self, frame: Frame) {
        self.parcels.push(Parcel::Show(frame));
    }

    pub(super) fn show_to(&mut self, client: u64, frame: Frame) {
        self.parcels.push(Parcel::ShowTo { client, frame });
    }

    /// Clients stop showing a recovery marker for the pane.
    pub(super) fn show_cancelled(&mut self, pane: PaneId) {
        self.show(HubMessage::Recovery(RecoveryReport::cancelled(pane.get())));
    }

    pub(super) fn drain(&mut self) -> std::vec::Drain<'_, Parcel> {
        self.parcels.drain(..)
    }
}

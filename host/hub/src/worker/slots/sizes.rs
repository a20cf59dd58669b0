//! Shared sizes (docs/hub.md): several clients show one pane, each at the size it has room
//! for, and the PTY has one size. Like tmux's `window-size latest`, the pane takes the size
//! of the most recently active client among those that sized it; a client that detaches
//! gives its panes to the latest of the others.

use std::collections::HashMap;

use nightcrow_guard::PaneId;
use nightcrow_pane::PaneSize;
use nightcrow_protocol::Token;

use super::Slots;
use crate::handle::HubError;
use crate::worker::outbox::Outbox;
use crate::worker::pane_error;
use nightcrow_client_protocol::{Frame, HubMessage};

/// What every attached client wants, and when it last acted.
#[derive(Debug, Default)]
pub(super) struct SharedSizes {
    clients: HashMap<u64, Wanted>,
    /// Counts acts, so that the latest act has the highest number.
    clock: u64,
}

#[derive(Debug, Default)]
struct Wanted {
    /// The clock at the client's latest act.
    acted: u64,
    panes: HashMap<PaneId, PaneSize>,
}

impl SharedSizes {
    /// A client attached: attaching is its first act, as in tmux.
    pub(super) fn attached(&mut self, client: u64) {
        self.clients.insert(client, Wanted::default());
        self.acted(client);
    }

    /// The client is gone; returns the panes it had sized, whose size may change now.
    pub(super) fn detached(&mut self, client: u64) -> Vec<PaneId> {
        self.clients
            .remove(&client)
            .map(|wanted| wanted.panes.into_keys().collect())
            .unwrap_or_default()
    }

    /// The person at `client` did something (typed, resized, opened a pane): it becomes the
    /// latest client. Returns the panes whose size may change: none if it already was.
    pub(super) fn acted(&mut self, client: u64) -> Vec<PaneId> {
        let latest = self.clock;
        let Some(wanted) = self.clients.get_mut(&client) else {
            return Vec::new();
        };
        if wanted.acted == latest && latest > 0 {
            return Vec::new();
        }
        self.clock += 1;
        wanted.acted = self.clock;
        wanted.panes.keys().copied().collect()
    }

    /// Records the size `client` wants for `pane`; `true` when it is the client's first for
    /// that pane. An unknown (already detached) client is ignored.
    pub(super) fn want(&mut self, client: u64, pane: PaneId, size: PaneSize) -> bool {
        self.clients
            .get_mut(&client)
            .is_some_and(|wanted| wanted.panes.insert(pane, size).is_none())
    }

    pub(super) fn forget_pane(&mut self, pane: PaneId) {
        for wanted in self.clients.values_mut() {
            wanted.panes.remove(&pane);
        }
    }

    /// The size the latest client that sized `pane` wants for it.
    pub(super) fn size_of(&self, pane: PaneId) -> Option<PaneSize> {
        self.clients
            .values()
            .filter_map(|wanted| Some((wanted.acted, *wanted.panes.get(&pane)?)))
            .max_by_key(|(acted, _)| *acted)
            .map(|(_, size)| size)
    }
}

impl Slots {
    /// A client attached: attaching is its first act, as in tmux.
    pub(in crate::worker) fn client_attached(&mut self, client: u64) {
        self.sizes.attached(client);
    }

    /// A client asks for `size` on `pane`. Its first size for a pane only says what it
    /// would want (it follows a pane someone else opened, or the replay of its attach);
    /// any later one is the person at it acting (a terminal resized, the claim key). A
    /// client whose size does not win is told the size the pane keeps, so it draws the
    /// pane as the program sees it.
    pub(in crate::worker) fn client_resize(
        &mut self,
        client: u64,
        (pane, token): (PaneId, Token),
        size: PaneSize,
        outbox: &mut Outbox,
    ) -> Result<(), HubError> {
        if !self.sizes.want(client, pane, size) {
            self.client_acted(client, outbox);
        }
        self.apply_shared_size(pane, outbox);
        let kept = self.records.get(&token).map(|record| record.size);
        if let Some(kept) = kept.filter(|kept| *kept != size) {
            let resized = HubMessage::Resized {
                pane: pane.get(),
                rows: kept.rows(),
                cols: kept.cols(),
            };
            outbox.show_to(client, Frame::Message(resized));
        }
        Ok(())
    }

    /// A client opened `pane` at `size`: opening a pane is acting, and the pane is the
    /// client's size.
    pub(in crate::worker) fn client_opened(
        &mut self,
        client: u64,
        pane: PaneId,
        size: PaneSize,
        outbox: &mut Outbox,
    ) {
        self.sizes.want(client, pane, size);
        self.client_acted(client, outbox);
    }

    /// The client became the latest: the panes it sized take its sizes.
    pub(in crate::worker) fn client_acted(&mut self, client: u64, outbox: &mut Outbox) {
        for pane in self.sizes.acted(client) {
            self.apply_shared_size(pane, outbox);
        }
    }

    /// The client detached: its panes take the size of the latest of the others.
    pub(in crate::worker) fn client_detached(&mut self, client: u64, outbox: &mut Outbox) {
        for pane in self.sizes.detached(client) {
            self.apply_shared_size(pane, outbox);
        }
    }

    fn apply_shared_size(&mut self, pane: PaneId, outbox: &mut Outbox) {
        if let Some(size) = self.sizes.size_of(pane)
            && let Err(error) = self.set_size(pane, size, outbox)
        {
            tracing::debug!(%pane, %error, "resize failed");
        }
    }

    /// Resizes the pane's PTY and tells every client, unless it has that size already: what
    /// a caller of the hub's handle asks (no client, so no size of its own), and what a
    /// client's winning size comes to.
    pub(in crate::worker) fn set_size(
        &mut self,
        pane: PaneId,
        size: PaneSize,
        outbox: &mut Outbox,
    ) -> Result<(), HubError> {
        let slot = self
            .table
            .slot(pane)
            .ok_or(HubError::UnknownPane(pane.get()))?;
        let token = slot.token().clone();
        if self.records.get(&token).is_some_and(|r| r.size == size) {
            return Ok(());
        }
        self.table.resize(pane, size).map_err(pane_error)?;
        if let Some(record) = self.records.get_mut(&token) {
            record.size = size;
        }
        outbox.show(HubMessage::Resized {
            pane: pane.get(),
            rows: size.rows(),
            cols: size.cols(),
        });
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn size(rows: u16, cols: u16) -> PaneSize {
        PaneSize::new(rows, cols).unwrap()
    }

    #[test]
    fn the_latest_client_that_sized_a_pane_sets_it_and_a_detach_gives_it_back() {
        let pane = PaneId::new(1);
        let mut sizes = SharedSizes::default();
        sizes.attached(1);
        assert!(sizes.want(1, pane, size(48, 200)));
        sizes.attached(2);
        assert!(sizes.want(2, pane, size(28, 100)));
        assert_eq!(sizes.size_of(pane), Some(size(28, 100)), "attached last");
        assert_eq!(sizes.acted(1), [pane]);
        assert_eq!(sizes.size_of(pane), Some(size(48, 200)));
        assert_eq!(sizes.acted(1), [], "already the latest");
        sizes.acted(2);
        assert_eq!(sizes.size_of(pane), Some(size(28, 100)));
        assert_eq!(sizes.detached(2), [pane]);
        assert_eq!(sizes.size_of(pane), Some(size(48, 200)));
        assert!(
            !sizes.want(2, pane, size(10, 10)),
            "a detached client is ignored"
        );
        sizes.forget_pane(pane);
        assert_eq!(sizes.size_of(pane), None);
    }
}

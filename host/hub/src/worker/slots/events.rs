//! What happens to panes on their own: output (to clients, to the scrollback, to the owner
//! in turns), a program's title, exits and relaunch holds, idleness, and hold expiry.

use std::time::Instant;

use nightcrow_client_protocol::{Frame, HubMessage};
use nightcrow_guard::PaneId;
use nightcrow_pane::PaneEvent;
use nightcrow_protocol::{Event, Token};

use super::{End, Exit, Hold, Slots};
use crate::worker::outbox::Outbox;

/// Plainly exited panes a hub keeps for late clients (each keeps its scrollback).
const MAX_KEPT_EXITS: usize = 8;

impl Slots {
    pub(in crate::worker) fn on_pane_event(
        &mut self,
        event: PaneEvent,
        now: Instant,
        outbox: &mut Outbox,
    ) {
        match event {
            PaneEvent::Output { pane, bytes } => {
                let recorded = self.table.record_output(pane, &bytes);
                outbox.show_frame(Frame::Output {
                    pane: pane.get(),
                    bytes,
                });
                let Some(token) = self.table.slot(pane).map(|slot| slot.token().clone()) else {
                    return;
                };
                if let Some(title) = recorded.title {
                    self.retitle(pane, &token, title, outbox);
                }
                let Some(text) = recorded.text else {
                    return;
                };
                let Some(record) = self.records.get_mut(&token).filter(|r| r.owner.is_some())
                else {
                    return;
                };
                if let Some(text) = record.output.push(&text, now) {
                    self.send_output(&token, text, outbox);
                }
            }
            PaneEvent::Exited { pane, code } => self.on_exit(pane, code, now, outbox),
        }
    }

    /// The pane's program set its title (empty: it cleared it); clients hear of a change.
    fn retitle(&mut self, pane: PaneId, token: &Token, title: String, outbox: &mut Outbox) {
        let title = (!title.is_empty()).then_some(title);
        let Some(record) = self.records.get_mut(token) else {
            return;
        };
        if record.program_title == title {
            return;
        }
        record.program_title = title;
        outbox.show(HubMessage::Title {
            pane: pane.get(),
            title: record.program_title.clone(),
        });
    }

    /// SPEC §6.2. Whatever happens to the slot, the pane stays with its scrollback, exited,
    /// for any client that attaches later, until a client closes it (docs/hub.md).
    fn on_exit(&mut self, pane: PaneId, code: Option<u32>, now: Instant, outbox: &mut Outbox) {
        let Some(slot) = self.table.slot(pane) else {
            // Closed or relaunched already: the event is late.
            return;
        };
        let token = slot.token().clone();
        // The last words before the exit reach the owner before the exit does.
        self.flush_output(&token, now, outbox);
        self.table.release_process(pane);
        let deadline = now + self.hold_ttl;
        let Some(record) = self.records.get_mut(&token) else {
            return;
        };
        record.exit = Some(Exit { code });
        let held = record.owner.is_some() && record.launch_command().is_some();
        if held {
            record.hold = Some(Hold { pane, deadline });
            self.tell_owner(
                &token,
                |token, generation| Event::PaneExited { token, generation },
                outbox,
            );
        } else if record.owner.is_some() {
            // A bare shell cannot be relaunched: its recovery is over.
            self.end(&token, End::Recovery, outbox);
        }
        outbox.show(HubMessage::Exited {
            pane: pane.get(),
            code,
            held,
        });
        self.let_go_of_old_exits(outbox);
    }

    /// Keeps at most [`MAX_KEPT_EXITS`] plainly exited panes (held ones do not count): the
    /// oldest beyond that is closed, so panes that come and go cannot grow the hub.
    fn let_go_of_old_exits(&mut self, outbox: &mut Outbox) {
        let plain: Vec<Token> = self
            .panes_in_order()
            .filter(|(_, _, record)| record.exit.is_some() && record.hold.is_none())
            .map(|(_, slot, _)| slot.token().clone())
            .collect();
        let excess = plain.len().saturating_sub(MAX_KEPT_EXITS);
        for token in plain.into_iter().take(excess) {
            self.end(&token, End::Close, outbox);
        }
    }

    /// The next time something is due: a pane's idleness, a hold's expiry, or output
    /// waiting for its turn to reach the owner.
    pub(in crate::worker) fn next_deadline(&self) -> Option<Instant> {
        let idle_at = self.table.next_idle_deadline();
        let expiry_at = self.holds().map(|(_, hold)| hold.deadline).min();
        let output_at = self.records.values().filter_map(|r| r.output.due()).min();
        [idle_at, expiry_at, output_at].into_iter().flatten().min()
    }

    /// Does what is due at `now`: owners hear of their idle panes (after the output that
    /// waited), holds past their time end, and output that waited for its turn goes.
    pub(in crate::worker) fn on_deadline(&mut self, now: Instant, outbox: &mut Outbox) {
        for idle in self.table.take_idle(now) {
            if self.owner_of(&idle.token).is_none() {
                continue;
            }
            self.flush_output(&idle.token, now, outbox);
            let screen = self.table.screen(idle.pane);
            let idle_ms = u64::try_from(idle.idle.as_millis()).unwrap_or(u64::MAX);
            self.tell_owner(
                &idle.token,
                |token, generation| Event::PaneIdle {
                    token,
                    generation,
                    idle_ms,
                    screen,
                },
                outbox,
            );
        }
        let expired: Vec<(Token, PaneId)> = self
            .holds()
            .filter(|(_, hold)| hold.deadline <= now)
            .map(|(token, hold)| (token.clone(), hold.pane))
            .collect();
        for (token, pane) in expired {
            tracing::info!(%pane, "relaunch hold expired");
            self.end(&token, End::Recovery, outbox);
        }
        for token in self.tokens_where(|record| record.output.due().is_some_and(|due| due <= now)) {
            self.flush_output(&token, now, outbox);
        }
    }

    /// Sends the owner whatever text of the pane is still pending.
    pub(super) fn flush_output(&mut self, token: &Token, now: Instant, outbox: &mut Outbox) {
        let text = self
            .records
            .get_mut(token)
            .and_then(|record| record.output.take(now));
        if let Some(text) = text {
            self.send_output(token, text, outbox);
        }
    }

    fn send_output(&self, token: &Token, text: String, outbox: &mut Outbox) {
        self.tell_owner(
            token,
            |token, generation| Event::PaneOutput {
                token,
                generation,
                text,
            },
            outbox,
        );
    }
}

/// Joins consecutive `Output` events of the same pane, keeping the order of everything.
/// Each run is copied once, into a buffer of its exact size (joining pairwise would copy a
/// run of n chunks n times over); a lone chunk is not copied at all.
pub(in crate::worker) fn coalesce(round: Vec<PaneEvent>) -> Vec<PaneEvent> {
    let mut joined = Vec::with_capacity(round.len());
    let mut events = round.into_iter().peekable();
    while let Some(event) = events.next() {
        let PaneEvent::Output { pane, bytes } = event else {
            joined.push(event);
            continue;
        };
        let mut run = vec![bytes];
        while let Some(PaneEvent::Output { bytes, .. }) = events
            .next_if(|next| matches!(next, PaneEvent::Output { pane: same, .. } if *same == pane))
        {
            run.push(bytes);
        }
        joined.push(PaneEvent::Output {
            pane,
            bytes: crate::frames::concatenate(run),
        });
    }
    joined
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
}

//! The worker's clients, one of its three parts: each attached client's frame queue, the
//! broadcast, which panes' output waits while a client is far behind, and the notices a
//! person who is away is sent. It knows nothing of panes but their ids: what a client is
//! shown comes from the outbox, and an attach's replay from the slots.

use std::collections::BTreeSet;
use std::time::Instant;

use tokio::sync::{broadcast, mpsc};

use crate::frames::{
    FrameSender, NotQueued, PANE_HELD_ABOVE, QUEUED_BEHIND_ABOVE, QUEUED_RESUME_BELOW, STALL_LIMIT,
    frame_queue,
};
use crate::handle::{Client, HubHandle};
use nightcrow_client_protocol::{
    CLIENT_PROTOCOL_VERSION, Frame, HubMessage, Notice, Notices, RecoveryReport,
};

/// Notices kept for a subscriber that has not read them yet; one that falls further behind
/// loses the oldest and is told how many. Notices are rare (a call-back, a resume), so this
/// is hours of them.
const NOTICE_QUEUE: usize = 64;

pub(super) struct Clients {
    attached: Vec<Attached>,
    next_id: u64,
    /// Handed to each [`Client`], which sends its id as it is dropped.
    detach: mpsc::UnboundedSender<u64>,
    /// What the broadcasts mean to a person who is away, read once for every subscriber
    /// of [`HubHandle::notices`].
    notices: Notices,
    notice_sender: broadcast::Sender<Notice>,
}

struct Attached {
    id: u64,
    frames: FrameSender,
    /// Set while the client is far behind.
    behind: Option<Behind>,
}

/// A client far behind, and the panes whose output waits for it.
#[derive(Debug)]
struct Behind {
    since: Instant,
    /// What it had taken in all when it fell behind (or its current time limit began).
    taken: usize,
    /// The panes that had more than [`PANE_HELD_ABOVE`] queued at some moment since: they
    /// wait until the client catches up, the other panes go on.
    panes: BTreeSet<u64>,
}

impl Clients {
    pub(super) fn new(detach: mpsc::UnboundedSender<u64>) -> Clients {
        Clients {
            attached: Vec::new(),
            next_id: 1,
            detach,
            notices: Notices::new(),
            notice_sender: broadcast::Sender::new(NOTICE_QUEUE),
        }
    }

    pub(super) fn notice_sender(&self) -> broadcast::WeakSender<Notice> {
        self.notice_sender.downgrade()
    }

    /// Notices start from these reports and a live hub: nobody is told again what they
    /// say.
    pub(super) fn notices_from<'a>(&mut self, reports: impl Iterator<Item = &'a RecoveryReport>) {
        for report in reports {
            self.notices.observe(&HubMessage::Recovery(report.clone()));
        }
        self.notices.observe(&HubMessage::Live);
    }

    /// A new client, whose stream starts with `hello`, the `panes` replay and `live`.
    pub(super) fn attach(&mut self, panes: Vec<Frame>, hub: HubHandle) -> Client {
        let (frames, receiver) = frame_queue();
        let id = self.next_id;
        self.next_id += 1;
        let hello = Frame::Message(HubMessage::Hello {
            version: CLIENT_PROTOCOL_VERSION,
        });
        let live = Frame::Message(HubMessage::Live);
        // The replay is at most a hello, five frames per pane and `live` (the scrollback is
        // 256 KiB), far below the queue's budget; a new client cannot be behind yet.
        for frame in std::iter::once(hello).chain(panes).chain([live]) {
            let _ = frames.try_send(frame);
        }
        self.attached.push(Attached {
            id,
            frames,
            behind: None,
        });
        Client {
            id,
            frames: receiver,
            hub,
            detach: self.detach.clone(),
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
        self.attached
            .retain(|client| match client.frames.try_send(frame.clone()) {
                Ok(()) => true,
                Err(NotQueued::Full) => {
                    tracing::warn!(client = client.id, "client fell behind; disconnected");
                    false
                }
                Err(NotQueued::Closed) => false,
            });
    }

    pub(super) fn send_to(&mut self, id: u64, frame: Frame) {
        self.attached
            .retain(|client| client.id != id || client.frames.try_send(frame.clone()).is_ok());
    }

    /// Every client's stream ends.
    pub(super) fn close_all(&mut self) {
        self.attached.clear();
    }

    /// The panes whose output waits for a client far behind.
    pub(super) fn held_panes(&self) -> BTreeSet<u64> {
        self.behind()
            .flat_map(|behind| behind.panes.iter().copied())
            .collect()
    }

    fn behind(&self) -> impl Iterator<Item = &Behind> {
        self.attached
            .iter()
            .filter_map(|client| client.behind.as_ref())
    }

    /// A client that holds more than [`QUEUED_BEHIND_ABOVE`] bytes is behind until it is down
    /// to [`QUEUED_RESUME_BELOW`]; meanwhile every pane with more than [`PANE_HELD_ABOVE`]
    /// of output in its queue waits for it ([`held_panes`](Self::held_panes)).
    pub(super) fn check_backlog(&mut self) {
        self.attached.retain(|client| !client.frames.is_closed());
        for client in &mut self.attached {
            let queued = client.frames.queued();
            match &mut client.behind {
                None if queued > QUEUED_BEHIND_ABOVE => {
                    client.behind = Some(Behind {
                        since: crate::clock::now(),
                        taken: client.frames.taken(),
                        panes: BTreeSet::new(),
                    });
                }
                Some(_) if queued <= QUEUED_RESUME_BELOW => client.behind = None,
                _ => {}
            }
            if let Some(behind) = &mut client.behind {
                behind
                    .panes
                    .extend(client.frames.panes_above(PANE_HELD_ABOVE));
            }
        }
    }

    /// When the first client behind has been so for [`STALL_LIMIT`].
    pub(super) fn stall_at(&self) -> Option<Instant> {
        self.behind().map(|behind| behind.since + STALL_LIMIT).min()
    }

    /// A client that has been behind for [`STALL_LIMIT`] and took less than
    /// [`QUEUED_RESUME_BELOW`] bytes in that time is dropped (it gets what it has queued,
    /// then its stream ends), so one stopped client cannot hold the panes; one that did
    /// take that much stays behind with a fresh limit.
    pub(super) fn on_stalled(&mut self) {
        let now = crate::clock::now();
        self.attached.retain_mut(|client| {
            let Some(behind) = &mut client.behind else {
                return true;
            };
            if now < behind.since + STALL_LIMIT {
                return true;
            }
            let taken = client.frames.taken();
            if taken >= behind.taken + QUEUED_RESUME_BELOW {
                behind.since = now;
                behind.taken = taken;
                return true;
            }
            tracing::warn!(client = client.id, "client fell behind; disconnected");
            false
        });
    }

    /// Resolves when a client that is behind catches up or goes; never without one.
    pub(super) async fn caught_up(&self) {
        let behind = self
            .attached
            .iter()
            .filter(|client| client.behind.is_some());
        let waits: Vec<_> = behind
            .map(|client| Box::pin(client.frames.caught_up()))
            .collect();
        if waits.is_empty() {
            return std::future::pending().await;
        }
        futures::future::select_all(waits).await;
    }
}

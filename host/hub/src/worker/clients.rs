//! The worker's clients, one of its three parts: each attached client's frame queue, the
//! broadcast, the pause while a client is far behind, and the notices a person who is away
//! is sent. It knows nothing of panes: what a client is shown comes from the outbox, and an
//! attach's replay from the slots.

use std::time::Instant;

use tokio::sync::{broadcast, mpsc};

use crate::frames::{
    FrameSender, NotQueued, QUEUED_PAUSE_ABOVE, QUEUED_RESUME_BELOW, STALL_LIMIT, frame_queue,
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
    /// Set while pane output waits for a client that fell behind.
    paused: Option<Pause>,
    /// What the broadcasts mean to a person who is away, read once for every subscriber
    /// of [`HubHandle::notices`].
    notices: Notices,
    notice_sender: broadcast::Sender<Notice>,
}

struct Attached {
    id: u64,
    frames: FrameSender,
}

/// Pane output waiting for a client that fell behind.
#[derive(Debug)]
struct Pause {
    since: Instant,
    /// The most any client had queued when the pause (or its current limit) began.
    queued: usize,
}

impl Clients {
    pub(super) fn new(detach: mpsc::UnboundedSender<u64>) -> Clients {
        Clients {
            attached: Vec::new(),
            next_id: 1,
            detach,
            paused: None,
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
        self.attached.push(Attached { id, frames });
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

    /// Whether pane output waits for a client that fell behind.
    pub(super) fn paused(&self) -> bool {
        self.paused.is_some()
    }

    /// Stops taking pane output while a client holds more than [`QUEUED_PAUSE_ABOVE`]
    /// bytes, and takes it again once every client is down to [`QUEUED_RESUME_BELOW`].
    pub(super) fn check_backlog(&mut self) {
        self.attached.retain(|client| !client.frames.is_closed());
        let most = self.most_queued();
        match &self.paused {
            None if most > QUEUED_PAUSE_ABOVE => {
                self.paused = Some(Pause {
                    since: crate::clock::now(),
                    queued: most,
                });
            }
            Some(_) if most <= QUEUED_RESUME_BELOW => self.paused = None,
            _ => {}
        }
    }

    /// When the current pause has lasted [`STALL_LIMIT`].
    pub(super) fn stall_at(&self) -> Option<Instant> {
        self.paused.as_ref().map(|pause| pause.since + STALL_LIMIT)
    }

    /// [`STALL_LIMIT`] has passed in a pause: clients that took less than
    /// [`QUEUED_RESUME_BELOW`] bytes in it are dropped (they get what they have queued,
    /// then their stream ends), so one stopped client cannot hold the panes; if the slowest
    /// did drain that much, the pause goes on with a fresh limit.
    pub(super) fn on_stalled(&mut self) {
        let Some(pause) = self.paused.take() else {
            return;
        };
        let most = self.most_queued();
        if most + QUEUED_RESUME_BELOW <= pause.queued {
            self.paused = Some(Pause {
                since: crate::clock::now(),
                queued: most,
            });
            return;
        }
        self.attached.retain(|client| {
            let behind = client.frames.queued() > QUEUED_RESUME_BELOW;
            if behind {
                tracing::warn!(client = client.id, "client fell behind; disconnected");
            }
            !behind
        });
    }

    /// Resolves when the client furthest behind catches up or goes (or at once without
    /// clients).
    pub(super) async fn caught_up(&self) {
        let furthest = self
            .attached
            .iter()
            .max_by_key(|client| client.frames.queued());
        if let Some(client) = furthest {
            client.frames.caught_up().await;
        }
    }

    fn most_queued(&self) -> usize {
        let queued = self.attached.iter().map(|client| client.frames.queued());
        queued.max().unwrap_or(0)
    }
}

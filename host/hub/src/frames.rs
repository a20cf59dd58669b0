//! A client's frame stream, bounded by the bytes it holds rather than by a count of frames
//! (docs/hub.md, "A client that falls behind"). Output frames range from a few bytes to a
//! joined round of half a megabyte, so a count bounds neither memory nor time: 256 small
//! frames are a few milliseconds of a flood, 256 large ones over 100 MiB. The hub stops
//! reading its panes while a client holds more than [`QUEUED_PAUSE_ABOVE`] and waits for it to come
//! down to [`QUEUED_RESUME_BELOW`], which the receiving end announces.

use std::sync::Arc;
use std::time::Duration;

use tokio::sync::{Notify, OwnedSemaphorePermit, Semaphore, mpsc};

use crate::client::Frame;

/// Bytes a client may have queued before it counts as fallen behind and is disconnected.
pub const CLIENT_QUEUE_BYTES: usize = 16 * 1024 * 1024;
/// Queued bytes above which the hub stops reading pane output until the client catches up.
pub(crate) const QUEUED_PAUSE_ABOVE: usize = 4 * 1024 * 1024;
/// Queued bytes at or below which a client has caught up.
pub(crate) const QUEUED_RESUME_BELOW: usize = 1024 * 1024;
/// How long pane output waits for a client that fell behind: one that has not taken
/// [`QUEUED_RESUME_BELOW`] bytes in that time is dropped.
pub(crate) const STALL_LIMIT: Duration = Duration::from_secs(1);
/// What a frame costs besides its output bytes: a control message, or an output header.
const FRAME_COST: usize = 64;

/// Why a frame was not queued.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum NotQueued {
    /// The client has [`CLIENT_QUEUE_BYTES`] waiting: it fell behind.
    Full,
    /// The client is gone.
    Closed,
}

/// What both ends share: the byte budget and the signal that the client caught up.
#[derive(Debug)]
struct Backlog {
    room: Arc<Semaphore>,
    caught_up: Notify,
}

impl Backlog {
    fn queued(&self) -> usize {
        CLIENT_QUEUE_BYTES - self.room.available_permits()
    }
}

/// The hub's end of one client's stream.
#[derive(Debug)]
pub(crate) struct FrameSender {
    frames: mpsc::UnboundedSender<(Frame, OwnedSemaphorePermit)>,
    backlog: Arc<Backlog>,
}

/// The client's end: each frame gives its bytes back to the budget as it is taken.
#[derive(Debug)]
pub(crate) struct FrameReceiver {
    frames: mpsc::UnboundedReceiver<(Frame, OwnedSemaphorePermit)>,
    backlog: Arc<Backlog>,
}

pub(crate) fn frame_queue() -> (FrameSender, FrameReceiver) {
    let (frames, receiver) = mpsc::unbounded_channel();
    let backlog = Arc::new(Backlog {
        room: Arc::new(Semaphore::new(CLIENT_QUEUE_BYTES)),
        caught_up: Notify::new(),
    });
    (
        FrameSender {
            frames,
            backlog: Arc::clone(&backlog),
        },
        FrameReceiver {
            frames: receiver,
            backlog,
        },
    )
}

impl FrameSender {
    /// Queues `frame` if the client has room for it; never waits.
    pub(crate) fn try_send(&self, frame: Frame) -> Result<(), NotQueued> {
        if self.frames.is_closed() {
            return Err(NotQueued::Closed);
        }
        let cost = match &frame {
            Frame::Output { bytes, .. } => FRAME_COST + bytes.len(),
            Frame::Message(_) => FRAME_COST,
        };
        let permit = u32::try_from(cost)
            .ok()
            .and_then(|cost| {
                Arc::clone(&self.backlog.room)
                    .try_acquire_many_owned(cost)
                    .ok()
            })
            .ok_or(NotQueued::Full)?;
        self.frames
            .send((frame, permit))
            .map_err(|_| NotQueued::Closed)
    }

    /// Bytes the client has not taken yet.
    pub(crate) fn queued(&self) -> usize {
        self.backlog.queued()
    }

    pub(crate) fn is_closed(&self) -> bool {
        self.frames.is_closed()
    }

    /// Resolves once the client has taken frames down to [`QUEUED_RESUME_BELOW`] or gone; may
    /// resolve early (a stale signal), so callers look at [`queued`](Self::queued) again.
    pub(crate) async fn caught_up(&self) {
        tokio::select! {
            () = self.backlog.caught_up.notified() => {}
            () = self.frames.closed() => {}
        }
    }
}

impl FrameReceiver {
    pub(crate) async fn recv(&mut self) -> Option<Frame> {
        let frame = self.frames.recv().await;
        self.took(frame)
    }

    pub(crate) fn try_recv(&mut self) -> Option<Frame> {
        let frame = self.frames.try_recv().ok();
        self.took(frame)
    }

    fn took(&self, taken: Option<(Frame, OwnedSemaphorePermit)>) -> Option<Frame> {
        let (frame, room) = taken?;
        drop(room);
        if self.backlog.queued() <= QUEUED_RESUME_BELOW {
            // One stored permit at most: a hub not waiting yet finds it when it does.
            self.backlog.caught_up.notify_one();
        }
        Some(frame)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::client::HubMessage;

    fn output(len: usize) -> Frame {
        Frame::Output {
            pane: 1,
            bytes: vec![b'x'; len].into(),
        }
    }

    #[test]
    fn a_client_falls_behind_by_bytes_and_catches_up_by_taking_frames() {
        let (sender, mut receiver) = frame_queue();
        let big = CLIENT_QUEUE_BYTES / 4 - FRAME_COST;
        for _ in 0..4 {
            assert_eq!(sender.try_send(output(big)), Ok(()));
        }
        assert_eq!(sender.try_send(output(1)), Err(NotQueued::Full));
        assert_eq!(
            sender.try_send(Frame::Message(HubMessage::Hello { version: 1 })),
            Err(NotQueued::Full)
        );
        assert!(receiver.try_recv().is_some());
        assert_eq!(sender.try_send(output(big)), Ok(()));
        drop(receiver);
        assert_eq!(sender.try_send(output(1)), Err(NotQueued::Closed));
    }

    #[tokio::test]
    async fn taking_frames_down_to_the_resume_mark_says_the_client_caught_up() {
        let (sender, mut receiver) = frame_queue();
        let chunk = 512 * 1024 - FRAME_COST;
        for _ in 0..(QUEUED_PAUSE_ABOVE / (512 * 1024) + 1) {
            assert_eq!(sender.try_send(output(chunk)), Ok(()));
        }
        assert!(sender.queued() > QUEUED_PAUSE_ABOVE);
        let caught_up = sender.caught_up();
        tokio::pin!(caught_up);
        // Above the mark, taking a frame does not signal.
        assert!(receiver.try_recv().is_some());
        assert!(
            futures_now(caught_up.as_mut()).is_none(),
            "signalled at {} bytes",
            sender.queued()
        );
        while sender.queued() > QUEUED_RESUME_BELOW {
            assert!(receiver.try_recv().is_some());
        }
        caught_up.await;
    }

    /// Polls `future` once.
    fn futures_now<F: std::future::Future>(future: std::pin::Pin<&mut F>) -> Option<F::Output> {
        let waker = std::task::Waker::noop();
        match future.poll(&mut std::task::Context::from_waker(waker)) {
            std::task::Poll::Ready(output) => Some(output),
            std::task::Poll::Pending => None,
        }
    }

    #[test]
    fn many_small_frames_fit_where_a_count_would_have_cut_them_off() {
        let (sender, mut receiver) = frame_queue();
        for _ in 0..10_000 {
            assert_eq!(sender.try_send(output(100)), Ok(()));
        }
        let mut taken = 0;
        while receiver.try_recv().is_some() {
            taken += 1;
        }
        assert_eq!(taken, 10_000);
    }
}

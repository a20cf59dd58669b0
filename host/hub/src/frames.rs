//! A client's frame stream, bounded by the bytes it holds rather than by a count of frames
//! (docs/hub.md, "A client that falls behind"). Output frames range from a few bytes to a
//! joined round of half a megabyte, so a count bounds neither memory nor time: 256 small
//! frames are a few milliseconds of a flood, 256 large ones over 100 MiB.

use std::sync::Arc;

use tokio::sync::{OwnedSemaphorePermit, Semaphore, mpsc};

use crate::client::Frame;

/// Bytes a client may have queued before it counts as fallen behind and is disconnected.
pub const CLIENT_QUEUE_BYTES: usize = 16 * 1024 * 1024;
/// What a frame costs besides its output bytes: a control message, or an output header.
const FRAME_COST: usize = 64;

/// Why a frame was not queued.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum Refused {
    /// The client has [`CLIENT_QUEUE_BYTES`] waiting: it fell behind.
    Full,
    /// The client is gone.
    Closed,
}

/// The hub's end of one client's stream.
#[derive(Debug)]
pub(crate) struct FrameSender {
    frames: mpsc::UnboundedSender<(Frame, OwnedSemaphorePermit)>,
    room: Arc<Semaphore>,
}

/// The client's end: each frame gives its bytes back to the budget as it is taken.
#[derive(Debug)]
pub(crate) struct FrameReceiver {
    frames: mpsc::UnboundedReceiver<(Frame, OwnedSemaphorePermit)>,
}

pub(crate) fn frame_queue() -> (FrameSender, FrameReceiver) {
    let (frames, receiver) = mpsc::unbounded_channel();
    let room = Arc::new(Semaphore::new(CLIENT_QUEUE_BYTES));
    (
        FrameSender { frames, room },
        FrameReceiver { frames: receiver },
    )
}

impl FrameSender {
    /// Queues `frame` if the client has room for it; never waits.
    pub(crate) fn try_send(&self, frame: Frame) -> Result<(), Refused> {
        if self.frames.is_closed() {
            return Err(Refused::Closed);
        }
        let cost = match &frame {
            Frame::Output { bytes, .. } => FRAME_COST + bytes.len(),
            Frame::Message(_) => FRAME_COST,
        };
        let permit = u32::try_from(cost)
            .ok()
            .and_then(|cost| Arc::clone(&self.room).try_acquire_many_owned(cost).ok())
            .ok_or(Refused::Full)?;
        self.frames
            .send((frame, permit))
            .map_err(|_| Refused::Closed)
    }
}

impl FrameReceiver {
    pub(crate) async fn recv(&mut self) -> Option<Frame> {
        self.frames.recv().await.map(|(frame, _room)| frame)
    }

    pub(crate) fn try_recv(&mut self) -> Option<Frame> {
        self.frames.try_recv().ok().map(|(frame, _room)| frame)
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
        assert_eq!(sender.try_send(output(1)), Err(Refused::Full));
        assert_eq!(
            sender.try_send(Frame::Message(HubMessage::Hello { version: 1 })),
            Err(Refused::Full)
        );
        assert!(receiver.try_recv().is_some());
        assert_eq!(sender.try_send(output(big)), Ok(()));
        drop(receiver);
        assert_eq!(sender.try_send(output(1)), Err(Refused::Closed));
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

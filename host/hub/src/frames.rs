//! A client's frame stream, bounded by the bytes it holds rather than by a count of frames
//! (docs/hub.md, "A client that falls behind"). Output frames range from a few bytes to a
//! joined round of half a megabyte, so a count bounds neither memory nor time: 256 small
//! frames are a few milliseconds of a flood, 256 large ones over 100 MiB. While a client
//! holds more than [`QUEUED_BEHIND_ABOVE`], the hub holds the output of each pane that has
//! more than [`PANE_HELD_ABOVE`] of it queued, and waits for the client to come down to
//! [`QUEUED_RESUME_BELOW`], which the receiving end announces.

use std::collections::{HashMap, VecDeque};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use bytes::{Bytes, BytesMut};
use tokio::sync::{Notify, OwnedSemaphorePermit, Semaphore, mpsc};

use nightcrow_client_protocol::Frame;

/// Bytes a client may have queued before it counts as fallen behind and is disconnected.
pub const CLIENT_QUEUE_BYTES: usize = 16 * 1024 * 1024;
/// Queued bytes above which a client is behind: the hub holds the output of the panes it is
/// behind on until it catches up.
pub(crate) const QUEUED_BEHIND_ABOVE: usize = 4 * 1024 * 1024;
/// Queued bytes at or below which a client has caught up.
pub(crate) const QUEUED_RESUME_BELOW: usize = 1024 * 1024;
/// A pane's queued output above which its output is held while the client is behind. A
/// pane being typed into has a few bytes queued and goes on; a flooding one passes it at
/// once. Eight live panes just below it are far below [`QUEUED_BEHIND_ABOVE`], so the
/// mark is low enough to find the panes that fill a queue.
pub(crate) const PANE_HELD_ABOVE: usize = 256 * 1024;
const _: () = assert!(PANE_HELD_ABOVE * nightcrow_pane::MAX_PANES < QUEUED_BEHIND_ABOVE);
/// How long pane output waits for a client that fell behind: one that has not taken
/// [`QUEUED_RESUME_BELOW`] bytes in that time is dropped.
pub(crate) const STALL_LIMIT: Duration = Duration::from_secs(1);
/// What a frame costs besides its output bytes: a control message, or an output header.
const FRAME_COST: usize = 64;
/// Most bytes of a pane's queued output given out as one frame (see [`join_output`]).
const JOIN_OUTPUT_UP_TO: usize = 64 * 1024;
// A joined frame, with its pane id, always fits in a wire frame.
const _: () = assert!(JOIN_OUTPUT_UP_TO + 4 <= nightcrow_client_protocol::frame::MAX_FRAME_BYTES);

/// Why a frame was not queued.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum NotQueued {
    /// The client has [`CLIENT_QUEUE_BYTES`] waiting: it fell behind.
    Full,
    /// The client is gone.
    Closed,
}

/// What both ends share: the byte budget, each pane's share of it, and the signal that the
/// client caught up.
#[derive(Debug)]
struct Backlog {
    room: Arc<Semaphore>,
    /// Output bytes queued, by pane; a pane with none has no entry.
    by_pane: Mutex<HashMap<u64, usize>>,
    /// Bytes the client has taken in all (frame costs included): its progress, which a
    /// shrinking queue does not show while panes it is not behind on go on adding to it.
    taken: AtomicUsize,
    caught_up: Notify,
}

impl Backlog {
    fn queued(&self) -> usize {
        CLIENT_QUEUE_BYTES - self.room.available_permits()
    }

    fn by_pane(&self) -> std::sync::MutexGuard<'_, HashMap<u64, usize>> {
        self.by_pane.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

/// The hub's end of one client's stream.
#[derive(Debug)]
pub(crate) struct FrameSender {
    frames: mpsc::UnboundedSender<(Frame, OwnedSemaphorePermit)>,
    backlog: Arc<Backlog>,
}

/// A frame with the share of the byte budget it holds until the client takes it.
type Queued = (Frame, OwnedSemaphorePermit);

/// The client's end: each frame gives its bytes back to the budget as it is taken. Output
/// of different panes is given out in turns, so a pane's few bytes (the echo of a key) do
/// not wait behind megabytes of a flood in another pane; each pane's own output, and every
/// message against all output, keep their order.
#[derive(Debug)]
pub(crate) struct FrameReceiver {
    frames: mpsc::UnboundedReceiver<Queued>,
    backlog: Arc<Backlog>,
    turns: Turns,
}

/// Frames taken off the channel and not given out yet.
#[derive(Debug, Default)]
struct Turns {
    /// Output queued before the next message, one queue per pane, in the order of their
    /// turns.
    panes: VecDeque<(u64, VecDeque<Queued>)>,
    /// The next message and everything after it, as queued: it goes out only once the
    /// output before it has, and what follows it waits for it.
    later: VecDeque<Queued>,
}

fn output_pane(frame: &Frame) -> Option<u64> {
    match frame {
        Frame::Output { pane, .. } => Some(*pane),
        Frame::Message(_) => None,
    }
}

impl Turns {
    fn push(&mut self, queued: Queued) {
        match output_pane(&queued.0) {
            Some(pane) if self.later.is_empty() => self.push_output(pane, queued),
            _ => self.later.push_back(queued),
        }
    }

    fn push_output(&mut self, pane: u64, queued: Queued) {
        match self.panes.iter_mut().find(|(id, _)| *id == pane) {
            Some((_, frames)) => frames.push_back(queued),
            None => self.panes.push_back((pane, VecDeque::from([queued]))),
        }
    }

    /// The next frame to give out: the first output of the pane whose turn it is (joined with
    /// what that pane has queued after it, [`join_output`]), or, once no output is before it,
    /// the next message.
    fn pop(&mut self) -> Option<Queued> {
        if let Some((pane, mut frames)) = self.panes.pop_front() {
            let next = frames
                .pop_front()
                .map(|first| join_output(first, &mut frames));
            if !frames.is_empty() {
                self.panes.push_back((pane, frames));
            }
            return next;
        }
        let message = self.later.pop_front()?;
        // The output up to the message after it takes turns now.
        while let Some(pane) = self.later.front().and_then(|(frame, _)| output_pane(frame))
            && let Some(queued) = self.later.pop_front()
        {
            self.push_output(pane, queued);
        }
        Some(message)
    }
}

/// Joins to `first` the output queued after it (one pane's, in order), up to
/// [`JOIN_OUTPUT_UP_TO`] bytes, with the budget each held. A flood reaches the hub one PTY read
/// at a time, a few KiB each; a client that is a little behind would otherwise get, and its
/// connection carry, a frame for each of them.
fn join_output(mut first: Queued, rest: &mut VecDeque<Queued>) -> Queued {
    let (Frame::Output { bytes, .. }, room) = &mut first else {
        return first;
    };
    let mut len = bytes.len();
    let joining = rest
        .iter()
        .take_while(|(frame, _)| match frame {
            Frame::Output { bytes, .. } if len + bytes.len() <= JOIN_OUTPUT_UP_TO => {
                len += bytes.len();
                true
            }
            _ => false,
        })
        .count();
    if joining == 0 {
        return first;
    }
    let mut parts = vec![std::mem::take(bytes)];
    for (frame, more_room) in rest.drain(..joining) {
        if let Frame::Output { bytes, .. } = frame {
            parts.push(bytes);
        }
        room.merge(more_room);
    }
    *bytes = concatenate(parts);
    first
}

/// The bytes of `parts` one after another; a single part is not copied.
pub(crate) fn concatenate(mut parts: Vec<Bytes>) -> Bytes {
    if parts.len() == 1 {
        return parts.pop().unwrap_or_default();
    }
    let mut all = BytesMut::with_capacity(parts.iter().map(Bytes::len).sum());
    for part in &parts {
        all.extend_from_slice(part);
    }
    all.freeze()
}

pub(crate) fn frame_queue() -> (FrameSender, FrameReceiver) {
    let (frames, receiver) = mpsc::unbounded_channel();
    let backlog = Arc::new(Backlog {
        room: Arc::new(Semaphore::new(CLIENT_QUEUE_BYTES)),
        by_pane: Mutex::default(),
        taken: AtomicUsize::new(0),
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
            turns: Turns::default(),
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
        if let Some(pane) = output_pane(&frame) {
            *self.backlog.by_pane().entry(pane).or_default() += permit.num_permits();
        }
        self.frames
            .send((frame, permit))
            .map_err(|_| NotQueued::Closed)
    }

    /// The panes with more than `bytes` of output queued.
    pub(crate) fn panes_above(&self, bytes: usize) -> Vec<u64> {
        let by_pane = self.backlog.by_pane();
        let above = by_pane.iter().filter(|(_, queued)| **queued > bytes);
        above.map(|(pane, _)| *pane).collect()
    }

    /// Bytes the client has not taken yet.
    pub(crate) fn queued(&self) -> usize {
        self.backlog.queued()
    }

    /// Bytes the client has taken since it attached.
    pub(crate) fn taken(&self) -> usize {
        self.backlog.taken.load(Ordering::Relaxed)
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
        if let Some(frame) = self.try_recv() {
            return Some(frame);
        }
        let queued = self.frames.recv().await?;
        self.turns.push(queued);
        self.try_recv()
    }

    pub(crate) fn try_recv(&mut self) -> Option<Frame> {
        // Everything queued takes part in the turns.
        while let Ok(queued) = self.frames.try_recv() {
            self.turns.push(queued);
        }
        let frame = self.turns.pop();
        self.took(frame)
    }

    fn took(&self, taken: Option<Queued>) -> Option<Frame> {
        let (frame, room) = taken?;
        if let Some(pane) = output_pane(&frame) {
            let mut by_pane = self.backlog.by_pane();
            if let Some(queued) = by_pane.get_mut(&pane) {
                *queued -= room.num_permits();
                if *queued == 0 {
                    by_pane.remove(&pane);
                }
            }
        }
        self.backlog
            .taken
            .fetch_add(room.num_permits(), Ordering::Relaxed);
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
    use nightcrow_client_protocol::HubMessage;

    fn output(len: usize) -> Frame {
        output_of(1, &"x".repeat(len))
    }

    fn output_of(pane: u64, text: &str) -> Frame {
        Frame::Output {
            pane,
            bytes: text.as_bytes().to_vec().into(),
        }
    }

    /// What each frame taken says: `pane:text` for output, the message's tag otherwise.
    fn taken(receiver: &mut FrameReceiver) -> Vec<String> {
        std::iter::from_fn(|| receiver.try_recv())
            .map(|frame| match frame {
                Frame::Output { pane, bytes } => {
                    format!("{pane}:{}", String::from_utf8_lossy(&bytes))
                }
                Frame::Message(message) => format!("{message:?}"),
            })
            .collect()
    }

    #[test]
    fn panes_take_turns_and_messages_keep_their_place() {
        let (sender, mut receiver) = frame_queue();
        let hello = || Frame::Message(HubMessage::Hello { version: 1 });
        for frame in [
            output_of(4, "a"),
            output_of(4, "b"),
            output_of(4, "c"),
            output_of(3, "echo"),
            hello(),
            output_of(4, "d"),
            output_of(3, "e"),
            output_of(4, "f"),
            hello(),
            output_of(4, "g"),
        ] {
            assert_eq!(sender.try_send(frame), Ok(()));
        }
        let hello = format!("{:?}", HubMessage::Hello { version: 1 });
        // A pane's output queued one frame after another is given out joined.
        assert_eq!(
            taken(&mut receiver),
            ["4:abc", "3:echo", &hello, "4:df", "3:e", &hello, "4:g"]
        );
        // Frames queued after some were taken join the turns.
        for frame in [output_of(4, "h"), output_of(3, "i"), output_of(4, "j")] {
            assert_eq!(sender.try_send(frame), Ok(()));
        }
        assert_eq!(taken(&mut receiver), ["4:hj", "3:i"]);
        assert_eq!(sender.queued(), 0);
    }

    #[test]
    fn a_pane_with_more_than_a_joined_frame_queued_lets_the_others_go_between() {
        let (sender, mut receiver) = frame_queue();
        let part = "x".repeat(JOIN_OUTPUT_UP_TO / 4);
        for _ in 0..5 {
            assert_eq!(sender.try_send(output_of(1, &part)), Ok(()));
        }
        assert_eq!(sender.try_send(output_of(2, "echo")), Ok(()));
        let sizes: Vec<(u64, usize)> = std::iter::from_fn(|| receiver.try_recv())
            .map(|frame| match frame {
                Frame::Output { pane, bytes } => (pane, bytes.len()),
                other => panic!("{other:?}"),
            })
            .collect();
        assert_eq!(
            sizes,
            [(1, JOIN_OUTPUT_UP_TO), (2, 4), (1, JOIN_OUTPUT_UP_TO / 4)]
        );
    }

    #[test]
    fn joined_output_stops_at_its_cap_and_gives_back_the_budget_of_every_part() {
        let (sender, mut receiver) = frame_queue();
        let part = JOIN_OUTPUT_UP_TO / 4;
        for (pane, text) in [
            (1, "a".repeat(part)),
            (1, "b".repeat(part)),
            (1, "c".repeat(2 * part)),
            (1, "d".repeat(part)),
        ] {
            assert_eq!(sender.try_send(output_of(pane, &text)), Ok(()));
        }
        let lens = |frame: Option<Frame>| match frame {
            Some(Frame::Output { bytes, .. }) => bytes.len(),
            other => panic!("{other:?}"),
        };
        assert_eq!(lens(receiver.try_recv()), JOIN_OUTPUT_UP_TO);
        assert_eq!(sender.queued(), FRAME_COST + part);
        assert_eq!(sender.taken(), 3 * FRAME_COST + JOIN_OUTPUT_UP_TO);
        assert_eq!(sender.panes_above(0), [1]);
        assert_eq!(lens(receiver.try_recv()), part);
        assert_eq!(sender.queued(), 0);
        assert!(sender.panes_above(0).is_empty());
        // A frame already past the cap goes out alone, and so does the one after it.
        let big = "x".repeat(JOIN_OUTPUT_UP_TO + 1);
        assert_eq!(sender.try_send(output_of(1, &big)), Ok(()));
        assert_eq!(sender.try_send(output_of(1, "y")), Ok(()));
        assert_eq!(taken(&mut receiver).len(), 2);
    }

    #[test]
    fn each_panes_queued_output_is_counted_until_it_is_taken() {
        let (sender, mut receiver) = frame_queue();
        let flood = 300 * 1024;
        assert_eq!(sender.try_send(output_of(1, &"x".repeat(flood))), Ok(()));
        assert_eq!(sender.try_send(output_of(2, "echo")), Ok(()));
        assert_eq!(
            sender.try_send(Frame::Message(HubMessage::Hello { version: 1 })),
            Ok(())
        );
        assert_eq!(sender.panes_above(PANE_HELD_ABOVE), [1]);
        let mut both = sender.panes_above(0);
        both.sort_unstable();
        assert_eq!(both, [1, 2]);
        assert_eq!(sender.taken(), 0);
        assert!(receiver.try_recv().is_some());
        assert_eq!(sender.panes_above(0), [2], "pane 1's frame was taken");
        assert_eq!(sender.taken(), flood + FRAME_COST);
        assert_eq!(taken(&mut receiver).len(), 2);
        assert!(sender.panes_above(0).is_empty());
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
        for _ in 0..(QUEUED_BEHIND_ABOVE / (512 * 1024) + 1) {
            assert_eq!(sender.try_send(output(chunk)), Ok(()));
        }
        assert!(sender.queued() > QUEUED_BEHIND_ABOVE);
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
        while let Some(Frame::Output { bytes, .. }) = receiver.try_recv() {
            taken += bytes.len();
        }
        assert_eq!(taken, 10_000 * 100);
        assert_eq!(sender.queued(), 0);
    }
}

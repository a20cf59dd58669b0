//! Waiting for the next input line or a timeout, in one thread of the plugin.

use std::io;
use std::time::Duration;

use nightcrow_protocol::LineItem;
#[cfg(not(target_family = "wasm"))]
use nightcrow_protocol::{BlockingLines, MAX_LINE_BYTES};

/// What one wait produced.
#[derive(Debug)]
pub enum Waited {
    /// An item of input (a line, or a report of a dropped one).
    Item(LineItem),
    /// The timeout passed, or input arrived without completing a line.
    Nothing,
    /// End of input (with the error, if it ended by one).
    Closed(Option<io::Error>),
}

/// A source of input line items that can wait with a timeout.
pub trait Input {
    /// Waits for the next item at most `timeout` (`None`: as long as it takes).
    fn wait(&mut self, timeout: Option<Duration>) -> Waited;
}

/// Native: a reader thread runs the capped blocking reader and hands line items over a bounded
/// channel; the loop waits on the channel with `recv_timeout`. The thread blocks in `read`
/// and ends at end of input; it never touches plugin state.
#[cfg(not(target_family = "wasm"))]
pub struct ThreadedInput {
    frames: std::sync::mpsc::Receiver<io::Result<LineItem>>,
}

#[cfg(not(target_family = "wasm"))]
impl ThreadedInput {
    pub fn new(reader: impl io::Read + Send + 'static) -> ThreadedInput {
        // A few line items of slack; beyond that the reader waits, so input stays bounded.
        let (sender, frames) = std::sync::mpsc::sync_channel(16);
        std::thread::spawn(move || {
            for frame in BlockingLines::new(reader, MAX_LINE_BYTES) {
                let failed = frame.is_err();
                if sender.send(frame).is_err() || failed {
                    break;
                }
            }
        });
        ThreadedInput { frames }
    }
}

#[cfg(not(target_family = "wasm"))]
impl Input for ThreadedInput {
    fn wait(&mut self, timeout: Option<Duration>) -> Waited {
        use std::sync::mpsc::RecvTimeoutError;
        let received = match timeout {
            Some(timeout) => self.frames.recv_timeout(timeout),
            None => self
                .frames
                .recv()
                .map_err(|_| RecvTimeoutError::Disconnected),
        };
        match received {
            Ok(Ok(frame)) => Waited::Item(frame),
            Ok(Err(error)) => Waited::Closed(Some(error)),
            Err(RecvTimeoutError::Timeout) => Waited::Nothing,
            Err(RecvTimeoutError::Disconnected) => Waited::Closed(None),
        }
    }
}

#[cfg(not(target_family = "wasm"))]
pub(crate) fn stdin() -> ThreadedInput {
    ThreadedInput::new(io::stdin())
}

#[cfg(target_family = "wasm")]
pub(crate) fn stdin() -> wasi_stdin::WasiStdin {
    wasi_stdin::WasiStdin::new()
}

/// wasm32-wasip2: one `wasi:io/poll` call over stdin's pollable and a monotonic-clock
/// pollable. Reads are non-blocking (`read` returns what is there) and go through the
/// protocol's sans-IO [`nightcrow_protocol::LineSplitter`], so a line that arrives in pieces
/// never blocks the loop past its timer.
#[cfg(target_family = "wasm")]
mod wasi_stdin {
    use std::collections::VecDeque;
    use std::time::Duration;

    use nightcrow_protocol::{LineItem, LineSplitter, MAX_LINE_BYTES, READ_CHUNK_BYTES};
    use wasip2::io::streams::{InputStream, StreamError};

    use super::{Input, Waited};

    pub struct WasiStdin {
        stream: InputStream,
        splitter: LineSplitter,
        ready: VecDeque<LineItem>,
        closed: bool,
    }

    impl WasiStdin {
        pub fn new() -> WasiStdin {
            WasiStdin {
                stream: wasip2::cli::stdin::get_stdin(),
                splitter: LineSplitter::new(MAX_LINE_BYTES),
                ready: VecDeque::new(),
                closed: false,
            }
        }

        fn split(&mut self, bytes: &[u8]) {
            let mut rest = bytes;
            while !rest.is_empty() {
                if let Some(frame) = self.splitter.push(&mut rest) {
                    self.ready.push_back(frame);
                }
            }
        }
    }

    impl Input for WasiStdin {
        fn wait(&mut self, timeout: Option<Duration>) -> Waited {
            if let Some(frame) = self.ready.pop_front() {
                return Waited::Item(frame);
            }
            if self.closed {
                return Waited::Closed(None);
            }
            let readable = self.stream.subscribe();
            let timer = timeout.map(|timeout| {
                let nanos = u64::try_from(timeout.as_nanos()).unwrap_or(u64::MAX);
                wasip2::clocks::monotonic_clock::subscribe_duration(nanos)
            });
            let mut pollables = vec![&readable];
            pollables.extend(timer.as_ref());
            let woken = wasip2::io::poll::poll(&pollables);
            if !woken.contains(&0) {
                return Waited::Nothing;
            }
            match self.stream.read(READ_CHUNK_BYTES as u64) {
                Ok(bytes) => self.split(&bytes),
                Err(StreamError::Closed) => {
                    self.closed = true;
                    self.ready.extend(self.splitter.finish());
                }
                Err(StreamError::LastOperationFailed(error)) => {
                    self.closed = true;
                    return Waited::Closed(Some(std::io::Error::other(error.to_debug_string())));
                }
            }
            match self.ready.pop_front() {
                Some(frame) => Waited::Item(frame),
                None if self.closed => Waited::Closed(None),
                None => Waited::Nothing,
            }
        }
    }
}

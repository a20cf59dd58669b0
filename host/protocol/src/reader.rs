//! Line framing with a hard cap, shared by the host (async) and plugins (blocking).

use std::io;

/// One outcome of reading a line-framed stream.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum LineItem {
    /// A complete line: UTF-8, without its `\n` or trailing `\r`, never blank.
    Line(String),
    /// A line crossed the cap. Reported once, when the cap is crossed; the rest of the line
    /// is discarded without being buffered and reading resumes after its newline.
    TooLong { cap: usize },
    /// A line of `len` bytes that was not UTF-8, discarded.
    NotUtf8 { len: usize },
}

/// Bytes asked of the underlying reader per read call.
pub const READ_CHUNK_BYTES: usize = 8 * 1024;

/// The framing state machine, free of I/O: feed it bytes, take line items out.
///
/// It holds at most `cap + 1` bytes of one line (the `+ 1` is a `\r` that may precede the
/// `\n`; the terminator does not count towards the cap). Blank lines are skipped. An
/// unterminated last line is delivered at end of input, like a terminated one.
#[derive(Debug)]
pub struct LineSplitter {
    cap: usize,
    line: Vec<u8>,
    discarding: bool,
}

impl LineSplitter {
    pub fn new(cap: usize) -> LineSplitter {
        LineSplitter {
            cap,
            line: Vec::new(),
            discarding: false,
        }
    }

    /// Bytes currently buffered for the unfinished line (never more than `cap + 1`).
    pub fn buffered(&self) -> usize {
        self.line.len()
    }

    /// Consumes bytes from the front of `input` until one item is complete or `input` is
    /// used up. Returns the item, if any; call again with the remaining input.
    pub fn push(&mut self, input: &mut &[u8]) -> Option<LineItem> {
        while !input.is_empty() {
            let newline = input.iter().position(|&b| b == b'\n');
            let (segment, consumed) = match newline {
                Some(at) => (&input[..at], at + 1),
                None => (*input, input.len()),
            };
            *input = &input[consumed..];
            if !self.discarding {
                if self.line.len() + segment.len() > self.cap + 1 {
                    self.start_discarding();
                    if newline.is_some() {
                        self.discarding = false;
                    }
                    return Some(LineItem::TooLong { cap: self.cap });
                }
                self.reserve_within_cap(segment.len());
                self.line.extend_from_slice(segment);
            }
            if newline.is_some() {
                if std::mem::take(&mut self.discarding) {
                    continue;
                }
                if let Some(frame) = self.finish_line() {
                    return Some(frame);
                }
            }
        }
        None
    }

    /// End of input: delivers an unterminated last line, if there is one.
    pub fn finish(&mut self) -> Option<LineItem> {
        if std::mem::take(&mut self.discarding) {
            return None;
        }
        self.finish_line()
    }

    /// Bytes allocated for the unfinished line: never more than `cap + 1`, so a peer that
    /// sends long lines cannot make the buffer grow past the cap by amortised doubling.
    pub fn capacity(&self) -> usize {
        self.line.capacity()
    }

    /// Grows the line buffer geometrically, as `Vec` would, but never past `cap + 1`.
    fn reserve_within_cap(&mut self, additional: usize) {
        let needed = self.line.len() + additional;
        if needed <= self.line.capacity() {
            return;
        }
        let target = (self.line.capacity() * 2).max(needed).min(self.cap + 1);
        self.line.reserve_exact(target - self.line.len());
    }

    fn start_discarding(&mut self) {
        self.discarding = true;
        self.line.clear();
        // An over-long line must not leave a cap-sized allocation behind for every stream.
        self.line.shrink_to(READ_CHUNK_BYTES);
    }

    fn finish_line(&mut self) -> Option<LineItem> {
        if self.line.last() == Some(&b'\r') {
            self.line.pop();
        }
        if self.line.len() > self.cap {
            self.line.clear();
            return Some(LineItem::TooLong { cap: self.cap });
        }
        if self.line.iter().all(u8::is_ascii_whitespace) {
            self.line.clear();
            return None;
        }
        let bytes = std::mem::take(&mut self.line);
        Some(match String::from_utf8(bytes) {
            Ok(text) => LineItem::Line(text),
            Err(error) => LineItem::NotUtf8 {
                len: error.as_bytes().len(),
            },
        })
    }
}

/// A [`LineSplitter`] with its read buffer: what both readers below share.
#[derive(Debug)]
struct Framer {
    splitter: LineSplitter,
    chunk: Box<[u8; READ_CHUNK_BYTES]>,
    pending: std::ops::Range<usize>,
    eof: bool,
}

impl Framer {
    fn new(cap: usize) -> Framer {
        Framer {
            splitter: LineSplitter::new(cap),
            chunk: Box::new([0; READ_CHUNK_BYTES]),
            pending: 0..0,
            eof: false,
        }
    }

    /// An item from bytes already read, if they hold one. When this returns `None` every
    /// read byte has been consumed, so `read_buf` may be overwritten.
    fn next_buffered(&mut self) -> Option<LineItem> {
        let mut input = &self.chunk[self.pending.clone()];
        let frame = self.splitter.push(&mut input);
        self.pending.start = self.pending.end - input.len();
        frame
    }

    fn read_buf(&mut self) -> &mut [u8] {
        &mut self.chunk[..]
    }

    /// Records that `read` bytes were read into `read_buf`; zero means end of input.
    fn filled(&mut self, read: usize) -> Option<LineItem> {
        if read == 0 {
            self.eof = true;
            return self.splitter.finish();
        }
        self.pending = 0..read;
        None
    }
}

/// Reads line items from any blocking [`io::Read`] (the plugin side: a guest's stdin).
pub struct BlockingLines<R> {
    reader: R,
    framer: Framer,
}

impl<R: io::Read> BlockingLines<R> {
    /// There is deliberately no constructor without a cap.
    pub fn new(reader: R, cap: usize) -> BlockingLines<R> {
        BlockingLines {
            reader,
            framer: Framer::new(cap),
        }
    }

    /// The next item; `Ok(None)` at end of input.
    pub fn next_item(&mut self) -> io::Result<Option<LineItem>> {
        loop {
            if let Some(frame) = self.framer.next_buffered() {
                return Ok(Some(frame));
            }
            if self.framer.eof {
                return Ok(None);
            }
            let read = match self.reader.read(self.framer.read_buf()) {
                Ok(read) => read,
                Err(error) if error.kind() == io::ErrorKind::Interrupted => continue,
                Err(error) => return Err(error),
            };
            if let Some(frame) = self.framer.filled(read) {
                return Ok(Some(frame));
            }
        }
    }

    /// An item from bytes already read, without reading more. Lets a caller that polls for
    /// readiness drain what it has before it waits again.
    pub fn next_buffered(&mut self) -> Option<LineItem> {
        self.framer.next_buffered()
    }

    /// The framing state, to observe how much of an unfinished line is held.
    pub fn splitter(&self) -> &LineSplitter {
        &self.framer.splitter
    }
}

impl<R: io::Read> Iterator for BlockingLines<R> {
    type Item = io::Result<LineItem>;

    fn next(&mut self) -> Option<io::Result<LineItem>> {
        self.next_item().transpose()
    }
}

/// Reads line items from any [`tokio::io::AsyncRead`] (the host side: a plugin's stdout).
#[cfg(feature = "tokio")]
pub struct AsyncLines<R> {
    reader: R,
    framer: Framer,
}

#[cfg(feature = "tokio")]
impl<R: tokio::io::AsyncRead + Unpin> AsyncLines<R> {
    /// There is deliberately no constructor without a cap.
    pub fn new(reader: R, cap: usize) -> AsyncLines<R> {
        AsyncLines {
            reader,
            framer: Framer::new(cap),
        }
    }

    /// The next item; `Ok(None)` at end of input. Cancel-safe: bytes already read stay
    /// buffered if the future is dropped.
    pub async fn next_item(&mut self) -> io::Result<Option<LineItem>> {
        use tokio::io::AsyncReadExt;
        loop {
            if let Some(frame) = self.framer.next_buffered() {
                return Ok(Some(frame));
            }
            if self.framer.eof {
                return Ok(None);
            }
            let read = self.reader.read(self.framer.read_buf()).await?;
            if let Some(frame) = self.framer.filled(read) {
                return Ok(Some(frame));
            }
        }
    }

    /// The framing state, to observe how much of an unfinished line is held.
    pub fn splitter(&self) -> &LineSplitter {
        &self.framer.splitter
    }
}

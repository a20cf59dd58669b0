//! Server-sent events: `data:` lines gathered until a blank line, each event capped.

/// Largest single event accepted; a bigger one is skipped whole.
pub const MAX_EVENT_BYTES: usize = 64 * 1024;

/// Splits a byte stream into the `data` payloads of its events.
#[derive(Debug, Default)]
pub struct SseParser {
    line: Vec<u8>,
    data: Vec<u8>,
    oversized: bool,
    /// Events skipped for size, for the adapter's counters.
    pub skipped: u64,
}

impl SseParser {
    /// Feeds bytes; returns the data of every event completed by them.
    pub fn feed(&mut self, input: &[u8]) -> Vec<String> {
        let mut events = Vec::new();
        for &byte in input {
            if byte != b'\n' {
                if self.line.len() + self.data.len() < MAX_EVENT_BYTES {
                    self.line.push(byte);
                } else {
                    self.oversized = true;
                }
                continue;
            }
            let line = std::mem::take(&mut self.line);
            let line = line.strip_suffix(b"\r").unwrap_or(&line);
            if line.is_empty() {
                self.dispatch(&mut events);
            } else if let Some(value) = line.strip_prefix(b"data:") {
                if !self.data.is_empty() {
                    self.data.push(b'\n');
                }
                self.data
                    .extend_from_slice(value.strip_prefix(b" ").unwrap_or(value));
            }
            // `event:`, `id:`, `retry:` and `:` comments carry nothing this adapter needs.
        }
        events
    }

    fn dispatch(&mut self, events: &mut Vec<String>) {
        let data = std::mem::take(&mut self.data);
        if std::mem::take(&mut self.oversized) {
            self.skipped += 1;
            return;
        }
        if data.is_empty() {
            return;
        }
        match String::from_utf8(data) {
            Ok(text) => events.push(text),
            Err(_) => self.skipped += 1,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn events_end_at_blank_lines_and_may_span_reads() {
        let stream =
            b"data: {\"a\":1}\n\n: comment\nevent: x\ndata: one\r\ndata: two\r\n\r\ndata: tail";
        let whole = SseParser::default().feed(stream);
        assert_eq!(whole, ["{\"a\":1}", "one\ntwo"]);
        for at in 0..stream.len() {
            let mut parser = SseParser::default();
            let mut events = parser.feed(&stream[..at]);
            events.extend(parser.feed(&stream[at..]));
            assert_eq!(events, whole, "split at {at}");
        }
    }

    #[test]
    fn an_oversized_event_is_skipped_and_the_next_one_kept() {
        let mut parser = SseParser::default();
        let mut stream = b"data: ".to_vec();
        stream.extend(std::iter::repeat_n(b'x', MAX_EVENT_BYTES * 2));
        stream.extend_from_slice(b"\n\ndata: ok\n\n");
        assert_eq!(parser.feed(&stream), ["ok"]);
        assert_eq!(parser.skipped, 1);
        assert!(parser.line.capacity() <= MAX_EVENT_BYTES * 2);
    }
}

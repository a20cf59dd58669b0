//! What a pane's owner hears of its output (docs/hub.md, "Output to plugins"): at most one
//! `pane_output` per [`FLUSH_EVERY`], carrying the most recent [`TEXT_CAP`] bytes of text,
//! and whatever is pending always before the pane's `pane_idle`, `pane_exited`,
//! `pane_closed` or `user_input`. So a plugin's work is bounded however fast a pane
//! prints, and the last line before a pane goes quiet or exits always reaches it.

use std::time::{Duration, Instant};

/// Shortest time between two `pane_output` events of one pane.
pub(crate) const FLUSH_EVERY: Duration = Duration::from_millis(50);
/// Most text one `pane_output` carries; older text of a burst is dropped from the front.
pub(crate) const TEXT_CAP: usize = 16 * 1024;

/// One pane's output on its way to the owner.
#[derive(Debug, Clone, Default)]
pub(crate) struct OutputBatch {
    pending: String,
    last_sent: Option<Instant>,
}

impl OutputBatch {
    /// Adds `text`; returns what to send now when the owner has heard nothing for
    /// [`FLUSH_EVERY`], else keeps it until [`due`](Self::due).
    pub(crate) fn push(&mut self, text: &str, now: Instant) -> Option<String> {
        // Text beyond the cap is cut only once twice the cap has piled up: cutting at every
        // push would move the whole cap's worth of text for each PTY read of a flood.
        if self.pending.len() + text.len() > 2 * TEXT_CAP {
            keep_last(&mut self.pending, TEXT_CAP.saturating_sub(text.len()));
            self.pending.push_str(tail(text, TEXT_CAP));
        } else {
            self.pending.push_str(text);
        }
        let quiet = self
            .last_sent
            .is_none_or(|sent| now.duration_since(sent) >= FLUSH_EVERY);
        if quiet { self.take(now) } else { None }
    }

    /// When the pending text must be sent, if there is any. Text is pending only after a
    /// send (the first push sends at once), so it is due one turn after that send.
    pub(crate) fn due(&self) -> Option<Instant> {
        let sent = self.last_sent.filter(|_| !self.pending.is_empty())?;
        Some(sent + FLUSH_EVERY)
    }

    /// The pending text, to send now; `None` when there is none.
    pub(crate) fn take(&mut self, now: Instant) -> Option<String> {
        if self.pending.is_empty() {
            return None;
        }
        self.last_sent = Some(now);
        keep_last(&mut self.pending, TEXT_CAP);
        Some(std::mem::take(&mut self.pending))
    }
}

/// The last `max` bytes of `text` at most, starting on a character boundary.
fn tail(text: &str, max: usize) -> &str {
    let mut cut = text.len().saturating_sub(max);
    while !text.is_char_boundary(cut) {
        cut += 1;
    }
    &text[cut..]
}

fn keep_last(text: &mut String, max: usize) {
    let cut = text.len() - tail(text, max).len();
    text.drain(..cut);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_first_text_goes_at_once_and_a_burst_waits_for_its_turn() {
        let start = Instant::now();
        let mut batch = OutputBatch::default();
        assert_eq!(batch.push("a", start).as_deref(), Some("a"));
        assert_eq!(batch.due(), None);
        assert_eq!(batch.push("b", start + FLUSH_EVERY / 2), None);
        assert_eq!(batch.push("c", start + FLUSH_EVERY / 2), None);
        assert_eq!(batch.due(), Some(start + FLUSH_EVERY));
        assert_eq!(batch.take(start + FLUSH_EVERY).as_deref(), Some("bc"));
        assert_eq!(batch.take(start + FLUSH_EVERY), None);
        assert_eq!(
            batch.push("d", start + FLUSH_EVERY * 2).as_deref(),
            Some("d")
        );
    }

    #[test]
    fn a_flood_keeps_its_latest_text_whole_characters_only() {
        let start = Instant::now();
        let mut batch = OutputBatch::default();
        batch.push("x", start);
        for _ in 0..10_000 {
            assert_eq!(batch.push("漢字 and more ", start), None);
            assert!(batch.pending.len() <= 2 * TEXT_CAP);
        }
        batch.push("the last line\n", start);
        let sent = batch.take(start).unwrap();
        assert!(
            sent.len() <= TEXT_CAP && sent.len() > TEXT_CAP - 4,
            "{}",
            sent.len()
        );
        assert!(sent.ends_with("the last line\n"));
    }

    #[test]
    fn one_read_larger_than_the_cap_keeps_its_end() {
        let start = Instant::now();
        let mut batch = OutputBatch::default();
        batch.push("x", start);
        let huge = format!("{}the end\n", "é".repeat(3 * TEXT_CAP));
        assert_eq!(batch.push(&huge, start), None);
        let sent = batch.take(start).unwrap();
        assert!(sent.len() <= TEXT_CAP && sent.ends_with("éthe end\n"));
    }
}

//! A person's keys come first. While someone types into one pane, the other panes of the
//! table hand on their output at most [`METERED_BYTES_PER_SECOND`] each; the pane last
//! typed into is never metered. On a machine with few cores a flood keeps every core busy — its
//! child, its reader, the hub, the client, the client's terminal — and each of the dozen
//! hand-overs a key's echo makes on its way waits for a core; a flood at a steady pace leaves
//! room (docs/PERFORMANCE.md, "A person's keys come first"). Nothing is lost: the child
//! waits on its PTY, as it does for a client that falls behind.

use std::sync::{Arc, Mutex, PoisonError};
use std::thread;
use std::time::{Duration, Instant};

use nightcrow_guard::PaneId;

/// How fast the other panes' output goes while a person types: a hundred times what anyone
/// reads, a quarter of a flood's pace through the TUI on two cores (about 60 MB/s).
pub const METERED_BYTES_PER_SECOND: u64 = 16 * 1024 * 1024;
/// How long after a key the other panes stay metered: long enough that a person who stops
/// to think finds their next key as quick as the last.
pub const TYPING_LASTS: Duration = Duration::from_secs(5);
/// How far behind its pace a metered pane may fall and catch up in a burst: a sleep
/// overshoots (by up to a timer tick, 15.6 ms on Windows), and what it overshoots by is
/// allowed back, so the average pace holds.
const SLACK: Duration = Duration::from_millis(20);
/// How far ahead of its pace a metered pane gets before its reader sleeps: one sleep for
/// several chunks rather than one each, the same pace with fewer wake-ups.
const SHORTEST_SLEEP: Duration = Duration::from_millis(2);

/// Which pane a person last typed into, and when; shared by the table and its readers.
/// Only the last key counts: a pane printing at a person's pace is never held up by the
/// meter, so two people typing into two panes both get their echo, and a pane where a
/// command was just typed and that now floods is metered as soon as a key goes elsewhere.
#[derive(Debug, Default)]
pub(crate) struct Typing {
    last_key: Mutex<Option<(PaneId, Instant)>>,
}

impl Typing {
    pub(crate) fn typed_into(&self, pane: PaneId) {
        *self.last_key() = Some((pane, Instant::now()));
    }

    /// Whether `pane` is metered at `now`: a person typed into another pane of the table
    /// less than [`TYPING_LASTS`] ago (a reader may have read the clock just before it).
    fn meters(&self, pane: PaneId, now: Instant) -> bool {
        self.last_key().is_some_and(|(typed, at)| {
            typed != pane && now.saturating_duration_since(at) < TYPING_LASTS
        })
    }

    fn last_key(&self) -> std::sync::MutexGuard<'_, Option<(PaneId, Instant)>> {
        self.last_key.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

/// One pane reader's pace.
#[derive(Debug)]
pub(crate) struct Meter {
    pane: PaneId,
    typing: Arc<Typing>,
    /// When the output handed on so far has been paid for, at the metered pace.
    paid_until: Instant,
}

impl Meter {
    pub(crate) fn new(pane: PaneId, typing: Arc<Typing>) -> Meter {
        Meter {
            pane,
            typing,
            paid_until: Instant::now(),
        }
    }

    /// Called after `bytes` were handed on: sleeps off what they cost at the metered pace,
    /// if the pane is metered now, once it is [`SHORTEST_SLEEP`] ahead. A pane that starts
    /// to be metered may first send [`SLACK`]'s worth at once.
    pub(crate) fn pay_for(&mut self, bytes: usize) {
        let now = Instant::now();
        if !self.typing.meters(self.pane, now) {
            return;
        }
        let cost = Duration::from_secs_f64(bytes as f64 / METERED_BYTES_PER_SECOND as f64);
        let earliest = now.checked_sub(SLACK).unwrap_or(now);
        self.paid_until = self.paid_until.max(earliest) + cost;
        if let Some(ahead) = self.paid_until.checked_duration_since(now)
            && ahead >= SHORTEST_SLEEP
        {
            thread::sleep(ahead);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_the_other_panes_are_metered_and_only_for_a_while() {
        let typing = Typing::default();
        let (typed, other) = (PaneId::new(1), PaneId::new(2));
        let now = Instant::now();
        assert!(!typing.meters(other, now), "nobody typed yet");
        typing.typed_into(typed);
        let (_, at) = typing.last_key().expect("a key");
        assert!(typing.meters(other, at));
        assert!(!typing.meters(typed, at));
        assert!(typing.meters(other, at + TYPING_LASTS - Duration::from_millis(1)));
        assert!(!typing.meters(other, at + TYPING_LASTS));
        // A reader that read the clock just before the key is metered too.
        assert!(typing.meters(other, at - Duration::from_millis(1)));
    }

    #[test]
    fn a_pane_a_command_was_typed_into_is_metered_once_keys_go_elsewhere() {
        let typing = Typing::default();
        let [flooding, typed] = [1, 2].map(PaneId::new);
        typing.typed_into(flooding);
        assert!(!typing.meters(flooding, Instant::now()));
        typing.typed_into(typed);
        assert!(typing.meters(flooding, Instant::now()));
    }

    #[test]
    fn a_metered_pane_pays_for_what_it_sent_beyond_the_slack() {
        let typing = Arc::new(Typing::default());
        typing.typed_into(PaneId::new(1));
        let mut meter = Meter::new(PaneId::new(2), typing);
        // Half a second's worth, a chunk at a time: the sleeps add up to what the slack
        // does not cover, whatever they overshoot by.
        let chunk = 64 * 1024;
        let chunks = usize::try_from(METERED_BYTES_PER_SECOND / 2).unwrap() / chunk;
        let started = Instant::now();
        for _ in 0..chunks {
            meter.pay_for(chunk);
        }
        let took = started.elapsed();
        assert!(
            took >= Duration::from_millis(500) - SLACK - SHORTEST_SLEEP,
            "half a second's worth went in {took:?}"
        );
    }

    #[test]
    fn a_pane_newly_metered_may_send_the_slack_at_once() {
        let typing = Arc::new(Typing::default());
        let mut meter = Meter::new(PaneId::new(2), Arc::clone(&typing));
        // Unmetered for longer than the slack: nothing is owed.
        meter.paid_until -= SLACK * 2;
        typing.typed_into(PaneId::new(1));
        let slack_bytes = METERED_BYTES_PER_SECOND as f64 * SLACK.as_secs_f64();
        meter.pay_for(slack_bytes as usize / 2);
        let now = Instant::now();
        assert!(
            meter.paid_until <= now,
            "half the slack is owed: paid until {:?} from now",
            meter.paid_until.saturating_duration_since(now)
        );
    }

    #[test]
    fn the_typed_pane_never_waits() {
        let typing = Arc::new(Typing::default());
        typing.typed_into(PaneId::new(1));
        let mut meter = Meter::new(PaneId::new(1), typing);
        let before = meter.paid_until;
        meter.pay_for(usize::try_from(METERED_BYTES_PER_SECOND).unwrap());
        assert_eq!(meter.paid_until, before, "nothing was charged");
    }
}

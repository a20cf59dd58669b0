//! Accepting connections without spinning: when `accept` fails — above all because the
//! process is out of file descriptors (EMFILE, ENFILE), where the pending connection stays
//! queued and the next `accept` fails at once — the loop waits before trying again, doubling
//! the wait up to a second, and says so in the log at most once per
//! [`AcceptBackoff::LOG_EVERY`] with the count of failures in between. The web client's
//! loop and the daemon's socket loop both use it.

use std::time::Duration;

use tokio::time::Instant;

/// The wait after a failed `accept`, and the log line about it.
#[derive(Debug)]
pub struct AcceptBackoff {
    what: &'static str,
    delay: Duration,
    quiet: Quiet,
}

impl AcceptBackoff {
    /// At most one log line per this much time about failed accepts.
    pub const LOG_EVERY: Duration = Duration::from_secs(10);
    const FIRST: Duration = Duration::from_millis(10);
    const LONGEST: Duration = Duration::from_secs(1);

    /// `what` names the listener in the log ("web client", "daemon socket").
    pub fn new(what: &'static str) -> AcceptBackoff {
        AcceptBackoff {
            what,
            delay: Duration::ZERO,
            quiet: Quiet::default(),
        }
    }

    /// A connection was accepted: the next failure waits the shortest time again.
    pub fn accepted(&mut self) {
        self.delay = Duration::ZERO;
    }

    /// `accept` failed with `error`: logs (rate-limited) and waits before the next one.
    pub async fn failed(&mut self, error: &std::io::Error) {
        self.lengthen();
        if let Some(failures) = self.quiet.admit(Instant::now()) {
            tracing::warn!(
                listener = self.what,
                %error,
                failures,
                retry_ms = self.delay.as_millis() as u64,
                "accepting a connection failed"
            );
        }
        tokio::time::sleep(self.delay).await;
    }

    fn lengthen(&mut self) {
        self.delay = (self.delay * 2).clamp(Self::FIRST, Self::LONGEST);
    }
}

/// One log line per [`AcceptBackoff::LOG_EVERY`]; the others counted.
#[derive(Debug, Default)]
pub(crate) struct Quiet {
    last: Option<Instant>,
    since: u64,
}

impl Quiet {
    /// `Some(n)` when a line may be written, `n` counting this event and those held back
    /// since the last line.
    pub(crate) fn admit(&mut self, now: Instant) -> Option<u64> {
        self.since += 1;
        let due = self
            .last
            .is_none_or(|last| now.duration_since(last) >= AcceptBackoff::LOG_EVERY);
        if !due {
            return None;
        }
        self.last = Some(now);
        Some(std::mem::take(&mut self.since))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn one_line_per_period_with_the_count() {
        let start = Instant::now();
        let mut quiet = Quiet::default();
        assert_eq!(quiet.admit(start), Some(1));
        for ms in 1..1000 {
            assert_eq!(quiet.admit(start + Duration::from_millis(ms)), None);
        }
        assert_eq!(quiet.admit(start + AcceptBackoff::LOG_EVERY), Some(1000));
    }

    #[test]
    fn waits_double_up_to_a_second_and_reset_on_success() {
        let mut backoff = AcceptBackoff::new("test");
        let mut waits = Vec::new();
        for _ in 0..9 {
            backoff.lengthen();
            waits.push(backoff.delay.as_millis());
        }
        assert_eq!(waits, [10, 20, 40, 80, 160, 320, 640, 1000, 1000]);
        backoff.accepted();
        backoff.lengthen();
        assert_eq!(backoff.delay.as_millis(), 10);
    }
}

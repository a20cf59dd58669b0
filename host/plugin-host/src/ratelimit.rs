//! Rate limiting for log lines a plugin can cause: a flood never becomes a log flood.

use std::time::Duration;

use tokio::time::Instant;

/// At most `per_window` admitted lines per `window`; the rest are counted and the count is
/// reported with the next admitted line. The plugin runtime limits a plugin's stderr and
/// rejected lines with it, the hub its `log` commands and refusals.
#[derive(Debug)]
pub struct RateLimit {
    per_window: u32,
    window: Duration,
    window_start: Option<Instant>,
    admitted: u32,
    suppressed: u64,
}

impl RateLimit {
    /// Lines per second the host logs on behalf of one plugin stream.
    pub const LINES_PER_SECOND: u32 = 20;

    pub fn per_second() -> RateLimit {
        RateLimit::new(RateLimit::LINES_PER_SECOND, Duration::from_secs(1))
    }

    pub(crate) fn new(per_window: u32, window: Duration) -> RateLimit {
        RateLimit {
            per_window,
            window,
            window_start: None,
            admitted: 0,
            suppressed: 0,
        }
    }

    /// `Some(n)` if this line may be logged, `n` being how many were suppressed since the
    /// last admitted one; `None` if it is suppressed.
    pub fn admit(&mut self, now: Instant) -> Option<u64> {
        let expired = self
            .window_start
            .is_none_or(|start| now.duration_since(start) >= self.window);
        if expired {
            self.window_start = Some(now);
            self.admitted = 0;
        }
        if self.admitted < self.per_window {
            self.admitted += 1;
            Some(std::mem::take(&mut self.suppressed))
        } else {
            self.suppressed += 1;
            None
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn admits_per_window_then_reports_suppressed() {
        let start = Instant::now();
        let mut limit = RateLimit::new(2, Duration::from_secs(1));
        let at = |ms| start + Duration::from_millis(ms);
        assert_eq!(limit.admit(at(0)), Some(0));
        assert_eq!(limit.admit(at(10)), Some(0));
        assert_eq!(limit.admit(at(20)), None);
        assert_eq!(limit.admit(at(999)), None);
        assert_eq!(limit.admit(at(1000)), Some(2));
        assert_eq!(limit.admit(at(1001)), Some(0));
        assert_eq!(limit.admit(at(1002)), None);
    }
}

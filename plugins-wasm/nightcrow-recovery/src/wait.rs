//! Waits that survive clock jumps, and the wait lengths of SPEC §9.1.

use std::time::Duration;

use nightcrow_plugin_sdk::Now;

/// Slack after a reset time before acting (the provider's clock may be a little behind).
pub const RESET_SLACK: Duration = Duration::from_secs(30);
/// Shortest wait for a known reset.
pub const MIN_RESET_WAIT: Duration = Duration::from_secs(15);
/// Longest wait for a known reset (a weekly window plus a day).
pub const MAX_RESET_WAIT: Duration = Duration::from_secs(8 * 24 * 3600);
/// First backoff when no reset time is known; doubles per step up to [`MAX_BACKOFF`].
pub const FIRST_BACKOFF: Duration = Duration::from_secs(30);
pub const MAX_BACKOFF: Duration = Duration::from_secs(30 * 60);
/// A wall-clock move this much larger or smaller than the monotonic one is a clock jump.
pub const JUMP_THRESHOLD_MS: i64 = 5_000;

/// clamp(reset + 30 s − now, 15 s, 8 days).
pub fn until_reset(reset_epoch: i64, now: Now) -> Duration {
    let target_ms = reset_epoch
        .saturating_mul(1000)
        .saturating_add(RESET_SLACK.as_millis() as i64);
    let wait_ms = target_ms.saturating_sub(now.wall_ms);
    let wait = Duration::from_millis(u64::try_from(wait_ms).unwrap_or(0));
    wait.clamp(MIN_RESET_WAIT, MAX_RESET_WAIT)
}

/// 30 s, 60 s, 120 s … capped at 30 min; `step` counts from 0.
pub fn backoff(step: u32) -> Duration {
    FIRST_BACKOFF
        .checked_mul(1u32.checked_shl(step).unwrap_or(u32::MAX))
        .unwrap_or(MAX_BACKOFF)
        .min(MAX_BACKOFF)
}

/// A wait with a wall-clock deadline and a monotonic one; it is over only when both are.
///
/// Every [`Wait::observe`] compares how far the wall clock moved with how far the monotonic
/// clock moved since the last one; a difference of 5 s or more is a clock jump (the user set
/// the clock, NTP stepped it, the machine slept) and shifts the wall deadline by the same
/// amount, so the wait keeps its remaining length instead of ending early or late.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Wait {
    wall_deadline_ms: i64,
    mono_deadline: Duration,
    last: Now,
}

impl Wait {
    pub fn start(now: Now, length: Duration) -> Wait {
        Wait {
            wall_deadline_ms: now
                .wall_ms
                .saturating_add(i64::try_from(length.as_millis()).unwrap_or(i64::MAX)),
            mono_deadline: now.mono.saturating_add(length),
            last: now,
        }
    }

    /// Takes a clock reading (shifting the wall deadline on a jump); whether the wait is over.
    pub fn observe(&mut self, now: Now) -> bool {
        let wall_moved = now.wall_ms.saturating_sub(self.last.wall_ms);
        let mono_moved =
            i64::try_from(now.mono.saturating_sub(self.last.mono).as_millis()).unwrap_or(i64::MAX);
        let skew = wall_moved.saturating_sub(mono_moved);
        if skew.abs() >= JUMP_THRESHOLD_MS {
            self.wall_deadline_ms = self.wall_deadline_ms.saturating_add(skew);
        }
        self.last = now;
        self.is_over()
    }

    fn is_over(&self) -> bool {
        self.last.wall_ms >= self.wall_deadline_ms && self.last.mono >= self.mono_deadline
    }

    /// The wall deadline in unix seconds, rounded up (what clients show).
    pub fn deadline_epoch(&self) -> i64 {
        self.wall_deadline_ms.saturating_add(999).div_euclid(1000)
    }

    /// Monotonic time by which both deadlines should have passed, judged from the last
    /// reading (a later jump is caught by the next `observe`).
    pub fn due_mono(&self) -> Duration {
        let wall_left = u64::try_from(self.wall_deadline_ms.saturating_sub(self.last.wall_ms))
            .map(Duration::from_millis)
            .unwrap_or(Duration::ZERO);
        self.mono_deadline
            .max(self.last.mono.saturating_add(wall_left))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const T0: i64 = 1_796_227_800_000;

    fn at(mono_s: u64, wall_ms: i64) -> Now {
        Now {
            mono: Duration::from_secs(mono_s),
            wall_ms,
        }
    }

    #[test]
    fn reset_wait_is_clamped() {
        let now = at(0, T0);
        let secs = |s: u64| Duration::from_secs(s);
        let t0 = T0 / 1000;
        for (reset, expected) in [
            (t0 + 600, secs(630)),
            (t0, secs(30)),
            (t0 - 10, secs(20)),
            (t0 - 15, MIN_RESET_WAIT),
            (t0 - 3600, MIN_RESET_WAIT),
            (i64::MIN, MIN_RESET_WAIT),
            (t0 + 8 * 24 * 3600 - 30, MAX_RESET_WAIT),
            (t0 + 30 * 24 * 3600, MAX_RESET_WAIT),
            (i64::MAX, MAX_RESET_WAIT),
        ] {
            assert_eq!(until_reset(reset, now), expected, "reset {reset}");
        }
    }

    #[test]
    fn backoff_doubles_from_30_s_to_30_min() {
        let secs: Vec<u64> = (0..10).map(|step| backoff(step).as_secs()).collect();
        assert_eq!(secs, [30, 60, 120, 240, 480, 960, 1800, 1800, 1800, 1800]);
        assert_eq!(backoff(u32::MAX), MAX_BACKOFF);
    }

    #[test]
    fn a_wait_ends_only_when_both_clocks_have_passed() {
        let mut wait = Wait::start(at(100, T0), Duration::from_secs(60));
        assert_eq!(wait.deadline_epoch(), T0 / 1000 + 60);
        assert!(!wait.observe(at(130, T0 + 30_000)));
        // Wall clock a little ahead (under the jump threshold): not a jump, mono not done.
        assert!(!wait.observe(at(159, T0 + 63_000)));
        assert!(wait.observe(at(160, T0 + 64_000)));
    }

    #[test]
    fn a_small_wall_lag_delays_the_end_until_the_wall_deadline() {
        let mut wait = Wait::start(at(0, T0), Duration::from_secs(60));
        // Wall clock 4 s behind (no jump): mono is done, wall is not.
        assert!(!wait.observe(at(60, T0 + 56_000)));
        assert_eq!(wait.due_mono(), Duration::from_secs(64));
        assert!(wait.observe(at(64, T0 + 60_000)));
    }

    #[test]
    fn a_forward_jump_shifts_the_deadline_and_never_ends_the_wait_early() {
        let mut wait = Wait::start(at(0, T0), Duration::from_secs(600));
        // The wall clock jumps an hour ahead 10 s in.
        assert!(!wait.observe(at(10, T0 + 10_000 + 3_600_000)));
        assert_eq!(wait.deadline_epoch(), T0 / 1000 + 600 + 3600);
        assert!(!wait.observe(at(599, T0 + 599_000 + 3_600_000)));
        assert!(wait.observe(at(600, T0 + 600_000 + 3_600_000)));
    }

    #[test]
    fn a_backward_jump_shifts_the_deadline_so_the_wait_keeps_its_length() {
        let mut wait = Wait::start(at(0, T0), Duration::from_secs(600));
        assert!(!wait.observe(at(10, T0 + 10_000 - 3_600_000)));
        assert_eq!(wait.deadline_epoch(), T0 / 1000 + 600 - 3600);
        assert!(!wait.observe(at(599, T0 + 599_000 - 3_600_000)));
        // Without the shift the wall deadline would still be an hour away here.
        assert!(wait.observe(at(600, T0 + 600_000 - 3_600_000)));
    }

    #[test]
    fn jumps_just_under_the_threshold_are_not_shifted() {
        let mut wait = Wait::start(at(0, T0), Duration::from_secs(600));
        assert!(!wait.observe(at(10, T0 + 10_000 + 4_999)));
        assert_eq!(wait.deadline_epoch(), T0 / 1000 + 600);
        assert!(!wait.observe(at(20, T0 + 20_000 + 4_999 + 5_000)));
        assert_eq!(wait.deadline_epoch(), T0 / 1000 + 605);
    }

    #[test]
    fn a_suspend_keeps_the_remaining_awake_time() {
        // Monotonic time does not advance while the machine sleeps; the wall clock does.
        let mut wait = Wait::start(at(0, T0), Duration::from_secs(600));
        assert!(!wait.observe(at(100, T0 + 100_000 + 8 * 3_600_000)));
        assert!(wait.observe(at(600, T0 + 600_000 + 8 * 3_600_000)));
    }
}

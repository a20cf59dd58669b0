//! A guest's CPU budget over a window (`cpu_percent` of one core averaged over
//! `cpu_window_secs`), and the clocks that feed it: the thread CPU time a wasm guest's polls
//! take, and a native child's CPU time as the operating system counts it.
//!
//! The slice (`cpu_slice_ms`) stops a guest that never blocks; this stops one that blocks
//! briefly and often (80 ms of work, 1 ms of sleep), which the slice never sees because
//! every sleep starts a fresh slice.

use std::time::{Duration, Instant};

use crate::spec::Sandbox;

/// Parts the window is cut into: the budget forgets CPU time one part at a time, so the
/// average it checks is over the last window give or take a twentieth of it.
const PARTS: usize = 20;

/// CPU time used over a sliding window, against a limit.
#[derive(Debug)]
pub(crate) struct CpuBudget {
    part: Duration,
    parts: [Duration; PARTS],
    current: usize,
    current_start: Instant,
    used: Duration,
    limit: Duration,
}

impl CpuBudget {
    pub(crate) fn new(sandbox: &Sandbox, now: Instant) -> CpuBudget {
        let window = Duration::from_secs(u64::from(sandbox.cpu_window_secs.max(1)));
        CpuBudget {
            part: window / PARTS as u32,
            parts: [Duration::ZERO; PARTS],
            current: 0,
            current_start: now,
            used: Duration::ZERO,
            limit: window * sandbox.cpu_percent.clamp(1, 100) / 100,
        }
    }

    /// Counts `used` CPU time spent up to `now`; `false` once the window holds more than
    /// the limit.
    pub(crate) fn charge(&mut self, now: Instant, used: Duration) -> bool {
        let passed = now.saturating_duration_since(self.current_start);
        let steps = (passed.as_nanos() / self.part.as_nanos().max(1)) as usize;
        for _ in 0..steps.min(PARTS) {
            self.current = (self.current + 1) % PARTS;
            self.used = self.used.saturating_sub(self.parts[self.current]);
            self.parts[self.current] = Duration::ZERO;
        }
        self.current_start += self.part * u32::try_from(steps).unwrap_or(u32::MAX);
        self.parts[self.current] += used;
        self.used += used;
        self.used <= self.limit
    }
}

/// CPU time of the calling thread, where the platform gives it; a wasm guest's poll runs on
/// one thread from start to end, so the difference across a poll is the guest's own CPU
/// time, unaffected by how busy the machine is.
#[cfg(unix)]
fn thread_cpu_time() -> Option<Duration> {
    let now = rustix::time::clock_gettime(rustix::time::ClockId::ThreadCPUTime);
    Some(Duration::new(
        u64::try_from(now.tv_sec).ok()?,
        u32::try_from(now.tv_nsec).ok()?,
    ))
}

/// Elsewhere the poll's wall time stands in for it (it over-counts on a loaded machine).
#[cfg(not(unix))]
fn thread_cpu_time() -> Option<Duration> {
    None
}

/// Measures one poll: thread CPU time where there is one, else wall time.
pub(crate) struct PollClock {
    cpu: Option<Duration>,
    wall: Instant,
}

impl PollClock {
    pub(crate) fn start() -> PollClock {
        PollClock {
            cpu: thread_cpu_time(),
            wall: Instant::now(),
        }
    }

    /// CPU time since [`PollClock::start`], and the time it ended.
    pub(crate) fn stop(&self) -> (Duration, Instant) {
        let now = Instant::now();
        let used = match (self.cpu, thread_cpu_time()) {
            (Some(before), Some(after)) => after.saturating_sub(before),
            _ => now.saturating_duration_since(self.wall),
        };
        (used, now)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn quarter_over_ten_seconds() -> Sandbox {
        Sandbox {
            cpu_percent: 25,
            cpu_window_secs: 10,
            ..Sandbox::default()
        }
    }

    #[test]
    fn short_sleeps_do_not_reset_the_count() {
        let start = Instant::now();
        let mut budget = CpuBudget::new(&quarter_over_ten_seconds(), start);
        // 80 ms of work, 1 ms of sleep: 2.5 s of CPU is spent after 32 rounds (2.6 s).
        let mut stopped_at = None;
        for round in 0..200u32 {
            let now = start + Duration::from_millis(u64::from(round) * 81 + 80);
            if !budget.charge(now, Duration::from_millis(80)) {
                stopped_at = Some(now - start);
                break;
            }
        }
        let stopped_at = stopped_at.expect("the budget stops a guest at 99 % of a core");
        assert!(
            stopped_at > Duration::from_millis(2_400) && stopped_at < Duration::from_secs(3),
            "{stopped_at:?}"
        );
    }

    #[test]
    fn a_guest_within_its_share_runs_on() {
        let start = Instant::now();
        let mut budget = CpuBudget::new(&quarter_over_ten_seconds(), start);
        // 20 % of a core for a minute, then a burst of 2 s after a quiet window.
        for ms in (100..60_000u64).step_by(100) {
            assert!(
                budget.charge(start + Duration::from_millis(ms), Duration::from_millis(20)),
                "stopped at {ms} ms"
            );
        }
        let later = start + Duration::from_secs(75);
        assert!(budget.charge(later, Duration::from_secs(2)));
        assert!(!budget.charge(later, Duration::from_secs(1)));
    }

    #[cfg(unix)]
    #[test]
    fn a_poll_that_sleeps_costs_no_cpu() {
        let clock = PollClock::start();
        std::thread::sleep(Duration::from_millis(50));
        let (slept, _) = clock.stop();
        assert!(slept < Duration::from_millis(20), "{slept:?}");
    }
}

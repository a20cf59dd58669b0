use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

/// One reading of both clocks, taken together.
///
/// `mono` only moves forward and is what timers are measured in; `wall_ms` (unix
/// milliseconds) is what reset times and deadlines shown to people are expressed in. They
/// are read together so that a caller can notice when the wall clock jumped relative to the
/// monotonic one.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Now {
    /// Monotonic time since an arbitrary origin fixed for the life of the plugin.
    pub mono: Duration,
    /// Wall-clock time in milliseconds since the unix epoch (negative before 1970).
    pub wall_ms: i64,
}

impl Now {
    /// Wall-clock time in whole unix seconds (rounded down).
    pub fn wall_secs(&self) -> i64 {
        self.wall_ms.div_euclid(1000)
    }
}

/// Where a plugin gets the time from. The loop reads it before every callback.
pub trait Clock {
    fn now(&self) -> Now;

    /// Whether this clock moves by itself. A clock that does not (a test clock) is only read
    /// after input arrives, so the loop never waits in real time for a timer of its own.
    fn runs_by_itself(&self) -> bool {
        true
    }
}

/// The operating system's clocks (`wasi:clocks` on wasm): [`Instant`] and [`SystemTime`].
#[derive(Debug, Clone, Copy)]
pub struct SystemClock {
    origin: Instant,
}

impl SystemClock {
    pub fn new() -> SystemClock {
        SystemClock {
            origin: Instant::now(),
        }
    }
}

impl Default for SystemClock {
    fn default() -> Self {
        SystemClock::new()
    }
}

impl Clock for SystemClock {
    fn now(&self) -> Now {
        let wall_ms = match SystemTime::now().duration_since(UNIX_EPOCH) {
            Ok(after) => i64::try_from(after.as_millis()).unwrap_or(i64::MAX),
            Err(before) => i64::try_from(before.duration().as_millis()).map_or(i64::MIN, |ms| -ms),
        };
        Now {
            mono: self.origin.elapsed(),
            wall_ms,
        }
    }
}

/// A clock read from a file holding `<mono_ms> <wall_ms>`, rewritten by a test driving the
/// plugin as a child process. Selected by the environment variable
/// [`FAKE_CLOCK_ENV`](crate::FAKE_CLOCK_ENV); it never moves by itself, so timers fire only
/// when input arrives after the test advanced the file. A file that cannot be read or parsed
/// keeps the last good reading (and says so on stderr), so the clock never goes backwards
/// because of a torn write.
#[derive(Debug)]
pub struct FileClock {
    path: std::path::PathBuf,
    last: std::cell::Cell<Now>,
}

impl FileClock {
    pub fn new(path: impl Into<std::path::PathBuf>) -> FileClock {
        FileClock {
            path: path.into(),
            last: std::cell::Cell::new(Now {
                mono: Duration::ZERO,
                wall_ms: 0,
            }),
        }
    }
}

impl Clock for FileClock {
    fn now(&self) -> Now {
        match std::fs::read_to_string(&self.path)
            .map_err(|error| error.to_string())
            .and_then(|text| parse_file_clock(&text))
        {
            Ok(now) => self.last.set(now),
            Err(error) => eprintln!("fake clock {}: {error}", self.path.display()),
        }
        self.last.get()
    }

    fn runs_by_itself(&self) -> bool {
        false
    }
}

fn parse_file_clock(text: &str) -> Result<Now, String> {
    let mut fields = text.split_whitespace();
    let (Some(mono), Some(wall), None) = (fields.next(), fields.next(), fields.next()) else {
        return Err("expected `<mono_ms> <wall_ms>`".to_owned());
    };
    let mono: u64 = mono.parse().map_err(|_| "bad mono_ms".to_owned())?;
    let wall_ms: i64 = wall.parse().map_err(|_| "bad wall_ms".to_owned())?;
    Ok(Now {
        mono: Duration::from_millis(mono),
        wall_ms,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn file_clock_text_parses_and_rejects() {
        assert_eq!(
            parse_file_clock("1500 1796227800000\n"),
            Ok(Now {
                mono: Duration::from_millis(1500),
                wall_ms: 1_796_227_800_000
            })
        );
        for bad in ["", "1", "1 2 3", "x 2", "1 y", "-1 2"] {
            assert!(parse_file_clock(bad).is_err(), "{bad:?}");
        }
    }

    #[test]
    fn wall_secs_round_down_also_before_the_epoch() {
        let at = |wall_ms| Now {
            mono: Duration::ZERO,
            wall_ms,
        };
        assert_eq!(at(1999).wall_secs(), 1);
        assert_eq!(at(-1).wall_secs(), -1);
    }

    #[test]
    fn system_clock_is_monotonic_and_near_the_real_wall_clock() {
        let clock = SystemClock::new();
        let (a, b) = (clock.now(), clock.now());
        assert!(b.mono >= a.mono);
        // 2020-01-01: guards against a unit mix-up (seconds for milliseconds).
        assert!(a.wall_ms > 1_577_836_800_000);
    }
}

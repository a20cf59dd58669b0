//! The `[guard]` budgets as configured, with their defaults and bounds.

use std::time::Duration;

use serde::Deserialize;

use crate::IDLE_THRESHOLD;

/// Highest accepted per-window limit. The guard remembers one timestamp per charge, so this
/// bounds its memory per token.
pub const MAX_LIMIT_PER_WINDOW: u32 = 1_000;

/// The budgets of SPEC §3.2, as configured in `[guard]`.
///
/// Deserialises from the `[guard]` table (unknown keys are errors; missing keys take the
/// defaults) and validates while doing so, so a `GuardLimits` value is always usable.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(try_from = "GuardConfig")]
pub struct GuardLimits {
    max_sends_per_window: u32,
    max_relaunches_per_window: u32,
    window: Duration,
    /// Not in `[guard]`: SPEC §5.3 fixes it; only a hub under test shortens it.
    idle_threshold: Duration,
}

/// The `[guard]` table as written, before validation.
#[derive(Deserialize)]
#[serde(deny_unknown_fields, default)]
struct GuardConfig {
    max_sends_per_window: u32,
    max_relaunches_per_window: u32,
    window_secs: u64,
}

impl Default for GuardConfig {
    fn default() -> GuardConfig {
        GuardConfig {
            max_sends_per_window: 5,
            max_relaunches_per_window: 3,
            window_secs: 60,
        }
    }
}

/// Why a `[guard]` table was rejected.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum InvalidLimits {
    #[error("{key} = {value} is above the maximum of {MAX_LIMIT_PER_WINDOW}")]
    LimitTooHigh { key: &'static str, value: u32 },
    #[error("window_secs must be at least 1 (a zero window would limit nothing)")]
    ZeroWindow,
}

impl GuardLimits {
    /// Validates the limits; a zero limit is valid and refuses every such command.
    pub fn new(
        max_sends_per_window: u32,
        max_relaunches_per_window: u32,
        window: Duration,
    ) -> Result<GuardLimits, InvalidLimits> {
        for (key, value) in [
            ("max_sends_per_window", max_sends_per_window),
            ("max_relaunches_per_window", max_relaunches_per_window),
        ] {
            if value > MAX_LIMIT_PER_WINDOW {
                return Err(InvalidLimits::LimitTooHigh { key, value });
            }
        }
        if window.is_zero() {
            return Err(InvalidLimits::ZeroWindow);
        }
        Ok(GuardLimits {
            max_sends_per_window,
            max_relaunches_per_window,
            window,
            idle_threshold: IDLE_THRESHOLD,
        })
    }

    /// The same limits with another quiet time before a plugin may type into a pane (and
    /// before the hub reports `pane_idle`): tests use a fraction of a second instead of the
    /// spec's [`IDLE_THRESHOLD`].
    pub fn with_idle_threshold(mut self, idle_threshold: Duration) -> GuardLimits {
        self.idle_threshold = idle_threshold;
        self
    }

    pub fn max_sends_per_window(&self) -> u32 {
        self.max_sends_per_window
    }

    pub fn max_relaunches_per_window(&self) -> u32 {
        self.max_relaunches_per_window
    }

    pub fn window(&self) -> Duration {
        self.window
    }

    pub fn idle_threshold(&self) -> Duration {
        self.idle_threshold
    }
}

impl Default for GuardLimits {
    /// 5 sends and 3 relaunches per 60 s (SPEC §3.2).
    fn default() -> GuardLimits {
        GuardLimits::try_from(GuardConfig::default()).expect("the defaults are valid")
    }
}

impl TryFrom<GuardConfig> for GuardLimits {
    type Error = InvalidLimits;

    fn try_from(config: GuardConfig) -> Result<GuardLimits, InvalidLimits> {
        GuardLimits::new(
            config.max_sends_per_window,
            config.max_relaunches_per_window,
            Duration::from_secs(config.window_secs),
        )
    }
}

//! What a hub is, in values the daemon can journal and give back to a new hub after a
//! restart (docs/ARCHITECTURE.md, "The state journal"). Times are unix milliseconds, so that
//! they mean the same to the next daemon, whatever its monotonic clock says.
//!
//! The hub publishes a [`HubSnapshot`] whenever what it would journal changes (at once for a
//! pane, owner, hold, report or budget; at most every [`SCREEN_EVERY`] for output alone) and
//! takes a list of [`PaneSnapshot`]s back at [`Hub::spawn_restored`](crate::Hub::spawn_restored).

use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use nightcrow_guard::BudgetCharges;
use nightcrow_pane::PaneSize;
use nightcrow_protocol::{Generation, Token};

use crate::config::StartupCommand;
use nightcrow_client_protocol::RecoveryReport;

/// How often a pane's screen alone (output, nothing else changed) is published: what a
/// daemon killed mid-stream loses of it at most.
pub const SCREEN_EVERY: Duration = Duration::from_secs(5);

/// Every pane of one hub, in display order.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct HubSnapshot {
    pub panes: Vec<PaneSnapshot>,
}

/// One pane slot as a next daemon needs it. The token is a secret: whoever stores this keeps
/// it private and never logs it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PaneSnapshot {
    pub token: Token,
    pub generation: Generation,
    pub title: Option<String>,
    /// The title its program set last (OSC 0 or 2).
    pub program_title: Option<String>,
    /// The startup command that opened it; a restored pane keeps it only if the config
    /// still has that command (nothing else is ever run from a journal).
    pub startup: Option<StartupCommand>,
    /// The plugin that owned it.
    pub owner: Option<String>,
    /// When the slot first opened.
    pub opened_ms: i64,
    pub size: PaneSize,
    /// `None` while its process runs.
    pub exit: Option<PaneExit>,
    /// When its relaunch hold lapses, while it has one.
    pub hold_until_ms: Option<i64>,
    /// Its owner's latest report.
    pub report: Option<RecoveryReport>,
    /// The guard's charges for its token (SPEC §3.2), as unix milliseconds.
    pub charged: Charged,
    /// The tail of its raw output (at most the scrollback, 256 KiB).
    pub screen: Vec<u8>,
}

/// How a pane's process ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PaneExit {
    /// `None` when a signal ended it.
    pub code: Option<u32>,
}

/// When a token's `send_input` and `relaunch` approvals were charged (unix ms, oldest first).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Charged {
    pub sends_ms: Vec<i64>,
    pub relaunches_ms: Vec<i64>,
}

/// One moment on both clocks: converts the hub's instants to unix milliseconds and back.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Clocks {
    instant: Instant,
    unix_ms: i64,
}

impl Clocks {
    pub(crate) fn now() -> Clocks {
        let unix_ms = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map_or(0, |since| {
                i64::try_from(since.as_millis()).unwrap_or(i64::MAX)
            });
        Clocks {
            instant: crate::clock::now(),
            unix_ms,
        }
    }

    pub(crate) fn instant(self) -> Instant {
        self.instant
    }

    pub(crate) fn unix_ms(self) -> i64 {
        self.unix_ms
    }

    pub(crate) fn to_unix_ms(self, at: Instant) -> i64 {
        let ms = |duration: Duration| i64::try_from(duration.as_millis()).unwrap_or(i64::MAX);
        match at.checked_duration_since(self.instant) {
            Some(ahead) => self.unix_ms.saturating_add(ms(ahead)),
            None => self
                .unix_ms
                .saturating_sub(ms(self.instant.saturating_duration_since(at))),
        }
    }

    /// The instant of `unix_ms`; `None` for a time this clock cannot express.
    pub(crate) fn to_instant(self, unix_ms: i64) -> Option<Instant> {
        let delta = Duration::from_millis(unix_ms.abs_diff(self.unix_ms));
        if unix_ms >= self.unix_ms {
            self.instant.checked_add(delta)
        } else {
            self.instant.checked_sub(delta)
        }
    }

    pub(crate) fn charged(self, charges: &BudgetCharges) -> Charged {
        let at = |ages: &[Duration]| {
            ages.iter()
                .map(|&age| self.to_unix_ms(self.instant.checked_sub(age).unwrap_or(self.instant)))
                .collect()
        };
        Charged {
            sends_ms: at(&charges.sends),
            relaunches_ms: at(&charges.relaunches),
        }
    }

    /// Ages at this moment; a charge in the future (a clock set back) counts as just made.
    pub(crate) fn charges(self, charged: &Charged) -> BudgetCharges {
        let ages = |times: &[i64]| {
            times
                .iter()
                .map(|&ms| Duration::from_millis(u64::try_from(self.unix_ms - ms).unwrap_or(0)))
                .collect()
        };
        BudgetCharges {
            sends: ages(&charged.sends_ms),
            relaunches: ages(&charged.relaunches_ms),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn instants_and_unix_times_convert_both_ways() {
        let clocks = Clocks::now();
        let later = clocks.instant() + Duration::from_secs(90);
        let ms = clocks.to_unix_ms(later);
        assert_eq!(ms, clocks.unix_ms() + 90_000);
        assert_eq!(clocks.to_instant(ms), Some(later));
        assert_eq!(clocks.to_unix_ms(clocks.instant()), clocks.unix_ms());
        let charges = BudgetCharges {
            sends: vec![Duration::from_secs(30)],
            relaunches: vec![Duration::from_secs(50), Duration::from_secs(5)],
        };
        let charged = clocks.charged(&charges);
        assert_eq!(charged.sends_ms, [clocks.unix_ms() - 30_000]);
        assert_eq!(clocks.charges(&charged), charges);
    }
}

//! Why a command was refused, and how loudly the hub logs it.

use std::time::Duration;

use nightcrow_protocol::Generation;

use crate::{RelaunchLineError, ResumeArgsError};

/// Why the guard refused a command (SPEC §3). Refusals are logged by the hub at
/// [`Refused::severity`], never sent to the plugin, never retried.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum Refused {
    #[error("the token names no pane")]
    UnknownPane,
    #[error("the pane is not owned by this plugin")]
    NotOptedIn,
    #[error("stale generation {sent}: the pane is at generation {current}")]
    StaleGeneration {
        sent: Generation,
        current: Generation,
    },
    #[error("the pane's process is not running")]
    PaneNotRunning,
    #[error("the pane is busy: last output {idle:?} ago, input needs {required:?} of quiet")]
    PaneBusy { idle: Duration, required: Duration },
    #[error("input is {len} bytes, at most {max} allowed")]
    InputTooLarge { len: usize, max: usize },
    #[error(
        "input contains control character U+{code:04X} at byte {offset}; only \\r \\n \\t are \
         allowed",
        code = u32::from(*character)
    )]
    ControlCharacter { character: char, offset: usize },
    #[error("{}", rate_limited_message(*kind, *limit, *window, *free_in))]
    RateLimited {
        kind: BudgetKind,
        limit: u32,
        window: Duration,
        /// How long until one more approval would fit; `None` when the limit is zero.
        free_in: Option<Duration>,
    },
    #[error("the pane's process is still running; only an exited pane can be relaunched")]
    PaneStillRunning,
    #[error("the pane has no launch command to relaunch")]
    NoLaunchCommand,
    #[error("resume args rejected: {0}")]
    ResumeArgsRejected(#[from] ResumeArgsError),
    #[error("watch_pane needs watch_on_signal = true in this plugin's config")]
    WatchNotAllowed,
    #[error("the pane is watched by another plugin")]
    PaneWatchedByAnother,
}

/// The log level class of a refusal (SPEC §3).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Severity {
    /// Late traffic: the request may have been fine a moment ago (a pane exited, was
    /// relaunched, produced output). Expected in normal operation.
    Debug,
    /// A request that is never allowed: a buggy or hostile plugin.
    Warn,
}

/// The two separately counted budgets of SPEC §3.2.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum BudgetKind {
    SendInput,
    Relaunch,
}

impl BudgetKind {
    /// The command tag the budget counts.
    pub fn tag(self) -> &'static str {
        match self {
            BudgetKind::SendInput => "send_input",
            BudgetKind::Relaunch => "relaunch",
        }
    }
}

impl From<RelaunchLineError> for Refused {
    fn from(error: RelaunchLineError) -> Refused {
        match error {
            RelaunchLineError::NoLaunchCommand => Refused::NoLaunchCommand,
            RelaunchLineError::ResumeArgs(error) => Refused::ResumeArgsRejected(error),
        }
    }
}

impl Refused {
    /// The level the hub logs this refusal at, as listed in SPEC §3. Exhaustive on purpose:
    /// a new reason must be classed before it compiles.
    pub fn severity(&self) -> Severity {
        match self {
            Refused::UnknownPane
            | Refused::StaleGeneration { .. }
            | Refused::PaneNotRunning
            | Refused::PaneBusy { .. }
            | Refused::PaneStillRunning
            | Refused::PaneWatchedByAnother => Severity::Debug,
            Refused::NotOptedIn
            | Refused::InputTooLarge { .. }
            | Refused::ControlCharacter { .. }
            | Refused::NoLaunchCommand
            | Refused::ResumeArgsRejected(_)
            | Refused::WatchNotAllowed
            | Refused::RateLimited { .. } => Severity::Warn,
        }
    }
}

fn rate_limited_message(
    kind: BudgetKind,
    limit: u32,
    window: Duration,
    free_in: Option<Duration>,
) -> String {
    let tag = kind.tag();
    match free_in {
        Some(free_in) => format!(
            "rate limited: {limit} {tag} approvals per {window:?} already used; \
             the next fits in {free_in:?}"
        ),
        None => format!("rate limited: {tag} is disabled ({limit} approvals per {window:?})"),
    }
}

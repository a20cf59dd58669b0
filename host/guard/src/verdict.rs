//! What [`Guard::judge`](crate::Guard::judge) returns.

use std::time::Duration;

use nightcrow_protocol::{Generation, LogLevel, PaneId, Token};

use crate::{BudgetKind, ResumeArgsError};

/// The outcome of judging one command.
pub type Verdict = Result<Approved, Refused>;

/// A request the guard allowed. Each payload has private fields and no constructor outside
/// this crate; none is `Clone`, so an approval is used at most once.
#[derive(Debug, PartialEq, Eq)]
pub enum Approved {
    SendInput(SendInput),
    Relaunch(Relaunch),
    Status(Status),
    Attention(Attention),
    WatchPane(WatchPane),
    Log(Log),
}

/// Write `data` into the live, idle pane `pane`.
#[derive(Debug, PartialEq, Eq)]
pub struct SendInput {
    pub(crate) pane: PaneId,
    pub(crate) token: Token,
    pub(crate) data: String,
}

/// Re-run the exited pane `pane` as `line`: its original launch command plus validated args.
#[derive(Debug, PartialEq, Eq)]
pub struct Relaunch {
    pub(crate) pane: PaneId,
    pub(crate) token: Token,
    pub(crate) generation: Generation,
    pub(crate) line: String,
}

/// A display-only recovery report for `pane`, relayed to clients uninterpreted.
#[derive(Debug, PartialEq, Eq)]
pub struct Status {
    pub(crate) pane: PaneId,
    pub(crate) state: String,
    pub(crate) detail: Option<String>,
    pub(crate) deadline_epoch: Option<i64>,
    pub(crate) attempt: u32,
}

/// "The program wants the person back" for `pane`.
#[derive(Debug, PartialEq, Eq)]
pub struct Attention {
    pub(crate) pane: PaneId,
}

/// Give `pane` to the requesting plugin (again, if it already owns it).
#[derive(Debug, PartialEq, Eq)]
pub struct WatchPane {
    pub(crate) pane: PaneId,
    pub(crate) token: Token,
}

/// One host log line from the plugin, already truncated.
#[derive(Debug, PartialEq, Eq)]
pub struct Log {
    pub(crate) level: LogLevel,
    pub(crate) message: String,
}

impl SendInput {
    pub fn pane(&self) -> PaneId {
        self.pane
    }
    pub fn token(&self) -> &Token {
        &self.token
    }
    pub fn data(&self) -> &str {
        &self.data
    }
}

impl Relaunch {
    pub fn pane(&self) -> PaneId {
        self.pane
    }
    pub fn token(&self) -> &Token {
        &self.token
    }
    /// The generation the plugin named, the pane's current one (the relaunch makes the next).
    pub fn generation(&self) -> Generation {
        self.generation
    }
    /// The composed line, for the configured shell's one argv item.
    pub fn line(&self) -> &str {
        &self.line
    }
}

impl Status {
    pub fn pane(&self) -> PaneId {
        self.pane
    }
    pub fn state(&self) -> &str {
        &self.state
    }
    pub fn detail(&self) -> Option<&str> {
        self.detail.as_deref()
    }
    pub fn deadline_epoch(&self) -> Option<i64> {
        self.deadline_epoch
    }
    pub fn attempt(&self) -> u32 {
        self.attempt
    }
}

impl Attention {
    pub fn pane(&self) -> PaneId {
        self.pane
    }
}

impl WatchPane {
    pub fn pane(&self) -> PaneId {
        self.pane
    }
    pub fn token(&self) -> &Token {
        &self.token
    }
}

impl Log {
    pub fn level(&self) -> LogLevel {
        self.level
    }
    pub fn message(&self) -> &str {
        &self.message
    }
}

/// Why a command was refused. Refusals are logged by the hub, never sent to the plugin.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum Refused {
    #[error("no pane has this token")]
    UnknownPane,
    #[error("the pane is not owned by this plugin")]
    NotOptedIn,
    #[error("generation {requested} is stale; the pane is at generation {current}")]
    StaleGeneration {
        requested: Generation,
        current: Generation,
    },
    #[error("the pane's process is not running")]
    PaneNotRunning,
    #[error("the pane printed output {}ms ago; input needs {}ms of quiet", idle.as_millis(), needed.as_millis())]
    PaneBusy { idle: Duration, needed: Duration },
    #[error("input is {len} bytes, at most {max} allowed")]
    InputTooLarge { len: usize, max: usize },
    #[error("input contains control character U+{:04X} at byte {at}", u32::from(*found))]
    ControlCharacter { found: char, at: usize },
    #[error("the pane's process is still running; only an exited pane is relaunched")]
    PaneStillRunning,
    #[error("the pane has no launch command to relaunch")]
    NoLaunchCommand,
    #[error("resume args rejected: {0}")]
    ResumeArgsRejected(ResumeArgsError),
    #[error("this plugin may not watch panes (watch_on_signal is off)")]
    WatchNotAllowed,
    #[error("the pane is watched by another plugin")]
    PaneWatchedByAnother,
    #[error("{kind:?} budget spent: {limit} per {}s for this pane", window.as_secs())]
    RateLimited {
        kind: BudgetKind,
        limit: u32,
        window: Duration,
    },
}

/// How loudly a refusal is logged.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Severity {
    /// Late traffic: the pane moved on (exited, relaunched, printed) after the plugin sent.
    Debug,
    /// A request that is never allowed, whatever the timing.
    Warn,
}

impl Refused {
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

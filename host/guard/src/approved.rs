//! The approved commands: values only the guard can mint, each carried out once.

use nightcrow_protocol::{Generation, LogLevel, Token};

use crate::{PaneId, RelaunchLine};

/// A command the guard approved. Only [`Guard::judge`](crate::Guard::judge) makes one.
///
/// Each variant wraps a struct whose fields are private to this crate, so no other crate can
/// build a value of any variant. None of them is `Clone`: an approval is carried out once.
#[derive(Debug, PartialEq, Eq)]
pub enum Approved {
    SendInput(ApprovedSendInput),
    Relaunch(ApprovedRelaunch),
    Status(ApprovedStatus),
    Attention(ApprovedAttention),
    WatchPane(ApprovedWatchPane),
    Log(ApprovedLog),
}

/// The pane an approval acts on, exactly as the hub resolved it for the judgement.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Target {
    pub(crate) pane: PaneId,
    pub(crate) token: Token,
    pub(crate) generation: Generation,
}

impl Target {
    pub fn pane(&self) -> PaneId {
        self.pane
    }

    pub fn token(&self) -> &Token {
        &self.token
    }

    /// The slot's generation at judgement; for commands that carry one, equal to it.
    pub fn generation(&self) -> Generation {
        self.generation
    }
}

/// Write `data` to the pane's PTY. The data is at most 8192 bytes with no control
/// characters other than `\r`, `\n`, `\t`; it may be empty.
#[derive(Debug, PartialEq, Eq)]
pub struct ApprovedSendInput {
    pub(crate) target: Target,
    pub(crate) data: String,
}

impl ApprovedSendInput {
    pub fn target(&self) -> &Target {
        &self.target
    }

    pub fn data(&self) -> &str {
        &self.data
    }
}

/// Relaunch the exited pane with `line` (SPEC §6.3).
#[derive(Debug, PartialEq, Eq)]
pub struct ApprovedRelaunch {
    pub(crate) target: Target,
    pub(crate) line: RelaunchLine,
}

impl ApprovedRelaunch {
    pub fn target(&self) -> &Target {
        &self.target
    }

    /// The line composed at judgement from the pane's original launch command.
    pub fn line(&self) -> &RelaunchLine {
        &self.line
    }
}

/// Relay a status report to clients, uninterpreted. `state` and `detail` hold no control
/// characters (escaped) and are at most [`MAX_STATUS_STATE_CHARS`](crate::MAX_STATUS_STATE_CHARS)
/// and [`MAX_STATUS_DETAIL_CHARS`](crate::MAX_STATUS_DETAIL_CHARS) characters.
#[derive(Debug, PartialEq, Eq)]
pub struct ApprovedStatus {
    pub(crate) target: Target,
    pub(crate) state: String,
    pub(crate) detail: Option<String>,
    pub(crate) deadline_epoch: Option<i64>,
    pub(crate) attempt: u32,
}

impl ApprovedStatus {
    pub fn target(&self) -> &Target {
        &self.target
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

/// Tell clients the program wants the person back.
#[derive(Debug, PartialEq, Eq)]
pub struct ApprovedAttention {
    pub(crate) target: Target,
}

impl ApprovedAttention {
    pub fn target(&self) -> &Target {
        &self.target
    }
}

/// Make the judged plugin the owner of a live pane and send it `pane_opened`.
#[derive(Debug, PartialEq, Eq)]
pub struct ApprovedWatchPane {
    pub(crate) target: Target,
    pub(crate) plugin: String,
}

impl ApprovedWatchPane {
    pub fn target(&self) -> &Target {
        &self.target
    }

    /// The plugin that asked and becomes the owner.
    pub fn plugin(&self) -> &str {
        &self.plugin
    }
}

/// Write one host log line attributed to `plugin`; the message is at most 2048 bytes, with
/// no control characters.
#[derive(Debug, PartialEq, Eq)]
pub struct ApprovedLog {
    pub(crate) plugin: String,
    pub(crate) level: LogLevel,
    pub(crate) message: String,
}

impl ApprovedLog {
    pub fn plugin(&self) -> &str {
        &self.plugin
    }

    pub fn level(&self) -> LogLevel {
        self.level
    }

    /// The plugin's message, control characters escaped, truncated on a char boundary.
    /// Untrusted text: log it as a field value, never as a format string.
    pub fn message(&self) -> &str {
        &self.message
    }
}

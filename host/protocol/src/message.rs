//! The messages of the plugin protocol (SPEC §2): events to plugins, commands from them.

use serde::{Deserialize, Serialize};

use crate::Token;

/// A slot's relaunch counter: starts at 1, +1 per relaunch, saturating.
pub type Generation = u32;

/// Host → plugin messages (SPEC §2.3). Serialised internally tagged by `"event"`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "event", rename_all = "snake_case")]
pub enum Event {
    /// The plugin is given a pane. `command` is the original configured startup command
    /// (never a composed relaunch line), `None` for a bare shell; `cwd` is the repository root.
    /// `opened_ms` is when the slot first opened (unix milliseconds): a plugin that starts
    /// later, or hears of the pane again after a daemon restart, learns how far back the
    /// pane's own sessions go. Absent from hosts before it was added.
    PaneOpened {
        token: Token,
        generation: Generation,
        title: Option<String>,
        command: Option<String>,
        cwd: String,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        opened_ms: Option<i64>,
    },
    /// Pane output as plain text: lossy UTF-8 with escape sequences stripped.
    PaneOutput {
        token: Token,
        generation: Generation,
        text: String,
    },
    /// No output for at least the idle threshold; once per quiet period. `screen` is what
    /// the pane shows now, as plain text rows (see [`MAX_SCREEN_BYTES`]): a program waiting
    /// at a prompt or a popup says so only on screen. Absent from hosts before it was added.
    ///
    /// [`MAX_SCREEN_BYTES`]: crate::MAX_SCREEN_BYTES
    PaneIdle {
        token: Token,
        generation: Generation,
        idle_ms: u64,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        screen: Option<String>,
    },
    /// The process ended and the hub holds the slot for a relaunch.
    PaneExited {
        token: Token,
        generation: Generation,
    },
    /// The pane is no longer this plugin's: closed, its hold ended (cancel, expiry, reload),
    /// or a bare shell that cannot be relaunched has exited. Drop all state for the token;
    /// the pane may stay on clients' screens, exited, but the guard refuses anything more
    /// the plugin says about it.
    PaneClosed {
        token: Token,
        generation: Generation,
    },
    /// A person typed into the pane (the host clears the pane's budgets with it). It is a
    /// fact, not an order: dismissing a popup with Esc must not lose an overnight
    /// recovery. The bundled plugin uses it only to tell a stop the person made from one
    /// the provider made; it never ends an episode by itself.
    UserInput {
        token: Token,
        generation: Generation,
    },
    /// The host is going away; exit cleanly.
    Shutdown,
}

/// Plugin → host messages (SPEC §2.4). Serialised internally tagged by `"cmd"`.
///
/// A decoded `Command` is a request with a valid shape, nothing more: only
/// `nightcrow_guard::Guard::judge` turns one into something the host acts on.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "cmd", rename_all = "snake_case")]
pub enum Command {
    /// Type into a live, idle pane. `data` is at most [`crate::MAX_INPUT_BYTES`] bytes.
    SendInput {
        token: Token,
        generation: Generation,
        data: String,
    },
    /// Re-run an exited pane's original command plus validated arguments.
    Relaunch {
        token: Token,
        generation: Generation,
        resume_args: Vec<String>,
    },
    /// Display only; relayed to clients uninterpreted.
    Status {
        token: Token,
        generation: Generation,
        state: String,
        detail: Option<String>,
        deadline_epoch: Option<i64>,
        attempt: u32,
    },
    /// Ask to be given a pane this plugin was not configured for.
    WatchPane { token: Token },
    /// "The program wants the person back"; carries no text.
    Attention {
        token: Token,
        generation: Generation,
    },
    /// One host log line.
    Log { level: LogLevel, message: String },
}

/// Level of a plugin's `log` command.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum LogLevel {
    Error,
    Warn,
    Info,
    Debug,
}

impl Event {
    /// The wire tag, as written in the `"event"` field.
    pub fn tag(&self) -> &'static str {
        match self {
            Event::PaneOpened { .. } => "pane_opened",
            Event::PaneOutput { .. } => "pane_output",
            Event::PaneIdle { .. } => "pane_idle",
            Event::PaneExited { .. } => "pane_exited",
            Event::PaneClosed { .. } => "pane_closed",
            Event::UserInput { .. } => "user_input",
            Event::Shutdown => "shutdown",
        }
    }
}

impl Command {
    /// The wire tag, as written in the `"cmd"` field.
    pub fn tag(&self) -> &'static str {
        match self {
            Command::SendInput { .. } => "send_input",
            Command::Relaunch { .. } => "relaunch",
            Command::Status { .. } => "status",
            Command::WatchPane { .. } => "watch_pane",
            Command::Attention { .. } => "attention",
            Command::Log { .. } => "log",
        }
    }

    /// The pane slot the command is about; `None` for `log`, which names none.
    pub fn token(&self) -> Option<&Token> {
        match self {
            Command::SendInput { token, .. }
            | Command::Relaunch { token, .. }
            | Command::Status { token, .. }
            | Command::WatchPane { token }
            | Command::Attention { token, .. } => Some(token),
            Command::Log { .. } => None,
        }
    }
}

//! What a provider adapter (Codex, OpenCode) is told and what it reports.
//!
//! The per-pane state machine (`crate::machine`) owns every decision — waits, attempts,
//! statuses, relaunches. An adapter only observes its provider and turns what it sees into
//! [`Observation`]s; it never sends a command itself. All I/O of an adapter is bounded and
//! non-blocking (or short-timeout) and happens inside [`Adapter::poll`], which the plugin
//! calls when the adapter's [`Adapter::next_poll`] time has come. There is no "wake me when
//! this socket is readable": an adapter that holds a stream asks for a short tick instead
//! and reads what is there (decision recorded in `docs/recovery.md`).

use std::time::Duration;

use nightcrow_plugin_sdk::Now;
use nightcrow_protocol::LogLevel;

/// The pane an adapter is attached to, as the host described it in `pane_opened`.
#[derive(Debug, Clone)]
pub struct OpenedPane {
    /// The original configured startup command (detection already matched its first word).
    pub command: String,
    /// The repository root the pane runs in.
    pub cwd: String,
    /// `mono`: when this plugin was first given the pane; `wall_ms`: when the slot itself
    /// first opened, as the host says (`opened_ms`), so that a plugin restarted, or told of
    /// the pane again after a daemon restart, still finds the sessions the pane started.
    pub opened: Now,
}

/// The plugin's environment: exactly what `[plugin.env]` granted (nothing is inherited in
/// the sandbox). Built once at start; tests construct it directly.
#[derive(Debug, Clone, Default)]
pub struct Env {
    vars: Vec<(String, String)>,
}

impl Env {
    pub fn from_process() -> Env {
        Env::from_pairs(std::env::vars())
    }

    pub fn from_pairs(pairs: impl IntoIterator<Item = (String, String)>) -> Env {
        Env {
            vars: pairs.into_iter().collect(),
        }
    }

    pub fn get(&self, name: &str) -> Option<&str> {
        self.vars
            .iter()
            .find(|(key, _)| key == name)
            .map(|(_, value)| value.as_str())
    }
}

/// Something an adapter learned about its pane's session.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Observation {
    /// The provider stopped at a usage limit and will not continue by itself.
    /// `reset_epoch`: unix seconds when the limit resets, if the provider said so (never
    /// parsed from human-readable text); `None` means back off.
    LimitHit { reset_epoch: Option<i64> },
    /// The provider is retrying by itself; the plugin must not intervene, only show it.
    /// `until_epoch`: unix seconds of its next attempt, if known.
    ProviderRetrying { until_epoch: Option<i64> },
    /// The provider gave up retrying (e.g. OpenCode's `session.error` after its retries).
    GaveUp,
    /// The provider's retry stopped without an error and without recovering (OpenCode's
    /// session went idle over the event stream: an abort, by a person's Esc or through the
    /// API). A give-up unless a person typed just before.
    Stopped,
    /// The provider's own retry worked (the session became busy and then idle without an
    /// error): the episode is over.
    Recovered,
    /// The session shows that the person carried on (Codex: a new turn after the limit that
    /// is not itself at the limit; OpenCode: the session busy again without a retry): the
    /// episode is over.
    Continued,
    /// More than one session could be this pane's: never guess, never resume.
    Ambiguous,
    /// The session started a turn (Codex: `task_started`): after an auto-continue, the
    /// proof that the text was submitted, before the turn ends one way or the other.
    TurnStarted,
}

/// What a provider's program shows, read from the pane's screen (`pane_idle.screen`) by
/// the adapter that knows how that program draws itself. Only fixed markers are matched;
/// nothing read here is reported or logged.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Screen {
    /// A popup is open that a key answers; `keep` is the key of the option that keeps the
    /// person's current choice (never one that changes a setting).
    Popup { keep: String },
    /// The prompt, ready for input; `typed` is what is in it (empty: nothing).
    Prompt { typed: String },
    /// Anything else, or not sure: never type into it.
    Unknown,
}

/// Collects what an adapter reports during one call.
#[derive(Debug, Default)]
pub struct Sink {
    pub observations: Vec<Observation>,
    /// Log lines for the host. They carry only counts, provider names and parse errors —
    /// never transcript text or provider payloads.
    pub logs: Vec<(LogLevel, String)>,
}

impl Sink {
    pub fn observe(&mut self, observation: Observation) {
        self.observations.push(observation);
    }

    pub fn log(&mut self, level: LogLevel, message: impl Into<String>) {
        self.logs.push((level, message.into()));
    }
}

/// One provider's observer for one pane (one per tracked pane, created when the pane is
/// first seen; it lives across relaunches of the pane's slot).
pub trait Adapter {
    /// Provider name for logs (`"codex"`, `"opencode"`).
    fn name(&self) -> &'static str;

    /// Monotonic time (as in [`Now::mono`]) at which the adapter wants [`Adapter::poll`]
    /// called next; `None` when it has nothing to watch. Polling earlier must be harmless.
    fn next_poll(&self) -> Option<Duration>;

    /// Bounded observation work: read what is new, report it.
    fn poll(&mut self, now: Now, sink: &mut Sink);

    /// The pane's process ended (`pane_exited`). The adapter may read what the process left
    /// behind once more and report it before the state machine decides.
    fn exited(&mut self, now: Now, sink: &mut Sink);

    /// The pane came back as a new generation after a relaunch the plugin requested.
    fn relaunched(&mut self, now: Now, sink: &mut Sink);

    /// Arguments that reopen this pane's session (`["resume", uuid]`,
    /// `["--session", id]`), or `None` when the session is unknown or ambiguous.
    fn resume_args(&self) -> Option<Vec<String>>;

    /// What the program's screen shows (see [`Screen`]); `Unknown` unless the adapter has
    /// checked how its program draws itself.
    fn read_screen(&self, _screen: &str) -> Screen {
        Screen::Unknown
    }

    /// Whether a confirmed relaunch should also call the person back (`attention`): true
    /// when reopening the session does not by itself continue the interrupted work.
    fn attention_after_resume(&self) -> bool {
        false
    }
}

//! What the guard is told about a pane and a plugin: the inputs of a judgement.

use std::fmt;
use std::time::Duration;

use nightcrow_protocol::Generation;

/// The host's name for one pane process. Plugins never see it (SPEC §2.2).
///
/// The hub allocates ids (never reusing one; a relaunch gets a new id); the guard only
/// copies the id it was given in [`PaneFacts`] into the [`Approved`](crate::Approved) value,
/// so the hub acts on exactly the pane that was judged. An id grants nothing by itself.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct PaneId(u64);

impl PaneId {
    pub const fn new(id: u64) -> PaneId {
        PaneId(id)
    }

    pub const fn get(self) -> u64 {
        self.0
    }
}

impl fmt::Display for PaneId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.0.fmt(f)
    }
}

/// What the hub resolved from a command's token, at the moment of judgement (SPEC §3).
///
/// The hub passes `None` instead when the token names no slot. Everything here is relative
/// to the plugin being judged: [`owner`](Self::owner) says whether *this* plugin owns the
/// pane.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PaneFacts<'a> {
    /// The pane currently in the slot.
    pub pane: PaneId,
    /// The slot's current generation.
    pub generation: Generation,
    pub owner: PaneOwner,
    pub state: PaneState,
    /// The original configured startup command, `None` for a bare shell or a client-opened
    /// pane. Never a composed relaunch line.
    pub launch_command: Option<&'a str>,
}

/// Who watches a pane, seen from the plugin being judged.
///
/// One enum rather than the spec's two flags (`opted_in`, `watched_by_another`), so the
/// impossible "owned by this plugin and by another" cannot be expressed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PaneOwner {
    /// The plugin being judged owns the pane (the spec's `opted_in`).
    ThisPlugin,
    /// Another plugin owns it (the spec's `watched_by_another`).
    AnotherPlugin,
    /// No plugin owns it (a client-opened pane, or one whose plugin is not running).
    Nobody,
}

/// Whether the pane's process runs; idleness exists only for a running process.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PaneState {
    /// The process runs; `idle` is the time since its last output byte (SPEC §5.3).
    Running { idle: Duration },
    /// The process ended; the hub holds the slot for a relaunch.
    Exited,
}

/// The configuration of the plugin being judged that the guard needs (SPEC §7 `[[plugin]]`).
///
/// The hub keeps one per plugin and replaces it on reload; both fields apply at the next
/// judgement (SPEC §6.5).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PluginPolicy {
    /// The plugin's configured `name`; approvals that act for the plugin (`log`,
    /// `watch_pane`) carry it, so the hub attributes them to the plugin that was judged.
    pub name: String,
    /// Exact strings allowed as resume arg 0 and as any arg starting with `-` or `/`
    /// (SPEC §3.1). Empty: no args at all.
    pub allowed_resume_flags: Vec<String>,
    /// May the plugin ask for panes it was not configured for (`watch_pane`)?
    pub watch_on_signal: bool,
}

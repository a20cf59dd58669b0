//! The trust boundary: [`Guard::judge`] decides every request a plugin makes.
//!
//! A plugin's line becomes a [`Command`](nightcrow_protocol::Command) in `nightcrow-protocol`, which checks only shape and
//! size. Whether the command may *act* — type into a pane, relaunch one, adopt one — is
//! decided here and nowhere else, by the rules of SPEC §3 in their order.
//!
//! **Invariant: only this crate can construct an [`Approved`] value.** Every approved
//! request ([`SendInput`], [`Relaunch`], [`WatchPane`], [`Status`], [`Attention`], [`Log`])
//! has private fields and no public constructor, and none is `Clone`, so one approval acts at
//! most once. The layers that write to a PTY, spawn a relaunch or hand a pane to a plugin take
//! these values as arguments; a plugin request has no other way to reach them. Input typed by
//! a person goes through the client API, which never carries plugin data.
//!
//! ```compile_fail
//! // Outside the guard an approval cannot be made up:
//! let forged = nightcrow_guard::SendInput {
//!     pane: nightcrow_protocol::PaneId(1),
//!     token: nightcrow_protocol::Token::from_bytes([0; 16]),
//!     data: "rm -rf ~\r".to_owned(),
//! };
//! ```
//!
//! The guard is pure: no I/O, no clock reads (`now` is an argument, so tests step time
//! exactly), no panics. The hub keeps one `Guard` per repository for its whole life, so
//! budgets survive plugin reloads and pane relaunches.
//!
//! ```
//! use std::time::{Duration, Instant};
//! use nightcrow_guard::{Guard, GuardLimits, PaneFacts, PluginPolicy, Refused};
//! use nightcrow_protocol::{Command, PaneId, Token};
//!
//! let mut guard = Guard::new(GuardLimits::default());
//! let token = Token::from_bytes([7; 16]);
//! let facts = PaneFacts {
//!     pane: PaneId(3),
//!     generation: 1,
//!     opted_in: true,
//!     watched_by_another: false,
//!     alive: true,
//!     idle: Duration::from_secs(2),
//!     launch_command: Some("codex".to_owned()),
//! };
//! let policy = PluginPolicy::default();
//! let typing = Command::SendInput { token, generation: 1, data: "continue\r".to_owned() };
//! let verdict = guard.judge(&policy, &typing, Some(&facts), Instant::now());
//! assert!(matches!(verdict, Err(Refused::PaneBusy { .. })));
//! ```
#![forbid(unsafe_code)]

mod budget;
mod judge;
mod relaunch;
mod verdict;

pub use budget::{BudgetKind, GuardLimits};
pub use judge::{Guard, IDLE_THRESHOLD, PaneFacts, PluginPolicy};
pub use relaunch::{MAX_RESUME_ARG_BYTES, MAX_RESUME_ARGS, ResumeArgsError, compose_relaunch_line};
pub use verdict::{
    Approved, Attention, Log, Refused, Relaunch, SendInput, Severity, Status, Verdict, WatchPane,
};

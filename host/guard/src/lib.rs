//! The trust boundary of nightcrow: every command a plugin sends is judged here (SPEC §3).
//!
//! [`Guard::judge`] takes the plugin's [`PluginPolicy`], a decoded
//! [`Command`](nightcrow_protocol::Command), the [`PaneFacts`] the hub resolved from the
//! command's token and the current time, and returns a [`Verdict`]: an [`Approved`] value
//! or a [`Refused`] reason. It applies the rules of SPEC §3 in their order, as one
//! exhaustive match over the command, and charges the per-token budgets of SPEC §3.2.
//!
//! **Invariant: only this crate can construct an [`Approved`].** Every variant wraps a
//! struct with private fields and no public constructor, and none of them is `Clone`. The
//! operations that write to a PTY, relaunch or adopt a pane on a plugin's behalf take an
//! `Approved…` value and nothing else, so no plugin request reaches them without a
//! judgement. This is a property of the types, checked by the compiler:
//!
//! ```compile_fail,E0451
//! use nightcrow_guard::{Approved, ApprovedSendInput, Target};
//!
//! // A hub holding a `Target` from an earlier approval still cannot forge a new one.
//! fn forge(target: Target) -> Approved {
//!     Approved::SendInput(ApprovedSendInput { target, data: "rm -rf ~\r".to_owned() })
//! }
//! ```
//!
//! **The guard does no I/O and reads no clock.** `now` is an argument (a
//! [`std::time::Instant`] from the hub's monotonic clock; tests pass a base instant plus
//! offsets), so a verdict depends only on its inputs and the budgets, and tests are
//! deterministic. It never panics.
//!
//! ```
//! use std::time::{Duration, Instant};
//! use nightcrow_guard::{Approved, Guard, PaneFacts, PaneId, PaneOwner, PaneState, PluginPolicy};
//! use nightcrow_protocol::{Command, Token};
//!
//! let plugin = PluginPolicy {
//!     name: "recovery".to_owned(),
//!     allowed_resume_flags: vec!["resume".to_owned()],
//!     watch_on_signal: false,
//! };
//! let token = Token::from_bytes([7; 16]);
//! let facts = PaneFacts {
//!     pane: PaneId::new(1),
//!     generation: 1,
//!     owner: PaneOwner::ThisPlugin,
//!     state: PaneState::Exited,
//!     launch_command: Some("codex"),
//! };
//! let relaunch = Command::Relaunch {
//!     token,
//!     generation: 1,
//!     resume_args: vec!["resume".to_owned(), "019c8bfe-ec25-79e0-97d7-bda6a9c575ff".to_owned()],
//! };
//! let mut guard = Guard::default();
//! match guard.judge(&plugin, &relaunch, Some(facts), Instant::now()) {
//!     Ok(Approved::Relaunch(approved)) => {
//!         assert_eq!(approved.line().as_str(), "codex resume 019c8bfe-ec25-79e0-97d7-bda6a9c575ff");
//!     }
//!     other => panic!("{other:?}"),
//! }
//! ```
//!
//! **Plugin text is made safe to show here too:** the `state` and `detail` of an approved
//! status and the message of an approved log carry no control character (each is written
//! as an escape, [`escape_controls`]) and are cut to their caps, so nothing a plugin says
//! can write an escape sequence to a person's terminal or forge a log line.
//!
//! The other permissions a plugin can hold are its [`Sandbox`] grants, the one settings value
//! the config resolves and the plugin runtime applies; the outbound TCP grant among them is a
//! [`ConnectRule`], which can name only loopback addresses.
#![forbid(unsafe_code)]

mod approved;
mod budget;
mod connect;
mod facts;
mod guard;
mod limits;
mod plugin_setup;
mod refused;
mod relaunch;
mod sandbox;
#[cfg(test)]
mod tests;
mod text;

pub use approved::{
    Approved, ApprovedAttention, ApprovedLog, ApprovedRelaunch, ApprovedSendInput, ApprovedStatus,
    ApprovedWatchPane, Target,
};
pub use budget::BudgetCharges;
pub use connect::{ConnectRule, ConnectRuleError};
pub use facts::{PaneFacts, PaneId, PaneOwner, PaneState, PluginPolicy};
pub use guard::{Guard, IDLE_THRESHOLD, Verdict};
pub use limits::{GuardLimits, InvalidLimits, MAX_LIMIT_PER_WINDOW};
pub use plugin_setup::{RuntimeKind, StartupCommand};
pub use refused::{BudgetKind, Refused, Severity};
pub use relaunch::{
    MAX_RESUME_ARG_BYTES, MAX_RESUME_ARGS, RelaunchLine, RelaunchLineError, ResumeArgsError,
    compose_relaunch_line,
};
pub use sandbox::Sandbox;
pub use text::{MAX_STATUS_DETAIL_CHARS, MAX_STATUS_STATE_CHARS, escape_controls};

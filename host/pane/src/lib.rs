//! The pane layer of nightcrow: real PTYs (portable-pty) and the slots beside them, one
//! [`PaneTable`] per repository (SPEC §5).
//!
//! A pane runs the configured [`Shell`] — with a startup command as one argv item, or
//! bare — in the canonical repository root, with `TERM=xterm-256color`,
//! `COLORTERM=truecolor`, no `NO_COLOR`, its slot's `NIGHTCROW_PANE_TOKEN` and the hub's
//! `NIGHTCROW_PLUGIN_RUNTIME_DIR`. Its threads send raw output and the exit as
//! [`PaneEvent`]s; the table keeps the scrollback, turns output into plugin text and
//! reads the titles programs set (OSC 0 and 2), tracks
//! idleness without a timer of its own, and relaunches a slot's process under the same
//! token. While a person types into one pane, the others' output is metered, so a flood
//! cannot delay the echo ([`PaneTable::write_typed`]).
//!
//! **What it refuses to know:** plugins, owners, holds and clients are the hub's. The
//! table never decides *whether* to relaunch, destroy or write; it does what it is told
//! and reports what happened.
//!
//! **Invariants:** all `Output` events of a pane precede its `Exited` and nothing follows
//! it; a pane id is never reused and is allocated only once a spawn succeeded; no call
//! waits on a child (input goes through a bounded queue, [`PaneError::InputQueueFull`]
//! when it does not read); dropping the table kills every child.
//!
//! ```no_run
//! # async fn demo() -> Result<(), nightcrow_pane::PaneError> {
//! use nightcrow_pane::{PaneEvent, PaneSize, PaneTable, Shell};
//!
//! let (events, mut received) = tokio::sync::mpsc::channel(256);
//! let mut table = PaneTable::new("/srv/repo".into(), Shell::user_default(), "/run/nc".into(), events)?;
//! let pane = table.open(Some("cargo test".to_owned()), PaneSize::new(24, 80)?)?;
//! while let Some(event) = received.recv().await {
//!     match event {
//!         PaneEvent::Output { pane, bytes } => {
//!             let recorded = table.record_output(pane, &bytes);
//!             if let Some(text) = recorded.text {
//!                 println!("{text}");
//!             }
//!             if let Some(title) = recorded.title {
//!                 println!("pane {pane} is titled {title:?}");
//!             }
//!         }
//!         PaneEvent::Exited { pane, code } => {
//!             println!("pane {pane} exited with {code:?}");
//!             table.release_process(pane);
//!             break;
//!         }
//!     }
//! }
//! # let _ = pane;
//! # Ok(())
//! # }
//! ```
#![forbid(unsafe_code)]

mod error;
mod process;
mod runtime_dir;
mod screen;
mod scrollback;
mod shell;
mod size;
mod strip;
mod table;
mod typing;

use bytes::Bytes;
use nightcrow_guard::PaneId;

pub use error::PaneError;
pub use nightcrow_guard::IDLE_THRESHOLD;
pub use process::{EXIT_DRAIN_TIMEOUT, Ending, INPUT_QUEUE_CHUNKS, KILL_GRACE};
pub use runtime_dir::runtime_dir_for;
pub use shell::Shell;
pub use size::{MAX_COLS, MAX_ROWS, PaneSize};
pub use strip::MAX_TITLE_CHARS;
pub use table::{IdlePane, PaneTable, Recorded, Slot};
pub use typing::{METERED_BYTES_PER_SECOND, TYPING_LASTS};

/// Most PTYs per repository (SPEC §5.1).
pub const MAX_PANES: usize = 8;
/// Raw output kept per pane for reconnect replay (SPEC §5.5).
pub const SCROLLBACK_BYTES: usize = 256 * 1024;

/// What a pane's threads report, in order: any number of `Output`, then one `Exited`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum PaneEvent {
    /// Raw bytes from the PTY, one read's worth.
    Output { pane: PaneId, bytes: Bytes },
    /// The child ended; `code` is `None` when a signal ended it.
    Exited { pane: PaneId, code: Option<u32> },
}

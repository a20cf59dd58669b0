//! Why a pane operation failed.

use std::io;
use std::path::PathBuf;

use nightcrow_guard::PaneId;

use crate::size::{MAX_COLS, MAX_ROWS};

/// Why a pane operation failed. Every variant names what was wrong and with what.
#[derive(Debug, thiserror::Error)]
pub enum PaneError {
    #[error("pane rows must be 1..={MAX_ROWS}, got {0}")]
    RowsOutOfRange(u16),
    #[error("pane cols must be 1..={MAX_COLS}, got {0}")]
    ColsOutOfRange(u16),
    #[error("repository already has {max} panes, the most it may have")]
    TooManyPanes { max: usize },
    #[error("repository root {path}: {source}")]
    RepoRoot {
        path: PathBuf,
        #[source]
        source: io::Error,
    },
    #[error("repository root {path} is not a directory")]
    RepoRootNotADirectory { path: PathBuf },
    #[error("no randomness from the OS for a pane token: {0}")]
    Random(getrandom::Error),
    // portable-pty reports anyhow errors, which are not `std::error::Error`, so the cause is
    // carried in the message (with its chain) rather than as a source.
    #[error("opening a PTY: {0:#}")]
    OpenPty(anyhow::Error),
    #[error("spawning {program} in a PTY: {reason:#}")]
    Spawn {
        program: PathBuf,
        reason: anyhow::Error,
    },
    #[error("starting a thread for pane {pane}: {source}")]
    Thread {
        pane: PaneId,
        #[source]
        source: io::Error,
    },
    #[error("resizing pane {pane}: {reason:#}")]
    Resize { pane: PaneId, reason: anyhow::Error },
    #[error("no pane {0}")]
    UnknownPane(PaneId),
    #[error("no pane slot has token {0}")]
    UnknownToken(nightcrow_protocol::Token),
    #[error("a pane slot with this token exists already")]
    DuplicateToken,
    #[error("pane {0} has no process to write to")]
    NoProcess(PaneId),
    #[error("pane {0} is not reading its input; its input queue is full")]
    InputQueueFull(PaneId),
}

//! What a nightcrow client needs of the daemon, and nothing of the server: where the
//! daemon's folder is ([`Home`]), how to reach it so that only this user's daemon answers
//! ([`endpoint`]), and a greeted connection that asks it things or attaches to a hub
//! ([`Connection`]). The CLI, the terminal client and the benchmarks use it; the daemon
//! uses [`Home`] and [`endpoint`] to listen where clients look.
#![forbid(unsafe_code)]

mod connection;
pub mod endpoint;

use std::path::{Path, PathBuf};

pub use connection::{ClientError, Connection};

/// The daemon's folder (`$NIGHTCROW_HOME`, else `~/.nightcrow`) and the files in it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Home {
    root: PathBuf,
}

impl Home {
    pub fn new(root: PathBuf) -> Home {
        Home { root }
    }

    /// `$NIGHTCROW_HOME` if set, else `.nightcrow` in the user's home directory.
    pub fn from_env() -> Option<Home> {
        if let Some(root) = std::env::var_os("NIGHTCROW_HOME") {
            return Some(Home::new(PathBuf::from(root)));
        }
        Some(Home::new(user_home()?.join(".nightcrow")))
    }

    pub fn root(&self) -> &Path {
        &self.root
    }

    /// Creates the folder (mode 0700) if it is missing, makes one others may read 0700, and
    /// refuses one this user does not own or that others may write to: the socket, the log
    /// and the plugins live in it.
    pub fn ensure_private(&self) -> Result<(), String> {
        nightcrow_trust::ensure_private_dir(&self.root)
            .map_err(|problem| format!("{}: {problem}", self.root.display()))
    }

    pub fn config(&self) -> PathBuf {
        self.root.join("config.toml")
    }

    /// Where `plugin install` keeps installed plugins.
    pub fn plugins(&self) -> PathBuf {
        self.root.join("plugins")
    }

    /// The state journal: what a restarted daemon takes back.
    pub fn journal(&self) -> PathBuf {
        self.root.join("state.json")
    }

    /// Where `-d` writes the daemon's log.
    pub fn log(&self) -> PathBuf {
        self.root.join("daemon.log")
    }

    /// The file the daemon holds an exclusive lock on while it serves this home.
    pub fn lock(&self) -> PathBuf {
        self.root.join("daemon.lock")
    }

    /// Whether a daemon holds this home now (its lock is taken): a daemon that is stopping
    /// holds it until its panes are ended and its journal is written.
    pub fn is_held(&self) -> bool {
        let Ok(lock) = std::fs::File::open(self.lock()) else {
            return false;
        };
        matches!(lock.try_lock(), Err(std::fs::TryLockError::WouldBlock))
    }
}

/// The user's home folder (`HOME`, `USERPROFILE` on Windows): where the daemon's folder is by
/// default, and what `~` in the config means.
pub fn user_home() -> Option<PathBuf> {
    std::env::var_os(if cfg!(windows) { "USERPROFILE" } else { "HOME" }).map(PathBuf::from)
}

//! The nightcrow daemon, below the CLI and above the hubs: where its files live ([`Home`]),
//! the installed-plugin registry ([`registry`]), the config-to-hub mapping ([`mapping`]),
//! the single-instance endpoint ([`transport`]) with its framing ([`frame`]), the typed
//! requests and answers spoken over it ([`message`]), the server that owns the hubs
//! ([`server`]) and the CLI's side of a connection ([`client`]); its file-descriptor budget
//! ([`fdlimit`]) and its rotating log file ([`logfile`]).
//!
//! It refuses to trust a file it did not install: an installed plugin runs only while its
//! bytes still hash to what `plugin install` recorded.
#![forbid(unsafe_code)]

pub mod client;
pub mod fdlimit;
pub mod frame;
pub mod logfile;
pub mod mapping;
pub mod message;
pub mod registry;
pub mod server;
pub mod transport;

use std::path::{Path, PathBuf};

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
        let user = std::env::var_os(if cfg!(windows) { "USERPROFILE" } else { "HOME" })?;
        Some(Home::new(PathBuf::from(user).join(".nightcrow")))
    }

    pub fn root(&self) -> &Path {
        &self.root
    }

    pub fn config(&self) -> PathBuf {
        self.root.join("config.toml")
    }

    pub fn plugins(&self) -> registry::Registry {
        registry::Registry::new(self.root.join("plugins"))
    }
}

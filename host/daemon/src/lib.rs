//! The nightcrow daemon, below the CLI and above the hubs: where its files live ([`Home`]),
//! the installed-plugin registry ([`registry`]), the config-to-hub mapping ([`mapping`]),
//! the single-instance endpoint ([`transport`]), the answers it makes from its hubs'
//! reports ([`message`]; the messages themselves are the client protocol crate's), the
//! server that owns the hubs
//! ([`server`]), the state journal a restart takes the hubs back from ([`journal`]) and the
//! CLI's side of a connection ([`client`]), the `[[notify]]` hooks ([`notify`]); its
//! file-descriptor budget
//! ([`fdlimit`]) and its rotating log file ([`logfile`]).
//!
//! It refuses to trust a file it did not install: an installed plugin runs only while its
//! bytes still hash to what `plugin install` recorded.
#![forbid(unsafe_code)]

pub mod client;
pub mod fdlimit;
pub mod journal;
pub mod logfile;
pub mod mapping;
pub mod message;
pub mod notify;
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
        Some(Home::new(user_home()?.join(".nightcrow")))
    }

    pub fn root(&self) -> &Path {
        &self.root
    }

    /// Creates the folder (mode 0700) if it is missing, makes one others may read 0700, and
    /// refuses one this user does not own or that others may write to: the socket, the log
    /// and the plugins live in it.
    pub fn ensure_private(&self) -> Result<(), String> {
        nightcrow_plugin_host::private::ensure_private_dir(&self.root)
            .map_err(|problem| format!("{}: {problem}", self.root.display()))
    }

    pub fn config(&self) -> PathBuf {
        self.root.join("config.toml")
    }

    pub fn plugins(&self) -> registry::Registry {
        registry::Registry::new(self.root.join("plugins"))
    }

    /// The state journal (`journal`): what a restarted daemon takes back.
    pub fn journal(&self) -> PathBuf {
        self.root.join("state.json")
    }

    /// Where `-d` writes the daemon's log.
    pub fn log(&self) -> PathBuf {
        self.root.join("daemon.log")
    }
}

/// Refuses a config file another user owns or may write to: it names the plugins the daemon
/// runs, native ones included. A missing file passes (it is the empty config).
pub fn check_config_file(path: &Path) -> Result<(), String> {
    if !path.exists() {
        return Ok(());
    }
    nightcrow_plugin_host::private::check_trusted_file(path)
        .map_err(|problem| format!("{}: {problem}", path.display()))
}

/// Opens (creating, mode 0600) a file in the home for appending or locking; an existing
/// one is made 0600 too, as a file created by an older version may be wider.
pub fn open_private_file(path: &Path) -> std::io::Result<std::fs::File> {
    let mut options = std::fs::OpenOptions::new();
    options.read(true).append(true).create(true);
    #[cfg(unix)]
    std::os::unix::fs::OpenOptionsExt::mode(&mut options, 0o600);
    let file = options.open(path)?;
    #[cfg(unix)]
    file.set_permissions(std::os::unix::fs::PermissionsExt::from_mode(0o600))?;
    Ok(file)
}

/// The user's home folder (`HOME`, `USERPROFILE` on Windows): where the daemon's folder is by
/// default, and what `~` in the config means.
pub fn user_home() -> Option<PathBuf> {
    std::env::var_os(if cfg!(windows) { "USERPROFILE" } else { "HOME" }).map(PathBuf::from)
}

/// Replaces `path` whole or not at all, readable by this user alone: the bytes go into a new
/// temp file beside it, which is then renamed over it. The temp file has a random name and
/// is created with `O_CREAT | O_EXCL` and mode 0600, so nothing left at a predictable path
/// (a wider file, a symlink to elsewhere) is ever written through; the rename replaces a
/// symlink at `path` rather than following it.
pub fn write_atomically(path: &Path, bytes: &[u8]) -> std::io::Result<()> {
    let folder = path
        .parent()
        .filter(|folder| !folder.as_os_str().is_empty())
        .unwrap_or(Path::new("."));
    let name = path.file_name().unwrap_or_default().to_string_lossy();
    let mut temp = tempfile::Builder::new()
        .prefix(&format!(".{name}."))
        .suffix(".tmp")
        .tempfile_in(folder)?;
    std::io::Write::write_all(&mut temp, bytes)?;
    temp.as_file().sync_all()?;
    temp.persist(path).map_err(|error| error.error)?;
    // The rename is durable only once the folder's entry is written too.
    #[cfg(unix)]
    std::fs::File::open(folder)?.sync_all()?;
    Ok(())
}

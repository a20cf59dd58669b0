//! The nightcrow daemon, below the CLI and above the hubs: the installed-plugin registry
//! ([`registry`]), the config-to-hub mapping ([`mapping`]), the single-instance endpoint
//! ([`transport`]), the answers it makes from its hubs' reports ([`message`]; the messages
//! themselves are the client protocol crate's), the server that owns the hubs
//! ([`server`]), the state journal a restart takes the hubs back from ([`journal`]), the
//! `[[notify]]` hooks ([`notify`]), its file-descriptor budget ([`fdlimit`]) and its
//! rotating log file ([`logfile`]). Where its files live (`Home`) and a client's side of a
//! connection are the client crate's, which clients use without this one.
//!
//! It refuses to trust a file it did not install: an installed plugin runs only while its
//! bytes still hash to what `plugin install` recorded.
#![forbid(unsafe_code)]

pub mod fdlimit;
pub mod journal;
pub mod logfile;
pub mod mapping;
pub mod message;
pub mod notify;
pub mod registry;
pub mod server;
pub mod transport;

use std::path::Path;

/// Refuses a config file another user owns or may write to: it names the plugins the daemon
/// runs, native ones included. A missing file passes (it is the empty config).
pub fn check_config_file(path: &Path) -> Result<(), String> {
    if !path.exists() {
        return Ok(());
    }
    nightcrow_trust::check_trusted_file(path)
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

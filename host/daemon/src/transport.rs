//! The daemon's side of where clients reach it (the client's is `nightcrow_client::endpoint`),
//! and the guarantee that only one daemon serves a home.
//!
//! Unix: `daemon.sock` in the home folder (folder mode 0700, socket mode 0600). Windows: a
//! named pipe whose name is derived from the home folder, so two homes never share one.
//!
//! On Unix no other user reaches the daemon, nor is reached in its place: the socket is
//! bound inside the home, which is checked to be this user's and private (0700) before, so
//! there is no moment in which another user could connect (the socket's own 0600, set just
//! after the bind, is a second fence, not the first). Every accepted connection's peer is
//! checked to run as this user (`SO_PEERCRED` / `getpeereid`, through tokio), and so is
//! the daemon's, by the client, before either says a word.
//! Either way the daemon first takes an exclusive lock on `daemon.lock`: holding it proves no
//! other daemon runs, so a socket file left by a killed daemon is stale and is replaced.

use std::fs::File;
use std::io;
use std::path::{Path, PathBuf};

use nightcrow_client::Home;
use nightcrow_client::endpoint::socket_path;

/// Why this process cannot become the daemon.
#[derive(Debug, thiserror::Error)]
pub enum ClaimError {
    #[error(
        "a nightcrow daemon is already running for {home} (pid {pid}); stop it with `nightcrow stop`"
    )]
    AlreadyRunning { home: PathBuf, pid: String },
    #[error("{path}: {source}")]
    Io { path: PathBuf, source: io::Error },
    #[error("{0}")]
    Untrusted(String),
}

fn io_at(path: &Path) -> impl FnOnce(io::Error) -> ClaimError + '_ {
    move |source| ClaimError::Io {
        path: path.to_owned(),
        source,
    }
}

/// This process's claim on a home: the lock and the listening endpoint. Dropping it removes
/// the socket file; the lock goes with the process however it ends.
#[derive(Debug)]
pub struct Claim {
    _lock: File,
    listener: Listener,
}

impl Claim {
    /// Becomes the daemon of `home`: creates the folder (0700; refused if it is not this
    /// user's and private), takes the lock (0600), records the pid, replaces a stale socket
    /// and listens.
    pub fn take(home: &Home) -> Result<Claim, ClaimError> {
        let root = home.root();
        home.ensure_private().map_err(ClaimError::Untrusted)?;
        let lock_path = home.lock();
        let lock = crate::open_private_file(&lock_path).map_err(io_at(&lock_path))?;
        match lock.try_lock() {
            Ok(()) => {}
            Err(std::fs::TryLockError::WouldBlock) => {
                let pid = std::fs::read_to_string(&lock_path).unwrap_or_default();
                return Err(ClaimError::AlreadyRunning {
                    home: root.to_owned(),
                    pid: pid.trim().to_owned(),
                });
            }
            Err(std::fs::TryLockError::Error(error)) => return Err(io_at(&lock_path)(error)),
        }
        lock.set_len(0).map_err(io_at(&lock_path))?;
        io::Write::write_all(&mut &lock, std::process::id().to_string().as_bytes())
            .map_err(io_at(&lock_path))?;
        let listener = Listener::bind(home)?;
        Ok(Claim {
            _lock: lock,
            listener,
        })
    }

    pub fn listener(&mut self) -> &mut Listener {
        &mut self.listener
    }
}

#[cfg(unix)]
mod endpoint {
    use super::*;
    use nightcrow_client::endpoint::peer_is_this_user;
    use tokio::net::{UnixListener, UnixStream};

    pub type Stream = UnixStream;

    /// The listening socket.
    #[derive(Debug)]
    pub struct Listener {
        inner: UnixListener,
        path: PathBuf,
    }

    impl Listener {
        pub(super) fn bind(home: &Home) -> Result<Listener, ClaimError> {
            use std::os::unix::fs::PermissionsExt;
            let path = socket_path(home);
            // Only the lock holder gets here, so a socket file is a dead daemon's.
            match std::fs::remove_file(&path) {
                Err(error) if error.kind() != io::ErrorKind::NotFound => {
                    return Err(io_at(&path)(error));
                }
                _ => {}
            }
            let inner = UnixListener::bind(&path).map_err(io_at(&path))?;
            std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o600))
                .map_err(io_at(&path))?;
            Ok(Listener { inner, path })
        }

        /// The next connection from this user; one from another user is logged and closed.
        pub async fn accept(&mut self) -> io::Result<Stream> {
            loop {
                let (stream, _) = self.inner.accept().await?;
                match peer_is_this_user(&stream) {
                    Ok(()) => return Ok(stream),
                    Err(why) => tracing::warn!("a connection to the socket refused: {why}"),
                }
            }
        }
    }

    impl Drop for Listener {
        fn drop(&mut self) {
            let _ = std::fs::remove_file(&self.path);
        }
    }
}

#[cfg(windows)]
mod endpoint {
    use super::*;
    use tokio::net::windows::named_pipe::{NamedPipeServer, ServerOptions};

    /// The server end of a connection.
    pub type Stream = NamedPipeServer;

    /// The pipe name; a new server instance waits for each next client.
    #[derive(Debug)]
    pub struct Listener {
        name: String,
        next: NamedPipeServer,
    }

    impl Listener {
        pub(super) fn bind(home: &Home) -> Result<Listener, ClaimError> {
            let name = socket_path(home).display().to_string();
            let next = ServerOptions::new()
                .first_pipe_instance(true)
                .reject_remote_clients(true)
                .create(&name)
                .map_err(io_at(home.root()))?;
            Ok(Listener { name, next })
        }

        pub async fn accept(&mut self) -> io::Result<Stream> {
            self.next.connect().await?;
            let fresh = ServerOptions::new()
                .reject_remote_clients(true)
                .create(&self.name)?;
            Ok(std::mem::replace(&mut self.next, fresh))
        }
    }
}

pub use endpoint::{Listener, Stream};

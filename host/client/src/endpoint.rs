//! Where the daemon of a home listens, and connecting to it.
//!
//! Unix: `daemon.sock` in the home folder. Windows: a named pipe whose name is derived from
//! the home folder, so two homes never share one. On Unix a client talks only to a daemon
//! that runs as this user, and the daemon checks each client the same way
//! ([`peer_is_this_user`]); the daemon's side is `nightcrow_daemon::transport`.

use std::io;
use std::path::PathBuf;

use crate::Home;

/// Why a client did not get a connection to the daemon.
#[derive(Debug)]
pub enum ConnectError {
    /// Nothing answers at the socket (no daemon runs).
    Unreachable(io::Error),
    /// Something answers, but not as this user.
    Untrusted(String),
}

#[cfg(unix)]
mod platform {
    use super::*;
    use tokio::net::UnixStream;

    /// The client end of a connection.
    pub type ClientStream = UnixStream;

    pub fn socket_path(home: &Home) -> PathBuf {
        home.root().join("daemon.sock")
    }

    /// Whether the other end of `stream` runs as this user; if not, says who it is.
    pub fn peer_is_this_user(stream: &UnixStream) -> Result<(), String> {
        let credentials = stream
            .peer_cred()
            .map_err(|error| format!("its peer's user is unknown: {error}"))?;
        if nightcrow_trust::is_this_user(credentials.uid()) {
            Ok(())
        } else {
            Err(format!(
                "its peer runs as uid {} (pid {:?}), not as this user",
                credentials.uid(),
                credentials.pid()
            ))
        }
    }

    /// Connects to the daemon of `home`, if that daemon runs as this user.
    pub async fn connect(home: &Home) -> Result<UnixStream, ConnectError> {
        let stream = UnixStream::connect(socket_path(home))
            .await
            .map_err(ConnectError::Unreachable)?;
        peer_is_this_user(&stream).map_err(|why| {
            ConnectError::Untrusted(format!("{}: {why}", socket_path(home).display()))
        })?;
        Ok(stream)
    }
}

#[cfg(windows)]
mod platform {
    use super::*;
    use sha2::{Digest, Sha256};
    use tokio::net::windows::named_pipe::{ClientOptions, NamedPipeClient};

    /// The client end of a connection.
    pub type ClientStream = NamedPipeClient;

    /// `\\.\pipe\nightcrow-<first 16 hex of sha256(home path)>`.
    pub fn socket_path(home: &Home) -> PathBuf {
        let digest = Sha256::digest(home.root().to_string_lossy().as_bytes());
        let hex: String = digest[..8].iter().map(|b| format!("{b:02x}")).collect();
        PathBuf::from(format!(r"\\.\pipe\nightcrow-{hex}"))
    }

    /// Connects to the daemon of `home`.
    pub async fn connect(home: &Home) -> Result<NamedPipeClient, ConnectError> {
        ClientOptions::new()
            .open(socket_path(home))
            .map_err(ConnectError::Unreachable)
    }
}

#[cfg(unix)]
pub use platform::peer_is_this_user;
pub use platform::{ClientStream, connect, socket_path};

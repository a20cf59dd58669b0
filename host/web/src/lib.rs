//! The nightcrow web client (SPEC §8, "Web"): an HTTP server inside the daemon that serves
//! a page of xterm.js terminals, one per pane, and carries the hub's client protocol over a
//! WebSocket — the same messages and frames as the Unix socket ([`socket`]), a second
//! transport, not a second API.
//!
//! **Invariants:**
//! - nothing but the login page and its stylesheet is served without a session
//!   ([`routes`]); a session is a random 256-bit id in an HttpOnly, SameSite=Strict cookie
//!   that the server expires ([`auth::Sessions`]);
//! - a WebSocket upgrade needs the session *and* an `Origin` that is this server's own
//!   (no cross-site WebSocket hijacking); while bound to loopback, only loopback host
//!   names are answered at all (no DNS rebinding);
//! - a message over [`MAX_MESSAGE_BYTES`] is refused before it is read into memory;
//! - HTTP connections are capped in number and in how long a request may take or a
//!   connection may idle, and a failing `accept` backs off ([`serve`], [`accept`]);
//! - the password is only ever held as its Argon2id hash; failed logins are braked for the
//!   whole server, counted before the hash is checked ([`auth::LoginBrake`]); a changed
//!   password ends every session ([`auth::Login::set_password_hash`]).
//!
//! It refuses to know about the daemon: it gets the open repositories and their hubs
//! through [`Hubs`], which the daemon implements.
#![forbid(unsafe_code)]

pub mod accept;
pub mod assets;
pub mod auth;
mod routes;
mod serve;
pub mod socket;

use std::future::Future;
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use nightcrow_config::WebConfig;
use nightcrow_hub::HubHandle;

pub use nightcrow_client_protocol::MAX_MESSAGE_BYTES;

/// The daemon's open repositories, as the web client sees them.
pub trait Hubs: Send + Sync + 'static {
    /// The canonical roots of the open repositories.
    fn repos(&self) -> impl Future<Output = Vec<PathBuf>> + Send;
    /// The hub of an open repository; `None` if `repo` is not one (the web client opens
    /// nothing itself).
    fn hub(&self, repo: &Path) -> impl Future<Output = Option<HubHandle>> + Send;
}

/// Why the web client did not start.
#[derive(Debug, thiserror::Error)]
pub enum WebError {
    #[error("the web client has no password yet: set one with `nightcrow web passwd`")]
    NoPassword,
    #[error("the web client cannot listen on {address}: {source} (change `port` in [web])")]
    Bind {
        address: SocketAddr,
        source: std::io::Error,
    },
}

/// A running web client. Dropping it stops the listener; attached pages end with their
/// hub.
pub struct WebServer {
    address: SocketAddr,
    login: Arc<auth::Login>,
    task: tokio::task::JoinHandle<()>,
}

impl WebServer {
    /// Listens where `config` says (already checked: loopback, or `insecure = true`) and
    /// serves in the background. Must be called inside a tokio runtime.
    pub async fn start(config: &WebConfig, hubs: impl Hubs) -> Result<WebServer, WebError> {
        let Some(hash) = config.password_hash.clone() else {
            return Err(WebError::NoPassword);
        };
        let wanted = SocketAddr::new(config.bind, config.port);
        let listener = tokio::net::TcpListener::bind(wanted)
            .await
            .map_err(|source| WebError::Bind {
                address: wanted,
                source,
            })?;
        let address = listener.local_addr().map_err(|source| WebError::Bind {
            address: wanted,
            source,
        })?;
        let login = Arc::new(auth::Login::new(Some(hash)));
        let router = routes::router(routes::Web::new(
            hubs,
            Arc::clone(&login),
            address,
            &config.hosts,
            config.secure_cookie,
        ));
        let limits = serve::ConnectionLimits {
            max_connections: config.max_connections,
            request_timeout: config.request_timeout,
        };
        let task = tokio::spawn(serve::serve(listener, router, limits));
        tracing::info!(url = %format!("http://{address}/"), "web client listening");
        if !address.ip().is_loopback() {
            let hosts = if config.hosts.is_empty() {
                "any Host header is answered (no [web] hosts)".to_owned()
            } else {
                format!("Host headers answered: {}", config.hosts.join(", "))
            };
            tracing::warn!(
                %address,
                secure_cookie = config.secure_cookie,
                "the web client is reachable from other machines over plain HTTP ([web] insecure = true): put a TLS proxy in front; {hosts}"
            );
        }
        Ok(WebServer {
            address,
            login,
            task,
        })
    }

    /// The page's address, for `repo` if given.
    pub fn url(&self, repo: Option<&Path>) -> String {
        let base = format!("http://{}/", self.address);
        match repo {
            Some(repo) => format!(
                "{base}?repo={}",
                routes::query_escape(&repo.to_string_lossy())
            ),
            None => base,
        }
    }

    /// Takes a changed password hash (a config reload); `None` refuses every login, and
    /// any change ends every session.
    pub fn set_password_hash(&self, hash: Option<String>) {
        self.login.set_password_hash(hash);
    }
}

impl Drop for WebServer {
    fn drop(&mut self) {
        self.task.abort();
    }
}

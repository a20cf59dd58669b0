//! The HTTP side: which requests are answered, and what each needs first.
//!
//! - every request: a loopback-bound server answers only loopback host names (a DNS
//!   rebinding page names another host), plus the `[web] hosts` the config lists, which are
//!   all that a server bound beyond loopback answers when there are any; every response carries headers that keep it out
//!   of frames, caches and other origins' reach;
//! - without a session: `GET /login`, `POST /login`, and what the login page shows
//!   (`/assets/nightcrow.css`, `/assets/favicon.svg`);
//! - with one: the terminal page, its scripts, `GET /api/repos`, `POST /logout`, and the
//!   WebSocket `GET /ws?repo=DIR`, which also needs an `Origin` that is this server.
//!
//! A session is checked in one place, the [`SignedIn`] extractor, and it is the only way a
//! handler reaches the hubs: a handler that forgot it would not compile.

use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::{Duration, Instant};

use axum::Router;
use axum::extract::ws::WebSocketUpgrade;
use axum::extract::{ConnectInfo, Form, FromRequestParts, Path as UrlPath, Query, Request, State};
use axum::http::request::Parts;
use axum::http::{HeaderMap, HeaderValue, StatusCode, header};
use axum::middleware::{self, Next};
use axum::response::{Html, IntoResponse, Redirect, Response};
use axum::routing::{get, post};
use serde::Deserialize;
use tokio::sync::Semaphore;

use crate::auth::{Login, password_matches, set_cookie};
use crate::{Hubs, MAX_MESSAGE_BYTES, assets, socket};

/// Password checks run at once (each takes ~20 MB and tens of ms of a core); a login that
/// finds them all busy is answered 429 at once rather than queued.
const CONCURRENT_CHECKS: usize = 2;

const SECURITY_HEADERS: &[(&str, &str)] = &[
    (
        "content-security-policy",
        "default-src 'self'; script-src 'self'; style-src 'self' 'unsafe-inline'; \
         img-src 'self' data:; connect-src 'self'; frame-ancestors 'none'; base-uri 'none'; \
         form-action 'self'",
    ),
    ("x-frame-options", "DENY"),
    ("x-content-type-options", "nosniff"),
    // Not `no-referrer`: with it Chromium sends `Origin: null` on the login form.
    ("referrer-policy", "same-origin"),
    ("cache-control", "no-store"),
];

/// The server's state, shared by every request. The hubs are kept [`Behind`]: only a
/// [`SignedIn`] reaches them.
pub(crate) struct Web<H> {
    hubs: Behind<H>,
    login: Arc<Login>,
    checks: Arc<Semaphore>,
    /// `Host` values answered; empty when bound beyond loopback with no `[web] hosts` (any
    /// is).
    hosts: Vec<String>,
    secure_cookie: bool,
}

impl<H: Hubs> Web<H> {
    /// `hosts` are the config's `[web] hosts`; `secure_cookie` its `secure_cookie`.
    pub(crate) fn new(
        hubs: H,
        login: Arc<Login>,
        address: SocketAddr,
        hosts: &[String],
        secure_cookie: bool,
    ) -> Web<H> {
        let port = address.port();
        let mut answered = Vec::new();
        if address.ip().is_loopback() {
            answered
                .extend(["127.0.0.1", "localhost", "[::1]"].map(|name| format!("{name}:{port}")));
        }
        for host in hosts {
            let host = host.to_ascii_lowercase();
            // A name without a port is meant as reached: through a proxy on 443, or directly.
            if !host.ends_with(']') && host.contains(':') {
                answered.push(host);
            } else {
                answered.push(format!("{host}:{port}"));
                answered.push(host);
            }
        }
        Web {
            hubs: Behind(hubs),
            login,
            checks: Arc::new(Semaphore::new(CONCURRENT_CHECKS)),
            hosts: answered,
            secure_cookie,
        }
    }

    fn cookie_header(&self, id: &str) -> HeaderValue {
        HeaderValue::from_str(&set_cookie(id, self.secure_cookie)).expect("the cookie is ASCII")
    }
}

type Shared<H> = State<Arc<Web<H>>>;

/// What only a signed-in request may use; private to [`SignedIn`].
struct Behind<H>(H);

/// A request with a live session. Handlers that serve a person's panes take it, and get
/// the hubs from it; without a session the request is answered 401, or sent to the login
/// page when it is the page itself (keeping the repository asked for).
pub(crate) struct SignedIn<H>(Arc<Web<H>>);

impl<H: Hubs> SignedIn<H> {
    fn hubs(&self) -> &H {
        &self.0.hubs.0
    }
}

impl<H: Hubs> FromRequestParts<Arc<Web<H>>> for SignedIn<H> {
    type Rejection = Response;

    async fn from_request_parts(parts: &mut Parts, web: &Arc<Web<H>>) -> Result<Self, Response> {
        if web.login.sessions.check(cookie(&parts.headers)) {
            return Ok(SignedIn(Arc::clone(web)));
        }
        if parts.uri.path() == "/" {
            let wanted = Query::<WantedRepo>::try_from_uri(&parts.uri)
                .map(|Query(wanted)| wanted.query())
                .unwrap_or_default();
            return Err(Redirect::to(&format!("/login{wanted}")).into_response());
        }
        Err((StatusCode::UNAUTHORIZED, "log in first").into_response())
    }
}

pub(crate) fn router<H: Hubs>(web: Web<H>) -> Router {
    let web = Arc::new(web);
    Router::new()
        .route("/", get(app_page::<H>))
        .route("/login", get(login_page::<H>).post(login::<H>))
        .route("/logout", post(logout::<H>))
        .route("/assets/{name}", get(asset::<H>))
        .route("/api/repos", get(repos::<H>))
        .route("/ws", get(upgrade::<H>))
        .layer(middleware::from_fn_with_state(
            Arc::clone(&web),
            every_request::<H>,
        ))
        .with_state(web)
}

/// The host check before, the security headers after, any handler.
async fn every_request<H: Hubs>(State(web): Shared<H>, request: Request, next: Next) -> Response {
    let host = request
        .headers()
        .get(header::HOST)
        .and_then(|v| v.to_str().ok());
    let known = web.hosts.is_empty()
        || host.is_some_and(|host| {
            web.hosts
                .iter()
                .any(|known| host.eq_ignore_ascii_case(known))
        });
    let mut response = if known {
        next.run(request).await
    } else {
        (StatusCode::MISDIRECTED_REQUEST, "unknown host").into_response()
    };
    let headers = response.headers_mut();
    for (name, value) in SECURITY_HEADERS {
        headers.insert(*name, HeaderValue::from_static(value));
    }
    response
}

/// Without a session [`SignedIn`] sends the person to the login page, which keeps the
/// repository asked for, so a bookmarked page opens it.
async fn app_page<H: Hubs>(_: SignedIn<H>) -> Response {
    Html(assets::APP_PAGE).into_response()
}

async fn login_page<H: Hubs>(
    signed_in: Result<SignedIn<H>, Response>,
    Query(wanted): Query<WantedRepo>,
) -> Response {
    if signed_in.is_ok() {
        return Redirect::to(&format!("/{}", wanted.query())).into_response();
    }
    login_form(StatusCode::OK, "")
}

/// The repository a page address asks for (`/?repo=…`), carried through the login.
#[derive(Deserialize)]
struct WantedRepo {
    repo: Option<String>,
}

impl WantedRepo {
    /// `?repo=…` encoded afresh (nothing else of the request is echoed), or empty.
    fn query(&self) -> String {
        self.repo.as_deref().map_or_else(String::new, |repo| {
            let encoded =
                percent_encoding::utf8_percent_encode(repo, percent_encoding::NON_ALPHANUMERIC);
            format!("?repo={encoded}")
        })
    }
}

/// The login page saying `message` (fixed texts only: nothing the request wrote).
fn login_form(status: StatusCode, message: &str) -> Response {
    let page = assets::LOGIN_PAGE.replace("<!--MESSAGE-->", message);
    (status, Html(page)).into_response()
}

#[derive(Deserialize)]
struct LoginForm {
    password: String,
}

async fn login<H: Hubs>(
    State(web): Shared<H>,
    ConnectInfo(peer): ConnectInfo<SocketAddr>,
    headers: HeaderMap,
    Query(wanted): Query<WantedRepo>,
    Form(form): Form<LoginForm>,
) -> Response {
    if names_another_origin(&headers) {
        return (StatusCode::FORBIDDEN, "cross-origin login refused").into_response();
    }
    let Some(hash) = web.login.password_hash() else {
        return login_form(
            StatusCode::SERVICE_UNAVAILABLE,
            "No password is set: run <code>nightcrow web passwd</code>.",
        );
    };
    let Ok(permit) = Arc::clone(&web.checks).try_acquire_owned() else {
        return too_many(
            Duration::ZERO,
            "The server is busy checking other logins: try again in a second.",
        );
    };
    if let Err(wait) = web.login.brake.attempt(Instant::now()) {
        return too_many(wait, "Too many failed logins: try again in");
    }
    // The permit goes with the check, so a client that hangs up mid-check frees no slot.
    let matches = tokio::task::spawn_blocking(move || {
        let _permit = permit;
        password_matches(&form.password, &hash)
    })
    .await
    .unwrap_or(false);
    if !matches {
        tracing::warn!(address = %peer.ip(), "web client: a failed login");
        return login_form(StatusCode::UNAUTHORIZED, "Wrong password.");
    }
    web.login.brake.succeeded();
    let id = web.login.sessions.open();
    let mut response = Redirect::to(&format!("/{}", wanted.query())).into_response();
    response
        .headers_mut()
        .insert(header::SET_COOKIE, web.cookie_header(&id));
    response
}

/// 429 with the login page saying `message`, followed by the wait when there is one.
fn too_many(wait: Duration, message: &str) -> Response {
    let seconds = wait.as_secs() + 1;
    let text = if wait.is_zero() {
        message.to_owned()
    } else {
        format!("{message} {seconds} s.")
    };
    let mut response = login_form(StatusCode::TOO_MANY_REQUESTS, &text);
    response
        .headers_mut()
        .insert(header::RETRY_AFTER, HeaderValue::from(seconds));
    response
}

async fn logout<H: Hubs>(State(web): Shared<H>, headers: HeaderMap) -> Response {
    if names_another_origin(&headers) {
        return (StatusCode::FORBIDDEN, "cross-origin logout refused").into_response();
    }
    web.login.sessions.close(cookie(&headers));
    let mut response = Redirect::to("/login").into_response();
    response
        .headers_mut()
        .insert(header::SET_COOKIE, web.cookie_header(""));
    response
}

async fn asset<H: Hubs>(
    signed_in: Result<SignedIn<H>, Response>,
    UrlPath(name): UrlPath<String>,
) -> Response {
    match (assets::find(&name), signed_in) {
        (Some(asset), signed_in) if asset.public || signed_in.is_ok() => {
            ([(header::CONTENT_TYPE, asset.content_type)], asset.body).into_response()
        }
        (Some(_), Err(refused)) => refused,
        _ => StatusCode::NOT_FOUND.into_response(),
    }
}

async fn repos<H: Hubs>(signed_in: SignedIn<H>) -> Response {
    let repos: Vec<serde_json::Value> = signed_in
        .hubs()
        .repos()
        .await
        .into_iter()
        .map(|repo| {
            let name = repo
                .file_name()
                .map(|name| name.to_string_lossy().into_owned());
            serde_json::json!({ "repo": repo, "name": name })
        })
        .collect();
    let body = serde_json::Value::Array(repos).to_string();
    ([(header::CONTENT_TYPE, "application/json")], body).into_response()
}

#[derive(Deserialize)]
struct SocketQuery {
    repo: PathBuf,
}

async fn upgrade<H: Hubs>(
    signed_in: SignedIn<H>,
    headers: HeaderMap,
    Query(query): Query<SocketQuery>,
    upgrade: WebSocketUpgrade,
) -> Response {
    if !is_this_origin(&headers) {
        tracing::warn!(origin = ?headers.get(header::ORIGIN), "web client: a cross-origin WebSocket refused");
        return (StatusCode::FORBIDDEN, "cross-origin WebSocket refused").into_response();
    }
    let Some(hub) = signed_in.hubs().hub(&query.repo).await else {
        return (StatusCode::NOT_FOUND, "no such open repository").into_response();
    };
    upgrade
        .max_message_size(MAX_MESSAGE_BYTES)
        .max_frame_size(MAX_MESSAGE_BYTES)
        .on_upgrade(move |socket| socket::serve(socket, hub))
}

/// Whether the request's `Origin` is this server (`http://` or `https://` + its `Host`);
/// `None` without one. A WebSocket upgrade must carry one ([`is_this_origin`]); a form post
/// may lack it (old browsers) but may not name another ([`names_another_origin`]).
fn origin_matches(headers: &HeaderMap) -> Option<bool> {
    let origin = headers.get(header::ORIGIN).and_then(|v| v.to_str().ok())?;
    let Some(host) = headers.get(header::HOST).and_then(|v| v.to_str().ok()) else {
        return Some(false);
    };
    Some(
        origin
            .strip_prefix("http://")
            .or_else(|| origin.strip_prefix("https://"))
            == Some(host),
    )
}

fn is_this_origin(headers: &HeaderMap) -> bool {
    origin_matches(headers) == Some(true)
}

fn names_another_origin(headers: &HeaderMap) -> bool {
    origin_matches(headers) == Some(false)
}

fn cookie(headers: &HeaderMap) -> Option<&str> {
    headers.get(header::COOKIE).and_then(|v| v.to_str().ok())
}

/// `text` made safe for a URL's query string (RFC 3986 unreserved characters kept).
pub(crate) fn query_escape(text: &str) -> String {
    text.bytes()
        .map(|byte| match byte {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'.' | b'_' | b'~' | b'/' => {
                char::from(byte).to_string()
            }
            _ => format!("%{byte:02X}"),
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_this_server_is_the_same_origin() {
        let headers = |origin: Option<&str>| {
            let mut headers = HeaderMap::new();
            headers.insert(header::HOST, HeaderValue::from_static("127.0.0.1:8091"));
            if let Some(origin) = origin {
                headers.insert(header::ORIGIN, HeaderValue::from_str(origin).unwrap());
            }
            headers
        };
        assert!(is_this_origin(&headers(Some("http://127.0.0.1:8091"))));
        assert!(is_this_origin(&headers(Some("https://127.0.0.1:8091"))));
        for other in ["http://127.0.0.1:8092", "http://evil.example", "null"] {
            assert!(!is_this_origin(&headers(Some(other))), "{other}");
            assert!(names_another_origin(&headers(Some(other))), "{other}");
        }
        // Without an Origin: no WebSocket, but a form post from an old browser is fine.
        assert!(!is_this_origin(&headers(None)));
        assert!(!names_another_origin(&headers(None)));
        assert_eq!(query_escape("/srv/my repo&x"), "/srv/my%20repo%26x");
    }
}

//! The HTTP server loop: what a connection may hold of the daemon before it has a session.
//!
//! - at most `max_connections` HTTP connections at once; one more is closed as soon as it
//!   is accepted, so idle connections cannot use up the daemon's file descriptors (the
//!   daemon sets the cap to at most a quarter of its descriptor limit);
//! - a request's headers must arrive within `request_timeout`, which also closes a
//!   keep-alive connection idle that long (hyper's header-read timer runs while it waits
//!   for the next request), and the whole request, body included, must be answered within
//!   it (a `408` otherwise);
//! - a failing `accept` backs off instead of spinning ([`AcceptBackoff`]).
//!
//! A WebSocket leaves the count when it is upgraded: it needs a session, and a page watching
//! a quiet terminal is idle by design.

use std::convert::Infallible;
use std::sync::Arc;
use std::time::Duration;

use axum::Router;
use axum::extract::ConnectInfo;
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use hyper::body::Incoming;
use hyper_util::rt::{TokioIo, TokioTimer};
use tokio::net::TcpListener;
use tokio::sync::Semaphore;
use tower_service::Service;

use crate::accept::{AcceptBackoff, Quiet};

/// How many connections and how long each may take.
#[derive(Debug, Clone, Copy)]
pub(crate) struct ConnectionLimits {
    pub(crate) max_connections: usize,
    pub(crate) request_timeout: Duration,
}

/// Serves `router` on `listener` until the task is aborted.
pub(crate) async fn serve(listener: TcpListener, router: Router, limits: ConnectionLimits) {
    let slots = Arc::new(Semaphore::new(limits.max_connections));
    let mut backoff = AcceptBackoff::new("web client");
    let mut at_cap = Quiet::default();
    loop {
        let (stream, remote) = match listener.accept().await {
            Ok(accepted) => {
                backoff.accepted();
                accepted
            }
            Err(error) => {
                backoff.failed(&error).await;
                continue;
            }
        };
        let Ok(slot) = Arc::clone(&slots).try_acquire_owned() else {
            if let Some(refused) = at_cap.admit(tokio::time::Instant::now()) {
                tracing::warn!(
                    max_connections = limits.max_connections,
                    refused,
                    "web client at its connection cap; new connections are closed"
                );
            }
            drop(stream);
            continue;
        };
        let router = router.clone();
        tokio::spawn(async move {
            let service =
                hyper::service::service_fn(move |mut request: hyper::Request<Incoming>| {
                    request.extensions_mut().insert(ConnectInfo(remote));
                    let mut router = router.clone();
                    async move {
                        let answered =
                            tokio::time::timeout(limits.request_timeout, router.call(request));
                        Ok::<Response, Infallible>(match answered.await {
                            Ok(Ok(response)) => response,
                            Ok(Err(never)) => match never {},
                            Err(_) => StatusCode::REQUEST_TIMEOUT.into_response(),
                        })
                    }
                });
            let mut http = hyper::server::conn::http1::Builder::new();
            http.timer(TokioTimer::new())
                .header_read_timeout(limits.request_timeout);
            let connection = http
                .serve_connection(TokioIo::new(stream), service)
                .with_upgrades();
            if let Err(error) = connection.await {
                tracing::debug!(%remote, %error, "web connection ended");
            }
            drop(slot);
        });
    }
}

#[cfg(test)]
mod tests {
    use std::io::{Read, Write};

    use std::net::SocketAddr;

    use axum::routing::get;

    use super::*;

    async fn server(limits: ConnectionLimits) -> SocketAddr {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let address = listener.local_addr().unwrap();
        let router = Router::new().route("/", get(|| async { "hello" }));
        tokio::spawn(serve(listener, router, limits));
        address
    }

    /// Reads until the peer closes; the bytes read and how long it took.
    fn read_to_close(stream: &mut std::net::TcpStream) -> (String, Duration) {
        let began = std::time::Instant::now();
        let mut text = String::new();
        let _ = stream.read_to_string(&mut text);
        (text, began.elapsed())
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_connection_over_the_cap_is_closed_and_the_held_ones_still_answer() {
        let address = server(ConnectionLimits {
            max_connections: 2,
            request_timeout: Duration::from_secs(30),
        })
        .await;
        tokio::task::spawn_blocking(move || {
            let held: Vec<_> = (0..2)
                .map(|_| std::net::TcpStream::connect(address).unwrap())
                .collect();
            // Let the server accept both before the third arrives.
            std::thread::sleep(Duration::from_millis(200));
            let mut third = std::net::TcpStream::connect(address).unwrap();
            third
                .set_read_timeout(Some(Duration::from_secs(5)))
                .unwrap();
            let (text, _) = read_to_close(&mut third);
            assert_eq!(text, "", "closed without an answer");
            let mut first = &held[0];
            first
                .write_all(b"GET / HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
                .unwrap();
            let mut answer = String::new();
            first.read_to_string(&mut answer).unwrap();
            assert!(answer.ends_with("hello"), "{answer}");
        })
        .await
        .unwrap();
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn headers_sent_a_line_at_a_time_are_cut_off_at_the_timeout() {
        let address = server(ConnectionLimits {
            max_connections: 8,
            request_timeout: Duration::from_secs(1),
        })
        .await;
        tokio::task::spawn_blocking(move || {
            let mut slow = std::net::TcpStream::connect(address).unwrap();
            slow.write_all(b"GET / HTTP/1.1\r\n").unwrap();
            let began = std::time::Instant::now();
            let mut closed = false;
            while began.elapsed() < Duration::from_secs(6) {
                std::thread::sleep(Duration::from_millis(300));
                if slow.write_all(b"X-Slow: 1\r\n").is_err() {
                    closed = true;
                    break;
                }
            }
            assert!(closed, "still open after {:?}", began.elapsed());
        })
        .await
        .unwrap();
    }
}

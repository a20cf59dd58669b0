//! The adapter against a real loopback server replaying OpenCode's captured answers.

use std::io::{BufRead, BufReader, Write};
use std::net::TcpListener;
use std::sync::mpsc;
use std::time::Duration;

use nightcrow_plugin_sdk::Now;

use super::*;
use crate::provider::Observation;

/// One scripted answer: what the request must ask for, and the response bytes.
struct Answer {
    path_prefix: &'static str,
    response: Vec<u8>,
}

/// Serves `answers` in order, one per connection; reports each request head once its
/// answer is written, so a test knows the bytes are waiting in the adapter's socket. The
/// connections stay open until every answer is given (a stream ends only when the test's
/// answer ends it).
fn serve(answers: Vec<Answer>) -> (u16, mpsc::Receiver<String>) {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    let (heads_tx, heads) = mpsc::channel();
    std::thread::spawn(move || {
        let mut open = Vec::new();
        for answer in answers {
            let (mut socket, _) = listener.accept().unwrap();
            let mut reader = BufReader::new(socket.try_clone().unwrap());
            let mut head = String::new();
            loop {
                let mut line = String::new();
                reader.read_line(&mut line).unwrap();
                if line == "\r\n" || line.is_empty() {
                    break;
                }
                head.push_str(&line);
            }
            assert!(head.contains(answer.path_prefix), "{head}");
            socket.write_all(&answer.response).unwrap();
            open.push(socket);
            heads_tx.send(head).unwrap();
        }
    });
    (port, heads)
}

fn chunked(body: &[u8]) -> Vec<u8> {
    let mut response =
        b"HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\ntransfer-encoding: chunked\r\n\r\n"
            .to_vec();
    for piece in body.chunks(700) {
        response.extend_from_slice(format!("{:x}\r\n", piece.len()).as_bytes());
        response.extend_from_slice(piece);
        response.extend_from_slice(b"\r\n");
    }
    response.extend_from_slice(b"0\r\n\r\n");
    response
}

fn pane(port: u16) -> OpenedPane {
    OpenedPane {
        command: format!("opencode --port {port}"),
        cwd: "/home/a/proj".to_owned(),
        opened: at(0),
    }
}

fn at(ms: u64) -> Now {
    Now {
        mono: Duration::from_millis(ms),
        wall_ms: 1_796_228_000_000 + ms as i64,
    }
}

/// The next request head the server answered.
fn answered(heads: &mpsc::Receiver<String>) -> String {
    heads
        .recv_timeout(Duration::from_secs(10))
        .expect("the adapter made its request")
}

#[test]
fn the_event_stream_reports_a_give_up_and_the_session_to_reopen() {
    let (port, heads) = serve(vec![Answer {
        path_prefix: "GET /event?directory=/home/a/proj ",
        response: chunked(&captured_sse("b2-429-retry-after-ms-3000")),
    }]);
    let mut sink = Sink::default();
    let env = Env::from_pairs([("OPENCODE_SERVER_PASSWORD".to_owned(), "pw".to_owned())]);
    let mut adapter = OpenCode::new(&pane(port), &env, &mut sink).unwrap();
    adapter.poll(at(0), &mut sink);
    let head = answered(&heads);
    adapter.poll(at(250), &mut sink);
    assert_eq!(
        sink.observations.last(),
        Some(&Observation::GaveUp),
        "{:?}",
        sink.observations
    );
    assert!(
        head.contains("Authorization: Basic b3BlbmNvZGU6cHc=\r\n"),
        "{head}"
    );
    assert_eq!(
        adapter.resume_args(),
        Some(vec![
            "--session".to_owned(),
            "ses_dc8726063ffedwq1HAGXoO7KFL".to_owned()
        ])
    );
    assert!(adapter.attention_after_resume());
}

#[test]
fn without_a_stream_the_status_map_is_polled_and_a_401_is_logged_once() {
    let unauthorized = b"HTTP/1.1 401 Unauthorized\r\nwww-authenticate: Basic realm=\"Secure Area\"\r\nContent-Length: 0\r\n\r\n".to_vec();
    let retry = br#"{"ses_dc872112effeIU2ttBGnmwZ2gd":{"type":"retry","attempt":1,"message":"Rate limit reached","next":1796228381174}}"#;
    let mut status = format!(
        "HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: {}\r\n\r\n",
        retry.len()
    )
    .into_bytes();
    status.extend_from_slice(retry);
    let (port, heads) = serve(vec![
        Answer {
            path_prefix: "GET /event?",
            response: unauthorized.clone(),
        },
        Answer {
            path_prefix: "GET /session/status?directory=/home/a/proj ",
            response: unauthorized.clone(),
        },
        Answer {
            path_prefix: "GET /event?",
            response: unauthorized,
        },
        Answer {
            path_prefix: "GET /session/status?",
            response: status,
        },
    ]);
    let mut sink = Sink::default();
    let mut adapter = OpenCode::new(&pane(port), &Env::default(), &mut sink).unwrap();
    // The stream is refused (read in this call or the next), so the status map is polled:
    // refused too.
    adapter.poll(at(0), &mut sink);
    assert!(answered(&heads).starts_with("GET /event?"));
    adapter.poll(at(100), &mut sink);
    assert!(answered(&heads).starts_with("GET /session/status?"));
    assert!(
        adapter.next_poll().unwrap() >= Duration::from_millis(2_000),
        "backs off"
    );
    assert!(sink.observations.is_empty());
    // Later: the stream is refused again; the status poll, due again, answers.
    adapter.poll(at(5_100), &mut sink);
    assert!(answered(&heads).starts_with("GET /event?"));
    adapter.poll(at(5_200), &mut sink);
    assert!(answered(&heads).starts_with("GET /session/status?"));
    assert_eq!(
        sink.observations,
        [Observation::ProviderRetrying {
            until_epoch: Some(1_796_228_381)
        }]
    );
    let unauthorized_logs = sink.logs.iter().filter(|(_, m)| m.contains("401")).count();
    assert_eq!(unauthorized_logs, 1, "{:?}", sink.logs);
}

#[test]
fn a_silent_stream_is_dropped_and_the_status_map_polled_meanwhile() {
    let mut stream = b"HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\n\r\n".to_vec();
    stream.extend_from_slice(b"data: {\"type\":\"server.connected\",\"properties\":{}}\n\n");
    let empty = b"HTTP/1.1 200 OK\r\ncontent-length: 2\r\n\r\n{}".to_vec();
    let (port, heads) = serve(vec![
        Answer {
            path_prefix: "GET /event?directory=/home/a/proj ",
            response: stream,
        },
        Answer {
            path_prefix: "GET /session/status?directory=/home/a/proj ",
            response: empty,
        },
    ]);
    let mut sink = Sink::default();
    let mut adapter = OpenCode::new(&pane(port), &Env::default(), &mut sink).unwrap();
    adapter.poll(at(0), &mut sink);
    answered(&heads);
    adapter.poll(at(250), &mut sink);
    assert_eq!(
        adapter.next_poll(),
        Some(Duration::from_millis(500)),
        "streaming"
    );
    // No heartbeat for 30 s (OpenCode sends one every 10 s): the stream is dead.
    adapter.poll(at(30_250), &mut sink);
    assert!(answered(&heads).starts_with("GET /session/status?"));
    assert_eq!(
        adapter.next_poll(),
        Some(Duration::from_millis(32_250)),
        "reopened after 2 s"
    );
    assert!(sink.observations.is_empty());
    assert!(
        sink.logs
            .iter()
            .any(|(_, m)| m.contains("no answer in time")),
        "{:?}",
        sink.logs
    );
}

#[test]
fn a_pane_without_an_explicit_port_or_off_loopback_is_unobservable_and_says_so_once() {
    let mut sink = Sink::default();
    let mut facts = pane(1);
    for command in [
        "opencode",
        "opencode --port 0",
        "opencode --hostname 127.0.0.1",
        "opencode --hostname 10.0.0.2 --port 4096",
    ] {
        facts.command = command.to_owned();
        assert!(OpenCode::new(&facts, &Env::default(), &mut sink).is_none());
    }
    assert_eq!(sink.logs.len(), 4);
    assert!(
        sink.logs.iter().all(|(_, m)| !m.contains("opencode --")),
        "no command text"
    );
}

#[test]
fn an_exited_pane_is_not_polled_until_it_is_relaunched() {
    let mut sink = Sink::default();
    let mut adapter = OpenCode::new(&pane(9), &Env::default(), &mut sink).unwrap();
    adapter.exited(at(10), &mut sink);
    assert_eq!(adapter.next_poll(), None);
    adapter.relaunched(at(20), &mut sink);
    assert_eq!(adapter.next_poll(), Some(Duration::ZERO));
}

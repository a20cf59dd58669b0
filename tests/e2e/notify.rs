//! The daemon's `[[notify]]` hooks with no client attached: real plugins in a real daemon
//! call for the person, a command hook (run without a shell; the test's own `sh` writes
//! what it got) gets the `NIGHTCROW_*` environment, the text as an argument and on stdin,
//! and a URL hook's POST reaches a loopback HTTP receiver in the form ntfy takes.

use std::collections::HashMap;
use std::time::Duration;

use base64::Engine as _;
use nightcrow_test_plugin_artifacts as guests;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpListener;

use crate::daemon::{TestDaemon, tokio_runtime, wait_until};

const CONFIG: &str = r#"
[shell]
program = "/bin/sh"
command_args = ["-c"]

[[plugin]]
name = "caller"
command = "SCRIPTED"
enabled = true
args = ["open_status=needs_attention"]

[[plugin]]
name = "bell"
command = "SCRIPTED"
enabled = true
args = ["attention_on=ring-42"]

[[startup_command]]
name = "agent"
command = "sleep 60"
plugin = "caller"

[[startup_command]]
name = "bell"
command = "sleep 1; echo ring-$((6*7)); sleep 60"
plugin = "bell"

[[notify]]
command = ["sh", "-c", 'printf %s "$1" > "$0.arg"; cat > "$0.stdin"; env > "$0.tmp"; mv "$0.tmp" "$0"', "OUT", "{text}"]
events = ["needs_attention"]

[[notify]]
url = "http://ADDRESS/crow-topic"
events = ["attention"]
"#;

/// One HTTP request as the receiver read it: its head and its body.
async fn one_request(listener: &TcpListener) -> (String, String) {
    let (mut stream, _) = listener.accept().await.unwrap();
    let mut bytes = Vec::new();
    let mut chunk = [0; 4096];
    let (head, body) = loop {
        let read = stream.read(&mut chunk).await.unwrap();
        assert!(read > 0, "the request ended early: {bytes:?}");
        bytes.extend_from_slice(&chunk[..read]);
        let text = String::from_utf8_lossy(&bytes).into_owned();
        let Some((head, body)) = text.split_once("\r\n\r\n") else {
            continue;
        };
        let length: usize = head
            .lines()
            .find_map(|line| {
                line.to_ascii_lowercase()
                    .strip_prefix("content-length:")
                    .map(|n| n.trim().parse().unwrap())
            })
            .expect("a content-length");
        if body.len() >= length {
            break (head.to_owned(), body.to_owned());
        }
    };
    stream
        .write_all(b"HTTP/1.1 200 OK\r\ncontent-length: 0\r\nconnection: close\r\n\r\n")
        .await
        .unwrap();
    (head, body)
}

#[test]
fn notify_hooks_run_a_command_and_post_to_a_url_with_no_client_attached() {
    let out = tempfile::tempdir().unwrap();
    let written = out.path().join("env");
    let runtime = tokio_runtime();
    let listener = runtime.block_on(TcpListener::bind("127.0.0.1:0")).unwrap();
    let config = CONFIG
        .replace("SCRIPTED", guests::SCRIPTED_WASM)
        .replace("OUT", written.to_str().unwrap())
        .replace("ADDRESS", &listener.local_addr().unwrap().to_string());
    let daemon = TestDaemon::start(&config);
    let repo = daemon.open_repo();
    let root = repo.path().canonicalize().unwrap();

    let (head, body) = runtime.block_on(async {
        tokio::time::timeout(Duration::from_secs(30), one_request(&listener))
            .await
            .expect("the URL hook posted")
    });
    let mut lines = head.lines();
    assert_eq!(lines.next(), Some("POST /crow-topic HTTP/1.1"), "{head}");
    let headers: HashMap<String, String> = lines
        .filter_map(|line| line.split_once(": "))
        .map(|(name, value)| (name.to_ascii_lowercase(), value.to_owned()))
        .collect();
    let title = headers["title"]
        .strip_prefix("=?UTF-8?B?")
        .and_then(|rest| rest.strip_suffix("?="))
        .expect("an RFC 2047 title");
    let title = base64::engine::general_purpose::STANDARD
        .decode(title)
        .unwrap();
    let folder = root.file_name().unwrap().to_str().unwrap();
    assert_eq!(
        String::from_utf8(title).unwrap(),
        format!("nightcrow — {folder}")
    );
    assert_eq!(headers["priority"], "high");
    assert!(headers["content-type"].starts_with("text/plain"), "{head}");
    assert_eq!(body, "pane 2 wants you back");

    wait_until("the command hook wrote its environment", || {
        written.exists()
    });
    let environment: HashMap<String, String> = std::fs::read_to_string(&written)
        .unwrap()
        .lines()
        .filter_map(|line| line.split_once('='))
        .filter(|(name, _)| name.starts_with("NIGHTCROW_") && *name != "NIGHTCROW_HOME")
        .map(|(name, value)| (name.to_owned(), value.to_owned()))
        .collect();
    let expected: HashMap<String, String> = [
        ("NIGHTCROW_EVENT", "needs_attention"),
        ("NIGHTCROW_REPO", root.to_str().unwrap()),
        ("NIGHTCROW_PANE", "1"),
        ("NIGHTCROW_STATE", "needs_attention"),
        ("NIGHTCROW_DETAIL", ""),
        ("NIGHTCROW_DEADLINE", "1771890527"),
        ("NIGHTCROW_TEXT", "pane 1 needs you"),
    ]
    .into_iter()
    .map(|(name, value)| (name.to_owned(), value.to_owned()))
    .collect();
    assert_eq!(environment, expected);
    let read = |suffix: &str| std::fs::read_to_string(out.path().join(format!("env.{suffix}")));
    assert_eq!(read("arg").unwrap(), "pane 1 needs you");
    assert_eq!(read("stdin").unwrap(), "pane 1 needs you\n");
}

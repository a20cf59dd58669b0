//! The wasm component without the grants its providers need: the sandbox refuses, the plugin
//! reports nothing, keeps answering and ends cleanly.

use super::harness::{Grants, PANE, PATIENCE, Plugin, Runtime, token};

const LIMIT_ROLLOUT: &str = "real-0.169-mock-backend/exec-c-normal-then-limit/rollout-2026-12-02T16-10-09-01a23785-4104-78f1-b4f0-247bed73e273.jsonl";

#[test]
fn without_the_sessions_grant_a_codex_limit_goes_unseen() {
    let grants = Grants {
        codex_home: false,
        ..Grants::default()
    };
    let mut plugin = Plugin::start_with(Runtime::Wasm, grants);
    plugin.open(1, "codex exec 'do the thing'");
    assert!(plugin.sync().is_empty());
    let (path, records) = plugin.rollout(LIMIT_ROLLOUT);
    assert!(plugin.replay(&path, &records[..=20]).is_empty());
    plugin.exit(1);
    plugin.advance(24 * 3600);
    assert!(plugin.sync().is_empty(), "no relaunch without a session");
    plugin.finish();
}

#[test]
fn without_the_connect_grant_no_connection_gets_through() {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("bind loopback");
    let port = listener.local_addr().expect("addr").port();
    listener.set_nonblocking(true).expect("nonblocking");
    let grants = Grants {
        connect: None,
        ..Grants::opencode(port, super::harness::T0_MS)
    };
    let mut plugin = Plugin::start_with(Runtime::Wasm, grants);
    plugin.open(1, &format!("opencode --port {port}"));
    for _ in 0..10 {
        plugin.advance(1);
        assert!(plugin.sync().is_empty(), "nothing to report");
    }
    // A pane the plugin would watch is still answered for: it is alive.
    plugin.send(nightcrow_protocol::Event::UserInput {
        token: token(PANE),
        generation: 1,
    });
    assert!(plugin.sync().is_empty());
    plugin.finish();
    assert!(
        listener.accept().is_err(),
        "a connection got through the sandbox within {PATIENCE:?}"
    );
}

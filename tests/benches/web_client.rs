//! The web client's part of the attach bench: the same daemon, with the web client on, and
//! a headless Chromium logged in to it. What counts as "seen" is what the page's xterm.js
//! has parsed into its buffer, as for the TUI it is what its screen shows.
//!
//! - **Throughput**: the page attaches to a fresh repository and asks for the flood pane
//!   itself; the time until the end marker is in the terminal's buffer.
//! - **Keystroke to echo**: measured inside the page, so the DevTools round trip is not in
//!   it: a key goes out as an `input` message on the WebSocket, and the time until the
//!   terminal has parsed its echo is taken.

use std::path::Path;
use std::time::Duration;

use nightcrow_client::Connection;
use nightcrow_client_protocol::daemon::{DaemonAnswer, DaemonRequest};
use nightcrow_test_browser::Browser;
use serde_json::json;

use super::{COLS, Daemon, FLOOD_PATIENCE, KEYS_PER_ROUND, MARKER, ROWS, TYPING_GAP, fresh_repo};

const PASSWORD: &str = "bench password";

/// The `[web]` table that turns the web client on, on a free port.
pub(super) fn config() -> String {
    let hash = nightcrow_web::auth::hash_password(PASSWORD).expect("a hash");
    format!("[web]\nenabled = true\nport = 0\npassword_hash = \"{hash}\"\n")
}

/// A logged-in browser and the address of the daemon's web client.
pub(super) struct WebClient {
    browser: Browser,
    base: String,
}

impl WebClient {
    pub(super) fn start(tokio: &tokio::runtime::Runtime, daemon: &Daemon) -> WebClient {
        let base = match ask(tokio, daemon, DaemonRequest::Web { repo: None }) {
            DaemonAnswer::Web { url } => url,
            other => daemon.fail(&format!("no web client: {other:?}")),
        };
        let mut browser = Browser::start(1900, 1000);
        browser.goto(&format!("{base}login"));
        browser.submit_login(PASSWORD);
        WebClient { browser, base }
    }

    /// The page of a fresh repository, connected, with no pane yet.
    fn open_fresh(
        &mut self,
        tokio: &tokio::runtime::Runtime,
        daemon: &Daemon,
    ) -> tempfile::TempDir {
        let repo = fresh_repo();
        let root = match ask(
            tokio,
            daemon,
            DaemonRequest::Open {
                dir: repo.path().to_owned(),
            },
        ) {
            DaemonAnswer::Opened { repo } => repo,
            other => daemon.fail(&format!("not opened: {other:?}")),
        };
        self.browser
            .goto(&format!("{}?repo={}", self.base, query(&root)));
        self.browser.wait_for(
            "the page's connection",
            "window.nightcrow && nightcrow.socket && nightcrow.socket.readyState === 1",
        );
        repo
    }

    /// Time from the page's `create` to the marker in its terminal.
    pub(super) fn throughput(
        &mut self,
        tokio: &tokio::runtime::Runtime,
        daemon: &Daemon,
        command: &str,
    ) -> Option<Duration> {
        let _repo = self.open_fresh(tokio, daemon);
        // The pane stays once the marker is out: a pane that ends leaves the page, and
        // its terminal with it.
        let command = format!("{command}; exec sleep 100000");
        let create = json!({"type": "create", "command": command, "rows": ROWS, "cols": COLS});
        self.browser.eval(&format!(
            "window.benchStart = performance.now(); nightcrow.socket.send({}); true",
            json!(create.to_string())
        ));
        // Only the lines around the cursor: the marker is the last thing printed.
        let seen = format!(
            "(() => {{ const p = nightcrow.panes.get(nightcrow.active); if (!p) return 0; \
             const b = p.term.buffer.active; \
             for (let i = Math.max(0, b.length - {ROWS} - 5); i < b.length; i++) {{ \
               const line = b.getLine(i); \
               if (line && line.translateToString(true) === {}) return performance.now() - window.benchStart; }} \
             return 0; }})()",
            json!(MARKER)
        );
        let millis = self
            .browser
            .wait_within(FLOOD_PATIENCE, "the end marker in the page", &seen);
        Some(Duration::from_secs_f64(millis.as_f64()? / 1000.0))
    }

    /// Keystroke-to-echo times of a bare shell pane, `keys` of them, taken in the page.
    pub(super) fn latency(
        &mut self,
        tokio: &tokio::runtime::Runtime,
        daemon: &Daemon,
        keys: usize,
    ) -> Vec<Duration> {
        let _repo = self.open_fresh(tokio, daemon);
        self.browser.eval(&format!(
            "nightcrow.socket.send(JSON.stringify({{type: 'create', rows: {ROWS}, cols: {COLS}}})); true"
        ));
        self.browser.wait_for(
            "the shell's prompt",
            "(() => { const p = nightcrow.panes.get(nightcrow.active); \
             return p && p.term.buffer.active.getLine(p.term.buffer.active.baseY + p.term.buffer.active.cursorY).translateToString(true).includes('$'); })()",
        );
        let script = format!(
            "(async () => {{
              const pane = nightcrow.panes.get(nightcrow.active);
              const term = pane.term;
              const line = () => term.buffer.active.getLine(term.buffer.active.baseY + term.buffer.active.cursorY).translateToString(true);
              const sleep = (ms) => new Promise((r) => setTimeout(r, ms));
              const send = (data) => nightcrow.socket.send(JSON.stringify({{type: 'input', pane: pane.id, data}}));
              const times = [];
              for (let first = 0, round = 0; first < {keys}; first += {KEYS_PER_ROUND}, round++) {{
                const letter = String.fromCharCode(97 + round % 26);
                for (let k = 1; k <= Math.min({KEYS_PER_ROUND}, {keys} - first); k++) {{
                  await sleep({gap});
                  const echoed = new Promise((resolve) => {{
                    const watch = term.onWriteParsed(() => {{
                      if (line().split(letter).length - 1 >= k) {{ watch.dispose(); resolve(); }}
                    }});
                  }});
                  const sent = performance.now();
                  send(letter);
                  await echoed;
                  times.push(performance.now() - sent);
                }}
                send('\\u0015');
                await sleep(150);
              }}
              return times;
            }})()",
            gap = TYPING_GAP.as_millis()
        );
        let times = self.browser.eval(&script);
        times
            .as_array()
            .expect("an array of times")
            .iter()
            .map(|ms| Duration::from_secs_f64(ms.as_f64().expect("a time") / 1000.0))
            .collect()
    }
}

fn ask(tokio: &tokio::runtime::Runtime, daemon: &Daemon, request: DaemonRequest) -> DaemonAnswer {
    tokio.block_on(async {
        let mut connection = Connection::open(&daemon.home())
            .await
            .unwrap_or_else(|e| daemon.fail(&format!("connect: {e}")));
        connection
            .ask(&request)
            .await
            .unwrap_or_else(|e| daemon.fail(&format!("{request:?}: {e}")))
    })
}

/// A path for the page's `?repo=` (the bench's temp folders need no more than spaces).
fn query(path: &Path) -> String {
    path.display().to_string().replace(' ', "%20")
}

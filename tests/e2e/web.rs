//! The web client in a real browser: the real daemon in a temp `NIGHTCROW_HOME`, its
//! password set by `nightcrow web passwd`, started by `nightcrow web`, and Debian's
//! headless Chromium driving the page over the DevTools protocol. What the page shows is
//! read from xterm.js's own buffer and the DOM; the refusals are checked with raw HTTP and
//! WebSocket requests that a browser would never make.
//!
//! Chromium is required (`.ci/run` installs it); without it these tests fail saying so.

use std::io::{Read, Write};
use std::net::TcpStream;
use std::path::PathBuf;
use std::process::Stdio;
use std::time::Duration;

use nightcrow_client_protocol::{HubMessage, Notices, RecoveryReport};
use nightcrow_test_browser::Browser;
use nightcrow_test_plugin_artifacts as guests;
use nightcrow_tui::format::{Clock, Recovery, deadline_text, span};
use serde_json::{Value, json};
use tungstenite::Message;
use tungstenite::client::IntoClientRequest;

use crate::overnight::{RESET_IN, STAND_IN, watching};
use crate::tui::{PLAIN_SHELL, RECOVERY};
use crate::util::{nightcrow, open_and_wait_for_status};

const PASSWORD: &str = "correct horse battery";

/// A daemon with the web client running on a free port, showing one repository.
struct Web {
    home: tempfile::TempDir,
    repo: tempfile::TempDir,
    /// `127.0.0.1:PORT`.
    authority: String,
    /// The page of the repository, as `nightcrow web` printed it.
    page: String,
}

impl Web {
    fn start(config: &str) -> Web {
        Web::start_with(config, "")
    }

    /// `web` is more of the `[web]` table.
    fn start_with(config: &str, web: &str) -> Web {
        let home = tempfile::tempdir().unwrap();
        let repo = tempfile::tempdir().unwrap();
        std::fs::write(
            home.path().join("config.toml"),
            format!("{config}\n[web]\nport = 0\n{web}"),
        )
        .unwrap();
        set_password(home.path(), PASSWORD);
        let written = std::fs::read_to_string(home.path().join("config.toml")).unwrap();
        assert!(
            written.contains("password_hash = \"$argon2id$"),
            "{written}"
        );
        assert!(!written.contains(PASSWORD), "{written}");
        let started = nightcrow(home.path())
            .arg("web")
            .arg(repo.path())
            .output()
            .unwrap();
        let stdout = String::from_utf8_lossy(&started.stdout);
        assert!(started.status.success(), "{started:?}");
        let page = stdout
            .split_whitespace()
            .find(|word| word.starts_with("http://"))
            .unwrap_or_else(|| panic!("no address in {stdout}"))
            .to_owned();
        let authority = page["http://".len()..]
            .split('/')
            .next()
            .unwrap()
            .to_owned();
        Web {
            home,
            repo,
            authority,
            page,
        }
    }

    fn url(&self, path: &str) -> String {
        format!("http://{}{path}", self.authority)
    }

    /// One HTTP/1.1 request; its status, headers and body.
    fn http(&self, method: &str, path: &str, headers: &[(&str, &str)], body: &str) -> Reply {
        let mut stream = TcpStream::connect(&self.authority).unwrap();
        stream
            .set_read_timeout(Some(Duration::from_secs(60)))
            .unwrap();
        let mut request = format!(
            "{method} {path} HTTP/1.1\r\nConnection: close\r\nContent-Length: {}\r\n",
            body.len()
        );
        if !headers
            .iter()
            .any(|(name, _)| name.eq_ignore_ascii_case("host"))
        {
            request.push_str(&format!("Host: {}\r\n", self.authority));
        }
        for (name, value) in headers {
            request.push_str(&format!("{name}: {value}\r\n"));
        }
        request.push_str("\r\n");
        request.push_str(body);
        stream.write_all(request.as_bytes()).unwrap();
        let mut answer = String::new();
        stream.read_to_string(&mut answer).unwrap();
        let (head, body) = answer.split_once("\r\n\r\n").unwrap_or((&answer, ""));
        let status = head.split_whitespace().nth(1).unwrap().parse().unwrap();
        Reply {
            status,
            head: head.to_ascii_lowercase(),
            body: body.to_owned(),
        }
    }

    fn log_in(&self, password: &str) -> Reply {
        let form = format!("password={}", password.replace(' ', "+"));
        let headers = [("Content-Type", "application/x-www-form-urlencoded")];
        self.http("POST", "/login", &headers, &form)
    }

    /// A session cookie (`nightcrow_session=...`) from a good login.
    fn session(&self) -> String {
        let reply = self.log_in(PASSWORD);
        assert_eq!(reply.status, 303, "{reply:?}");
        let line = reply
            .head
            .lines()
            .find(|line| line.starts_with("set-cookie:"))
            .unwrap();
        line["set-cookie:".len()..]
            .split(';')
            .next()
            .unwrap()
            .trim()
            .to_owned()
    }

    /// A raw WebSocket to the repository's hub with these headers, or the HTTP status it
    /// was refused with.
    fn socket(&self, headers: &[(&str, &str)]) -> Result<RawSocket, u16> {
        let repo = self.repo.path().canonicalize().unwrap();
        let url = format!("ws://{}/ws?repo={}", self.authority, repo.display());
        let mut request = url.into_client_request().unwrap();
        for (name, value) in headers {
            let name = tungstenite::http::HeaderName::from_bytes(name.as_bytes()).unwrap();
            request.headers_mut().insert(name, value.parse().unwrap());
        }
        match tungstenite::connect(request) {
            Ok((socket, _)) => {
                if let tungstenite::stream::MaybeTlsStream::Plain(stream) = socket.get_ref() {
                    stream
                        .set_read_timeout(Some(Duration::from_secs(60)))
                        .unwrap();
                }
                Ok(socket)
            }
            Err(tungstenite::Error::Http(response)) => Err(response.status().as_u16()),
            Err(error) => panic!("the upgrade failed otherwise: {error}"),
        }
    }

    /// A browser on the page, logged in.
    fn browser(&self) -> Browser {
        self.browser_with(|_| {})
    }

    /// [`Web::browser`], `prepare`d before it opens the first page.
    fn browser_with(&self, prepare: impl FnOnce(&mut Browser)) -> Browser {
        let mut browser = Browser::start(1100, 700);
        prepare(&mut browser);
        browser.goto(&self.url("/login"));
        browser.submit_login(PASSWORD);
        browser.goto(&self.page);
        browser.wait_for(
            "the connection",
            "nightcrow.socket && nightcrow.socket.readyState === 1",
        );
        browser
    }
}

impl Drop for Web {
    fn drop(&mut self) {
        let _ = nightcrow(self.home.path()).arg("stop").output();
    }
}

/// `nightcrow web passwd` with `password` on its stdin.
pub(crate) fn set_password(home: &std::path::Path, password: &str) {
    let mut passwd = nightcrow(home)
        .args(["web", "passwd"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    writeln!(passwd.stdin.take().unwrap(), "{password}").unwrap();
    let passwd = passwd.wait_with_output().unwrap();
    assert!(passwd.status.success(), "{passwd:?}");
}

#[derive(Debug)]
struct Reply {
    status: u16,
    head: String,
    body: String,
}

type RawSocket = tungstenite::WebSocket<tungstenite::stream::MaybeTlsStream<TcpStream>>;

/// The next JSON control message on a raw socket (output frames skipped).
fn next_message(socket: &mut RawSocket) -> Value {
    loop {
        match socket.read().unwrap() {
            Message::Text(text) => return serde_json::from_str(text.as_str()).unwrap(),
            Message::Binary(_) | Message::Ping(_) | Message::Pong(_) => {}
            other => panic!("unexpected {other:?}"),
        }
    }
}

/// The lines of the pane's xterm.js buffer (scrollback included), trailing blanks cut.
fn buffer_of(pane: &str) -> String {
    format!(
        "(() => {{ const p = nightcrow.panes.get({pane}); if (!p) return ''; const b = p.term.buffer.active; \
         const lines = []; for (let i = 0; i < b.length; i++) lines.push(b.getLine(i).translateToString(true)); \
         return lines.join('\\n'); }})()"
    )
}

const ACTIVE: &str = "nightcrow.active";

/// Waits until the active pane's last line is the shell's bare prompt (one ending in `#` or
/// `$`: `# `, `$ `, bash's `sh-5.2$ `), as after a start or an interrupt. Keys typed before
/// it are echoed by the terminal ahead of the prompt, and the command's output then runs
/// into the prompt's line (seen on loaded machines: `# second-42`, `# after-42`).
fn wait_for_prompt(browser: &mut Browser) {
    let check = format!(
        "/[#$]$/.test({}.trimEnd().split('\\n').pop())",
        buffer_of(ACTIVE)
    );
    browser.wait_for("the shell's prompt on the last line", &check);
}

/// Waits until the active pane's buffer has a line that is exactly `line`.
#[track_caller]
fn wait_for_line(browser: &mut Browser, line: &str) -> String {
    let check = format!(
        "{}.split('\\n').includes({})",
        buffer_of(ACTIVE),
        json!(line)
    );
    browser.wait_for(&format!("the line {line:?}"), &check);
    browser
        .eval(&buffer_of(ACTIVE))
        .as_str()
        .unwrap()
        .to_owned()
}

/// `+` on a page without panes, then the new shell's prompt.
fn open_first_pane(browser: &mut Browser) {
    browser.eval("document.getElementById('new-pane').click(); true");
    browser.wait_for(
        "the first tab",
        "document.querySelectorAll('.tab').length === 1",
    );
    wait_for_prompt(browser);
}

fn type_line(browser: &mut Browser, line: &str) {
    browser.eval("nightcrow.panes.get(nightcrow.active).term.focus(); true");
    browser.type_text(line);
    browser.press_enter();
}

fn tab_labels(browser: &mut Browser) -> Vec<String> {
    let labels = browser.eval("[...document.querySelectorAll('.tab')].map(t => t.textContent)");
    serde_json::from_value(labels).unwrap()
}

/// The deadline the scripted guest reports: 2026-02-23 23:48:47 UTC.
const SCRIPTED_DEADLINE: i64 = 1_771_890_527;

/// The toolbar's chip, or '' while it is hidden.
const CHIP: &str =
    "document.getElementById('chip').hidden ? '' : document.getElementById('chip').textContent";

/// Checks that the chip reads `expected`, in which `{deadline}` stands for `deadline` as the
/// terminal client words it (`deadline_text`, in UTC as the browser runs) at the page's clock
/// or a second before (the chip is redrawn every second). Returns what it read.
#[track_caller]
fn expect_chip(browser: &mut Browser, expected: &str, deadline: i64) -> String {
    let read = browser.eval(&format!("[{CHIP}, Math.floor(Date.now() / 1000)]"));
    let (chip, now) = (read[0].as_str().unwrap(), read[1].as_i64().unwrap());
    let readings = [now, now - 1]
        .map(|at| expected.replace("{deadline}", &deadline_text(deadline, at, &chrono::Utc)));
    assert!(
        readings.iter().any(|reading| reading == chip),
        "the chip reads {chip:?}, none of {readings:?}"
    );
    chip.to_owned()
}

#[test]
fn only_a_session_from_this_origin_gets_in_and_bad_messages_do_not_end_it() {
    let web = Web::start(PLAIN_SHELL);
    // Without a session: the login page and its stylesheet, nothing else.
    let home = web.http("GET", "/", &[], "");
    assert_eq!(home.status, 303, "{home:?}");
    assert!(home.head.contains("location: /login"), "{home:?}");
    for path in ["/assets/app.js", "/assets/xterm.mjs", "/api/repos"] {
        assert_eq!(web.http("GET", path, &[], "").status, 401, "{path}");
    }
    assert_eq!(web.http("GET", "/login", &[], "").status, 200);
    assert_eq!(
        web.http("GET", "/assets/nightcrow.css", &[], "").status,
        200
    );
    let origin = format!("http://{}", web.authority);
    assert_eq!(web.socket(&[("Origin", &origin)]).err(), Some(401));
    // A page of another name for this address (DNS rebinding) is not answered.
    let port = web.authority.rsplit(':').next().unwrap();
    let rebound = web.http(
        "GET",
        "/login",
        &[("Host", &format!("evil.example:{port}"))],
        "",
    );
    assert_eq!(rebound.status, 421, "{rebound:?}");

    // In a real browser: a wrong password is refused, the right one opens the page, and the
    // session cookie is out of the page's reach.
    let mut browser = Browser::start(1000, 700);
    browser.goto(&web.url("/login"));
    browser.submit_login("not the password");
    let refusal = browser.eval("document.querySelector('.refusal').textContent");
    assert_eq!(refusal, json!("Wrong password."));
    browser.submit_login(PASSWORD);
    browser.wait_for("the terminal page", "!!document.getElementById('tabs')");
    assert_eq!(browser.eval("document.cookie"), json!(""));
    drop(browser);

    // A session from another origin, or from none, gets no WebSocket.
    let cookie = web.session();
    let cookie = cookie.as_str();
    assert!(
        web.log_in(PASSWORD)
            .head
            .contains("httponly; samesite=strict")
    );
    let evil = [("Cookie", cookie), ("Origin", "http://evil.example")];
    assert_eq!(web.socket(&evil).err(), Some(403));
    assert_eq!(web.socket(&[("Cookie", cookie)]).err(), Some(403));

    // With both: the hub's protocol; a bad message is answered with `error`, and the
    // connection carries on.
    let mut socket = web
        .socket(&[("Cookie", cookie), ("Origin", &origin)])
        .unwrap();
    assert_eq!(next_message(&mut socket)["type"], "hello");
    assert_eq!(next_message(&mut socket)["type"], "live");
    for bad in [
        Message::text(r#"{"type":"explode"}"#),
        Message::text("not json"),
        Message::text(r#"{"type":"close","pane":1,"extra":true}"#),
        Message::binary(vec![1, 0, 0, 0, b'x']),
    ] {
        socket.send(bad).unwrap();
        let answer = next_message(&mut socket);
        assert_eq!(answer["type"], "error", "{answer}");
    }
    socket
        .send(Message::text(r#"{"type":"create","rows":24,"cols":80}"#))
        .unwrap();
    assert_eq!(next_message(&mut socket)["type"], "created");
    // Over the cap: refused from its header without being read in, the connection ends.
    // The server may close while the rest is still being written, so the send itself can
    // fail with a broken pipe or a reset; either way the server ends the connection.
    let oversize = "x".repeat(nightcrow_client_protocol::MAX_MESSAGE_BYTES + 1);
    if let Err(error) = socket.send(Message::text(oversize)) {
        assert!(
            matches!(&error, tungstenite::Error::Io(io) if matches!(
                io.kind(),
                std::io::ErrorKind::BrokenPipe | std::io::ErrorKind::ConnectionReset
            )),
            "{error}"
        );
    }
    loop {
        match socket.read() {
            Ok(Message::Close(_)) => break,
            Err(tungstenite::Error::Io(io))
                if matches!(
                    io.kind(),
                    std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut
                ) =>
            {
                panic!("the server kept the connection open after an oversize message")
            }
            Err(_) => break,
            // The new pane's prompt may still be on its way.
            Ok(_) => {}
        }
    }

    // Failed logins from one address: after a few, even the right password waits.
    let mut refused = None;
    for _ in 0..6 {
        let reply = web.log_in("guess");
        if reply.status == 429 {
            refused = Some(reply);
            break;
        }
        assert_eq!(reply.status, 401, "{reply:?}");
    }
    let refused = refused.expect("the failed logins were braked");
    assert!(refused.head.contains("retry-after:"), "{refused:?}");
    assert!(
        refused.body.contains("Too many failed logins"),
        "{refused:?}"
    );
    assert_eq!(web.log_in(PASSWORD).status, 429);
}

#[test]
fn panes_in_the_browser_type_resize_and_come_back_after_a_reload() {
    let web = Web::start(PLAIN_SHELL);
    let mut browser = web.browser();
    open_first_pane(&mut browser);
    type_line(&mut browser, "echo hi");
    wait_for_line(&mut browser, "hi");

    // A second pane, in view, with its own output.
    browser.eval("document.getElementById('new-pane').click(); true");
    browser.wait_for(
        "the second tab",
        "document.querySelectorAll('.tab').length === 2",
    );
    browser.wait_for(
        "the second pane in view",
        "nightcrow.active === nightcrow.order[1]",
    );
    wait_for_prompt(&mut browser);
    type_line(&mut browser, "echo second-$((40+2))");
    wait_for_line(&mut browser, "second-42");
    let first = browser.eval(&buffer_of("nightcrow.order[0]"));
    assert!(!first.as_str().unwrap().contains("second-42"), "{first}");
    assert_eq!(tab_labels(&mut browser)[..2], ["1:shell×", "2:shell×"]);

    // The program's title (OSC 2) names its tab and the toolbar.
    type_line(&mut browser, "printf '\\033]2;build\\007'");
    browser.wait_for("the program's title on its tab", SECOND_TAB_IS_BUILD);
    assert_eq!(
        browser.eval("document.getElementById('pane-title').textContent"),
        json!("2:build")
    );

    // The PTY follows the terminal, which follows the viewport.
    let size = |browser: &mut Browser| {
        let size = browser.eval("[nightcrow.panes.get(nightcrow.active).term.rows, nightcrow.panes.get(nightcrow.active).term.cols]");
        format!("{} {}", size[0], size[1])
    };
    let before = size(&mut browser);
    type_line(&mut browser, "stty size");
    wait_for_line(&mut browser, &before);
    browser.resize(800, 450);
    browser.wait_for(
        "the terminal to shrink",
        &format!("nightcrow.panes.get(nightcrow.active).term.rows + ' ' + nightcrow.panes.get(nightcrow.active).term.cols !== '{before}'"),
    );
    let after = size(&mut browser);
    type_line(&mut browser, "clear; stty size");
    wait_for_line(&mut browser, &after);

    // A dropped connection and a reload both bring the scrollback back, once. (In the
    // first pane: the second's `clear` would wipe a duplicate off the screen anyway.)
    browser.eval("document.querySelectorAll('.tab')[0].click(); true");
    wait_for_line(&mut browser, "hi");
    type_line(&mut browser, "echo mark-$((6*7))");
    wait_for_line(&mut browser, "mark-42");
    let count = format!(
        "{}.split('\\n').filter(l => l === 'mark-42').length",
        buffer_of(ACTIVE)
    );
    // The panes of the old connection are tagged: the new one's replace them all.
    browser
        .eval("nightcrow.panes.forEach(p => { p.before = true; }); nightcrow.socket.close(); true");
    browser.wait_for(
        "the reconnection",
        "nightcrow.socket.readyState === 1 && nightcrow.panes.size === 2 \
         && [...nightcrow.panes.values()].every(p => !p.before)",
    );
    expect_one_mark(&mut browser, &count, "after-reconnect");
    browser.call("Page.reload", json!({}));
    browser.wait_for(
        "the page again",
        "document.readyState === 'complete' && window.nightcrow && nightcrow.panes.size === 2",
    );
    browser.eval("document.querySelectorAll('.tab')[0].click(); true");
    expect_one_mark(&mut browser, &count, "after-reload");
    browser.wait_for("the title after the reload", SECOND_TAB_IS_BUILD);
}

const SECOND_TAB_IS_BUILD: &str =
    "[...document.querySelectorAll('.tab')].map(t => t.textContent)[1] === '2:build×'";

/// The replayed `mark-42` is there exactly once: checked after a new line typed now comes
/// back, so all of the replay, which comes before it, has been drawn.
fn expect_one_mark(browser: &mut Browser, count: &str, now: &str) {
    wait_for_line(browser, "mark-42");
    type_line(browser, &format!("echo {now}-$((6*7))"));
    wait_for_line(browser, &format!("{now}-42"));
    assert_eq!(browser.eval(count), json!(1));
}

/// The rows and columns of the terminal in view, as `stty size` prints them.
const ACTIVE_SIZE: &str = "(() => { const t = nightcrow.panes.get(nightcrow.active).term; return t.rows + ' ' + t.cols; })()";

/// Another client attached later sets the pane's size (docs/hub.md, "Shared sizes"); the
/// toolbar's "Use this size" gives the panes this window's size again.
#[test]
fn use_this_size_takes_the_panes_back_from_a_client_attached_later() {
    let web = Web::start(PLAIN_SHELL);
    let mut browser = web.browser();
    open_first_pane(&mut browser);
    let ours = browser.eval(ACTIVE_SIZE);
    let pane = browser.eval(ACTIVE);
    let origin = format!("http://{}", web.authority);
    let cookie = web.session();
    let mut other = web
        .socket(&[("Cookie", &cookie), ("Origin", &origin)])
        .expect("a second client");
    assert_eq!(next_message(&mut other)["type"], "hello");
    let resize = json!({ "type": "resize", "pane": pane, "rows": 20, "cols": 60 });
    other.send(Message::text(resize.to_string())).unwrap();
    browser.wait_for(
        "the other client's size",
        &format!("{ACTIVE_SIZE} === '20 60'"),
    );
    browser.click("#claim-size");
    browser.wait_for(
        "this window's size again",
        &format!("{ACTIVE_SIZE} === {ours}"),
    );
    assert_eq!(
        browser.eval("document.getElementById('notice').textContent"),
        json!("The panes take this window's size.")
    );
    type_line(&mut browser, "stty size");
    wait_for_line(&mut browser, ours.as_str().unwrap());
    drop(other);
}

#[test]
fn recovery_shows_in_the_toolbar_attention_marks_the_tab_and_cancel_ends_the_hold() {
    let web = Web::start(&RECOVERY.replace("SCRIPTED", guests::SCRIPTED_WASM));
    let mut browser = web.browser();
    browser.wait_for(
        "both startup panes",
        "document.querySelectorAll('.tab').length === 2",
    );
    assert_eq!(tab_labels(&mut browser), ["1:timed×", "2:untimed×"]);
    wait_for_line(&mut browser, "timed-ready");

    // Attention on the pane not in view marks its tab until it is viewed.
    std::fs::write(web.repo.path().join("ping"), "").unwrap();
    browser.wait_for(
        "the unread mark",
        "document.querySelectorAll('.tab')[1].classList.contains('unread')",
    );
    assert_eq!(tab_labels(&mut browser)[1], "2:untimed!×");
    browser.eval("document.querySelectorAll('.tab')[1].click(); true");
    wait_for_line(&mut browser, "PING");
    assert_eq!(tab_labels(&mut browser)[1], "2:untimed×");

    // The untimed pane exits: held; its chip has the attempt, no time.
    let geometry = "[nightcrow.panes.get(nightcrow.active).term.rows, nightcrow.panes.get(nightcrow.active).term.cols]";
    let before = browser.eval(geometry);
    type_line(&mut browser, "go");
    let chip =
        "document.getElementById('chip').hidden ? '' : document.getElementById('chip').textContent";
    // The exit shows at once; the plugin's report follows it.
    let untimed = browser.wait_for(
        "the untimed chip",
        &format!("({chip}).includes('backoff') && ({chip})"),
    );
    assert_eq!(
        untimed,
        json!("exited with code 0 · backoff · attempt 1 · scripted")
    );
    assert_eq!(tab_labels(&mut browser)[1], "2:untimed⚠1×");
    assert_eq!(
        browser.eval(geometry),
        before,
        "recovery changed the terminal's size"
    );

    // The timed pane exits: its deadline (1771890527 is 23:48 UTC) and attempt.
    browser.eval("document.querySelectorAll('.tab')[0].click(); true");
    wait_for_line(&mut browser, "timed-ready");
    type_line(&mut browser, "go");
    browser.wait_for(
        "the timed chip",
        &format!("({chip}).includes('waiting_for_reset')"),
    );
    expect_chip(
        &mut browser,
        "exited with code 0 · waiting_for_reset · {deadline} · attempt 1 · scripted",
        SCRIPTED_DEADLINE,
    );
    assert_eq!(tab_labels(&mut browser)[0], "1:timed⏳23:48⚠1×");
    assert_eq!(
        browser.eval("document.getElementById('cancel').hidden"),
        json!(false)
    );
    let screenshot = PathBuf::from(env!("CARGO_TARGET_TMPDIR"))
        .parent()
        .unwrap()
        .join("web-screenshot.png");
    browser.screenshot(&screenshot);
    eprintln!("screenshot: {}", screenshot.display());

    // Cancel asks first: declined, nothing is sent and the hold stays.
    browser.eval("window.confirm = () => false; document.getElementById('cancel').click(); true");
    assert_eq!(tab_labels(&mut browser)[0], "1:timed⏳23:48⚠1×");
    // Accepted, it sends `cancel_recovery`: the hold ends, the chip and marker go, and the
    // exited pane stays with its screen until its tab is closed.
    browser.eval("window.confirm = () => true; document.getElementById('cancel').click(); true");
    browser.wait_for(
        "the cancelled hold's marker to go",
        "document.getElementById('cancel').hidden",
    );
    assert_eq!(tab_labels(&mut browser), ["1:timed×", "2:untimed⚠1×"]);
    assert_eq!(
        browser.eval(chip),
        json!("exited with code 0 · × on its tab closes it")
    );
    assert_eq!(
        browser.eval("document.getElementById('notice').textContent"),
        json!("1:timed: recovery ended; it stays exited (× on its tab closes it)")
    );
    wait_for_line(&mut browser, "timed-ready");
    let status = nightcrow(web.home.path()).arg("status").output().unwrap();
    let status = String::from_utf8_lossy(&status.stdout);
    assert_eq!(status.matches("hold on pane").count(), 1, "{status}");

    // Typing into the exited pane sends nothing and says what to do instead.
    browser.eval(RECORD_INPUT);
    expect_keys_dropped(&mut browser, "1:timed has ended; + opens a new pane");

    // A notice goes after a while, as the terminal client's does: what it said stays on
    // the tab and the chip, and a notice left up would outlive the pane it names.
    browser.wait_within(
        Duration::from_secs(20),
        "the notice row to clear",
        "document.getElementById('notice').textContent === ''",
    );
    // Closing the exited pane asks first, saying what goes: its last screen, not a process.
    assert_eq!(
        close_first_tab(&mut browser, true),
        json!("Close timed? Its last screen goes with it.")
    );
    browser.wait_for(
        "the closed pane's tab to go",
        "nightcrow.order.length === 1",
    );
    // Tabs are numbered by place: the one left is 1 now.
    assert_eq!(tab_labels(&mut browser), ["1:untimed⚠1×"]);

    // The pane left waits for its plugin: keys are not sent to it either, and closing it
    // says that its plugin will not relaunch it (declined here: the hold stays).
    expect_keys_dropped(
        &mut browser,
        "1:untimed waits for its plugin; nothing is typed into it",
    );
    assert_eq!(
        close_first_tab(&mut browser, false),
        json!("Close untimed? Its plugin will not relaunch it, and its last screen goes with it.")
    );
    assert_eq!(tab_labels(&mut browser), ["1:untimed⚠1×"]);
}

/// Clicks the first tab's `×` and answers the page's question with `yes`; returns the question.
fn close_first_tab(browser: &mut Browser, yes: bool) -> Value {
    browser.eval(&format!(
        "window.confirm = (question) => {{ window.nightcrowAsked = question; return {yes}; }}; \
         document.querySelector('.tab .close').click(); true"
    ));
    browser.eval("window.nightcrowAsked")
}

/// Types a line into the exited pane in view: the notice must say `notice`, and no `input`
/// may have gone out since [`RECORD_INPUT`].
fn expect_keys_dropped(browser: &mut Browser, notice: &str) {
    type_line(browser, "x");
    assert_eq!(
        browser.eval("document.getElementById('notice').textContent"),
        json!(notice)
    );
    assert_eq!(browser.eval("window.nightcrowInputs"), json!(0));
}

/// Counts the `input` messages the page sends from now on in `nightcrowInputs`, sending
/// them on as before.
const RECORD_INPUT: &str = r#"(() => {
  const socket = nightcrow.socket;
  const send = socket.send.bind(socket);
  window.nightcrowInputs = 0;
  socket.send = (text) => {
    if (JSON.parse(text).type === "input") window.nightcrowInputs += 1;
    send(text);
  };
  return true;
})()"#;

/// Records the page's use of the browser's Notification API, which still does the work:
/// `nightcrowAsked` counts the permission requests, `nightcrowNotified` lists the
/// notifications made, each with whether Chromium says it was shown.
const RECORD_NOTIFICATIONS: &str = r#"(() => {
  const Real = window.Notification;
  window.nightcrowAsked = 0;
  window.nightcrowNotified = [];
  window.Notification = class extends Real {
    constructor(title, options) {
      super(title, options);
      const made = { title, body: options.body, tag: options.tag, shown: false };
      window.nightcrowNotified.push(made);
      this.addEventListener("show", () => { made.shown = true; });
    }
    static requestPermission() {
      window.nightcrowAsked += 1;
      return Real.requestPermission();
    }
  };
})();"#;

/// The person asks for notifications, starts a Codex session that hits its usage limit,
/// watches the wait count down and goes to another pane. At the reset + 30 s the bundled
/// plugin calls them back: one desktop notification, `(1)` in the page title until they
/// look at the pane.
#[test]
fn a_wait_counts_down_and_its_call_back_is_notified_once_and_counted_in_the_title() {
    let codex_home = tempfile::tempdir().unwrap();
    let command = format!(
        "CODEX_HOME='{}' RESET_IN={RESET_IN} '{STAND_IN}'",
        codex_home.path().display()
    );
    let web = Web::start(&watching(&command, codex_home.path(), None));
    let mut browser = web.browser_with(|browser| browser.on_every_page(RECORD_NOTIFICATIONS));
    let repo = web.repo.path().canonicalize().unwrap();
    let name = repo.file_name().unwrap().to_string_lossy().into_owned();
    let title = format!("nightcrow — {name}");
    browser.wait_for(
        "the repository in the title",
        &format!("document.title === {}", json!(title)),
    );

    // Never asked on load; asked once, on a click. Headless Chromium has no one to answer
    // its prompt and says no at once; the person then allows notifications in the site's
    // settings, and the page follows.
    let button = "document.getElementById('notify').hidden ? '' : document.getElementById('notify').textContent";
    assert_eq!(browser.eval(button), json!("Notify me"));
    assert_eq!(browser.eval("nightcrowAsked"), json!(0));
    browser.click("#notify");
    browser.wait_for(
        "the refusal",
        &format!("({button}) === 'Notifications blocked'"),
    );
    assert_eq!(browser.eval("nightcrowAsked"), json!(1));
    browser.grant(&web.url(""), &["notifications"]);
    browser.wait_for(
        "the granted notifications",
        &format!("({button}) === 'Notifications on'"),
    );
    // Once allowed, the button mutes them in this browser and back.
    for now in ["Notifications off", "Notifications on"] {
        browser.click("#notify");
        browser.wait_for(now, &format!("({button}) === {}", json!(now)));
    }
    assert_eq!(browser.eval("nightcrowAsked"), json!(1));

    // The limit: the chip counts the wait down to the second.
    browser.wait_for(
        "the stand-in",
        &format!(
            "{}.includes('OpenAI Codex (demo stand-in')",
            buffer_of(ACTIVE)
        ),
    );
    // As a person types: the prompt, then Enter once it shows (the TUI takes text and Enter
    // that arrive together as a paste).
    browser.eval("nightcrow.panes.get(nightcrow.active).term.focus(); true");
    browser.type_text("fix the failing test");
    browser.wait_for(
        "the typed prompt",
        &format!("{}.includes('fix the failing test')", buffer_of(ACTIVE)),
    );
    browser.press_enter();
    browser.wait_within(
        Duration::from_secs(30),
        "the countdown",
        &format!("({CHIP}).startsWith('waiting_for_reset · ') && ({CHIP}).includes(' s)')"),
    );
    let deadline = browser
        .eval("nightcrow.panes.get(nightcrow.active).recovery.deadline_epoch")
        .as_i64()
        .unwrap();
    let detail = browser.eval("nightcrow.panes.get(nightcrow.active).recovery.detail");
    let expected = format!(
        "waiting_for_reset · {{deadline}} · {}",
        detail.as_str().unwrap()
    );
    let first = expect_chip(&mut browser, &expected, deadline);
    browser.wait_for(
        "the countdown to tick",
        &format!("({CHIP}) !== {} && ({CHIP}).includes(' s)')", json!(first)),
    );
    expect_chip(&mut browser, &expected, deadline);
    // The tab's marker stays short.
    let until = chrono::DateTime::from_timestamp(deadline, 0).unwrap();
    assert_eq!(
        tab_labels(&mut browser)[0],
        format!("1:agent{}×", until.format("⏳%H:%M"))
    );

    // The person goes to another pane; the call-back comes at the end of the wait.
    let agent = browser.eval("nightcrow.active");
    browser.eval("document.getElementById('new-pane').click(); true");
    browser.wait_for(
        "the shell in view",
        "nightcrow.order.length === 2 && nightcrow.active === nightcrow.order[1]",
    );
    let unread = format!("(1) {title}");
    browser.wait_within(
        Duration::from_secs(60),
        "the unread call-back in the title",
        &format!("document.title === {}", json!(unread)),
    );
    // The `attention` that follows the `needs_attention` is the same call-back.
    browser.wait_for(
        "the attention",
        "document.getElementById('notice').textContent === '1:agent wants you back'",
    );
    assert_eq!(browser.eval("document.title"), json!(unread));
    assert_eq!(
        browser.eval("nightcrowNotified.map(({ title, body, tag }) => ({ title, body, tag }))"),
        json!([{
            "title": title,
            "body": format!("pane {agent} needs you: limit reset; continue the session"),
            "tag": format!("{}#{agent}:needs_attention", repo.display()),
        }])
    );
    browser.wait_for("Chromium to show it", "nightcrowNotified[0].shown");
    assert!(tab_labels(&mut browser)[0].starts_with("1:agent!"));

    // Looking at the pane reads it.
    browser.eval("document.querySelectorAll('.tab')[0].click(); true");
    browser.wait_for(
        "the read title",
        &format!("document.title === {}", json!(title)),
    );
    assert!(!tab_labels(&mut browser)[0].contains('!'));
}

/// The page's copies of the Rust clients' wording and reading — `chip.js` of
/// `nightcrow_tui::format`, `notice.js` of `nightcrow_client_protocol::Notices` — answer the same for the
/// same input, in the browser that runs them.
#[test]
fn the_page_words_deadlines_and_reads_notices_as_the_rust_clients_do() {
    let web = Web::start(PLAIN_SHELL);
    let mut browser = web.browser();
    let spans: [u64; 17] = [
        0, 1, 45, 59, 60, 61, 3599, 3600, 3660, 11_525, 86_399, 86_400, 90_000, 93_605, 172_800,
        183_600, 777_600,
    ];
    let now = SCRIPTED_DEADLINE;
    let deadlines = [0, 45, 60, 11_520, 86_400, -120, -3 * 86_400 - 5].map(|left| now + left);
    let report = |pane, state: &str, detail: Option<&str>| {
        HubMessage::Recovery(RecoveryReport {
            pane,
            state: state.into(),
            detail: detail.map(str::to_owned),
            deadline_epoch: None,
            attempt: 0,
        })
    };
    let call_back = Some("limit reset; continue the session");
    let messages = [
        HubMessage::Hello { version: 1 },
        report(1, "needs_attention", call_back),
        report(2, "waiting_for_reset", Some("usage limit")),
        HubMessage::Attention { pane: 2 },
        HubMessage::Live,
        report(1, "needs_attention", call_back),
        report(2, "needs_attention", call_back),
        HubMessage::Attention { pane: 2 },
        report(2, "needs_attention", call_back),
        HubMessage::Attention { pane: 2 },
        report(3, "resuming", Some("resuming session")),
        report(3, "idle", Some("resumed")),
        report(4, "idle", Some("auto-continued")),
        report(5, "idle", Some("continued")),
        report(5, "idle", Some("cancelled")),
        HubMessage::Attention { pane: 5 },
        HubMessage::Attention { pane: 6 },
        report(7, "needs_attention", None),
        report(7, "waiting_for_reset", Some("usage limit")),
        report(7, "needs_attention", Some("auto-continue used up")),
        HubMessage::Closed { pane: 7 },
        report(7, "needs_attention", Some("   ")),
        HubMessage::Hello { version: 1 },
        report(8, "needs_attention", None),
        HubMessage::Live,
        HubMessage::Attention { pane: 8 },
        report(8, "idle", Some("resumed")),
    ];
    let mut notices = Notices::new();
    let told: Vec<Value> = messages
        .iter()
        .map(|message| {
            notices.observe(message).map_or(Value::Null, |notice| {
                json!([notice.pane, notice.event.name(), notice.text()])
            })
        })
        .collect();
    let page = browser.eval(&format!(
        "(async () => {{ \
           const chip = await import('/assets/chip.js'); \
           const notice = await import('/assets/notice.js'); \
           const notices = new notice.Notices(); \
           return {{ \
             spans: {spans}.map(chip.span), \
             deadlines: {deadlines}.map((at) => chip.deadlineText(at, {now})), \
             told: {messages}.map((message) => {{ \
               const told = notices.observe(message); \
               return told ? [told.pane, told.event, notice.noticeText(told)] : null; \
             }}), \
           }}; \
         }})()",
        spans = json!(spans),
        deadlines = json!(deadlines),
        messages = serde_json::to_value(&messages).unwrap(),
    ));
    assert_eq!(page["spans"], json!(spans.map(span)));
    assert_eq!(
        page["deadlines"],
        json!(deadlines.map(|at| deadline_text(at, now, &chrono::Utc)))
    );
    assert_eq!(page["told"], json!(told));
    assert!(
        told.iter().filter(|notice| !notice.is_null()).count() >= 8,
        "{told:?}"
    );

    // The chip, the same in both clients and in words: `auto-continue at` when that is what
    // the deadline brings.
    let noon = now - 11 * 3600 - 30 * 60 - 47; // 12:18:00 UTC the same day
    let clock = Clock {
        now_epoch: noon,
        zone: chrono::Utc,
    };
    let waiting = |detail: &str, left: Option<i64>, attempt: u32| RecoveryReport {
        pane: 1,
        state: "waiting_for_reset".into(),
        detail: Some(detail.to_owned()),
        deadline_epoch: left.map(|left| noon + left),
        attempt,
    };
    let long = "x".repeat(50);
    let cases = [
        (
            waiting("auto-continue", Some(6420), 0),
            "waiting_for_reset · auto-continue at 14:05 (in 1 h 47 min)".to_owned(),
        ),
        (
            waiting("usage limit", Some(6420), 2),
            "waiting_for_reset · 14:05 (in 1 h 47 min) · attempt 2 · usage limit".to_owned(),
        ),
        (
            waiting("auto-continue", Some(-120), 1),
            "waiting_for_reset · auto-continue at 12:16 (2 min ago) · attempt 1".to_owned(),
        ),
        (
            waiting(&long, Some(45), 0),
            format!("waiting_for_reset · 12:18 (in 45 s) · {}…", &long[..39]),
        ),
        (
            waiting("auto-continue", None, 1),
            "waiting_for_reset · attempt 1 · auto-continue".to_owned(),
        ),
    ];
    for (report, expected) in cases {
        let page = browser.eval(&format!(
            "import('/assets/chip.js').then((chip) => chip.chipText({}, {noon}))",
            json!(report)
        ));
        assert_eq!(page, json!(expected));
        assert_eq!(Recovery::from_report(&report).chip(&clock), expected);
    }
}

/// A pane that printed a screenful and more, then exited with its plugin holding it.
const LATE: &str = r#"
[shell]
program = "/bin/sh"
command_args = ["-c"]

[[plugin]]
name = "timed"
command = "SCRIPTED"
enabled = true
args = ["exit_status=waiting_for_reset"]

[[startup_command]]
name = "late"
command = "echo late-first-line; seq 1 80; echo late-last-line; exit 3"
plugin = "timed"
"#;

/// The person opens a bookmarked page hours after the pane exited, from a browser that was
/// never signed in, while another repository is open too.
#[test]
fn a_late_browser_gets_the_asked_repository_and_its_exited_pane_as_it_was() {
    let web = Web::start(&LATE.replace("SCRIPTED", guests::SCRIPTED_WASM));
    let other = tempfile::Builder::new()
        .prefix(".0-other")
        .tempdir()
        .unwrap();
    open_and_wait_for_status(web.home.path(), other.path(), |status| {
        status.matches("hold on pane 1: waiting_for_reset").count() == 2
    });

    // The login keeps the repository asked for.
    let mut browser = Browser::start(1100, 700);
    browser.goto(&web.page);
    let repo = web.repo.path().canonicalize().unwrap();
    assert_eq!(
        browser.eval("location.pathname + new URLSearchParams(location.search).get('repo')"),
        json!(format!("/login{}", repo.display()))
    );
    browser.submit_login(PASSWORD);
    browser.wait_for(
        "the connection",
        "nightcrow.socket && nightcrow.socket.readyState === 1",
    );
    assert_eq!(
        browser.eval("nightcrow.repo"),
        json!(repo.display().to_string())
    );

    // The exited pane: its name, its marker, its screen and scrollback, its chip.
    browser.wait_for(
        "the exited pane's tab",
        "document.querySelectorAll('.tab').length === 1",
    );
    assert_eq!(tab_labels(&mut browser), ["1:late⏳23:48⚠1×"]);
    let buffer = wait_for_line(&mut browser, "late-last-line");
    assert!(buffer.contains("late-first-line"), "{buffer}");
    let chip =
        "document.getElementById('chip').hidden ? '' : document.getElementById('chip').textContent";
    expect_chip(
        &mut browser,
        "exited with code 3 · waiting_for_reset · {deadline} · attempt 1 · scripted",
        SCRIPTED_DEADLINE,
    );
    let screenshot = PathBuf::from(env!("CARGO_TARGET_TMPDIR"))
        .parent()
        .unwrap()
        .join("web-late-screenshot.png");
    browser.screenshot(&screenshot);
    eprintln!("screenshot: {}", screenshot.display());

    // Cancel, then close the tab: nothing is left on screen that is not true.
    browser.eval("window.confirm = () => true; document.getElementById('cancel').click(); true");
    browser.wait_for(
        "the plainly exited chip",
        &format!("({chip}) === 'exited with code 3 · × on its tab closes it'"),
    );
    browser.eval("document.querySelector('.tab .close').click(); true");
    browser.wait_for("no panes", "document.querySelectorAll('.tab').length === 0");
    assert_eq!(
        browser.eval("getComputedStyle(document.getElementById('chip')).display"),
        json!("none"),
        "a hidden chip takes no space"
    );
    assert_eq!(browser.eval(chip), json!(""));

    // A repository that is not open is said so; another one is never shown instead.
    browser.goto(&web.url("/?repo=/nowhere/at-all"));
    let said = browser.wait_for(
        "the unknown repository's message",
        "document.getElementById('empty').hidden ? '' : document.getElementById('empty').textContent",
    );
    assert!(
        said.as_str()
            .unwrap()
            .starts_with("No open repository is /nowhere/at-all."),
        "{said}"
    );
    assert_eq!(tab_labels(&mut browser), Vec::<String>::new());
}

#[test]
fn without_a_password_the_web_client_does_not_start_and_says_how_to_set_one() {
    let home = tempfile::tempdir().unwrap();
    let repo = tempfile::tempdir().unwrap();
    std::fs::write(
        home.path().join("config.toml"),
        format!("{PLAIN_SHELL}[web]\nport = 0\n"),
    )
    .unwrap();
    let started = nightcrow(home.path())
        .arg("web")
        .arg(repo.path())
        .output()
        .unwrap();
    let _ = nightcrow(home.path()).arg("stop").output();
    let stderr = String::from_utf8_lossy(&started.stderr);
    assert!(!started.status.success(), "{started:?}");
    assert!(stderr.contains("nightcrow web passwd"), "{stderr}");
    // A short password is refused and nothing is written.
    let mut passwd = nightcrow(home.path())
        .args(["web", "passwd"])
        .stdin(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    writeln!(passwd.stdin.take().unwrap(), "short").unwrap();
    let passwd = passwd.wait_with_output().unwrap();
    assert!(!passwd.status.success(), "{passwd:?}");
    let config = std::fs::read_to_string(home.path().join("config.toml")).unwrap();
    assert!(!config.contains("password_hash"), "{config}");
}

/// 61 logins at once, one of them right: the failures are counted for the whole server
/// before any password is hashed, and a login that finds the hashing slots busy is answered
/// 429 at once rather than queued, so only a handful are checked at all.
#[test]
fn a_burst_of_logins_is_mostly_refused_before_any_password_is_checked() {
    let web = Web::start(PLAIN_SHELL);
    let burst = 61;
    let start = std::sync::Barrier::new(burst);
    let statuses: Vec<u16> = std::thread::scope(|scope| {
        let tries: Vec<_> = (0..burst)
            .map(|i| {
                let (web, start) = (&web, &start);
                scope.spawn(move || {
                    start.wait();
                    let password = if i == burst / 2 {
                        PASSWORD
                    } else {
                        "wrong password"
                    };
                    web.log_in(password).status
                })
            })
            .collect();
        tries.into_iter().map(|t| t.join().unwrap()).collect()
    });
    let checked = statuses.iter().filter(|s| matches!(s, 401 | 303)).count();
    let braked = statuses.iter().filter(|s| **s == 429).count();
    let budget = nightcrow_web::auth::FREE_FAILURES as usize + 1;
    assert!(checked <= budget, "{checked} checked: {statuses:?}");
    assert_eq!(checked + braked, burst, "{statuses:?}");
    // After the wait the braked answers asked for, the right password gets in.
    std::thread::sleep(Duration::from_secs(2));
    assert_eq!(web.log_in(PASSWORD).status, 303);
}

/// `web passwd` on a running daemon ends every session opened with the old password.
#[test]
fn a_new_password_ends_every_session() {
    let web = Web::start(PLAIN_SHELL);
    let cookie = web.session();
    let repos = |cookie: &str| {
        web.http("GET", "/api/repos", &[("Cookie", cookie)], "")
            .status
    };
    assert_eq!(repos(&cookie), 200);
    set_password(web.home.path(), "a brand new password");
    assert_eq!(repos(&cookie), 401);
    assert_eq!(web.log_in(PASSWORD).status, 401);
    assert_eq!(web.log_in("a brand new password").status, 303);
}

/// Bound beyond loopback (`insecure = true`), the server answers only the `[web] hosts`,
/// marks its cookie `Secure` when told it sits behind TLS, and says at WARN that it is
/// reachable from other machines.
#[test]
fn beyond_loopback_only_the_listed_hosts_are_answered_and_the_cookie_can_be_secure() {
    let web = Web::start_with(
        PLAIN_SHELL,
        "bind = \"0.0.0.0\"\ninsecure = true\nhosts = [\"crow.test\"]\nsecure_cookie = true\n",
    );
    let port = web.authority.rsplit(':').next().unwrap().to_owned();
    let page = |host: &str| web.http("GET", "/login", &[("Host", host)], "").status;
    assert_eq!(page("evil.test"), 421);
    assert_eq!(page(&format!("evil.test:{port}")), 421);
    assert_eq!(page(&format!("127.0.0.1:{port}")), 421);
    assert_eq!(page("crow.test"), 200);
    assert_eq!(page(&format!("CROW.test:{port}")), 200);
    let login = web.http(
        "POST",
        "/login",
        &[
            ("Host", "crow.test"),
            ("Origin", "https://crow.test"),
            ("Content-Type", "application/x-www-form-urlencoded"),
        ],
        &format!("password={}", PASSWORD.replace(' ', "+")),
    );
    assert_eq!(login.status, 303, "{login:?}");
    let cookie = login
        .head
        .lines()
        .find(|line| line.starts_with("set-cookie:"))
        .unwrap();
    assert!(cookie.ends_with("; secure"), "{cookie}");
    let log = std::fs::read_to_string(web.home.path().join("daemon.log")).unwrap();
    let warning = log
        .lines()
        .find(|line| line.contains("reachable from other machines"))
        .unwrap_or_else(|| panic!("no warning in {log}"));
    assert!(
        warning.contains("WARN") && warning.contains("crow.test"),
        "{warning}"
    );
}

/// A phone in portrait: 390×844 CSS pixels, 3 device pixels each, a touch screen.
const PHONE: (u32, u32) = (390, 844);

impl Web {
    /// A logged-in browser on the page, as a phone.
    fn phone(&self) -> Browser {
        self.browser_with(|browser| browser.emulate_phone(PHONE.0, PHONE.1))
    }
}

/// Where the page's parts are: `[left, top, right, bottom]` in CSS pixels by name (the
/// terminal's box is `screen`), and `visible`, the number of terminals shown.
const LAYOUT: &str = r#"(() => {
  const at = (selector) => {
    const box = document.querySelector(selector).getBoundingClientRect();
    return [box.left, box.top, box.right, box.bottom];
  };
  return {
    width: innerWidth, height: innerHeight,
    brand: at('.brand'), tabs: at('#tabs'), toolbar: at('#toolbar'), chip: at('#chip'),
    cancel: at('#cancel'), terminals: at('#terminals'), keys: at('#keys'),
    screen: at('.pane-view.active .xterm-screen'),
    visible: [...document.querySelectorAll('.pane-view')]
      .filter((view) => getComputedStyle(view).visibility === 'visible').length,
  };
})()"#;

fn edge(layout: &Value, part: &str, side: usize) -> f64 {
    layout[part][side].as_f64().unwrap()
}

const LEFT: usize = 0;
const TOP: usize = 1;
const RIGHT: usize = 2;
const BOTTOM: usize = 3;

/// On a phone the page is one terminal across the width, between the tabs (a row of their
/// own, scrolling sideways) with the toolbar above it and the key bar below; a recovery chip
/// still shows, in the toolbar, without resizing the terminal. The favicon is served.
#[test]
fn on_a_phone_one_pane_fills_the_width_between_the_tabs_and_the_key_bar() {
    let web = Web::start(&RECOVERY.replace("SCRIPTED", guests::SCRIPTED_WASM));

    // The favicon: served before the login too (the login page shows it), as SVG.
    let icon = web.http("GET", "/assets/favicon.svg", &[], "");
    assert_eq!(icon.status, 200, "{icon:?}");
    assert!(
        icon.head.contains("content-type: image/svg+xml"),
        "{icon:?}"
    );
    assert!(icon.body.starts_with("<svg"), "{icon:?}");
    let login = web.http("GET", "/login", &[], "");
    assert!(login.body.contains(ICON_LINK), "{login:?}");

    let mut browser = web.phone();
    assert!(
        browser
            .eval("document.head.innerHTML")
            .as_str()
            .unwrap()
            .contains(ICON_LINK)
    );
    browser.wait_for(
        "both startup panes",
        "document.querySelectorAll('.tab').length === 2",
    );
    browser.eval("document.querySelectorAll('.tab')[0].click(); true");
    wait_for_line(&mut browser, "timed-ready");
    let repo_name = web.repo.path().file_name().unwrap().to_str().unwrap();
    assert_eq!(
        browser.eval("document.title"),
        json!(format!("nightcrow — {repo_name}"))
    );

    let layout = browser.eval(LAYOUT);
    let (width, height) = (f64::from(PHONE.0), f64::from(PHONE.1));
    assert_eq!(layout["width"], json!(PHONE.0), "{layout}");
    assert_eq!(layout["visible"], json!(1), "{layout}");
    // Top to bottom, none over another: the bar, the tabs' row, the toolbar, the terminal,
    // the key bar, all of it on the screen.
    assert!(
        edge(&layout, "tabs", TOP) >= edge(&layout, "brand", BOTTOM),
        "{layout}"
    );
    assert!(edge(&layout, "tabs", RIGHT) <= width, "{layout}");
    assert!(
        edge(&layout, "toolbar", TOP) >= edge(&layout, "tabs", BOTTOM),
        "{layout}"
    );
    assert!(
        edge(&layout, "terminals", TOP) >= edge(&layout, "toolbar", BOTTOM),
        "{layout}"
    );
    assert!(
        edge(&layout, "keys", TOP) >= edge(&layout, "terminals", BOTTOM),
        "{layout}"
    );
    assert!(edge(&layout, "keys", BOTTOM) <= height, "{layout}");
    assert!(
        edge(&layout, "keys", BOTTOM) - edge(&layout, "keys", TOP) >= 40.0,
        "{layout}"
    );
    // The terminal: across the width, but for less than a column or two and the scrollbar.
    let screen = edge(&layout, "screen", RIGHT) - edge(&layout, "screen", LEFT);
    assert!(
        screen >= width * 0.9 && edge(&layout, "screen", RIGHT) <= width,
        "{layout}"
    );

    // A recovery chip shows in the toolbar, on the screen, and the terminal keeps its size.
    let geometry = browser.eval(ACTIVE_SIZE);
    type_line(&mut browser, "go");
    browser.wait_for(
        "the timed chip",
        &format!("({CHIP}).includes('waiting_for_reset')"),
    );
    let layout = browser.eval(LAYOUT);
    assert!(
        edge(&layout, "chip", TOP) >= edge(&layout, "toolbar", TOP),
        "{layout}"
    );
    assert!(
        edge(&layout, "chip", BOTTOM) <= edge(&layout, "toolbar", BOTTOM),
        "{layout}"
    );
    assert!(edge(&layout, "chip", RIGHT) <= width, "{layout}");
    assert!(edge(&layout, "cancel", RIGHT) <= width, "{layout}");
    assert!(
        edge(&layout, "cancel", TOP) >= edge(&layout, "chip", BOTTOM),
        "{layout}"
    );
    assert!(
        edge(&layout, "cancel", BOTTOM) <= edge(&layout, "toolbar", BOTTOM),
        "{layout}"
    );
    assert_eq!(
        browser.eval(ACTIVE_SIZE),
        geometry,
        "the chip resized the terminal"
    );
    let screenshot = PathBuf::from(env!("CARGO_TARGET_TMPDIR"))
        .parent()
        .unwrap()
        .join("web-phone-screenshot.png");
    browser.screenshot(&screenshot);
    eprintln!("screenshot: {}", screenshot.display());

    // More tabs than the width holds: the row scrolls sideways under a finger, and the tab
    // in view is kept in sight.
    for count in 3..=6 {
        browser.tap("#new-pane");
        browser.wait_for(
            "one more tab",
            &format!("document.querySelectorAll('.tab').length === {count}"),
        );
    }
    browser.wait_for(
        "the newest pane in view",
        "nightcrow.active === nightcrow.order[5]",
    );
    let tabs = "(() => { const tabs = document.getElementById('tabs'); \
                const active = document.querySelector('.tab.active').getBoundingClientRect(); \
                const row = tabs.getBoundingClientRect(); \
                return [tabs.scrollWidth > tabs.clientWidth, \
                        active.left >= row.left - 1 && active.right <= row.right + 1, tabs.scrollLeft, \
                        row.left, row.right, active.left, active.right]; })()";
    let before = browser.eval(tabs);
    assert_eq!(
        (&before[0], &before[1]),
        (&json!(true), &json!(true)),
        "{before}"
    );
    browser.swipe("#tabs", 150.0, 0.0);
    let scrolled = format!("document.getElementById('tabs').scrollLeft < {}", before[2]);
    browser.wait_for("the tabs to scroll back", &scrolled);
    assert_eq!(browser.eval(LAYOUT)["visible"], json!(1));
}

const ICON_LINK: &str = r#"<link rel="icon" type="image/svg+xml" href="/assets/favicon.svg">"#;

/// Whether the focus is still in the terminal in view (so a phone's keyboard stays open).
const TERMINAL_HAS_FOCUS: &str = "document.activeElement === \
     nightcrow.panes.get(nightcrow.active).element.querySelector('.xterm-helper-textarea')";

const CTRL_PRESSED: &str =
    "document.querySelector('#keys [data-key=Control]').getAttribute('aria-pressed')";

/// Taps the key bar's Ctrl and waits until it is shown held.
fn press_ctrl(browser: &mut Browser) {
    browser.tap("#keys [data-key=Control]");
    browser.wait_for("Ctrl held", &format!("{CTRL_PRESSED} === 'true'"));
    assert_eq!(browser.eval(TERMINAL_HAS_FOCUS), json!(true), "after Ctrl");
}

/// The key bar types what a phone's keyboard cannot, through the terminal's own input, and
/// never takes the focus: Esc, Tab, the arrows as the program's cursor-key mode wants them,
/// Enter, and a sticky Ctrl for the next key, from the bar or the keyboard.
#[test]
fn on_a_phone_the_key_bar_sends_ctrl_chords_arrows_and_enter_without_taking_the_focus() {
    let web = Web::start(PLAIN_SHELL);
    let mut browser = web.phone();
    open_first_pane(&mut browser);
    // A tap on the terminal gives it the focus (and a phone its keyboard).
    browser.eval("document.activeElement.blur(); true");
    assert_eq!(browser.eval(TERMINAL_HAS_FOCUS), json!(false));
    browser.tap(".pane-view.active");
    browser.wait_for("the terminal's focus", TERMINAL_HAS_FOCUS);
    let tap_key = |browser: &mut Browser, key: &str| {
        browser.tap(&format!("#keys [data-key={key}]"));
        assert_eq!(browser.eval(TERMINAL_HAS_FOCUS), json!(true), "after {key}");
    };

    // `cat -vT` shows what each key sent.
    browser.type_text("cat -vT");
    tap_key(&mut browser, "Enter");
    for key in ["Escape", "Tab", "ArrowLeft", "ArrowUp"] {
        tap_key(&mut browser, key);
    }
    tap_key(&mut browser, "Enter");
    wait_for_line(&mut browser, "^[^I^[[D^[[A");
    // Ctrl with an arrow of the bar.
    press_ctrl(&mut browser);
    tap_key(&mut browser, "ArrowUp");
    tap_key(&mut browser, "Enter");
    wait_for_line(&mut browser, "^[[1;5A");
    // Ctrl with a key of the keyboard: Ctrl+D ends `cat`; Ctrl is then released.
    press_ctrl(&mut browser);
    browser.type_text("d");
    browser.wait_for("Ctrl released", &format!("{CTRL_PRESSED} === 'false'"));

    // The program asks for application cursor keys: the arrows follow.
    type_line(&mut browser, "printf '\\033[?1h'; cat -vT");
    browser.wait_for(
        "application cursor keys",
        "nightcrow.panes.get(nightcrow.active).term.modes.applicationCursorKeysMode",
    );
    for key in ["ArrowUp", "ArrowDown", "ArrowRight", "ArrowLeft", "Enter"] {
        tap_key(&mut browser, key);
    }
    wait_for_line(&mut browser, "^[OA^[OB^[OC^[OD");

    // Ctrl, then c from the keyboard, interrupts: the prompt is back for the next command.
    press_ctrl(&mut browser);
    browser.type_text("c");
    wait_for_prompt(&mut browser);
    type_line(
        &mut browser,
        "printf '\\033[?1l'; echo sleeping-$((6*7)); sleep 100",
    );
    wait_for_line(&mut browser, "sleeping-42");
    press_ctrl(&mut browser);
    browser.type_text("c");
    wait_for_prompt(&mut browser);
    type_line(&mut browser, "echo after-$((6*7))");
    wait_for_line(&mut browser, "after-42");
}

/// The terminal in view's scrollback position: `[top row shown, top row at the bottom]`.
const VIEWPORT: &str = "(() => { const b = nightcrow.panes.get(nightcrow.active).term.buffer.active; \
                        return [b.viewportY, b.baseY]; })()";

/// A vertical swipe scrolls the scrollback; while the program asks for mouse reports it gets
/// the swipe as wheel turns instead, and the view stays.
#[test]
fn on_a_phone_a_swipe_scrolls_the_scrollback_or_turns_the_wheel_of_a_program_that_asks() {
    let web = Web::start(PLAIN_SHELL);
    let mut browser = web.phone();
    open_first_pane(&mut browser);
    type_line(&mut browser, "seq 1 300; echo end-$((6*7))");
    // The prompt after the output too: a line that came later would move the bottom.
    browser.wait_for(
        "the prompt after the output",
        &format!(
            "(() => {{ const lines = {}.split('\\n').filter(line => line.trim() !== ''); \
             const end = lines.lastIndexOf('end-42'); \
             return end >= 0 && end < lines.length - 1; }})()",
            buffer_of(ACTIVE)
        ),
    );
    // And nothing moving any more (a late fit of the page would change the rows).
    let mut bottom = browser.eval(VIEWPORT);
    for _ in 0..20 {
        std::thread::sleep(Duration::from_millis(300));
        let now = browser.eval(VIEWPORT);
        if now == bottom {
            break;
        }
        bottom = now;
    }
    assert_eq!(bottom[0], bottom[1], "{bottom}");
    let row = browser
        .eval("(() => { const p = nightcrow.panes.get(nightcrow.active); \
               return p.element.querySelector('.xterm-screen').getBoundingClientRect().height / p.term.rows; })()")
        .as_f64()
        .unwrap();

    // A finger moving down shows what is above, a row for each row it travels.
    browser.swipe(".pane-view.active", 0.0, 200.0);
    let up = browser.eval(VIEWPORT);
    let moved = bottom[0].as_f64().unwrap() - up[0].as_f64().unwrap();
    assert_eq!(moved, (200.0 / row).trunc(), "{up} (rows of {row} px)");
    browser.swipe(".pane-view.active", 0.0, -400.0);
    let back = browser.eval(VIEWPORT);
    assert_eq!(
        back[0], back[1],
        "back at the bottom: {back}, first {bottom}"
    );

    // Mouse reports on (SGR): the program gets wheel-up turns; the view does not move.
    type_line(&mut browser, "printf '\\033[?1000h\\033[?1006h'; cat -v");
    browser.wait_for(
        "mouse reports",
        "nightcrow.panes.get(nightcrow.active).term.modes.mouseTrackingMode !== 'none'",
    );
    let before = browser.eval(VIEWPORT);
    browser.swipe(".pane-view.active", 0.0, 3.5 * row);
    // The view stays at the bottom. Checked before Enter: a key typed scrolls the view down
    // by itself, and the reports' line moves the bottom.
    let after = browser.eval(VIEWPORT);
    assert_eq!(after[0], after[1], "scrolled: {after}, first {before}");
    browser.tap("#keys [data-key=Enter]");
    let shown = browser.wait_for(
        "the wheel reports",
        &format!(
            "{}.split('\\n').find(line => /^(\\^\\[\\[<64;\\d+;\\d+M)+$/.test(line))",
            buffer_of(ACTIVE)
        ),
    );
    assert_eq!(
        shown.as_str().unwrap().matches("^[[<64;").count(),
        3,
        "{shown}"
    );
}

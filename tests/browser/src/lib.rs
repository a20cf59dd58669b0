//! The system Chromium (Debian's `chromium`), headless, driven over the DevTools protocol
//! on a plain WebSocket: just what the web client's tests and benchmark need — open a
//! page, run JavaScript, type, tap and swipe, resize the viewport or make it a phone's,
//! take a screenshot. Nothing here
//! downloads a browser; a machine without Chromium fails with how to install it.

use std::io::{BufRead, BufReader};
use std::net::TcpStream;
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use base64::Engine;
use serde_json::{Value, json};
use tungstenite::stream::MaybeTlsStream;
use tungstenite::{Message, WebSocket};

/// Longest any one DevTools call may take: only there to turn a hang into a message.
const CALL_PATIENCE: Duration = Duration::from_secs(60);

/// Where Debian installs it; `NIGHTCROW_CHROMIUM` points elsewhere.
fn executable() -> String {
    std::env::var("NIGHTCROW_CHROMIUM").unwrap_or_else(|_| "/usr/bin/chromium".to_owned())
}

/// One headless Chromium with a fresh profile and one page.
pub struct Browser {
    child: Child,
    socket: WebSocket<MaybeTlsStream<TcpStream>>,
    session: String,
    next_id: u64,
    _profile: tempfile::TempDir,
}

impl Browser {
    /// Starts Chromium with a blank page of `width`×`height` CSS pixels and `TZ=UTC` (so
    /// local times on the page are known). Panics, saying how to install it, when there
    /// is no Chromium.
    pub fn start(width: u32, height: u32) -> Browser {
        let executable = executable();
        assert!(
            Path::new(&executable).exists(),
            "Chromium is not installed at {executable}: the web client's tests drive a real browser. \
             Install it with `apt-get install -y chromium` (.ci/run does), or set NIGHTCROW_CHROMIUM"
        );
        let profile = tempfile::tempdir().expect("a temp profile folder");
        let mut command = Command::new(&executable);
        command
            .args([
                "--headless",
                "--no-sandbox",
                "--disable-gpu",
                "--disable-quic",
                "--no-first-run",
                "--no-default-browser-check",
                "--disable-background-networking",
                "--disable-component-update",
                "--disable-sync",
                "--disable-extensions",
                "--remote-debugging-port=0",
                &format!("--window-size={width},{height}"),
            ])
            .arg(format!("--user-data-dir={}", profile.path().display()))
            .arg("about:blank")
            .env("TZ", "UTC")
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::piped());
        let mut child = command.spawn().expect("Chromium starts");
        let stderr = child.stderr.take().expect("piped stderr");
        let endpoint = devtools_endpoint(stderr);
        let (socket, _) = tungstenite::connect(endpoint.as_str()).expect("DevTools connects");
        if let MaybeTlsStream::Plain(stream) = socket.get_ref() {
            stream
                .set_read_timeout(Some(CALL_PATIENCE))
                .expect("a read timeout");
        }
        let mut browser = Browser {
            child,
            socket,
            session: String::new(),
            next_id: 0,
            _profile: profile,
        };
        let target = browser.browser_call("Target.createTarget", json!({"url": "about:blank"}));
        let target = target["targetId"].clone();
        let attached = browser.browser_call(
            "Target.attachToTarget",
            json!({"targetId": target, "flatten": true}),
        );
        browser.session = attached["sessionId"]
            .as_str()
            .expect("a session id")
            .to_owned();
        browser.call("Page.enable", json!({}));
        browser.resize(width, height);
        browser
    }

    /// A DevTools method on the page; its result, or a panic with the error.
    pub fn call(&mut self, method: &str, params: Value) -> Value {
        let session = self.session.clone();
        self.send(method, params, Some(&session))
    }

    fn browser_call(&mut self, method: &str, params: Value) -> Value {
        self.send(method, params, None)
    }

    fn send(&mut self, method: &str, params: Value, session: Option<&str>) -> Value {
        self.next_id += 1;
        let id = self.next_id;
        let mut message = json!({"id": id, "method": method, "params": params});
        if let Some(session) = session {
            message["sessionId"] = json!(session);
        }
        self.socket
            .send(Message::text(message.to_string()))
            .expect("DevTools takes a command");
        let started = Instant::now();
        loop {
            assert!(
                started.elapsed() < CALL_PATIENCE,
                "DevTools did not answer {method}"
            );
            let Message::Text(text) = self.socket.read().expect("DevTools answers") else {
                continue;
            };
            let answer: Value = serde_json::from_str(text.as_str()).expect("DevTools JSON");
            if answer["id"] != json!(id) {
                continue; // an event
            }
            if let Some(error) = answer.get("error") {
                panic!("{method} failed: {error}");
            }
            return answer["result"].clone();
        }
    }

    /// Opens `url` and waits until the document has loaded.
    pub fn goto(&mut self, url: &str) {
        self.call("Page.navigate", json!({"url": url}));
        self.wait_for("the page to load", "document.readyState === 'complete'");
    }

    /// Fills in and submits nightcrow's login form (the page must be `/login`), then waits
    /// for the answer: the terminal page, or the login page saying why not.
    pub fn submit_login(&mut self, password: &str) {
        self.eval(&format!(
            "document.querySelector('.refusal').textContent = ''; \
             document.getElementById('password').value = {}; \
             document.querySelector('form').submit(); true",
            json!(password)
        ));
        self.wait_for(
            "the login's answer",
            "document.readyState === 'complete' && (location.pathname === '/' || \
             !!(document.querySelector('.refusal') || {}).textContent)",
        );
    }

    /// The value of a JavaScript expression (promises awaited); exceptions panic.
    pub fn eval(&mut self, expression: &str) -> Value {
        let result = self.call(
            "Runtime.evaluate",
            json!({"expression": expression, "returnByValue": true, "awaitPromise": true}),
        );
        if let Some(exception) = result.get("exceptionDetails") {
            panic!("{expression}\nthrew: {exception}");
        }
        result["result"]["value"].clone()
    }

    /// Polls `expression` until it is truthy (for up to a minute); returns its value.
    #[track_caller]
    pub fn wait_for(&mut self, what: &str, expression: &str) -> Value {
        self.wait_within(CALL_PATIENCE, what, expression)
    }

    /// Polls `expression` every 20 ms until it is truthy; panics after `patience`.
    #[track_caller]
    pub fn wait_within(&mut self, patience: Duration, what: &str, expression: &str) -> Value {
        let started = Instant::now();
        loop {
            let value = self.eval(expression);
            let truthy = !matches!(&value, Value::Null | Value::Bool(false))
                && value != json!(0)
                && value != json!("");
            if truthy {
                return value;
            }
            if started.elapsed() > patience {
                let page = self.eval("location.href + '\\n' + (document.body ? document.body.innerText.slice(0, 2000) : '')");
                panic!(
                    "timed out waiting for {what} ({expression}); the page:\n{}",
                    page.as_str().unwrap_or_default()
                );
            }
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    /// Runs `script` in every document this page opens from now on, before the page's own
    /// scripts (to record what the page does with a browser API).
    pub fn on_every_page(&mut self, script: &str) {
        self.call(
            "Page.addScriptToEvaluateOnNewDocument",
            json!({"source": script}),
        );
    }

    /// Grants `permissions` (`"notifications"`, …) to `origin`, as a person answering the
    /// browser's prompt would.
    pub fn grant(&mut self, origin: &str, permissions: &[&str]) {
        self.browser_call(
            "Browser.grantPermissions",
            json!({"origin": origin, "permissions": permissions}),
        );
    }

    /// The middle of the element `selector` finds, in CSS pixels of the viewport.
    fn middle_of(&mut self, selector: &str) -> (f64, f64) {
        let middle = self.eval(&format!(
            "(() => {{ const box = document.querySelector({}).getBoundingClientRect(); \
             return [box.x + box.width / 2, box.y + box.height / 2]; }})()",
            json!(selector)
        ));
        let coordinate = |index: usize| middle[index].as_f64().expect("a coordinate");
        (coordinate(0), coordinate(1))
    }

    /// Clicks the middle of the element `selector` finds with the mouse: a real user gesture,
    /// which `element.click()` from a script is not.
    pub fn click(&mut self, selector: &str) {
        let (x, y) = self.middle_of(selector);
        for kind in ["mousePressed", "mouseReleased"] {
            self.call(
                "Input.dispatchMouseEvent",
                json!({"type": kind, "x": x, "y": y, "button": "left", "clickCount": 1}),
            );
        }
    }

    /// Taps the middle of the element `selector` finds with a finger (needs
    /// [`Browser::emulate_phone`]).
    pub fn tap(&mut self, selector: &str) {
        let (x, y) = self.middle_of(selector);
        self.touch("touchStart", json!([{"x": x, "y": y}]));
        self.touch("touchEnd", json!([]));
    }

    /// Drags a finger from the middle of the element `selector` finds by `right`, `down` CSS
    /// pixels, in steps of at most 10, then lifts it.
    pub fn swipe(&mut self, selector: &str, right: f64, down: f64) {
        let (x, y) = self.middle_of(selector);
        self.touch("touchStart", json!([{"x": x, "y": y}]));
        let steps = (right.abs().max(down.abs()) / 10.0).ceil().max(1.0);
        for step in 1..=steps as u32 {
            let done = f64::from(step) / steps;
            let point = json!([{"x": x + right * done, "y": y + down * done}]);
            self.touch("touchMove", point);
        }
        self.touch("touchEnd", json!([]));
    }

    fn touch(&mut self, kind: &str, points: Value) {
        self.call(
            "Input.dispatchTouchEvent",
            json!({"type": kind, "touchPoints": points}),
        );
    }

    /// Types `text` into what has the focus, as an input method would.
    pub fn type_text(&mut self, text: &str) {
        self.call("Input.insertText", json!({"text": text}));
    }

    /// Presses and releases Enter.
    pub fn press_enter(&mut self) {
        for kind in ["keyDown", "keyUp"] {
            let mut key = json!({"type": kind, "key": "Enter", "code": "Enter",
                                 "windowsVirtualKeyCode": 13, "nativeVirtualKeyCode": 13});
            if kind == "keyDown" {
                key["text"] = json!("\r");
            }
            self.call("Input.dispatchKeyEvent", key);
        }
    }

    /// Gives the page a viewport of `width`×`height` CSS pixels.
    pub fn resize(&mut self, width: u32, height: u32) {
        self.device(width, height, 1, false);
    }

    /// Makes the page a phone's: a mobile viewport of `width`×`height` CSS pixels at 3
    /// device pixels each (the page's `<meta name="viewport">` applies), and a touch screen.
    pub fn emulate_phone(&mut self, width: u32, height: u32) {
        self.device(width, height, 3, true);
        self.call(
            "Emulation.setTouchEmulationEnabled",
            json!({"enabled": true, "maxTouchPoints": 5}),
        );
    }

    fn device(&mut self, width: u32, height: u32, scale: u32, mobile: bool) {
        self.call(
            "Emulation.setDeviceMetricsOverride",
            json!({"width": width, "height": height, "deviceScaleFactor": scale, "mobile": mobile}),
        );
    }

    /// A PNG of the viewport, written to `path`.
    pub fn screenshot(&mut self, path: &Path) {
        let shot = self.call("Page.captureScreenshot", json!({"format": "png"}));
        let png = base64::engine::general_purpose::STANDARD
            .decode(shot["data"].as_str().expect("screenshot data"))
            .expect("base64 PNG");
        std::fs::write(path, png).expect("writing the screenshot");
    }
}

impl Drop for Browser {
    fn drop(&mut self) {
        let _ = self
            .socket
            .send(Message::text(r#"{"id":0,"method":"Browser.close"}"#));
        let started = Instant::now();
        while started.elapsed() < Duration::from_secs(5) {
            if let Ok(Some(_)) = self.child.try_wait() {
                return;
            }
            std::thread::sleep(Duration::from_millis(50));
        }
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// The `ws://` address Chromium prints on stderr once DevTools listens.
fn devtools_endpoint(stderr: std::process::ChildStderr) -> String {
    let (found, endpoint) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let mut seen = String::new();
        for line in BufReader::new(stderr).lines().map_while(Result::ok) {
            if let Some(url) = line.strip_prefix("DevTools listening on ") {
                let _ = found.send(Ok(url.trim().to_owned()));
                // Keep draining so Chromium never blocks on a full pipe.
                continue;
            }
            seen.push_str(&line);
            seen.push('\n');
        }
        let _ = found.send(Err(seen));
    });
    match endpoint.recv_timeout(CALL_PATIENCE) {
        Ok(Ok(url)) => url,
        Ok(Err(output)) => panic!("Chromium exited before DevTools listened:\n{output}"),
        Err(_) => panic!("Chromium did not open DevTools within {CALL_PATIENCE:?}"),
    }
}

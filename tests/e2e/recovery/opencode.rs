//! OpenCode panes against a real loopback HTTP server that replays the captures of the real
//! OpenCode 1.18.33 (`tests/fixtures/opencode/`): its SSE events, pushed step by step, and its
//! `/session/status` bodies, answered to the plugin's polls. The server checks what every
//! request carries (`?directory=` of the pane cwd, Basic credentials when configured).

use std::io::{BufRead, BufReader, Write};
use std::net::{TcpListener, TcpStream};
use std::sync::mpsc::{Receiver, Sender, channel};
use std::sync::{Arc, Mutex};

use super::harness::{Grants, PATIENCE, Plugin, Runtime, fixtures, on_both_runtimes};

on_both_runtimes!(
    a_give_up_over_the_stream_calls_the_person_and_the_exited_pane_reopens_the_session,
    recovering_by_itself_is_shown_then_quietly_idle,
    aborting_with_a_key_during_the_retry_stops_without_an_alarm,
    an_exit_while_retrying_waits_for_the_retry_time_then_reopens_the_session,
    without_the_stream_the_pane_directory_is_polled_every_5_s_and_leaving_unseen_is_a_give_up,
    unobservable_panes_and_refused_credentials_are_logged_once_and_report_nothing
);

/// base64("opencode:pw"): what the plugin must send with `OPENCODE_SERVER_PASSWORD=pw`.
const BASIC_OPENCODE_PW: &str = "Basic b3BlbmNvZGU6cHc=";
/// The session of `b2-429-retry-after-ms-3000`.
const B2_SESSION: &str = "ses_dc8726063ffedwq1HAGXoO7KFL";

/// What the replaying server answers; the test changes it between steps.
struct Replay {
    /// The `?directory=` value the pane's requests must carry.
    directory: String,
    /// When set, requests without these Basic credentials get the captured 401.
    password: bool,
    /// Answer `/event` with 404, so the plugin has to poll.
    refuse_stream: bool,
    /// `/session/status` body for the pane's directory, and for any other (or none).
    status_for_pane: String,
    status_plain: String,
    /// The open event stream, if the plugin holds one.
    stream: Option<TcpStream>,
}

/// One request the server answered: its request line and headers.
pub(crate) struct Request {
    head: String,
}

impl Request {
    pub(crate) fn path(&self) -> &str {
        self.head.split(' ').nth(1).unwrap_or_default()
    }
}

pub(crate) struct Server {
    pub(crate) port: u16,
    replay: Arc<Mutex<Replay>>,
    requests: Receiver<Request>,
}

impl Server {
    /// A server for the pane cwd given to [`Server::serve`] (the port comes first: it is
    /// the plugin's grant).
    pub(crate) fn start(password: bool) -> Server {
        let listener = TcpListener::bind("127.0.0.1:0").expect("bind loopback");
        let port = listener.local_addr().expect("addr").port();
        let replay = Arc::new(Mutex::new(Replay {
            directory: String::new(),
            password,
            refuse_stream: false,
            status_for_pane: "{}".into(),
            status_plain: "{}".into(),
            stream: None,
        }));
        let (sender, requests) = channel();
        let shared = Arc::clone(&replay);
        std::thread::spawn(move || {
            for socket in listener.incoming() {
                let Ok(socket) = socket else { break };
                if answer(socket, &shared, &sender).is_err() {
                    break;
                }
            }
        });
        Server {
            port,
            replay,
            requests,
        }
    }

    pub(crate) fn serve(&self, cwd: &str) {
        // The tests' cwd is a temp path plus "my repo": only the space needs escaping.
        self.replay.lock().expect("lock").directory = cwd.replace(' ', "%20");
    }

    fn set_status(&self, for_pane: &str, plain: &str) {
        let mut replay = self.replay.lock().expect("lock");
        replay.status_for_pane = for_pane.into();
        replay.status_plain = plain.into();
    }

    /// Writes SSE events to the open stream as one chunk.
    pub(crate) fn push(&self, events: &[String]) {
        let mut replay = self.replay.lock().expect("lock");
        let stream = replay.stream.as_mut().expect("the plugin holds the stream");
        let data = events.concat();
        let chunk = format!("{:x}\r\n{data}\r\n", data.len());
        stream.write_all(chunk.as_bytes()).expect("push events");
    }

    /// The next request the server answered.
    pub(crate) fn next_request(&self) -> Request {
        self.requests
            .recv_timeout(PATIENCE)
            .expect("the plugin made a request")
    }

    /// Requests answered so far and not yet taken.
    fn taken(&self) -> Vec<Request> {
        self.requests.try_iter().collect()
    }
}

/// Reads one request and answers it from `replay`. A request is reported before its answer
/// is written (so once the plugin has an answer, the test can see the request), except a
/// stream, reported once it is stored (so the test can push to it).
fn answer(
    socket: TcpStream,
    replay: &Mutex<Replay>,
    requests: &Sender<Request>,
) -> std::io::Result<()> {
    socket.set_read_timeout(Some(PATIENCE))?;
    let mut reader = BufReader::new(socket.try_clone()?);
    let mut head = String::new();
    loop {
        let mut line = String::new();
        if reader.read_line(&mut line)? == 0 || line == "\r\n" {
            break;
        }
        head.push_str(&line);
    }
    let request = Request { head };
    let mut replay = replay.lock().expect("lock");
    let mut socket = socket;
    let authorized = !replay.password
        || request
            .head
            .contains(&format!("\r\nAuthorization: {BASIC_OPENCODE_PW}\r\n"));
    let for_pane = request
        .path()
        .ends_with(&format!("?directory={}", replay.directory));
    let response = if !authorized {
        captured("auth/no-credentials.http.txt")
    } else if request.path().starts_with("/event") && !replay.refuse_stream {
        socket.write_all(
            b"HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\ntransfer-encoding: chunked\r\n\r\n",
        )?;
        // A new stream replaces the old one, which the server closes (as OpenCode would).
        replay.stream = Some(socket);
        return requests.send(request).map_err(std::io::Error::other);
    } else if request.path().starts_with("/session/status") {
        let body = if for_pane {
            &replay.status_for_pane
        } else {
            &replay.status_plain
        };
        format!(
            "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: {}\r\n\r\n{body}",
            body.len()
        )
        .into_bytes()
    } else {
        b"HTTP/1.1 404 Not Found\r\nContent-Length: 9\r\n\r\nNot Found".to_vec()
    };
    requests.send(request).map_err(std::io::Error::other)?;
    socket.write_all(&response)
}

/// A captured raw response (`HTTP <code>`, headers, blank line, body) as HTTP/1.1 bytes.
fn captured(relative: &str) -> Vec<u8> {
    let text =
        std::fs::read_to_string(fixtures().join("opencode").join(relative)).expect("capture");
    let (head, body) = text.split_once("\n\n").expect("a head");
    let mut lines = head.lines();
    let code = lines
        .next()
        .and_then(|line| line.strip_prefix("HTTP "))
        .expect("a status line");
    let mut response = format!("HTTP/1.1 {code} Captured\r\n");
    for line in lines {
        response.push_str(line);
        response.push_str("\r\n");
    }
    response.push_str("\r\n");
    response.push_str(body.trim_end_matches('\n'));
    response.into_bytes()
}

/// The events of a captured stream, each `data: …\n\n` (the capture prefixes each raw line
/// with its time).
pub(crate) fn sse_events(scenario: &str) -> Vec<String> {
    let text = std::fs::read_to_string(
        fixtures()
            .join("opencode")
            .join(scenario)
            .join("sse-event.txt"),
    )
    .expect("capture");
    text.lines()
        .filter_map(|line| line.split_once(' ').map(|(_, raw)| raw))
        .filter(|raw| raw.starts_with("data:"))
        .map(|raw| format!("{raw}\n\n"))
        .collect()
}

/// Index just past the `n`-th (from 1) event containing `needle`.
pub(crate) fn after(events: &[String], needle: &str, n: usize) -> usize {
    events
        .iter()
        .enumerate()
        .filter(|(_, event)| event.contains(needle))
        .nth(n - 1)
        .map(|(at, _)| at + 1)
        .unwrap_or_else(|| panic!("event {n} with {needle}"))
}

/// The captured status polls of a scenario: (scoped with `?directory=`, plain).
fn polls(scenario: &str) -> Vec<(String, String)> {
    let text = std::fs::read_to_string(
        fixtures()
            .join("opencode")
            .join(scenario)
            .join("polls.jsonl"),
    )
    .expect("capture");
    text.lines()
        .map(|line| {
            let poll: serde_json::Value = serde_json::from_str(line).expect("poll JSON");
            let body = |key: &str| poll[key].as_str().expect("a body").to_owned();
            (body("status_directory"), body("status"))
        })
        .collect()
}

/// Advances the clock by the stream tick (250 ms) and syncs until the output so far
/// satisfies `done`; loopback delivery is immediate in practice, the repeats only make sure.
fn ticks_until(plugin: &mut Plugin, done: impl Fn(&[String]) -> bool) -> Vec<String> {
    let mut out = Vec::new();
    for _ in 0..40 {
        plugin.advance_ms(250);
        out.extend(plugin.sync());
        if done(&out) {
            return out;
        }
    }
    panic!("the plugin never got there; it said {out:?}");
}

fn retrying(deadline: i64) -> String {
    format!("g1 waiting_for_reset provider retrying {deadline} #0")
}

/// Opens the test pane on `server` and returns the plugin's first request (the stream).
fn open_pane(plugin: &mut Plugin, server: &Server) -> Request {
    plugin.open(1, &format!("opencode --port {}", server.port));
    assert!(plugin.sync().is_empty());
    server.next_request()
}

fn a_give_up_over_the_stream_calls_the_person_and_the_exited_pane_reopens_the_session(
    runtime: Runtime,
) {
    let server = Server::start(true);
    let mut plugin = Plugin::start_with(
        runtime,
        Grants::opencode(server.port, 1_796_228_358_000).env("OPENCODE_SERVER_PASSWORD", "pw"),
    );
    server.serve(&plugin.cwd);
    let request = open_pane(&mut plugin, &server);
    assert!(
        request.path().starts_with("/event?directory=/"),
        "{}",
        request.head
    );
    assert!(request.head.contains(BASIC_OPENCODE_PW), "{}", request.head);
    let events = sse_events("b2-429-retry-after-ms-3000");
    // Up to the first retry: shown with OpenCode's own deadline (`next` / 1000).
    let first = after(&events, "\"type\":\"retry\"", 1);
    server.push(&events[..first]);
    assert_eq!(
        ticks_until(&mut plugin, |out| !out.is_empty()),
        [retrying(1_796_228_361)]
    );
    // Retries 2 to 5: each new deadline shown, nothing else done.
    let fifth = after(&events, "\"type\":\"retry\"", 5);
    server.push(&events[first..fifth]);
    assert_eq!(
        ticks_until(&mut plugin, |out| out.len() == 4),
        [
            retrying(1_796_228_364),
            retrying(1_796_228_367),
            retrying(1_796_228_370),
            retrying(1_796_228_373),
        ]
    );
    // The sixth request fails: `session.error`, then idle. The pane is alive: call the person.
    server.push(&events[fifth..]);
    assert_eq!(
        ticks_until(&mut plugin, |out| out.len() == 2),
        [
            "g1 needs_attention provider gave up; continue the session - #0",
            "g1 attention"
        ]
    );
    // The person quits OpenCode: relaunched with the session, never `--continue`.
    plugin.exit(1);
    assert_eq!(
        plugin.sync(),
        [
            "g1 ready_to_resume provider gave up - #0".to_owned(),
            "g1 resuming resuming session - #1".to_owned(),
            format!("g1 relaunch --session {B2_SESSION}"),
        ]
    );
    // Reopening does not re-run the failed prompt: the person is called once it is back.
    plugin.open(2, &format!("opencode --port {}", server.port));
    assert_eq!(plugin.sync(), ["g2 idle resumed - #1", "g2 attention"]);
    // The new process is watched again through a new stream.
    std::iter::repeat_with(|| server.next_request())
        .find(|request| request.path().starts_with("/event?directory="))
        .expect("reconnected");
    plugin.finish();
}

fn recovering_by_itself_is_shown_then_quietly_idle(runtime: Runtime) {
    let server = Server::start(false);
    let mut plugin = Plugin::start_with(runtime, Grants::opencode(server.port, 1_796_228_401_000));
    server.serve(&plugin.cwd);
    open_pane(&mut plugin, &server);
    let events = sse_events("c-first2-429-then-ok");
    let retry = after(&events, "\"type\":\"retry\"", 1);
    server.push(&events[..retry]);
    assert_eq!(
        ticks_until(&mut plugin, |out| !out.is_empty()),
        [retrying(1_796_228_421)]
    );
    // Heartbeats while OpenCode waits; the plugin does nothing.
    plugin.advance(10);
    assert!(plugin.sync().is_empty(), "silent during the retry");
    server.push(&events[retry..]);
    assert_eq!(
        ticks_until(&mut plugin, |out| !out.is_empty()),
        ["g1 idle recovered - #0"]
    );
    plugin.advance(600);
    assert!(plugin.sync().is_empty(), "no alarm");
    plugin.finish();
}

fn aborting_with_a_key_during_the_retry_stops_without_an_alarm(runtime: Runtime) {
    let server = Server::start(false);
    let mut plugin = Plugin::start_with(runtime, Grants::opencode(server.port, 1_796_228_378_000));
    server.serve(&plugin.cwd);
    open_pane(&mut plugin, &server);
    // b3: OpenCode's own backoff, aborted while waiting for its retry 4.
    let events = sse_events("b3-429-no-retry-headers");
    let fourth = after(&events, "\"type\":\"retry\"", 4);
    server.push(&events[..fourth]);
    assert_eq!(
        ticks_until(&mut plugin, |out| out.len() == 4),
        [
            retrying(1_796_228_381),
            retrying(1_796_228_386),
            retrying(1_796_228_395),
            retrying(1_796_228_414),
        ]
    );
    // The person presses Esc in the TUI: the host reports input, then OpenCode goes idle.
    plugin.send(nightcrow_protocol::Event::UserInput {
        token: super::harness::token(super::harness::PANE),
        generation: 1,
    });
    assert!(plugin.sync().is_empty(), "a key alone ends nothing");
    server.push(&events[fourth..]);
    assert_eq!(
        ticks_until(&mut plugin, |out| !out.is_empty()),
        ["g1 idle stopped by you - #0"]
    );
    for _ in 0..8 {
        plugin.advance_ms(250);
        assert!(plugin.sync().is_empty(), "no call-back for their own abort");
    }
    plugin.finish();
}

fn an_exit_while_retrying_waits_for_the_retry_time_then_reopens_the_session(runtime: Runtime) {
    let server = Server::start(false);
    let mut plugin = Plugin::start_with(runtime, Grants::opencode(server.port, 1_796_228_358_000));
    server.serve(&plugin.cwd);
    open_pane(&mut plugin, &server);
    let events = sse_events("b2-429-retry-after-ms-3000");
    server.push(&events[..after(&events, "\"type\":\"retry\"", 1)]);
    assert_eq!(
        ticks_until(&mut plugin, |out| !out.is_empty()),
        [retrying(1_796_228_361)]
    );
    plugin.exit(1);
    // The retry time plus the 30 s margin, measured from now.
    let out = plugin.sync();
    assert_eq!(out.len(), 1, "{out:?}");
    assert!(
        out[0].starts_with("g1 waiting_for_reset provider retrying "),
        "{out:?}"
    );
    assert!(out[0].contains(" 1796228391 "), "{out:?}");
    let left = 1_796_228_391 - plugin.wall_ms / 1000;
    plugin.advance(left as u64 - 1);
    assert!(plugin.sync().is_empty(), "not a second early");
    plugin.advance(1);
    assert_eq!(
        plugin.sync(),
        [
            "g1 ready_to_resume retry time reached - #0".to_owned(),
            "g1 resuming resuming session - #1".to_owned(),
            format!("g1 relaunch --session {B2_SESSION}")
        ]
    );
    plugin.finish();
}

fn without_the_stream_the_pane_directory_is_polled_every_5_s_and_leaving_unseen_is_a_give_up(
    runtime: Runtime,
) {
    let server = Server::start(false);
    let mut plugin = Plugin::start_with(runtime, Grants::opencode(server.port, 1_796_228_427_000));
    server.serve(&plugin.cwd);
    server.replay.lock().expect("lock").refuse_stream = true;
    let polls = polls("d-session-in-other-directory");
    server.set_status(&polls[0].0, &polls[0].1);
    let refused = open_pane(&mut plugin, &server);
    assert!(refused.path().starts_with("/event?"), "{}", refused.head);
    // Replay the captured bodies (0.5 s apart) as the plugin polls at its own cadence; the
    // refusal may already have been read, and the first poll made, while the pane opened.
    let mut out = Vec::new();
    let mut status_polls = Vec::new();
    let mut note_polls = |server: &Server, wall_ms: i64| {
        for request in server.taken() {
            if request.path().starts_with("/session/status") {
                assert!(
                    request.path().starts_with("/session/status?directory=/"),
                    "{}",
                    request.head
                );
                status_polls.push(wall_ms);
            }
        }
    };
    note_polls(&server, plugin.wall_ms);
    for (for_pane, plain) in &polls {
        server.set_status(for_pane, plain);
        plugin.advance_ms(500);
        out.extend(plugin.sync());
        note_polls(&server, plugin.wall_ms);
    }
    assert!(status_polls.len() >= 2, "{status_polls:?}");
    assert!(
        status_polls
            .windows(2)
            .all(|pair| pair[1] - pair[0] >= 5_000),
        "at most one poll per 5 s: {status_polls:?}"
    );
    // Past the capture's end the map stays empty; the next poll sees the session gone (a
    // tick later if a stream attempt is pending just then).
    plugin.advance(5);
    out.extend(plugin.sync());
    let have = out.len();
    if have < 3 {
        out.extend(ticks_until(&mut plugin, |more| have + more.len() >= 3));
    }
    // The session (visible only with `?directory=`) retried, then left the map without a
    // poll seeing it busy again: with polling only that is a give-up (docs/recovery.md).
    assert_eq!(
        out,
        [
            retrying(1_796_228_433),
            "g1 needs_attention provider gave up; continue the session - #0".to_owned(),
            "g1 attention".to_owned(),
        ]
    );
    plugin.finish();
}

fn unobservable_panes_and_refused_credentials_are_logged_once_and_report_nothing(runtime: Runtime) {
    let server = Server::start(true);
    let mut plugin = Plugin::start_with(runtime, Grants::opencode(server.port, 1_796_228_358_000));
    server.serve(&plugin.cwd);
    for command in [
        "opencode".to_owned(),
        "opencode --port 0".to_owned(),
        format!("opencode --hostname 192.168.7.7 --port {}", server.port),
    ] {
        plugin.open(1, &command);
        assert!(plugin.sync().is_empty());
        plugin.advance(10);
        assert!(plugin.sync().is_empty());
    }
    assert!(server.taken().is_empty(), "never connected");
    // A pane it can reach, but without the password: refused, logged once, no status.
    plugin.open(1, &format!("opencode --port {}", server.port));
    for _ in 0..6 {
        plugin.advance(5);
        assert!(plugin.sync().is_empty());
    }
    assert!(server.taken().len() >= 4, "it kept trying");
    let seen = plugin.finish();
    let count = |needle: &str| seen.iter().filter(|line| line.contains(needle)).count();
    assert_eq!(count("no explicit --port"), 2, "{seen:#?}");
    assert_eq!(count("not a loopback address"), 1, "{seen:#?}");
    assert_eq!(count("HTTP 401"), 1, "{seen:#?}");
}

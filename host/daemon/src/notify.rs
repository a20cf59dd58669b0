//! The `[[notify]]` hooks (docs/config.md): the daemon follows every open hub's notices and
//! tells the person wherever they are, whatever client is attached or not — a command run
//! without a shell, and/or a POST in the form ntfy takes.
//!
//! Nothing here can hold up a hub or the daemon: a follower only copies a notice into each
//! matching hook's bounded queue (a full one drops it and counts it), and each hook runs in
//! its own task, one delivery at a time, every delivery bounded by [`HookLimits::timeout`]
//! (a command still running then is killed, with its process group). A hook delivers at most
//! [`HookLimits::per_window`] notices per [`HookLimits::window`]; what it dropped is said in
//! one log line when the window reopens. A failing command or URL is logged once (WARN), then
//! quietly until it works again, which is logged at INFO.

use std::collections::VecDeque;
use std::path::PathBuf;
use std::process::Stdio;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use base64::Engine as _;
use nightcrow_client_protocol::{Notice, NoticeEvent};
use nightcrow_config::NotifyHook;
use tokio::io::AsyncWriteExt;
use tokio::sync::{broadcast, mpsc};
use tokio::time::Instant;

/// Notices waiting for one hook while it delivers: more than its rate limit lets out in a
/// window, so a full queue means the hook is stuck, not busy.
const HOOK_QUEUE: usize = 8;

/// How long a delivery may take and how many a hook makes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct HookLimits {
    /// A command still running after this is killed; a POST not answered by then has failed.
    pub timeout: Duration,
    pub per_window: usize,
    pub window: Duration,
}

impl Default for HookLimits {
    fn default() -> HookLimits {
        HookLimits {
            timeout: Duration::from_secs(10),
            per_window: 6,
            window: Duration::from_secs(60),
        }
    }
}

/// One notice of one repository, as a hook is told it.
#[derive(Debug, Clone)]
pub struct Delivery {
    pub repo: PathBuf,
    pub notice: Notice,
}

impl Delivery {
    /// The `NIGHTCROW_*` variables a command gets (empty values for what the notice lacks).
    pub fn env(&self) -> [(&'static str, String); 7] {
        let report = self.notice.report.as_ref();
        [
            ("NIGHTCROW_EVENT", self.notice.event.name().to_owned()),
            ("NIGHTCROW_REPO", self.repo.display().to_string()),
            ("NIGHTCROW_PANE", self.notice.pane.to_string()),
            (
                "NIGHTCROW_STATE",
                report.map(|r| r.state.to_string()).unwrap_or_default(),
            ),
            (
                "NIGHTCROW_DETAIL",
                report.and_then(|r| r.detail.clone()).unwrap_or_default(),
            ),
            (
                "NIGHTCROW_DEADLINE",
                report
                    .and_then(|r| r.deadline_epoch)
                    .map(|deadline| deadline.to_string())
                    .unwrap_or_default(),
            ),
            ("NIGHTCROW_TEXT", self.notice.text()),
        ]
    }

    /// `nightcrow — <the repository's folder name>`.
    pub fn title(&self) -> String {
        let name = self.repo.file_name().map_or_else(
            || self.repo.display().to_string(),
            |name| name.to_string_lossy().into_owned(),
        );
        format!("nightcrow — {name}")
    }
}

/// An HTTP header value for `text`: as it is when ASCII, else an RFC 2047 encoded word,
/// which ntfy decodes (header values are ASCII on the wire).
pub fn header_text(text: &str) -> String {
    if text.is_ascii() {
        return text.to_owned();
    }
    let encoded = base64::engine::general_purpose::STANDARD.encode(text);
    format!("=?UTF-8?B?{encoded}?=")
}

/// ntfy's `Priority` and `Tags` (emoji short codes) for an event.
fn priority_and_tags(event: NoticeEvent) -> (&'static str, &'static str) {
    match event {
        NoticeEvent::NeedsAttention => ("high", "warning"),
        NoticeEvent::Attention => ("high", "bell"),
        NoticeEvent::AutoContinued | NoticeEvent::Resumed => ("default", "arrow_forward"),
    }
}

/// The daemon's hooks, replaced whole by a reload.
#[derive(Default)]
pub struct Notifier {
    hooks: Mutex<Vec<Hook>>,
    limits: HookLimits,
}

struct Hook {
    config: NotifyHook,
    queue: mpsc::Sender<Delivery>,
    /// Notices dropped because the queue was full; the hook's task says how many.
    overflow: Arc<AtomicU64>,
}

impl Notifier {
    pub fn new(limits: HookLimits) -> Notifier {
        Notifier {
            hooks: Mutex::new(Vec::new()),
            limits,
        }
    }

    /// Makes `configs` the hooks. A hook the config still has unchanged keeps its task, its
    /// rate limit and its failure state; a removed one finishes what it has queued. Must be
    /// called inside a tokio runtime.
    pub fn set_hooks(&self, configs: &[NotifyHook]) {
        let mut hooks = self
            .hooks
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner());
        let mut old = std::mem::take(&mut *hooks);
        for config in configs {
            match old.iter().position(|hook| hook.config == *config) {
                Some(kept) => hooks.push(old.swap_remove(kept)),
                None => hooks.push(Hook::spawn(config.clone(), self.limits)),
            }
        }
    }

    /// Follows one hub's notices until the hub ends.
    pub fn follow(self: &Arc<Notifier>, repo: PathBuf, mut notices: broadcast::Receiver<Notice>) {
        let notifier = Arc::clone(self);
        tokio::spawn(async move {
            loop {
                match notices.recv().await {
                    Ok(notice) => notifier.dispatch(&Delivery {
                        repo: repo.clone(),
                        notice,
                    }),
                    Err(broadcast::error::RecvError::Lagged(missed)) => tracing::warn!(
                        repo = %repo.display(),
                        missed,
                        "notify: the daemon fell behind the hub's notices; some were not told"
                    ),
                    Err(broadcast::error::RecvError::Closed) => return,
                }
            }
        });
    }

    /// Queues `delivery` for every hook that wants its event, never waiting.
    pub fn dispatch(&self, delivery: &Delivery) {
        let hooks = self
            .hooks
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner());
        for hook in hooks.iter() {
            if !hook.config.wants(delivery.notice.event.name()) {
                continue;
            }
            if let Err(mpsc::error::TrySendError::Full(_)) = hook.queue.try_send(delivery.clone()) {
                hook.overflow.fetch_add(1, Ordering::Relaxed);
            }
        }
    }
}

impl Hook {
    fn spawn(config: NotifyHook, limits: HookLimits) -> Hook {
        let (queue, deliveries) = mpsc::channel(HOOK_QUEUE);
        let overflow = Arc::new(AtomicU64::new(0));
        let runner = HookRunner {
            label: label(&config),
            command: config.command.clone().map(Target::new),
            url: config.url.clone().map(Target::new),
            agent: config.url.as_ref().map(|_| agent(limits.timeout)),
            limits,
            overflow: Arc::clone(&overflow),
        };
        tokio::spawn(runner.run(deliveries));
        Hook {
            config,
            queue,
            overflow,
        }
    }
}

/// How a hook is named in the log: its program and its URL's scheme and host (a topic in
/// the path may be a secret).
fn label(config: &NotifyHook) -> String {
    let program = config.command.as_ref().and_then(|argv| argv.first());
    let site = config.url.as_deref().map(|url| {
        let (scheme, rest) = url.split_once("://").unwrap_or(("", url));
        let host = rest.split(['/', '?', '#']).next().unwrap_or_default();
        format!("{scheme}://{host}/…")
    });
    match (program, site) {
        (Some(program), Some(site)) => format!("{program} + {site}"),
        (Some(program), None) => program.clone(),
        (None, Some(site)) => site,
        (None, None) => String::new(),
    }
}

fn agent(timeout: Duration) -> ureq::Agent {
    ureq::Agent::config_builder()
        .timeout_global(Some(timeout))
        .user_agent(concat!("nightcrow/", env!("CARGO_PKG_VERSION")))
        .build()
        .into()
}

/// A command or a URL, and whether its last delivery failed.
struct Target<T> {
    what: T,
    failing: bool,
}

impl<T> Target<T> {
    fn new(what: T) -> Target<T> {
        Target {
            what,
            failing: false,
        }
    }

    /// Logs a failure the first time, and the recovery after one.
    fn record(&mut self, label: &str, kind: &str, outcome: Result<(), String>) {
        match outcome {
            Ok(()) if self.failing => {
                self.failing = false;
                tracing::info!(hook = %label, "notify {kind} works again");
            }
            Ok(()) => {}
            Err(error) if !self.failing => {
                self.failing = true;
                tracing::warn!(
                    hook = %label,
                    %error,
                    "notify {kind} failed; further failures are not logged until it works again"
                );
            }
            Err(_) => {}
        }
    }
}

struct HookRunner {
    label: String,
    command: Option<Target<Vec<String>>>,
    url: Option<Target<String>>,
    agent: Option<ureq::Agent>,
    limits: HookLimits,
    overflow: Arc<AtomicU64>,
}

impl HookRunner {
    async fn run(mut self, mut deliveries: mpsc::Receiver<Delivery>) {
        let mut sent: VecDeque<Instant> = VecDeque::new();
        let mut dropped: u64 = 0;
        loop {
            dropped += self.overflow.swap(0, Ordering::Relaxed);
            let reopens = sent
                .front()
                .map_or_else(Instant::now, |first| *first + self.limits.window);
            tokio::select! {
                delivery = deliveries.recv() => {
                    let Some(delivery) = delivery else { return };
                    while sent.front().is_some_and(|at| at.elapsed() >= self.limits.window) {
                        sent.pop_front();
                    }
                    if sent.len() >= self.limits.per_window {
                        dropped += 1;
                        continue;
                    }
                    sent.push_back(Instant::now());
                    self.deliver(&delivery).await;
                }
                () = tokio::time::sleep_until(reopens), if dropped > 0 => {
                    tracing::warn!(
                        hook = %self.label,
                        dropped,
                        "notify hook dropped {dropped} notices: more than {} in {:?}, or its queue was full",
                        self.limits.per_window,
                        self.limits.window,
                    );
                    dropped = 0;
                    sent.clear();
                }
            }
        }
    }

    async fn deliver(&mut self, delivery: &Delivery) {
        let timeout = self.limits.timeout;
        let command = async {
            match &self.command {
                Some(target) => Some(run_command(&target.what, delivery, timeout).await),
                None => None,
            }
        };
        let post = async {
            match (&self.url, &self.agent) {
                (Some(target), Some(agent)) => {
                    Some(post(agent.clone(), target.what.clone(), delivery, timeout).await)
                }
                _ => None,
            }
        };
        let (ran, posted) = tokio::join!(command, post);
        if let (Some(target), Some(outcome)) = (&mut self.command, ran) {
            target.record(&self.label, "command", outcome);
        }
        if let (Some(target), Some(outcome)) = (&mut self.url, posted) {
            target.record(&self.label, "url", outcome);
        }
    }
}

/// Replaced by the notice's text in a command's arguments, as a shell would expand
/// `"$NIGHTCROW_TEXT"` (`notify-send nightcrow {text}`).
pub const TEXT_PLACEHOLDER: &str = "{text}";

/// Runs `argv` without a shell, with the `NIGHTCROW_*` variables, [`TEXT_PLACEHOLDER`]
/// replaced and the text on stdin; kills it (and its process group) if it outlives
/// `timeout`.
async fn run_command(
    argv: &[String],
    delivery: &Delivery,
    timeout: Duration,
) -> Result<(), String> {
    let (program, args) = argv.split_first().ok_or("no program")?;
    let text = delivery.notice.text();
    let mut command = tokio::process::Command::new(program);
    command
        .args(args.iter().map(|arg| arg.replace(TEXT_PLACEHOLDER, &text)))
        .envs(delivery.env())
        .stdin(Stdio::piped())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .kill_on_drop(true);
    // Its own group, so that a timeout ends what it started too.
    #[cfg(unix)]
    command.process_group(0);
    let mut child = command
        .spawn()
        .map_err(|error| format!("cannot run {program}: {error}"))?;
    let text = format!("{text}\n");
    let mut stdin = child.stdin.take();
    let finished = tokio::time::timeout(timeout, async {
        if let Some(stdin) = &mut stdin {
            // A command that does not read its input is fine.
            let _ = stdin.write_all(text.as_bytes()).await;
        }
        drop(stdin.take());
        child.wait().await
    })
    .await;
    match finished {
        Ok(Ok(status)) if status.success() => Ok(()),
        Ok(Ok(status)) => Err(format!("{program} {status}")),
        Ok(Err(error)) => Err(format!("{program}: {error}")),
        Err(_) => {
            kill_group(&child);
            let _ = child.kill().await;
            Err(format!("{program} still ran after {timeout:?}; killed"))
        }
    }
}

#[cfg(unix)]
fn kill_group(child: &tokio::process::Child) {
    let group = child
        .id()
        .and_then(|id| i32::try_from(id).ok())
        .and_then(rustix::process::Pid::from_raw);
    if let Some(group) = group {
        let _ = rustix::process::kill_process_group(group, rustix::process::Signal::KILL);
    }
}

#[cfg(not(unix))]
fn kill_group(_: &tokio::process::Child) {}

/// POSTs the text to `url` the way ntfy takes a message: the body is the text, `Title`,
/// `Priority` and `Tags` are headers. Blocking I/O, so on a blocking thread; `timeout`
/// bounds it there and here.
async fn post(
    agent: ureq::Agent,
    url: String,
    delivery: &Delivery,
    timeout: Duration,
) -> Result<(), String> {
    let title = header_text(&delivery.title());
    let (priority, tags) = priority_and_tags(delivery.notice.event);
    let body = delivery.notice.text();
    let request = tokio::task::spawn_blocking(move || {
        agent
            .post(&url)
            .header("Title", &title)
            .header("Priority", priority)
            .header("Tags", tags)
            .content_type("text/plain; charset=utf-8")
            .send(body.as_bytes())
            .map(drop)
            .map_err(|error| error.to_string())
    });
    match tokio::time::timeout(timeout + Duration::from_secs(1), request).await {
        Ok(Ok(outcome)) => outcome,
        Ok(Err(error)) => Err(error.to_string()),
        Err(_) => Err(format!("no answer after {timeout:?}")),
    }
}

#[cfg(test)]
mod tests {
    use std::io::Write;

    use nightcrow_client_protocol::RecoveryReport;
    use tokio::io::AsyncReadExt;
    use tokio::net::TcpListener;

    use super::*;

    /// Everything logged while it lives, as text.
    #[derive(Clone, Default)]
    struct Log(Arc<Mutex<Vec<u8>>>);

    impl Write for Log {
        fn write(&mut self, bytes: &[u8]) -> std::io::Result<usize> {
            self.0.lock().unwrap().extend_from_slice(bytes);
            Ok(bytes.len())
        }
        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }

    impl Log {
        fn capture(&self) -> tracing::subscriber::DefaultGuard {
            let log = self.clone();
            let subscriber = tracing_subscriber::fmt()
                .with_writer(move || log.clone())
                .with_ansi(false)
                .finish();
            tracing::subscriber::set_default(subscriber)
        }

        fn lines_with(&self, needle: &str) -> Vec<String> {
            String::from_utf8_lossy(&self.0.lock().unwrap())
                .lines()
                .filter(|line| line.contains(needle))
                .map(str::to_owned)
                .collect()
        }

        async fn wait_for(&self, needle: &str, count: usize) {
            let waited = tokio::time::timeout(Duration::from_secs(20), async {
                while self.lines_with(needle).len() < count {
                    tokio::time::sleep(Duration::from_millis(20)).await;
                }
            })
            .await;
            assert!(
                waited.is_ok(),
                "never logged {count} × {needle:?}:\n{}",
                String::from_utf8_lossy(&self.0.lock().unwrap())
            );
        }
    }

    fn delivery(pane: u64, event: NoticeEvent) -> Delivery {
        Delivery {
            repo: PathBuf::from("/src/crow"),
            notice: Notice {
                pane,
                event,
                report: Some(RecoveryReport {
                    pane,
                    state: "needs_attention".into(),
                    detail: Some("limit reset".to_owned()),
                    deadline_epoch: Some(1_771_890_527),
                    attempt: 1,
                }),
            },
        }
    }

    fn hook(command: Option<&[&str]>, url: Option<String>) -> NotifyHook {
        NotifyHook {
            command: command.map(|argv| argv.iter().map(|arg| (*arg).to_owned()).collect()),
            url,
            events: nightcrow_config::NOTIFY_EVENTS.map(str::to_owned).to_vec(),
        }
    }

    /// A loopback HTTP server answering each request with the next status (the last one
    /// from then on); the requests' text goes to `requests`.
    /// Reads until the head and as much body as its `content-length` says have come: a
    /// client may send the body in a segment of its own.
    async fn whole_request(stream: &mut tokio::net::TcpStream) -> String {
        let mut bytes = Vec::new();
        let mut chunk = [0; 4096];
        loop {
            let read = stream.read(&mut chunk).await.unwrap();
            bytes.extend_from_slice(&chunk[..read]);
            let text = String::from_utf8_lossy(&bytes).into_owned();
            let complete = text.split_once("\r\n\r\n").is_some_and(|(head, body)| {
                let length = head.lines().find_map(|line| {
                    let line = line.to_ascii_lowercase();
                    line.strip_prefix("content-length:")
                        .and_then(|n| n.trim().parse::<usize>().ok())
                });
                body.len() >= length.unwrap_or(0)
            });
            if complete || read == 0 {
                return text;
            }
        }
    }

    async fn http_server(statuses: &'static [u16]) -> (String, mpsc::UnboundedReceiver<String>) {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let url = format!("http://{}/topic", listener.local_addr().unwrap());
        let (requests, received) = mpsc::unbounded_channel();
        tokio::spawn(async move {
            for n in 0.. {
                let (mut stream, _) = listener.accept().await.unwrap();
                let _ = requests.send(whole_request(&mut stream).await);
                let status = statuses[n.min(statuses.len() - 1)];
                let answer = format!(
                    "HTTP/1.1 {status} X\r\ncontent-length: 0\r\nconnection: close\r\n\r\n"
                );
                let _ = stream.write_all(answer.as_bytes()).await;
            }
        });
        (url, received)
    }

    #[test]
    fn the_event_names_are_the_configs() {
        assert_eq!(
            NoticeEvent::ALL.map(NoticeEvent::name),
            nightcrow_config::NOTIFY_EVENTS
        );
    }

    #[test]
    fn the_title_is_ascii_on_the_wire() {
        let title = delivery(1, NoticeEvent::Resumed).title();
        assert_eq!(title, "nightcrow — crow");
        assert_eq!(header_text("plain"), "plain");
        assert_eq!(
            header_text(&title),
            format!(
                "=?UTF-8?B?{}?=",
                base64::engine::general_purpose::STANDARD.encode("nightcrow — crow")
            )
        );
    }

    /// A command that hangs is killed at the timeout with what it started, and the hook
    /// goes on; a URL that fails is logged once however often it fails, and its recovery
    /// once; dispatching never waits for either.
    #[tokio::test]
    async fn a_hanging_command_is_killed_and_a_failing_url_is_logged_once() {
        let log = Log::default();
        let _capture = log.capture();
        let folder = tempfile::tempdir().unwrap();
        let pids = folder.path().join("pids");
        let script = format!("sleep 30 & echo $! >> '{}'; wait", pids.display());
        let (url, mut requests) = http_server(&[500, 500, 500, 200]).await;
        let notifier = Notifier::new(HookLimits {
            timeout: Duration::from_millis(500),
            ..HookLimits::default()
        });
        notifier.set_hooks(&[
            hook(Some(&["sh", "-c", &script]), None),
            hook(None, Some(url)),
        ]);
        let started = std::time::Instant::now();
        for pane in 1..=4 {
            notifier.dispatch(&delivery(pane, NoticeEvent::NeedsAttention));
        }
        assert!(
            started.elapsed() < Duration::from_millis(100),
            "dispatch waited"
        );
        log.wait_for("works again", 1).await;
        for _ in 0..4 {
            assert!(requests.recv().await.unwrap().starts_with("POST /topic"));
        }
        let url_failures = log.lines_with("notify url failed");
        assert_eq!(url_failures.len(), 1, "{url_failures:?}");
        assert!(url_failures[0].contains("WARN") && url_failures[0].contains("500"));
        log.wait_for("still ran after 500ms; killed", 1).await;
        // Each of the four commands ran, hung and was killed with its child.
        log.wait_for("notify command", 1).await;
        let waited = tokio::time::timeout(Duration::from_secs(20), async {
            loop {
                let started = std::fs::read_to_string(&pids).unwrap_or_default();
                if started.lines().count() == 4 {
                    return started;
                }
                tokio::time::sleep(Duration::from_millis(20)).await;
            }
        })
        .await
        .expect("four commands ran");
        tokio::time::sleep(Duration::from_millis(700)).await;
        for pid in waited.lines() {
            let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default();
            let state = stat
                .rsplit(") ")
                .next()
                .and_then(|rest| rest.chars().next());
            assert!(
                matches!(state, None | Some('Z')),
                "sleep {pid} outlived its hook: {stat}"
            );
        }
        assert_eq!(log.lines_with("notify command failed").len(), 1);
    }

    /// Over the limit, notices are dropped and the number is said once, when the window
    /// reopens; the hook then delivers again.
    #[tokio::test]
    async fn the_rate_limit_drops_the_excess_and_says_so_once() {
        let log = Log::default();
        let _capture = log.capture();
        let (url, mut requests) = http_server(&[200]).await;
        let notifier = Notifier::new(HookLimits {
            per_window: 2,
            window: Duration::from_millis(800),
            ..HookLimits::default()
        });
        notifier.set_hooks(&[hook(None, Some(url))]);
        for pane in 1..=5 {
            notifier.dispatch(&delivery(pane, NoticeEvent::Attention));
        }
        log.wait_for("dropped 3 notices", 1).await;
        notifier.dispatch(&delivery(6, NoticeEvent::Resumed));
        let bodies: Vec<String> = [
            requests.recv().await.unwrap(),
            requests.recv().await.unwrap(),
            requests.recv().await.unwrap(),
        ]
        .into_iter()
        .map(|request| {
            request
                .split("\r\n\r\n")
                .nth(1)
                .unwrap_or_default()
                .to_owned()
        })
        .collect();
        assert_eq!(
            bodies,
            [
                "pane 1 wants you back: limit reset",
                "pane 2 wants you back: limit reset",
                "pane 6 resumed after the usage limit"
            ]
        );
        assert_eq!(log.lines_with("dropped").len(), 1);
    }
}

//! A running plugin instance: the shared pumps and queues over either runtime (SPEC §4.4)
//! and the shutdown sequence (SPEC §4.5).

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::Duration;

use nightcrow_protocol::{
    AsyncLines, Command, DecodeError, Event, LineItem, MAX_LINE_BYTES, MAX_LOG_MESSAGE_BYTES,
    decode_command, encode_event,
};
use tokio::io::{AsyncRead, AsyncWrite, AsyncWriteExt};
use tokio::sync::{mpsc, oneshot, watch};
use tokio::time::{Instant, timeout};

use crate::process::{ExitCause, Launched, PluginProcess};
use crate::ratelimit::RateLimit;

/// Events queued host → plugin before further ones are dropped (SPEC §4.4).
pub const OUTBOUND_QUEUE: usize = 256;
/// Commands queued plugin → host before the plugin is blocked in its write (SPEC §4.4).
pub const INBOUND_QUEUE: usize = 256;
/// Time a plugin gets between `shutdown` and being forced (SPEC §4.5).
pub const SHUTDOWN_GRACE: Duration = Duration::from_millis(200);
/// After a guest closes stdout, how long its exit may take to arrive before the closed
/// stdout itself is the cause (a guest that ends closes stdout a moment before it is reaped).
const EXIT_AFTER_STDOUT_EOF: Duration = Duration::from_millis(100);
/// Rejected lines whose reason [`Health::rejections`] keeps (the first ones: they explain the
/// rest, and a flood of bad lines must not grow the record).
pub const KEPT_REJECTIONS: usize = 4;

/// Why one line a plugin wrote did not become a command.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum Rejection {
    /// It was a complete UTF-8 line that `decode_command` refused (shape, version, bounds).
    #[error("{0}")]
    Decode(DecodeError),
    /// It was longer than the line cap and was discarded whole.
    #[error("line longer than {cap} bytes, discarded whole")]
    TooLong { cap: usize },
    /// It was not UTF-8.
    #[error("{len}-byte line is not UTF-8")]
    NotUtf8 { len: usize },
}

/// Where an instance is in its life.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum PluginState {
    /// Running; events are accepted.
    Running,
    /// `shutdown` was queued; the grace period runs.
    Stopping,
    /// It ended; the cause has been logged.
    Ended {
        /// Why it ended.
        cause: ExitCause,
        /// Whether the host had asked it to stop (then the end is not a failure).
        requested: bool,
    },
}

/// A snapshot of an instance's health, for the hub and for clients.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Health {
    /// Life cycle state.
    pub state: PluginState,
    /// Events dropped because the outbound queue was full or the plugin stopped reading.
    pub dropped_events: u64,
    /// Plugin lines that did not become commands (too long, not UTF-8, bad shape, version).
    pub rejected_lines: u64,
    /// Why the first [`KEPT_REJECTIONS`] of them were rejected.
    pub rejections: Vec<Rejection>,
    /// Lines the plugin wrote to stderr.
    pub stderr_lines: u64,
    /// Decoded commands waiting for the hub.
    pub queued_commands: usize,
}

#[derive(Debug, Default)]
struct Counters {
    dropped_events: AtomicU64,
    rejected_lines: AtomicU64,
    stderr_lines: AtomicU64,
    rejections: std::sync::Mutex<Vec<Rejection>>,
}

/// One running plugin instance. Dropping it runs the shutdown sequence in the background.
pub struct Plugin {
    name: Arc<str>,
    outbound: mpsc::Sender<Event>,
    inbound: mpsc::Receiver<Command>,
    counters: Arc<Counters>,
    stopping: Arc<AtomicBool>,
    stop: watch::Sender<bool>,
    state: watch::Receiver<PluginState>,
}

impl std::fmt::Debug for Plugin {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Plugin")
            .field("name", &self.name)
            .field("health", &self.health())
            .finish()
    }
}

impl Plugin {
    /// Wires the shared pumps to a guest a runtime has started. Must run inside a tokio
    /// runtime; the pumps are tasks on it.
    pub fn from_launched(name: &str, launched: Launched) -> Plugin {
        let name: Arc<str> = Arc::from(name);
        let counters = Arc::new(Counters::default());
        let (outbound, outbound_rx) = mpsc::channel(OUTBOUND_QUEUE);
        let (inbound_tx, inbound) = mpsc::channel(INBOUND_QUEUE);
        let (stop, stop_rx) = watch::channel(false);
        let (state_tx, state) = watch::channel(PluginState::Running);
        let (stdout_closed_tx, stdout_closed) = oneshot::channel();
        let Launched {
            stdin,
            stdout,
            stderr,
            process,
        } = launched;
        tokio::spawn(write_events(
            stdin,
            outbound_rx,
            stop_rx.clone(),
            name.clone(),
            counters.clone(),
        ));
        tokio::spawn(read_commands(
            stdout,
            inbound_tx,
            stdout_closed_tx,
            name.clone(),
            counters.clone(),
        ));
        tokio::spawn(log_stderr(stderr, name.clone(), counters.clone()));
        tokio::spawn(monitor(
            process,
            stdout_closed,
            stop_rx,
            state_tx,
            name.clone(),
        ));
        Plugin {
            name,
            outbound,
            inbound,
            counters,
            stopping: Arc::new(AtomicBool::new(false)),
            stop,
            state,
        }
    }
}

impl Plugin {
    /// The configured plugin name.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// Queues an event for the plugin. `false` if it was dropped: the queue is full (the
    /// plugin is slow; a pane never waits for it) or the instance is stopping. Dropped events
    /// are counted in [`Plugin::dropped_events`]. `Event::Shutdown` is never dropped: it
    /// starts the shutdown sequence, like [`Plugin::begin_shutdown`].
    pub fn send(&self, event: Event) -> bool {
        if event == Event::Shutdown {
            self.begin_shutdown();
            return true;
        }
        if self.stopping.load(Ordering::Acquire) || self.outbound.try_send(event).is_err() {
            self.counters.dropped_events.fetch_add(1, Ordering::Relaxed);
            return false;
        }
        true
    }

    /// The next decoded command, if one is waiting. Taking commands frees room in the
    /// inbound queue, which unblocks a plugin waiting in its write.
    pub fn try_recv(&mut self) -> Option<Command> {
        self.inbound.try_recv().ok()
    }

    /// Waits for the next decoded command; `None` once the plugin's stdout has ended and
    /// every command it wrote has been taken. Cancel-safe.
    pub async fn recv(&mut self) -> Option<Command> {
        self.inbound.recv().await
    }

    /// Events queued for the plugin and not yet written to its stdin.
    pub fn queued_events(&self) -> usize {
        self.outbound.max_capacity() - self.outbound.capacity()
    }

    /// Events dropped so far (queue full, or sent while stopping).
    pub fn dropped_events(&self) -> u64 {
        self.counters.dropped_events.load(Ordering::Relaxed)
    }

    /// Current state and counters.
    pub fn health(&self) -> Health {
        Health {
            state: self.state.borrow().clone(),
            dropped_events: self.dropped_events(),
            rejected_lines: self.counters.rejected_lines.load(Ordering::Relaxed),
            rejections: self
                .counters
                .rejections
                .lock()
                .unwrap_or_else(|poisoned| poisoned.into_inner())
                .clone(),
            stderr_lines: self.counters.stderr_lines.load(Ordering::Relaxed),
            queued_commands: self.inbound.len(),
        }
    }

    /// Waits until the instance has ended, by itself or by a shutdown; returns the cause and
    /// whether the host had asked it to stop. Cancel-safe.
    pub async fn ended(&self) -> (ExitCause, bool) {
        wait_ended(self.state.clone()).await
    }

    /// A watch on the state, for waiting on the end while `recv` borrows the plugin.
    pub(crate) fn state_watch(&self) -> watch::Receiver<PluginState> {
        self.state.clone()
    }

    /// Starts the shutdown sequence without waiting: queued events are written, then
    /// `shutdown`, then stdin is closed; after [`SHUTDOWN_GRACE`] the guest is forced.
    /// Idempotent.
    pub fn begin_shutdown(&self) {
        self.stopping.store(true, Ordering::Release);
        self.stop.send_replace(true);
    }

    /// Runs the shutdown sequence (SPEC §4.5) and waits for its end: at most
    /// [`SHUTDOWN_GRACE`] plus the time to force and reap the guest. Idempotent: later calls
    /// return the same cause at once.
    pub async fn shutdown(&self) -> ExitCause {
        self.begin_shutdown();
        self.ended().await.0
    }
}

impl Drop for Plugin {
    fn drop(&mut self) {
        self.begin_shutdown();
    }
}

/// Resolves once the state is `Ended`: its cause and whether the host asked for it.
pub(crate) async fn wait_ended(mut state: watch::Receiver<PluginState>) -> (ExitCause, bool) {
    let ended = state
        .wait_for(|state| matches!(state, PluginState::Ended { .. }))
        .await;
    match ended.as_deref() {
        Ok(PluginState::Ended { cause, requested }) => (cause.clone(), *requested),
        // The monitor task owns the sender and always publishes `Ended` before it goes;
        // it only disappears without doing so when the runtime itself is shutting down.
        _ => (ExitCause::Killed, true),
    }
}

/// Resolves once a stop is requested (or the `Plugin` is gone).
async fn stop_requested(stop: &mut watch::Receiver<bool>) {
    let _ = stop.wait_for(|stop| *stop).await;
}

/// Host → plugin: queued events, then `shutdown` once a stop is requested, then EOF.
async fn write_events(
    mut stdin: Box<dyn AsyncWrite + Send + Unpin>,
    mut events: mpsc::Receiver<Event>,
    mut stop: watch::Receiver<bool>,
    name: Arc<str>,
    counters: Arc<Counters>,
) {
    loop {
        let event = tokio::select! {
            // Queued events go out before `shutdown`; `send` refuses new ones once stopping.
            biased;
            event = events.recv() => event,
            () = stop_requested(&mut stop) => None,
        };
        let Some(event) = event else { break };
        let ok = match encode_event(&event) {
            Ok(lines) => write_lines(&mut stdin, &lines, events.is_empty()).await,
            Err(error) => {
                tracing::warn!(plugin = %name, %error, "event not sent");
                true
            }
        };
        if !ok {
            // The guest closed its stdin or ended; whatever is still queued cannot arrive.
            counters
                .dropped_events
                .fetch_add(1 + events.len() as u64, Ordering::Relaxed);
            events.close();
            return;
        }
    }
    if let Ok(line) = encode_event(&Event::Shutdown) {
        write_lines(&mut stdin, &line, true).await;
    }
    let _ = stdin.shutdown().await;
}

async fn write_lines(
    stdin: &mut (dyn AsyncWrite + Send + Unpin),
    lines: &str,
    flush: bool,
) -> bool {
    if stdin.write_all(lines.as_bytes()).await.is_err() {
        return false;
    }
    !flush || stdin.flush().await.is_ok()
}

/// Plugin → host: the capped reader, `decode_command`, the bounded inbound queue.
async fn read_commands(
    stdout: Box<dyn AsyncRead + Send + Unpin>,
    commands: mpsc::Sender<Command>,
    closed: oneshot::Sender<()>,
    name: Arc<str>,
    counters: Arc<Counters>,
) {
    let mut lines = AsyncLines::new(stdout, MAX_LINE_BYTES);
    let mut limit = RateLimit::per_second();
    let mut reject = |reason: Rejection| {
        let total = counters.rejected_lines.fetch_add(1, Ordering::Relaxed) + 1;
        if let Some(suppressed) = limit.admit(Instant::now()) {
            tracing::warn!(plugin = %name, rejected_total = total, suppressed, "plugin line dropped: {reason}");
        }
        let mut kept = counters
            .rejections
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner());
        if kept.len() < KEPT_REJECTIONS {
            kept.push(reason);
        }
    };
    loop {
        match lines.next_item().await {
            Ok(Some(LineItem::Line(line))) => match decode_command(&line) {
                // Blocks while the queue is full: that is the plugin's backpressure.
                Ok(command) => {
                    if commands.send(command).await.is_err() {
                        break;
                    }
                }
                Err(error) => reject(Rejection::Decode(error)),
            },
            Ok(Some(LineItem::TooLong { cap })) => reject(Rejection::TooLong { cap }),
            Ok(Some(LineItem::NotUtf8 { len })) => reject(Rejection::NotUtf8 { len }),
            Ok(None) => break,
            Err(error) => {
                tracing::warn!(plugin = %name, %error, "reading plugin stdout failed");
                break;
            }
        }
    }
    let _ = closed.send(());
}

/// stderr: the same capped reader, each line logged at WARN with the plugin name.
async fn log_stderr(
    stderr: Box<dyn AsyncRead + Send + Unpin>,
    name: Arc<str>,
    counters: Arc<Counters>,
) {
    let mut lines = AsyncLines::new(stderr, MAX_LINE_BYTES);
    let mut limit = RateLimit::per_second();
    while let Ok(Some(frame)) = lines.next_item().await {
        counters.stderr_lines.fetch_add(1, Ordering::Relaxed);
        let Some(suppressed) = limit.admit(Instant::now()) else {
            continue;
        };
        match frame {
            LineItem::Line(line) => {
                let line = truncate_on_char_boundary(&line, MAX_LOG_MESSAGE_BYTES);
                tracing::warn!(plugin = %name, suppressed, "stderr: {line}");
            }
            LineItem::TooLong { cap } => {
                tracing::warn!(plugin = %name, suppressed, "stderr: line longer than {cap} bytes, discarded");
            }
            LineItem::NotUtf8 { len } => {
                tracing::warn!(plugin = %name, suppressed, "stderr: {len}-byte line is not UTF-8, discarded");
            }
        }
    }
}

fn truncate_on_char_boundary(text: &str, max: usize) -> &str {
    if text.len() <= max {
        return text;
    }
    let mut end = max;
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    &text[..end]
}

/// Watches the guest: its end, a closed stdout, a stop request (then the grace and the
/// force). Publishes the end and logs its cause, once.
async fn monitor(
    mut process: Box<dyn PluginProcess>,
    mut stdout_closed: oneshot::Receiver<()>,
    mut stop: watch::Receiver<bool>,
    state: watch::Sender<PluginState>,
    name: Arc<str>,
) {
    let (cause, requested) = tokio::select! {
        // A guest that ends as asked (it read `shutdown`) may be reaped before this task
        // sees the stop request; checking the request first keeps that a requested stop.
        biased;
        () = stop_requested(&mut stop) => {
            state.send_replace(PluginState::Stopping);
            match timeout(SHUTDOWN_GRACE, process.wait()).await {
                Ok(cause) => (cause, true),
                Err(_) => (process.kill().await, true),
            }
        }
        cause = process.wait() => (cause, false),
        _ = &mut stdout_closed => match timeout(EXIT_AFTER_STDOUT_EOF, process.wait()).await {
            Ok(cause) => (cause, false),
            Err(_) => {
                process.kill().await;
                (ExitCause::ClosedStdout, false)
            }
        },
    };
    // The guest may have ended because it read `shutdown` (only written once a stop was
    // requested) while this task was in another branch: then it was still asked to.
    let requested = requested || *stop.borrow();
    if requested {
        tracing::info!(plugin = %name, %cause, "plugin stopped");
    } else {
        tracing::warn!(plugin = %name, %cause, "plugin failed");
    }
    state.send_replace(PluginState::Ended { cause, requested });
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn truncation_keeps_characters_whole() {
        assert_eq!(truncate_on_char_boundary("abc", 3), "abc");
        assert_eq!(truncate_on_char_boundary("abcd", 3), "abc");
        assert_eq!(truncate_on_char_boundary("aé", 2), "a");
        assert_eq!(truncate_on_char_boundary("", 0), "");
    }
}

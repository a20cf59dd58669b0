//! One pane's process: the PTY, the child and the three threads that serve it.

use std::io::{Read, Write};
use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::{self as std_mpsc, SyncSender, TrySendError};
use std::sync::{Arc, Condvar, Mutex, PoisonError};
use std::thread;
use std::time::{Duration, Instant};

use bytes::Bytes;
use nightcrow_guard::PaneId;
use portable_pty::{ChildKiller, CommandBuilder, MasterPty, native_pty_system};
use tokio::sync::mpsc;

use crate::typing::{Meter, Typing};
use crate::{PaneError, PaneEvent, PaneSize};

/// How long the waiter, once the child has exited, waits for the reader to reach end of
/// file before it reports the exit anyway (time in which the pane's output is held does not
/// count). A background grandchild can keep the PTY open forever; its later output is then
/// discarded, because nothing may follow `Exited`.
pub const EXIT_DRAIN_TIMEOUT: Duration = Duration::from_millis(500);

/// Chunks of input queued for a pane before [`PaneError::InputQueueFull`].
pub const INPUT_QUEUE_CHUNKS: usize = 64;

const READ_CHUNK_BYTES: usize = 8 * 1024;

/// How long a pane's process group gets after SIGHUP, and again after SIGTERM, before the
/// next, harder signal: a shell that traps HUP still dies with its pane.
pub const KILL_GRACE: Duration = Duration::from_millis(500);

/// What a pane is spawned with; the table fills it in.
pub(crate) struct SpawnSpec<'a> {
    pub(crate) pane: PaneId,
    pub(crate) command: CommandBuilder,
    pub(crate) program: &'a Path,
    pub(crate) size: PaneSize,
    pub(crate) events: mpsc::Sender<PaneEvent>,
    pub(crate) typing: Arc<Typing>,
}

/// A running (or exited but not yet released) pane process. Dropping it kills the child:
/// SIGHUP, as a closing terminal sends, then SIGTERM and SIGKILL to its process group for
/// whatever is left after [`KILL_GRACE`] each (see [`Ending`]).
pub(crate) struct PaneProcess {
    master: Box<dyn MasterPty + Send>,
    killer: Box<dyn ChildKiller + Send + Sync>,
    /// Set by the waiter once the child is reaped: from then on its pid may belong to
    /// another process, which a kill must not reach.
    reaped: Arc<AtomicBool>,
    input: SyncSender<Vec<u8>>,
    pid: Option<u32>,
    /// The kill has begun (by [`PaneProcess::end`] or drop); it is not begun twice.
    ending: bool,
    output: Arc<OutputGate>,
}

/// Whether the reader thread hands on what it reads. The hub holds a pane's output while
/// its clients are far behind on that pane, so the pane's reader, then the child, wait on
/// the PTY as under tmux, while the other panes of the hub go on.
#[derive(Debug, Default)]
struct OutputGate {
    state: Mutex<GateState>,
    changed: Condvar,
}

#[derive(Debug, Default)]
struct GateState {
    /// Since when it is held; `None` while it is open.
    held_since: Option<Instant>,
    /// How long it was held before that: what the waiter does not count as time the reader
    /// was free to reach end of file.
    held_before: Duration,
}

impl OutputGate {
    fn state(&self) -> std::sync::MutexGuard<'_, GateState> {
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }

    fn hold(&self) {
        let mut state = self.state();
        state.held_since.get_or_insert_with(Instant::now);
    }

    fn release(&self) {
        let mut state = self.state();
        if let Some(since) = state.held_since.take() {
            state.held_before += since.elapsed();
        }
        self.changed.notify_all();
    }

    fn wait_until_open(&self) {
        let _open = self
            .changed
            .wait_while(self.state(), |state| state.held_since.is_some())
            .unwrap_or_else(PoisonError::into_inner);
    }

    /// How long it has been held in all, the hold going on included.
    fn held_for(&self) -> Duration {
        let state = self.state();
        state.held_before
            + state
                .held_since
                .map_or(Duration::ZERO, |since| since.elapsed())
    }
}

/// A pane process being ended: its escalation runs on a thread of its own so that nobody
/// closing a pane waits for it, but whoever must know the pane is gone (the daemon before
/// it exits) can [`wait`](Ending::wait).
#[derive(Debug)]
pub struct Ending(Option<thread::JoinHandle<()>>);

impl Ending {
    /// Blocks until the pane's process group is gone, at most about twice [`KILL_GRACE`].
    pub fn wait(self) {
        if let Some(thread) = self.0 {
            let _ = thread.join();
        }
    }
}

impl std::fmt::Debug for PaneProcess {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PaneProcess")
            .field("pid", &self.pid)
            .finish_non_exhaustive()
    }
}

impl PaneProcess {
    /// Spawns the child in a new PTY and starts its waiter, reader and writer threads.
    ///
    /// The threads are never joined: each ends on its own when the child and the PTY are
    /// gone or the event receiver is closed, so no caller ever waits on a child. They send
    /// nothing until every thread has started, so a failed spawn emits no event for `pane`
    /// (whose id the table may then give to the next pane).
    pub(crate) fn spawn(spec: SpawnSpec<'_>) -> Result<PaneProcess, PaneError> {
        let SpawnSpec {
            pane,
            command,
            program,
            size,
            events,
            typing,
        } = spec;
        let pair = native_pty_system()
            .openpty(size.to_pty())
            .map_err(PaneError::OpenPty)?;
        let reader = pair.master.try_clone_reader().map_err(PaneError::OpenPty)?;
        let writer = pair.master.take_writer().map_err(PaneError::OpenPty)?;
        let child = pair
            .slave
            .spawn_command(command)
            .map_err(|reason| PaneError::Spawn {
                program: program.to_owned(),
                reason,
            })?;
        // Our copy of the slave must close, or the reader would never see end of file.
        drop(pair.slave);
        let mut killer = child.clone_killer();
        let pid = child.process_id();

        let output = Arc::new(OutputGate::default());
        let meter = Meter::new(pane, typing);
        match Threads::start(pane, reader, writer, events, Arc::clone(&output), meter) {
            Ok(threads) => Ok(PaneProcess {
                master: pair.master,
                killer,
                reaped: Arc::clone(&threads.reaped),
                input: threads.commit(child),
                pid,
                ending: false,
                output,
            }),
            Err((error, waiter)) => {
                let _ = killer.kill();
                match waiter {
                    Some(waiter) => {
                        let _ = waiter.send(Start {
                            child,
                            commit: false,
                        });
                    }
                    // Without a waiter thread nobody can reap it without blocking the
                    // caller; it has had SIGHUP and stays a zombie until the daemon exits.
                    None => drop(child),
                }
                Err(error)
            }
        }
    }

    pub(crate) fn pid(&self) -> Option<u32> {
        self.pid
    }

    pub(crate) fn write(&self, pane: PaneId, bytes: &[u8]) -> Result<(), PaneError> {
        match self.input.try_send(bytes.to_vec()) {
            Ok(()) => Ok(()),
            Err(TrySendError::Full(_)) => Err(PaneError::InputQueueFull(pane)),
            Err(TrySendError::Disconnected(_)) => Err(PaneError::NoProcess(pane)),
        }
    }

    /// The reader hands on nothing more (what it has read already waits with it) until
    /// [`release_output`](Self::release_output).
    pub(crate) fn hold_output(&self) {
        self.output.hold();
    }

    pub(crate) fn release_output(&self) {
        self.output.release();
    }

    pub(crate) fn resize(&self, pane: PaneId, size: PaneSize) -> Result<(), PaneError> {
        self.master
            .resize(size.to_pty())
            .map_err(|reason| PaneError::Resize { pane, reason })
    }
}

impl PaneProcess {
    /// Begins the kill (see the type's doc) and returns the escalation to wait for.
    pub(crate) fn end(&mut self) -> Ending {
        if std::mem::replace(&mut self.ending, true) {
            return Ending(None);
        }
        // A held reader would never see end of file, and its thread would stay.
        self.release_output();
        // SIGHUP on Unix, as a closing terminal would send (TerminateProcess on Windows,
        // where closing the pseudo console also ends whatever is attached to it). Once the
        // waiter has reaped the child its pid may be another process's: no signal then.
        if !self.reaped.load(Ordering::Acquire) {
            let _ = self.killer.kill();
        }
        // The group can outlive its leader (a background job that ignores SIGHUP).
        Ending(self.pid.and_then(escalate))
    }
}

impl Drop for PaneProcess {
    fn drop(&mut self) {
        drop(self.end());
    }
}

/// SIGTERM, then SIGKILL, to the process group `pid` leads (portable-pty starts every
/// pane in a session of its own, so the child's pid is its group id), each only while
/// the group still has a member after [`KILL_GRACE`].
#[cfg(unix)]
fn escalate(pid: u32) -> Option<thread::JoinHandle<()>> {
    use nix::sys::signal::{Signal, killpg};
    use nix::unistd::Pid;
    // The group id cannot name another group while any member of the pane's is alive, and
    // every signal follows a check that one is.
    let group = Pid::from_raw(i32::try_from(pid).ok()?);
    let group_outlives_grace = move || {
        let deadline = Instant::now() + KILL_GRACE;
        while Instant::now() < deadline {
            if killpg(group, None).is_err() {
                return false;
            }
            thread::sleep(Duration::from_millis(10));
        }
        killpg(group, None).is_ok()
    };
    thread::Builder::new()
        .name(format!("pane-kill-{pid}"))
        .spawn(move || {
            for signal in [Signal::SIGTERM, Signal::SIGKILL] {
                if !group_outlives_grace() {
                    return;
                }
                let _ = killpg(group, signal);
            }
        })
        .ok()
}

#[cfg(not(unix))]
fn escalate(_pid: u32) -> Option<thread::JoinHandle<()>> {
    None
}

type Child = Box<dyn portable_pty::Child + Send + Sync>;

/// Waits, once the child has exited, for the reader to reach end of file, for at most
/// [`EXIT_DRAIN_TIMEOUT`] of time in which the reader was free to read: a held reader
/// cannot get there, so the output before the exit is late rather than lost, and a
/// background job that keeps the PTY open and writing delays the exit by that much free
/// time however often the pane is held.
fn drain(eof: &std_mpsc::Receiver<()>, output: &OutputGate) {
    let started = Instant::now();
    let held_before = output.held_for();
    loop {
        output.wait_until_open();
        let held = output.held_for().saturating_sub(held_before);
        let free = started.elapsed().saturating_sub(held);
        let Some(left) = EXIT_DRAIN_TIMEOUT
            .checked_sub(free)
            .filter(|left| !left.is_zero())
        else {
            return;
        };
        if !matches!(
            eof.recv_timeout(left),
            Err(std_mpsc::RecvTimeoutError::Timeout)
        ) {
            return;
        }
    }
}

/// What the waiter thread is handed once the other threads exist.
struct Start {
    child: Child,
    /// `false` when the spawn failed: reap the child, report nothing.
    commit: bool,
}

/// A pane's threads, started but not yet allowed to send anything.
struct Threads {
    waiter: SyncSender<Start>,
    reaped: Arc<AtomicBool>,
    reader_go: std_mpsc::Sender<()>,
    input: SyncSender<Vec<u8>>,
}

impl Threads {
    /// Starts the waiter, reader and writer threads; on failure returns the waiter's start
    /// queue, if it got that far, so the caller can hand it the child to reap.
    ///
    /// Ordering: the reader sends each chunk while holding `open`; the waiter, after the
    /// child has exited and the reader has reached end of file (or [`EXIT_DRAIN_TIMEOUT`]
    /// passed), closes `open` under the same lock and only then sends `Exited`. So every
    /// `Output` of a pane precedes its `Exited`, and nothing follows it.
    fn start(
        pane: PaneId,
        mut reader: Box<dyn Read + Send>,
        mut writer: Box<dyn Write + Send>,
        events: mpsc::Sender<PaneEvent>,
        output: Arc<OutputGate>,
        mut meter: Meter,
    ) -> Result<Threads, (PaneError, Option<SyncSender<Start>>)> {
        let thread_error = |source| PaneError::Thread { pane, source };
        let open = Arc::new(Mutex::new(true));
        let (eof_tx, eof_rx) = std_mpsc::channel::<()>();

        let reaped = Arc::new(AtomicBool::new(false));
        let waiter_reaped = Arc::clone(&reaped);
        let (waiter, start) = std_mpsc::sync_channel::<Start>(1);
        let waiter_events = events.clone();
        let waiter_open = Arc::clone(&open);
        let waiter_output = Arc::clone(&output);
        thread::Builder::new()
            .name(format!("pane-{pane}-wait"))
            .spawn(move || {
                let Ok(Start { mut child, commit }) = start.recv() else {
                    return;
                };
                let status = child.wait();
                waiter_reaped.store(true, Ordering::Release);
                if !commit {
                    return;
                }
                drain(&eof_rx, &waiter_output);
                *waiter_open.lock().unwrap_or_else(PoisonError::into_inner) = false;
                let code = match status {
                    Ok(status) if status.signal().is_none() => Some(status.exit_code()),
                    _ => None,
                };
                let _ = waiter_events.blocking_send(PaneEvent::Exited { pane, code });
            })
            .map_err(|source| (thread_error(source), None))?;

        let (reader_go, go) = std_mpsc::channel::<()>();
        let spawned = thread::Builder::new()
            .name(format!("pane-{pane}-read"))
            .spawn(move || {
                // Dropping `eof_tx` on return is the end-of-file signal.
                let _eof = eof_tx;
                if go.recv().is_err() {
                    return;
                }
                let mut buffer = vec![0; READ_CHUNK_BYTES];
                loop {
                    let n = match reader.read(&mut buffer) {
                        Ok(0) | Err(_) => return,
                        Ok(n) => n,
                    };
                    let still_open = open.lock().unwrap_or_else(PoisonError::into_inner);
                    // Under the lock, so an exit waits for the output before it: a held
                    // pane's last output is late, never lost.
                    output.wait_until_open();
                    let bytes = Bytes::copy_from_slice(&buffer[..n]);
                    if !*still_open
                        || events
                            .blocking_send(PaneEvent::Output { pane, bytes })
                            .is_err()
                    {
                        return;
                    }
                    // Not under the lock: an exit does not wait for a metered reader.
                    drop(still_open);
                    meter.pay_for(n);
                }
            });
        if let Err(source) = spawned {
            return Err((thread_error(source), Some(waiter)));
        }

        let (input, queue) = std_mpsc::sync_channel::<Vec<u8>>(INPUT_QUEUE_CHUNKS);
        let spawned = thread::Builder::new()
            .name(format!("pane-{pane}-write"))
            .spawn(move || {
                for chunk in queue {
                    if writer
                        .write_all(&chunk)
                        .and_then(|()| writer.flush())
                        .is_err()
                    {
                        return;
                    }
                }
            });
        if let Err(source) = spawned {
            return Err((thread_error(source), Some(waiter)));
        }

        Ok(Threads {
            waiter,
            reaped,
            reader_go,
            input,
        })
    }

    /// Lets the threads run and returns the input queue.
    fn commit(self, child: Child) -> SyncSender<Vec<u8>> {
        // Both receivers live until these messages arrive: their threads wait for them.
        let _ = self.waiter.send(Start {
            child,
            commit: true,
        });
        let _ = self.reader_go.send(());
        self.input
    }
}

//! A guest's limits inside its store: memory and tables through a `ResourceLimiter`, WASI
//! handles through the resource table's capacity, CPU through the shared engine's epoch
//! ticks (the slice) and the thread CPU time of its polls (the budget), and which limit (if
//! any) ended the guest.

use std::future::Future;
use std::pin::Pin;
use std::sync::atomic::{AtomicBool, AtomicU32, AtomicUsize, Ordering};
use std::sync::{Arc, OnceLock};
use std::task::{Context, Poll};
use std::time::Duration;

use wasmtime::component::ResourceTableError;
use wasmtime::{ResourceLimiter, Store, StoreLimits, StoreLimitsBuilder, UpdateDeadline};
use wasmtime_wasi::I32Exit;

use crate::cpu::{CpuBudget, PollClock};
use crate::process::ExitCause;
use crate::spec::Sandbox;

/// How often the shared engine's epoch advances; the unit of `cpu_slice_ms`.
pub const EPOCH_TICK: Duration = Duration::from_millis(10);
/// Core instances a store may hold. A Rust p2 command needs 3; a Python plugin built by
/// componentize-py 0.25 (its interpreter, libc and their shims as separate modules) needs
/// 14. Instances are fixed by the component, never grown at run time, so this bounds
/// nothing a plugin could inflate; memory is bounded by `memory_mib` and [`MAX_MEMORIES`].
pub const MAX_INSTANCES: usize = 16;
/// Tables and memories a store may hold.
pub const MAX_TABLES: usize = 8;
/// Linear memories a store may hold.
pub const MAX_MEMORIES: usize = 4;
/// WASI handles a guest may hold at once: open files and directories, sockets, streams,
/// pollables (its stdio and preopens among them). Each file, directory or socket is a file
/// descriptor of the daemon's, so this is what keeps a guest from using up the daemon's.
/// One more fails the guest like the memory limit.
pub const MAX_HANDLES: usize = 256;

/// `StoreLimits` plus a record of which limit stopped the guest, so the cause can say so.
pub(crate) struct GuestLimits {
    limits: StoreLimits,
    flags: Arc<Flags>,
}

impl GuestLimits {
    pub(crate) fn new(sandbox: &Sandbox, flags: Arc<Flags>) -> GuestLimits {
        let bytes = usize::try_from(sandbox.memory_mib)
            .unwrap_or(usize::MAX)
            .saturating_mul(1024 * 1024);
        let limits = StoreLimitsBuilder::new()
            .memory_size(bytes)
            // A table element is a pointer or two; this keeps tables within the same budget.
            .table_elements(bytes / 16)
            .instances(MAX_INSTANCES)
            .tables(MAX_TABLES)
            .memories(MAX_MEMORIES)
            .trap_on_grow_failure(true)
            .build();
        GuestLimits { limits, flags }
    }

    fn note(&self, result: &wasmtime::Result<bool>) {
        if !matches!(result, Ok(true)) {
            self.flags.memory_limit.store(true, Ordering::Release);
        }
    }
}

impl ResourceLimiter for GuestLimits {
    fn memory_growing(
        &mut self,
        current: usize,
        desired: usize,
        maximum: Option<usize>,
    ) -> wasmtime::Result<bool> {
        let result = self.limits.memory_growing(current, desired, maximum);
        self.note(&result);
        result
    }

    fn memory_grow_failed(&mut self, error: wasmtime::Error) -> wasmtime::Result<()> {
        self.limits.memory_grow_failed(error)
    }

    fn table_growing(
        &mut self,
        current: usize,
        desired: usize,
        maximum: Option<usize>,
    ) -> wasmtime::Result<bool> {
        let result = self.limits.table_growing(current, desired, maximum);
        self.note(&result);
        result
    }

    fn table_grow_failed(&mut self, error: wasmtime::Error) -> wasmtime::Result<()> {
        self.limits.table_grow_failed(error)
    }

    fn instances(&self) -> usize {
        self.limits.instances()
    }

    fn tables(&self) -> usize {
        self.limits.tables()
    }

    fn memories(&self) -> usize {
        self.limits.memories()
    }
}

/// Shared between the store's callbacks and the task that runs the guest.
#[derive(Debug, Default)]
pub(crate) struct Flags {
    /// Epoch ticks the guest has computed through since it last blocked.
    busy_ticks: AtomicU32,
    /// Set by the epoch callback when it makes the guest yield, so the task can tell that
    /// `Pending` apart from the guest blocking in a host call.
    epoch_yield: AtomicBool,
    cpu_limit: AtomicBool,
    /// Set when the guest's polls used more CPU over the window than its budget.
    cpu_budget: AtomicBool,
    memory_limit: AtomicBool,
}

/// The engine's epoch ticks, which only a guest computing needs: the ticker thread sleeps
/// while no guest is inside a poll, so an idle daemon does not wake 100 times a second.
#[derive(Debug, Default)]
pub(crate) struct Ticker {
    /// Guests being polled right now.
    running: AtomicUsize,
    thread: OnceLock<std::thread::Thread>,
}

impl Ticker {
    /// Runs the ticks for `engine` on a thread of its own until the engine is gone. One
    /// thread per engine rather than a tokio task: the engine outlives any one tokio
    /// runtime (tests create many), and a tick must never wait behind a busy executor.
    pub(crate) fn start(engine: &wasmtime::Engine) -> std::io::Result<Arc<Ticker>> {
        let ticker = Arc::new(Ticker::default());
        let engine = engine.weak();
        let ticks = Arc::clone(&ticker);
        let thread = std::thread::Builder::new()
            .name("nightcrow-epoch".to_owned())
            .spawn(move || {
                while let Some(engine) = engine.upgrade() {
                    if ticks.running.load(Ordering::Acquire) == 0 {
                        drop(engine);
                        // Woken by the first guest to start computing; the timeout lets
                        // the thread notice that the engine is gone.
                        std::thread::park_timeout(Duration::from_secs(1));
                        continue;
                    }
                    engine.increment_epoch();
                    drop(engine);
                    std::thread::sleep(EPOCH_TICK);
                }
            })?;
        let _ = ticker.thread.set(thread.thread().clone());
        Ok(ticker)
    }

    fn enter(&self) {
        if self.running.fetch_add(1, Ordering::AcqRel) == 0
            && let Some(thread) = self.thread.get()
        {
            thread.unpark();
        }
    }

    fn leave(&self) {
        self.running.fetch_sub(1, Ordering::AcqRel);
    }
}

/// Runs the guest's future: resets its busy-tick count whenever it blocks, tells the
/// ticker while the guest computes, and charges each poll's CPU time to its budget, ending
/// the guest (the future is dropped at that `Pending`, with the store) once it is used up.
pub(crate) struct CountBusy<F> {
    pub(crate) flags: Arc<Flags>,
    pub(crate) ticker: Arc<Ticker>,
    pub(crate) budget: CpuBudget,
    pub(crate) inner: Pin<Box<F>>,
}

impl<F: Future<Output = wasmtime::Result<()>>> Future for CountBusy<F> {
    type Output = F::Output;

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<F::Output> {
        self.ticker.enter();
        let clock = PollClock::start();
        let poll = self.inner.as_mut().poll(cx);
        let (used, now) = clock.stop();
        self.ticker.leave();
        if poll.is_pending() && !self.flags.epoch_yield.swap(false, Ordering::AcqRel) {
            // Pending without an epoch yield: the guest waits in a host call (stdin, a timer,
            // a full pipe). Its next run starts a fresh CPU slice (not a fresh budget).
            self.flags.busy_ticks.store(0, Ordering::Release);
        }
        if poll.is_pending() && !self.budget.charge(now, used) {
            self.flags.cpu_budget.store(true, Ordering::Release);
            return Poll::Ready(Err(wasmtime::Error::msg("CPU budget used up")));
        }
        poll
    }
}

pub(crate) fn configure_store<T: Send>(
    store: &mut Store<T>,
    sandbox: &Sandbox,
    flags: &Arc<Flags>,
) {
    let slice_ticks = sandbox
        .cpu_slice_ms
        .div_ceil(u32::try_from(EPOCH_TICK.as_millis()).unwrap_or(10))
        .max(1);
    let flags = flags.clone();
    store.set_epoch_deadline(1);
    store.epoch_deadline_callback(move |_| {
        let busy = flags.busy_ticks.fetch_add(1, Ordering::AcqRel) + 1;
        if busy > slice_ticks {
            flags.cpu_limit.store(true, Ordering::Release);
            return Ok(UpdateDeadline::Interrupt);
        }
        // Yield rather than continue: a guest that never blocks must still return to the
        // executor now and then, or aborting its task could never take effect.
        flags.epoch_yield.store(true, Ordering::Release);
        Ok(UpdateDeadline::Yield(1))
    });
}

pub(crate) fn exit_cause(
    result: wasmtime::Result<()>,
    flags: &Flags,
    sandbox: &Sandbox,
) -> ExitCause {
    let error = match result {
        Ok(()) => return ExitCause::Exited { code: 0 },
        Err(error) => error,
    };
    if let Some(exit) = error.downcast_ref::<I32Exit>() {
        return ExitCause::Exited { code: exit.0 };
    }
    if flags.cpu_budget.load(Ordering::Acquire) {
        return ExitCause::CpuBudget {
            percent: sandbox.cpu_percent,
            window_secs: sandbox.cpu_window_secs,
        };
    }
    if matches!(
        error.downcast_ref::<ResourceTableError>(),
        Some(ResourceTableError::Full)
    ) {
        return ExitCause::HandleLimit { limit: MAX_HANDLES };
    }
    if flags.cpu_limit.load(Ordering::Acquire) {
        return ExitCause::CpuLimit {
            slice_ms: sandbox.cpu_slice_ms,
        };
    }
    if flags.memory_limit.load(Ordering::Acquire) {
        return ExitCause::MemoryLimit {
            limit_mib: sandbox.memory_mib,
        };
    }
    ExitCause::Trapped {
        message: format!("{error:#}"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The ticker counts a guest as computing only while its future is polled, so the
    /// ticks stop once every guest waits (an idle daemon's CPU).
    #[tokio::test]
    async fn a_guest_counts_as_computing_only_inside_its_poll() {
        let mut config = wasmtime::Config::new();
        config.epoch_interruption(true);
        let engine = wasmtime::Engine::new(&config).unwrap();
        let ticker = Ticker::start(&engine).unwrap();
        let seen = Arc::clone(&ticker);
        let (go, wait) = tokio::sync::oneshot::channel::<()>();
        let guest = tokio::spawn(CountBusy {
            flags: Arc::new(Flags::default()),
            ticker: Arc::clone(&ticker),
            budget: CpuBudget::new(&Sandbox::default(), std::time::Instant::now()),
            inner: Box::pin(async move {
                // Inside a poll: this guest is computing.
                assert_eq!(seen.running.load(Ordering::Acquire), 1);
                let _ = wait.await;
                assert_eq!(seen.running.load(Ordering::Acquire), 1);
                Ok(())
            }),
        });
        tokio::task::yield_now().await;
        for _ in 0..100 {
            if ticker.running.load(Ordering::Acquire) == 0 {
                break;
            }
            tokio::time::sleep(Duration::from_millis(1)).await;
        }
        assert_eq!(
            ticker.running.load(Ordering::Acquire),
            0,
            "a waiting guest is not running"
        );
        go.send(()).unwrap();
        guest.await.unwrap().unwrap();
        assert_eq!(ticker.running.load(Ordering::Acquire), 0);
    }
}

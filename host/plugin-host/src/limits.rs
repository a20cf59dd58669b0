//! A guest's limits inside its store: memory and tables through a `ResourceLimiter`, CPU
//! through the shared engine's epoch ticks, and which limit (if any) ended the guest.

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU32, Ordering};
use std::task::{Context, Poll};
use std::time::Duration;

use wasmtime::{ResourceLimiter, Store, StoreLimits, StoreLimitsBuilder, UpdateDeadline};
use wasmtime_wasi::I32Exit;

use crate::process::ExitCause;
use crate::spec::Sandbox;

/// How often the shared engine's epoch advances; the unit of `cpu_slice_ms`.
pub const EPOCH_TICK: Duration = Duration::from_millis(10);
/// Core instances a store may hold; a Rust p2 command needs 3.
pub const MAX_INSTANCES: usize = 8;
/// Tables and memories a store may hold.
pub const MAX_TABLES: usize = 8;
/// Linear memories a store may hold.
pub const MAX_MEMORIES: usize = 4;

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
    memory_limit: AtomicBool,
}

/// Runs the guest's future and resets its busy-tick count whenever it blocks.
pub(crate) struct CountBusy<F> {
    pub(crate) flags: Arc<Flags>,
    pub(crate) inner: Pin<Box<F>>,
}

impl<F: Future> Future for CountBusy<F> {
    type Output = F::Output;

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<F::Output> {
        let poll = self.inner.as_mut().poll(cx);
        if poll.is_pending() && !self.flags.epoch_yield.swap(false, Ordering::AcqRel) {
            // Pending without an epoch yield: the guest waits in a host call (stdin, a timer,
            // a full pipe). Its next run starts a fresh CPU slice.
            self.flags.busy_ticks.store(0, Ordering::Release);
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

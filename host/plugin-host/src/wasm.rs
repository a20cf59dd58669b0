//! The wasm runtime: a guest in a store of the shared engine, run by one tokio task, with
//! its capabilities from [`sandbox_context`] and its limits from the spec.

use std::future::Future;
use std::path::Path;
use std::pin::Pin;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU32, Ordering};
use std::task::{Context, Poll};

use tokio::io::DuplexStream;
use tokio::task::JoinHandle;
use wasmtime::{Engine, ResourceLimiter, Store, StoreLimits, StoreLimitsBuilder, UpdateDeadline};
use wasmtime_wasi::cli::{AsyncStdinStream, AsyncStdoutStream};
use wasmtime_wasi::p1::WasiP1Ctx;
use wasmtime_wasi::sockets::SocketAddrUse;
use wasmtime_wasi::{
    FsPerms, I32Exit, ResourceTable, WasiCtx, WasiCtxBuilder, WasiCtxView, WasiView,
};

use crate::process::{BoxFuture, ExitCause, Launched, PluginProcess};
use crate::runtime::{Compiled, EPOCH_TICK};
use crate::spec::{PluginSpec, Sandbox};
use crate::{RUNTIME_DIR_VAR, StartError};

/// Bytes in flight in each stdio pipe between host and guest (SPEC §4.4).
pub const PIPE_BYTES: usize = 64 * 1024;
/// Bytes the guest may hand over per stdout/stderr write before it waits for the pipe.
const WRITE_BUDGET: usize = 4096;
/// Largest `get-random-bytes` request: host-side buffers are not counted in `memory_mib`.
const MAX_RANDOM_BYTES: u64 = 1024 * 1024;
/// Core instances a store may hold; a Rust p2 command needs 3.
pub const MAX_INSTANCES: usize = 8;
/// Tables and memories a store may hold.
pub const MAX_TABLES: usize = 8;
/// Linear memories a store may hold.
pub const MAX_MEMORIES: usize = 4;

/// Store data of a p2 component.
pub(crate) struct ComponentState {
    wasi: WasiCtx,
    table: ResourceTable,
    limits: GuestLimits,
}

impl WasiView for ComponentState {
    fn ctx(&mut self) -> WasiCtxView<'_> {
        WasiCtxView {
            ctx: &mut self.wasi,
            table: &mut self.table,
        }
    }
}

/// Store data of a wasip1 core module.
pub(crate) struct ModuleState {
    pub(crate) wasi: WasiP1Ctx,
    limits: GuestLimits,
}

/// The guest's three pipes as WASI sees them.
struct GuestPipes {
    stdin: AsyncStdinStream,
    stdout: AsyncStdoutStream,
    stderr: AsyncStdoutStream,
}

/// The host's ends of the same pipes.
struct HostPipes {
    stdin: DuplexStream,
    stdout: DuplexStream,
    stderr: DuplexStream,
}

fn pipes() -> (GuestPipes, HostPipes) {
    let (host_stdin, guest_stdin) = tokio::io::duplex(PIPE_BYTES);
    let (host_stdout, guest_stdout) = tokio::io::duplex(PIPE_BYTES);
    let (host_stderr, guest_stderr) = tokio::io::duplex(PIPE_BYTES);
    let guest = GuestPipes {
        stdin: AsyncStdinStream::new(guest_stdin),
        stdout: AsyncStdoutStream::new(WRITE_BUDGET, guest_stdout),
        // The same bounded pipe as stdout, never `MemoryOutputPipe` (which traps the guest
        // when full): the host drains stderr continuously, so a chatty guest waits at most
        // for the log pump, and nothing it writes is held beyond the pipe.
        stderr: AsyncStdoutStream::new(WRITE_BUDGET, guest_stderr),
    };
    let host = HostPipes {
        stdin: host_stdin,
        stdout: host_stdout,
        stderr: host_stderr,
    };
    (guest, host)
}

/// The one place a guest's capabilities are decided: everything in the returned builder
/// comes from the spec, nothing from the daemon's own environment (no `inherit_*` call
/// exists in this crate). The caller builds it once, for a p2 or a p1 guest.
fn sandbox_context(spec: &PluginSpec, pipes: GuestPipes) -> Result<WasiCtxBuilder, StartError> {
    let sandbox = &spec.sandbox;
    let mut builder = WasiCtxBuilder::new();
    builder
        .stdin(pipes.stdin)
        .stdout(pipes.stdout)
        .stderr(pipes.stderr)
        .arg(&spec.name)
        .args(&spec.args)
        .max_random_size(MAX_RANDOM_BYTES);
    for (key, value) in &spec.env {
        if key != RUNTIME_DIR_VAR {
            builder.env(key, value);
        }
    }
    builder.env(RUNTIME_DIR_VAR, spec.runtime_dir.to_string_lossy());
    for dir in &sandbox.read_dirs {
        let guest_path = preopen_guest_path(dir)?;
        builder
            .preopened_dir(dir, guest_path, FsPerms::ReadOnly)
            .map_err(|error| StartError::BadSandbox {
                message: format!("read_dirs entry {}: {error:#}", dir.display()),
            })?;
    }
    builder.allow_udp(false).allow_ip_name_lookup(false);
    builder.allow_tcp(!sandbox.connect.is_empty());
    let rules = Arc::new(sandbox.connect.clone());
    builder.socket_addr_check(move |addr, usage| {
        let allowed = match usage {
            // wasmtime 48 checks the implicit bind of an unbound socket (unspecified address,
            // port 0) before every `connect`; refusing it would refuse every connect. Any
            // other bind, and every listen, is refused.
            SocketAddrUse::TcpBind => addr.ip().is_unspecified() && addr.port() == 0,
            SocketAddrUse::TcpConnect => rules.iter().any(|rule| rule.allows(addr)),
            _ => false,
        };
        Box::pin(async move { allowed })
    });
    Ok(builder)
}

fn preopen_guest_path(dir: &Path) -> Result<&str, StartError> {
    if !dir.is_absolute() {
        return Err(StartError::BadSandbox {
            message: format!("read_dirs entry {} is not an absolute path", dir.display()),
        });
    }
    dir.to_str().ok_or_else(|| StartError::BadSandbox {
        message: format!("read_dirs entry {} is not valid UTF-8", dir.display()),
    })
}

/// `StoreLimits` plus a record of which limit stopped the guest, so the cause can say so.
struct GuestLimits {
    limits: StoreLimits,
    flags: Arc<Flags>,
}

impl GuestLimits {
    fn new(sandbox: &Sandbox, flags: Arc<Flags>) -> GuestLimits {
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
struct Flags {
    /// Epoch ticks the guest has computed through since it last blocked.
    busy_ticks: AtomicU32,
    /// Set by the epoch callback when it makes the guest yield, so the task can tell that
    /// `Pending` apart from the guest blocking in a host call.
    epoch_yield: AtomicBool,
    cpu_limit: AtomicBool,
    memory_limit: AtomicBool,
}

/// Runs the guest's future and resets its busy-tick count whenever it blocks.
struct CountBusy<F> {
    flags: Arc<Flags>,
    inner: Pin<Box<F>>,
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

fn configure_store<T: Send>(store: &mut Store<T>, sandbox: &Sandbox, flags: &Arc<Flags>) {
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

/// Instantiates `compiled` for `spec` and starts the task that runs it.
pub(crate) fn launch(
    engine: &Engine,
    compiled: Compiled,
    spec: &PluginSpec,
) -> Result<Launched, StartError> {
    let (guest_pipes, host_pipes) = pipes();
    let mut builder = sandbox_context(spec, guest_pipes)?;
    let flags = Arc::new(Flags::default());
    let sandbox = spec.sandbox.clone();
    let run: BoxFuture<'static, wasmtime::Result<()>> = match compiled {
        Compiled::Component(pre) => {
            let state = ComponentState {
                wasi: builder.build(),
                table: ResourceTable::new(),
                limits: GuestLimits::new(&sandbox, flags.clone()),
            };
            let mut store = Store::new(engine, state);
            store.limiter(|state| &mut state.limits);
            configure_store(&mut store, &sandbox, &flags);
            Box::pin(async move {
                let command = pre.instantiate_async(&mut store).await?;
                command
                    .wasi_cli_run()
                    .call_run(&mut store)
                    .await?
                    .map_err(|()| wasmtime::Error::new(I32Exit(1)))
            })
        }
        Compiled::Module(pre) => {
            let state = ModuleState {
                wasi: builder.build_p1(),
                limits: GuestLimits::new(&sandbox, flags.clone()),
            };
            let mut store = Store::new(engine, state);
            store.limiter(|state| &mut state.limits);
            configure_store(&mut store, &sandbox, &flags);
            Box::pin(async move {
                let instance = pre.instantiate_async(&mut store).await?;
                let start = instance.get_typed_func::<(), ()>(&mut store, "_start")?;
                start.call_async(&mut store, ()).await
            })
        }
    };
    let run_flags = flags.clone();
    let task = tokio::spawn(async move {
        let result = CountBusy {
            flags: run_flags.clone(),
            inner: Box::pin(run),
        }
        .await;
        exit_cause(result, &run_flags, &sandbox)
    });
    Ok(Launched {
        stdin: Box::new(host_pipes.stdin),
        stdout: Box::new(host_pipes.stdout),
        stderr: Box::new(host_pipes.stderr),
        process: Box::new(WasmProcess { task, ended: None }),
    })
}

fn exit_cause(result: wasmtime::Result<()>, flags: &Flags, sandbox: &Sandbox) -> ExitCause {
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

/// The task running one guest. Ending it drops the store, which closes the guest's pipes.
struct WasmProcess {
    task: JoinHandle<ExitCause>,
    /// A `JoinHandle` must not be polled after it completed.
    ended: Option<ExitCause>,
}

impl WasmProcess {
    fn joined(result: Result<ExitCause, tokio::task::JoinError>) -> ExitCause {
        match result {
            Ok(cause) => cause,
            Err(error) if error.is_cancelled() => ExitCause::Killed,
            Err(error) => ExitCause::Trapped {
                message: format!("host task failed: {error}"),
            },
        }
    }
}

impl PluginProcess for WasmProcess {
    fn wait(&mut self) -> BoxFuture<'_, ExitCause> {
        Box::pin(async move {
            if self.ended.is_none() {
                self.ended = Some(WasmProcess::joined((&mut self.task).await));
            }
            self.ended.clone().unwrap_or(ExitCause::Killed)
        })
    }

    fn kill(&mut self) -> BoxFuture<'_, ExitCause> {
        // Epochs do not reach a guest parked in a host call; aborting the task does, and a
        // computing guest yields every tick, so the abort lands within one tick.
        self.task.abort();
        self.wait()
    }
}

impl Drop for WasmProcess {
    fn drop(&mut self) {
        self.task.abort();
    }
}

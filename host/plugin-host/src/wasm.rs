//! The wasm launch: a compiled guest instantiated in a store of the shared engine and run by
//! one tokio task, with its capabilities from [`sandbox_context`] (the WASI context) and its
//! limits from [`crate::limits`].

use std::path::Path;
use std::sync::Arc;

use tokio::io::DuplexStream;
use tokio::task::JoinHandle;
use wasmtime::{Engine, Store};
use wasmtime_wasi::cli::{AsyncStdinStream, AsyncStdoutStream};
use wasmtime_wasi::p1::WasiP1Ctx;
use wasmtime_wasi::p2::bindings::CommandPre;
use wasmtime_wasi::sockets::SocketAddrUse;
use wasmtime_wasi::{
    FsPerms, I32Exit, ResourceTable, WasiCtx, WasiCtxBuilder, WasiCtxView, WasiView,
};

use crate::cpu::CpuBudget;
use crate::limits::{
    CountBusy, Flags, GuestLimits, MAX_HANDLES, Ticker, configure_store, exit_cause,
};
use crate::process::{BoxFuture, ExitCause, Launched, PluginProcess};
use crate::spec::PluginSpec;
use crate::{RUNTIME_DIR_VAR, StartError};

/// Bytes in flight in each stdio pipe between host and guest (SPEC §4.4).
pub const PIPE_BYTES: usize = 64 * 1024;
/// Bytes the guest may hand over per stdout/stderr write before it waits for the pipe.
const WRITE_BUDGET: usize = 4096;
/// Largest `get-random-bytes` request: host-side buffers are not counted in `memory_mib`.
const MAX_RANDOM_BYTES: u64 = 1024 * 1024;

/// A plugin file compiled, audited and linked: ready to instantiate.
#[derive(Clone)]
pub(crate) enum Compiled {
    Component(CommandPre<ComponentState>),
    Module(wasmtime::InstancePre<ModuleState>),
}

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

/// Instantiates `compiled` for `spec` and starts the task that runs it.
pub(crate) fn launch(
    engine: &Engine,
    ticker: &Arc<Ticker>,
    compiled: Compiled,
    spec: &PluginSpec,
) -> Result<Launched, StartError> {
    let (guest_pipes, host_pipes) = pipes();
    let mut builder = sandbox_context(spec, guest_pipes)?;
    let flags = Arc::new(Flags::default());
    let sandbox = spec.sandbox.clone();
    let run: BoxFuture<'static, wasmtime::Result<()>> = match compiled {
        Compiled::Component(pre) => {
            let mut table = ResourceTable::new();
            table.set_max_capacity(MAX_HANDLES);
            let state = ComponentState {
                wasi: builder.build(),
                table,
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
            let mut wasi = builder.build_p1();
            // The preview-1 adapter keeps its handles in a table of the same kind.
            wasi.ctx().table.set_max_capacity(MAX_HANDLES);
            let state = ModuleState {
                wasi,
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
    let ticker = Arc::clone(ticker);
    let task = tokio::spawn(async move {
        let result = CountBusy {
            flags: run_flags.clone(),
            ticker,
            budget: CpuBudget::new(&sandbox, std::time::Instant::now()),
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

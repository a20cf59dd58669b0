//! The one contract both runtimes implement: a running guest with three byte streams and a
//! way to learn how it ended or to end it.

use std::fmt;
use std::future::Future;
use std::pin::Pin;

use tokio::io::{AsyncRead, AsyncWrite};

use nightcrow_guard::escape_controls;

/// A boxed, sendable future, as the trait's methods return them.
pub type BoxFuture<'a, T> = Pin<Box<dyn Future<Output = T> + Send + 'a>>;

/// A started guest: the wasm task or the native child. Everything above it (pumps, queues,
/// bounds, shutdown, supervision) is shared and does not know which one it drives.
pub trait PluginProcess: Send {
    /// Resolves once the guest has ended, with why. Cancel-safe: dropping the future and
    /// calling again later loses nothing.
    fn wait(&mut self) -> BoxFuture<'_, ExitCause>;

    /// Ends the guest now (aborts the wasm task, kills the child) and reaps it. Returns how
    /// it ended, which is [`ExitCause::Killed`] unless it ended by itself first.
    fn kill(&mut self) -> BoxFuture<'_, ExitCause>;
}

/// A guest as a runtime hands it to the pumps.
pub struct Launched {
    /// The guest's stdin: events go here.
    pub stdin: Box<dyn AsyncWrite + Send + Unpin>,
    /// The guest's stdout: commands come from here.
    pub stdout: Box<dyn AsyncRead + Send + Unpin>,
    /// The guest's stderr: diagnostics, logged at WARN.
    pub stderr: Box<dyn AsyncRead + Send + Unpin>,
    /// The guest itself.
    pub process: Box<dyn PluginProcess>,
}

/// How a plugin instance ended (or failed to start). Logged once, reported to the hub.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ExitCause {
    /// The guest exited by itself (`main` returned or `exit(code)`); a plugin is meant to
    /// run until `shutdown`, so this counts as a failure unless the host asked it to stop.
    Exited { code: i32 },
    /// A native child ended by a signal it did not get from us.
    Signalled { signal: i32 },
    /// The guest trapped (wasm) for a reason other than a limit.
    Trapped { message: String },
    /// The guest tried to grow a memory or table past `memory_mib`.
    MemoryLimit { limit_mib: u32 },
    /// The guest computed longer than `cpu_slice_ms` without blocking.
    CpuLimit { slice_ms: u32 },
    /// The guest used more than `cpu_percent` of a core over `cpu_window_secs`.
    CpuBudget { percent: u32, window_secs: u32 },
    /// The guest tried to hold more than `limit` WASI handles (files, sockets, streams).
    HandleLimit { limit: usize },
    /// The guest closed its stdout while still running; it was then stopped.
    ClosedStdout,
    /// The host ended it (shutdown grace expired, or the instance was dropped).
    Killed,
    /// The instance never ran: loading, auditing, compiling or spawning failed.
    StartFailed { message: String },
}

impl fmt::Display for ExitCause {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ExitCause::Exited { code } => write!(f, "exited with code {code}"),
            ExitCause::Signalled { signal } => write!(f, "killed by signal {signal}"),
            // A trap message carries names from the module's name section: the guest's text.
            ExitCause::Trapped { message } => write!(f, "trapped: {}", escape_controls(message)),
            ExitCause::MemoryLimit { limit_mib } => {
                write!(f, "memory limit hit: grew past {limit_mib} MiB")
            }
            ExitCause::CpuLimit { slice_ms } => {
                write!(f, "CPU limit hit: ran over {slice_ms} ms without blocking")
            }
            ExitCause::CpuBudget {
                percent,
                window_secs,
            } => write!(
                f,
                "CPU budget hit: used more than {percent} % of a core over {window_secs} s"
            ),
            ExitCause::HandleLimit { limit } => write!(
                f,
                "handle limit hit: tried to hold more than {limit} open files, sockets or streams"
            ),
            ExitCause::ClosedStdout => write!(f, "closed its stdout"),
            ExitCause::Killed => write!(f, "stopped by the host"),
            ExitCause::StartFailed { message } => {
                write!(f, "failed to start: {}", escape_controls(message))
            }
        }
    }
}

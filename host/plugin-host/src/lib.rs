//! nightcrow's plugin host: runs a plugin as a sandboxed WebAssembly guest in wasmtime (or,
//! when configured, as a trusted native child) and connects it to the hub through bounded
//! queues.
//!
//! **Invariant: a plugin gets nothing it was not granted, and nothing it does can make the
//! daemon block, allocate without bound or run its code.** Concretely:
//! - A wasm guest's imports are audited against the plugin world (`wit/world.wit`,
//!   [`ALLOWED_IMPORTS`]) before it is instantiated; its WASI context is built in one
//!   function from its [`Sandbox`] only (read-only preopens, loopback connect allowlist, the
//!   listed env, no UDP, no name lookup; nothing inherited from the daemon).
//! - Memory and table growth past `memory_mib` traps; computing longer than `cpu_slice_ms`
//!   without blocking is interrupted by the shared engine's epoch ticks; using more than
//!   `cpu_percent` of a core over `cpu_window_secs` (both runtimes) or holding more than
//!   [`MAX_HANDLES`] WASI handles ends the guest.
//! - Every byte a plugin writes goes through the capped line reader and
//!   `nightcrow_protocol::decode_command`; a decoded [`Command`](nightcrow_protocol::Command)
//!   grants nothing (the guard judges it). Queues are bounded both ways: events to a slow
//!   plugin are dropped and counted, a flooding plugin is blocked in its write.
//! - Shutdown always ends the guest within [`SHUTDOWN_GRACE`] plus the time to kill it, even
//!   one blocked in a host call or spinning; native children die with the daemon.
//!
//! The pieces: one [`PluginRuntime`] per daemon (engine, epoch ticker, compilation cache);
//! [`PluginRuntime::start`] turns a [`PluginSpec`] into a running [`Plugin`] through the
//! [`PluginProcess`] trait (wasm or native); a [`Supervisor`] restarts a failing plugin
//! with backoff and reports [`Lifecycle`] steps to the hub.
//!
//! ```no_run
//! # async fn demo(spec: nightcrow_plugin_host::PluginSpec) -> anyhow::Result<()> {
//! use nightcrow_plugin_host::{PluginRuntime, RuntimeConfig};
//! use nightcrow_protocol::Event;
//!
//! let runtime = PluginRuntime::new(RuntimeConfig::user_default())?;
//! let mut plugin = runtime.start(&spec).await?;
//! plugin.send(Event::Shutdown);
//! while let Some(command) = plugin.recv().await {
//!     // hand `command` to the guard
//! #   drop(command);
//! }
//! # Ok(()) }
//! ```

mod audit;
mod cpu;
mod engine;
mod limits;
mod native;
mod plugin;
mod process;
mod ratelimit;
mod runtime;
mod sniff;
mod spec;
mod supervisor;
mod usage;
mod wasm;

use std::path::PathBuf;

pub use audit::{ALLOWED_IMPORTS, WASIP1_MODULE, abilities, import_allowed};
pub use engine::{CacheStats, RuntimeConfig, RuntimeError};
pub use limits::{EPOCH_TICK, MAX_HANDLES, MAX_INSTANCES, MAX_MEMORIES, MAX_TABLES};
pub use nightcrow_guard::ConnectRuleError;
pub use plugin::{
    Health, INBOUND_QUEUE, KEPT_REJECTIONS, OUTBOUND_QUEUE, Plugin, PluginState, Rejection,
    SHUTDOWN_GRACE,
};
pub use process::{BoxFuture, ExitCause, Launched, PluginProcess};
pub use ratelimit::RateLimit;
pub use runtime::PluginRuntime;
pub use spec::{ConnectRule, PluginSource, PluginSpec, RuntimeKind, Sandbox};
pub use supervisor::{Backoff, Decision, Lifecycle, RestartPolicy, Supervised, Supervisor};
pub use usage::Usage;
pub use wasm::PIPE_BYTES;

/// The variable that tells a plugin its runtime dir (SPEC §5.4); always set, last.
pub const RUNTIME_DIR_VAR: &str = "NIGHTCROW_PLUGIN_RUNTIME_DIR";

/// Why a plugin instance could not be started. The text is meant for the person who
/// configured the plugin.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum StartError {
    #[error("cannot read {}: {message}", path.display())]
    Read { path: PathBuf, message: String },
    #[error("{plugin} is neither a WebAssembly component nor a core module")]
    NotWasm { plugin: String },
    #[error("compiling the plugin failed: {message}")]
    Compile { message: String },
    #[error(
        "the plugin imports interfaces outside the nightcrow plugin world (refused): {}",
        offending.join(", ")
    )]
    ImportsRefused { offending: Vec<String> },
    #[error("the plugin is not a runnable WASI command: {message}")]
    NotACommand { message: String },
    #[error("invalid sandbox: {message}")]
    BadSandbox { message: String },
    #[error("{plugin} is built into the daemon and runs only as wasm, not as a native plugin")]
    NativeBuiltin { plugin: String },
    #[error("{plugin} is an installed wasm plugin and runs only as wasm, not as a native plugin")]
    NativeInstalled { plugin: String },
    #[error("cannot start {}: {message}", path.display())]
    Spawn { path: PathBuf, message: String },
}

//! What the config says about panes and plugins that the runtime then uses as it is: which
//! runtime runs a plugin, and the startup commands that open panes and opt them into a
//! plugin. They live here, beside [`Sandbox`](crate::Sandbox) and
//! [`GuardLimits`](crate::GuardLimits), so that the config resolves into the very types the
//! hub and the plugin host take, and there is one of each.

/// The two runtimes behind one contract (SPEC §4.1).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum RuntimeKind {
    /// A WASI p2 command component (or a wasip1 core module) run by wasmtime in the daemon.
    Wasm,
    /// A child process with piped stdio: trusted code, no sandbox.
    Native,
}

/// One `[[startup_command]]`: a pane the hub opens when it starts (and on `start`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StartupCommand {
    /// The pane's title.
    pub name: Option<String>,
    /// Run through the shell as one argv item; also the original launch command every
    /// relaunch line is composed from.
    pub command: String,
    /// The plugin this pane is opted into (SPEC §6.5: only startup commands opt panes in);
    /// the config checks that it names a declared plugin.
    pub plugin: Option<String>,
}

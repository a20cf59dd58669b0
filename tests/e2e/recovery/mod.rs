//! The bundled recovery plugin end to end: every scenario runs on both runtimes — the native
//! build as a plain child process, and `builtin:nightcrow-recovery` as a wasm component in the
//! real runtime (`nightcrow plugin run`) with only the grants of SPEC §9.4 — and a file clock
//! (SDK test hook) so hours of waiting take no time and no test sleeps.
//!
//! Synchronisation without sleeps: after each step the test sends `pane_idle` for a token the
//! plugin has never seen; the plugin answers with `watch_pane` for it, and since it handles
//! stdin in order, every command before that answer belongs to the steps before.
//!
//! - `harness`: the plugin on either runtime, and the checks every test ends with: no
//!   transcript text of any fixture in anything the plugin wrote, no file written.
//! - `codex`: the real rollouts appended to a temp `CODEX_HOME` as Codex writes them.
//! - `opencode`: a real loopback HTTP server replaying OpenCode's captured event streams and
//!   status polls.
//! - `stand_in`: the scripted Codex of `nightcrow demo` is recognised and resumed.
//! - `sandbox`: the component without its grants: it sees nothing, says nothing, keeps
//!   running.

mod codex;
mod harness;
pub(crate) mod opencode;
mod sandbox;
mod stand_in;

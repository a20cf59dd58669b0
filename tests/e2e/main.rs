//! End-to-end tests of the `nightcrow` binary and its layers, in one test binary so that it
//! links once (STYLE item 2).
//!
//! - [`cache`]: the compilation cache across starts and daemon restarts, and its owner check.
//! - [`cli`]: the binary's commands, run as a real process in a temporary `NIGHTCROW_HOME`.
//! - [`conformance`]: `nightcrow plugin test` on the bundled plugin, the examples and every
//!   guest of `tests/plugins`: the good ones pass, each hostile one fails the rule it breaks.
//! - [`daemon`]: the daemon as a real process: one per home, 0600 socket, `kill -9` and
//!   the stale socket, a socket client attaching twice, config errors, reload, the demo.
//! - [`exhaustion`]: a background daemon under a low open-files limit against idle and slow
//!   web connections and a plugin flooding `log`: `status` keeps answering, the log stays
//!   small.
//! - [`notify`]: the daemon's `[[notify]]` hooks with no client attached: a command gets
//!   the event in its environment, a loopback HTTP receiver the ntfy-style POST.
//! - [`overnight`]: the overnight case in a real terminal: the bundled plugin in the daemon
//!   watching the interactive Codex stand-in and an OpenCode pane; keys never end an
//!   episode, a quit or a crash while it is open resumes the session, a prompt that carries on
//!   ends it.
//! - [`plugin_cli`]: `nightcrow plugin check|run` as real processes, and a native plugin
//!   dying with its host after `kill -9`.
//! - [`registry`]: `plugin install|list|remove`, and an installed file refused once it
//!   no longer has its recorded hash.
//! - [`restart`]: the daemon going away and coming back: `kill -9` at the limit and the
//!   session resumed at the reset in a TUI that stayed attached, `nightcrow restart`,
//!   `kill -9` in a loop never tearing the state journal, untrusted journals dropped piece by
//!   piece.
//! - [`wasip1`]: core modules through wasmtime's preview-1 support, and their import audit.
//! - [`recovery`]: the bundled recovery plugin against real Codex rollouts and a replaying
//!   OpenCode server, every scenario natively and as a wasm component in the real runtime,
//!   and without its sandbox grants.
//! - [`sizes`]: two `nightcrow attach` of different sizes on one pane: the latest client's
//!   size, the claim key, and the size given back when one detaches.
//! - [`tui`]: `nightcrow attach` and the demo's TUI in a real terminal (tmux): typing,
//!   tabs, full-screen programs, resize, detach and re-attach, recovery markers and chips,
//!   attention, cancel, a flood, and the terminal restored on every way out.
//! - [`web`]: the web client in headless Chromium: login and its refusals, cross-origin
//!   WebSockets, bad and oversize messages, typing, two panes, resize, reconnect and reload
//!   without duplicates, recovery in the toolbar with Cancel, attention, a screenshot.
//! - [`util`]: the plugin harness — one shared
//!   [`PluginRuntime`](nightcrow_plugin_host::PluginRuntime) (one `Engine`, compiled
//!   components cached under `CARGO_TARGET_TMPDIR`), specs for the guests of
//!   `tests/plugins`, a tracing capture to assert what the host logged, the companion echo
//!   plugin that proves the host stays responsive, and RSS readings.
//! - [`hostile`]: the hostile-plugin suite (SPEC §10, issue 5): every guest of
//!   `tests/plugins` misbehaving in one way, each case run on both runtimes where it applies.

mod cache;
mod cli;
mod conformance;
mod daemon;
mod exhaustion;
mod hostile;
mod notify;
mod overnight;
mod plugin_cli;
mod recovery;
mod registry;
mod restart;
mod sizes;
mod tui;
mod unattended;
mod util;
mod wasip1;
mod web;

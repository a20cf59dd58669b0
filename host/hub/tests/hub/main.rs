//! The hub's tests: real PTYs, real plugins built from source (wasm, and natively where the
//! native runtime is the point), one test binary.
//!
//! - `util`: a hub in a temp repository, an attached client, captured logs, the scripted
//!   guest's view of its events;
//! - `panes`: output to clients and plugins, tokens, idleness, input rules;
//! - `recovery`: exit, holds, relaunch, cancel, expiry, user input, budgets, `watch_pane`;
//! - `reload`: plugin sets across reloads, supervision;
//! - `hostile`: plugins that flood, spin or bomb memory while panes stream.
#![cfg(unix)]

mod hostile;
mod panes;
mod recovery;
mod reload;
mod util;

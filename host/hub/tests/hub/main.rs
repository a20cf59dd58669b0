//! The hub's tests: real PTYs, real plugins built from source (wasm, and natively where the
//! native runtime is the point), one test binary.
//!
//! - `util`: a hub in a temp repository, an attached client, captured logs, the scripted
//!   guest's view of its events;
//! - `panes`: output to clients and plugins, tokens, idleness, input rules;
//! - `recovery`: exit, holds, relaunch, cancel, expiry, user input, budgets, `watch_pane`;
//! - `relay`: the one loop between a client and a connection, over a transport of channels;
//! - `reload`: plugin sets across reloads, supervision;
//! - `restore`: a hub given a previous daemon's panes, and its snapshots;
//! - `notices`: the moments published for a person who is away, with or without clients;
//! - `sizes`: which client's size a shared pane follows, and what a detach gives back;
//! - `titles`: the titles programs set, to every client and across a restart;
//! - `hostile`: plugins that flood, spin or bomb memory while panes stream.
#![cfg(unix)]

/// Runs each named `async fn case(kind: RuntimeKind)` as `case::wasm` and `case::native`:
/// the hub treats both runtimes alike, and these cases prove it for the paths that matter.
#[macro_export]
macro_rules! on_both_runtimes {
    ($($case:ident),* $(,)?) => {$(
        mod $case {
            #[tokio::test]
            async fn wasm() {
                super::$case(nightcrow_plugin_host::RuntimeKind::Wasm).await;
            }
            #[tokio::test]
            async fn native() {
                super::$case(nightcrow_plugin_host::RuntimeKind::Native).await;
            }
        }
    )*};
}

mod hostile;
mod notices;
mod panes;
mod recovery;
mod relay;
mod reload;
mod restore;
mod sizes;
mod titles;
mod util;

//! The `nightcrow` binary: daemon, CLI and TUI client in one program.
//!
//! Only the argument surface exists so far; the daemon, `demo` and the clients arrive with
//! the hub and daemon layers (see `docs/ARCHITECTURE.md`).
#![forbid(unsafe_code)]

use clap::Parser;

/// Terminal session daemon with a sandboxed WebAssembly plugin host for AI coding CLIs.
///
/// Speaks plugin protocol v3. Panes, the daemon and `nightcrow demo` are not built yet.
#[derive(Debug, Parser)]
#[command(name = "nightcrow", version, about, long_about = None)]
struct Cli {}

fn main() {
    let Cli {} = Cli::parse();
    println!(
        "nightcrow {} (plugin protocol v{}): the daemon is not built yet; see README.md",
        env!("CARGO_PKG_VERSION"),
        nightcrow_protocol::PROTOCOL_VERSION
    );
}

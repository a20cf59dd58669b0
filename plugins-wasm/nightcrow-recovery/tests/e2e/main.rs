//! The native build of the plugin as a real child process: host events in on stdin, commands
//! out on stdout, and a file clock (SDK test hook) so hours of waiting take no time and no
//! test sleeps. One test binary, so it links once.
//!
//! Synchronisation without sleeps: after each step the test sends `pane_idle` for a token the
//! plugin has never seen; the plugin answers with `watch_pane` for it, and since it handles
//! stdin in order, every command before that answer belongs to the steps before.
//!
//! - `util`: the harness (`Plugin`), and the checks every test ends with: no transcript text
//!   of any fixture in anything the plugin wrote, no file written.
//! - `codex`: the real rollouts appended to a temp `CODEX_HOME` as Codex writes them.
//! - `opencode`: a real loopback HTTP server replaying OpenCode's captured event streams and
//!   status polls.

mod codex;
mod opencode;
mod util;

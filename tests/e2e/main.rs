//! End-to-end tests of the `nightcrow` binary and its layers, in one test binary (one link).
//!
//! - `cli`: the binary's commands, run as a real process in a temporary `NIGHTCROW_HOME`.

mod cli;

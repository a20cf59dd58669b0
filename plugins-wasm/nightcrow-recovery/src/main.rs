//! nightcrow-recovery: the bundled recovery plugin (being written; see docs/recovery.md).
#![forbid(unsafe_code)]
#![allow(dead_code, reason = "skeleton: the state machine that uses the interface is next")]

mod provider;

fn main() {}

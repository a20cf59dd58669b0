//! Tests of the protocol crate, in one binary:
//! - `golden`: the v3 corpus round-trips byte for byte; every bad-line class is refused.
//! - `reader`: the capped line reader at its boundaries, fed whole, byte by byte and split.
//! - `props`: property tests for the codec and the reader.

mod golden;
mod props;
mod reader;
mod util;

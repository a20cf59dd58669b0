//! The hub's clock: tokio's, read as a std instant (the pane table and the guard take std
//! instants), so that a test that pauses and advances tokio's time moves every deadline the
//! hub keeps — idleness, relaunch holds, output turns, client pauses — together. Outside such
//! a test it reads as `Instant::now`.

use std::time::Instant;

pub(crate) fn now() -> Instant {
    tokio::time::Instant::now().into_std()
}

//! nightcrow-plugin-sdk (being written): clocks for now.
#![forbid(unsafe_code)]

mod clock;

pub use clock::{Clock, FileClock, Now, SystemClock};

/// Environment variable naming a [`FileClock`] file; tests only.
pub const FAKE_CLOCK_ENV: &str = "NIGHTCROW_PLUGIN_FAKE_CLOCK";

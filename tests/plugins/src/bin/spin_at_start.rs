//! Hostile: computes from the start without a host call, forever. With `spin_ms=N` it
//! instead sleeps `sleep_ms=M` (default 1) after every N ms of work: each sleep starts a new
//! CPU slice, so only a CPU budget over a window stops it.
use std::time::{Duration, Instant};

use nightcrow_test_plugins::{arg, spin_forever};

fn main() {
    let Some(spin_ms) = arg("spin_ms") else {
        spin_forever();
    };
    let spin = Duration::from_millis(spin_ms.parse().expect("spin_ms=N"));
    let sleep =
        Duration::from_millis(arg("sleep_ms").map_or(1, |ms| ms.parse().expect("sleep_ms=N")));
    let mut turns = 0u64;
    loop {
        let began = Instant::now();
        while began.elapsed() < spin {
            turns = std::hint::black_box(turns.wrapping_add(1));
        }
        std::thread::sleep(sleep);
    }
}

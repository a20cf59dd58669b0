//! Hostile: allocates and touches memory in 4 MiB steps until the host's limit stops it,
//! logging every 16 MiB. Gives up at 1 GiB (`memory_bomb: unchecked at 1024 MiB`) so that a
//! host without a limit fails the test instead of the machine.
use nightcrow_protocol::LogLevel;
use nightcrow_test_plugins::{log, park_forever};

const STEP: usize = 4 << 20;

fn main() {
    let mut hoard: Vec<Vec<u8>> = Vec::new();
    while hoard.len() * STEP < 1 << 30 {
        hoard.push(vec![0xA5; STEP]);
        let mib = (hoard.len() * STEP) >> 20;
        if mib.is_multiple_of(16) {
            log(LogLevel::Info, format!("memory_bomb: holding {mib} MiB"));
        }
    }
    log(LogLevel::Error, "memory_bomb: unchecked at 1024 MiB");
    park_forever();
}

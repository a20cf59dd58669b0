//! Hostile: opens the file `open=PATH` (inside a read grant) or connects to `connect=ADDR`
//! over and over, keeping every handle, and logs `hoard_handles: holding N` every 16. At the
//! first refusal it logs `hoard_handles: refused after N: ERROR`; at 2000 it logs
//! `hoard_handles: unchecked at 2000` (so a host without a cap fails the test, not the
//! machine). Either way it then parks.
use std::any::Any;

use nightcrow_protocol::LogLevel;
use nightcrow_test_plugins::{arg, log, park_forever};

const GIVE_UP: usize = 2000;

fn main() {
    let open = arg("open");
    let connect = arg("connect");
    let mut held: Vec<Box<dyn Any>> = Vec::new();
    while held.len() < GIVE_UP {
        let handle: std::io::Result<Box<dyn Any>> = match (&open, &connect) {
            (Some(path), _) => std::fs::File::open(path).map(|file| Box::new(file) as Box<dyn Any>),
            (None, Some(address)) => std::net::TcpStream::connect(address.as_str())
                .map(|socket| Box::new(socket) as Box<dyn Any>),
            (None, None) => panic!("hoard_handles needs open=PATH or connect=ADDR"),
        };
        match handle {
            Ok(handle) => held.push(handle),
            Err(error) => {
                log(
                    LogLevel::Error,
                    format!("hoard_handles: refused after {}: {error}", held.len()),
                );
                park_forever();
            }
        }
        if held.len().is_multiple_of(16) {
            log(
                LogLevel::Info,
                format!("hoard_handles: holding {}", held.len()),
            );
        }
    }
    log(
        LogLevel::Error,
        format!("hoard_handles: unchecked at {GIVE_UP}"),
    );
    park_forever();
}

//! Hostile (and the throughput benchmark's source): writes valid `log` commands as fast as
//! it can, numbered from 1 (`"flood N …"`), padded so each line is `bytes=N` long
//! (default 200), at the level `level=debug|info|warn|error` (default debug). Stops after
//! `count=N` lines (default: never) and then echoes.
use nightcrow_protocol::{Command, LogLevel, encode_command};
use nightcrow_test_plugins::{arg, echo_until_shutdown, write_raw};

fn main() {
    let count: u64 = arg("count").map_or(u64::MAX, |n| n.parse().expect("count=N"));
    let bytes: usize = arg("bytes").map_or(200, |n| n.parse().expect("bytes=N"));
    let level = match arg("level").as_deref() {
        None | Some("debug") => LogLevel::Debug,
        Some("info") => LogLevel::Info,
        Some("warn") => LogLevel::Warn,
        Some("error") => LogLevel::Error,
        Some(other) => panic!("level={other}: not debug, info, warn or error"),
    };
    let template = |n: u64, padding: usize| Command::Log {
        level,
        message: format!("flood {n:020} {}", ".".repeat(padding)),
    };
    let overhead = encode_command(&template(0, 0)).expect("short log").len();
    let padding = bytes.saturating_sub(overhead);
    let mut batch = Vec::with_capacity(64 * bytes);
    for n in 1..=count {
        batch.extend_from_slice(
            encode_command(&template(n, padding))
                .expect("fits")
                .as_bytes(),
        );
        if n.is_multiple_of(64) || n == count {
            write_raw(&batch);
            batch.clear();
        }
    }
    echo_until_shutdown();
}

//! Hostile: sends `count=N` (default 4) well-formed `log` commands with a 1 MiB message each,
//! far over the line cap, then says it is still speaking and echoes.
use nightcrow_test_plugins::{arg, echo_until_shutdown, still_speaking, write_raw};

fn main() {
    let count: usize = arg("count").map_or(4, |n| n.parse().expect("count=N"));
    let message = "m".repeat(1 << 20);
    let line = format!(r#"{{"cmd":"log","v":3,"level":"info","message":"{message}"}}"#) + "\n";
    for _ in 0..count {
        write_raw(line.as_bytes());
    }
    still_speaking("long_lines");
    echo_until_shutdown();
}

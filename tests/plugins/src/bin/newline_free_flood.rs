//! Hostile: writes `bytes=N` bytes (default 100 MiB) without a newline, then ends the line and
//! says it is still speaking, then echoes.
use nightcrow_test_plugins::{arg, echo_until_shutdown, still_speaking, write_raw};

fn main() {
    let total: usize = arg("bytes").map_or(100 << 20, |n| n.parse().expect("bytes=N"));
    let chunk = vec![b'x'; 64 << 10];
    let mut left = total;
    while left > 0 {
        let now = left.min(chunk.len());
        write_raw(&chunk[..now]);
        left -= now;
    }
    write_raw(b"\n");
    still_speaking("newline_free_flood");
    echo_until_shutdown();
}

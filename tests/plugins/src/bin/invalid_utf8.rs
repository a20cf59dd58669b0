//! Hostile: sends lines that are not UTF-8 — a bare invalid byte, a `log` command whose
//! message holds a lone continuation byte, a truncated multi-byte sequence, an encoded
//! surrogate — then says it is still speaking and echoes.
use nightcrow_test_plugins::{echo_until_shutdown, still_speaking, write_raw};

/// The lines written, in order; each is `\n`-terminated and invalid UTF-8.
const BROKEN: [&[u8]; 4] = [
    b"\xff\n",
    b"{\"cmd\":\"log\",\"v\":3,\"level\":\"info\",\"message\":\"\x80\"}\n",
    b"{\"cmd\":\"log\",\"v\":3,\"level\":\"info\",\"message\":\"\xe2\x82\"}\n",
    b"{\"cmd\":\"log\",\"v\":3,\"level\":\"info\",\"message\":\"\xed\xa0\x80\"}\n",
];

fn main() {
    for line in BROKEN {
        write_raw(line);
    }
    still_speaking("invalid_utf8");
    echo_until_shutdown();
}

//! Hostile: sends well-formed commands of other protocol versions (2, 4, the string "3",
//! none, a huge number), then says it is still speaking and echoes.
use nightcrow_test_plugins::{echo_until_shutdown, still_speaking, write_raw};

const WRONG: [&str; 5] = [
    r#"{"cmd":"log","v":2,"level":"info","message":"from v2"}"#,
    r#"{"cmd":"log","v":4,"level":"info","message":"from v4"}"#,
    r#"{"cmd":"log","v":"3","level":"info","message":"string version"}"#,
    r#"{"cmd":"log","level":"info","message":"no version"}"#,
    r#"{"cmd":"log","v":18446744073709551619,"level":"info","message":"huge version"}"#,
];

fn main() {
    for line in WRONG {
        write_raw(format!("{line}\n").as_bytes());
    }
    still_speaking("wrong_version");
    echo_until_shutdown();
}

//! Hostile: exits at once with `code=N` (default 1), after one line on stderr.
use nightcrow_test_plugins::arg;

fn main() {
    let code: i32 = arg("code").map_or(1, |n| n.parse().expect("code=N"));
    eprintln!("exit_failure: exiting with {code}");
    std::process::exit(code);
}

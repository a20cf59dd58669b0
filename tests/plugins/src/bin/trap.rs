//! Hostile: aborts at once (a wasm `unreachable` trap; SIGABRT natively), after one line on
//! stderr.
fn main() {
    eprintln!("trap: aborting");
    std::process::abort();
}

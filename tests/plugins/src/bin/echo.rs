//! Conformance guest: answers each event with a deterministic command
//! (`nightcrow_test_plugins::echo_reply`) and exits cleanly on `shutdown`.
fn main() {
    nightcrow_test_plugins::echo_until_shutdown();
}

//! Hostile: spins forever before reading anything (a runaway, stopped only by the CPU slice).
fn main() {
    nightcrow_test_plugins::spin_forever();
}

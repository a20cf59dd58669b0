//! PTY integration tests.

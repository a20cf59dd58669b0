//! The plugins bundled with nightcrow, addressed as `builtin:<name>` in the config.
//!
//! Built from the workspace's own source by `build.rs` (a nested `cargo build --target
//! wasm32-wasip2`, see `nightcrow-guest-build`) and embedded with `include_bytes!`, so the
//! binary carries exactly the component its source describes. This crate only hands out
//! bytes; checking, compiling and sandboxing them is the plugin runtime's job.
//!
//! [`NAMES`] is the one list of them: the config checks `builtin:<name>` against it. The
//! `embed` feature (on by default) adds the components; the config builds without it.
//!
//! ```
//! let wasm = nightcrow_builtin::lookup("builtin:nightcrow-recovery").expect("bundled");
//! assert_eq!(&wasm[..4], b"\0asm");
//! assert!(nightcrow_builtin::lookup("builtin:nope").is_none());
//! ```
#![forbid(unsafe_code)]

#[cfg(feature = "embed")]
mod generated {
    include!(concat!(env!("OUT_DIR"), "/builtin.rs"));
}

/// The `builtin:` prefix of a bundled plugin's `command`.
pub const PREFIX: &str = "builtin:";

/// Names of the bundled plugins (without the prefix).
pub const NAMES: &[&str] = &["nightcrow-recovery"];

#[cfg(feature = "embed")]
/// The wasm component of a bundled plugin, by `builtin:<name>` or by bare name.
pub fn lookup(name: &str) -> Option<&'static [u8]> {
    match name.strip_prefix(PREFIX).unwrap_or(name) {
        "nightcrow-recovery" => Some(generated::NIGHTCROW_RECOVERY_WASM),
        _ => None,
    }
}

#[cfg(all(test, feature = "embed"))]
mod tests {
    use super::*;

    #[test]
    fn every_name_resolves_to_a_component() {
        for name in NAMES {
            let wasm = lookup(&format!("{PREFIX}{name}")).expect("bundled");
            // A component (layer 1), not a core module (layer 0): version 0x0d, layer 0x01.
            assert_eq!(&wasm[..8], b"\0asm\x0d\0\x01\0", "{name}");
        }
        assert!(lookup("builtin:nightcrow").is_none());
        assert!(lookup("").is_none());
    }
}

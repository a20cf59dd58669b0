//! Paths of the test guests of `tests/plugins`, built from source by this crate's build
//! script: `<NAME>_WASM` (a wasm32-wasip2 component) and `<NAME>_NATIVE` (an executable for
//! the host) per guest, plus `FOREIGN_IMPORT_WASM`, a component that imports an interface
//! outside the plugin world. The same paths are grouped per guest as [`Guest`] constants
//! (`ECHO`, `PROBE`, …). `RECOVERY_NATIVE` is the bundled recovery plugin built for the
//! host (its wasm build is embedded by `nightcrow-builtin`).
//!
//! **Invariant:** [`foreach_guest!`] names every artifact, so a test module that expands it
//! with an "a test of this name exists" macro fails to compile when a guest has no test.
//!
//! ```
//! assert!(std::path::Path::new(nightcrow_test_plugin_artifacts::ECHO_WASM).is_file());
//! assert!(std::path::Path::new(nightcrow_test_plugin_artifacts::ECHO_NATIVE).is_file());
//! ```
#![forbid(unsafe_code)]

/// One guest's artifacts.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Guest {
    /// The guest's name: its `src/bin/<name>.rs`.
    pub name: &'static str,
    /// Path of the wasm32-wasip2 component.
    pub wasm: &'static str,
    /// Path of the native executable; `None` for a guest that exists only as wasm.
    pub native: Option<&'static str>,
}

include!(concat!(env!("OUT_DIR"), "/guests.rs"));

//! Paths of the example plugins under `examples/plugins`, built from source by this crate's
//! build script, so the tests run exactly what an author following the examples would build:
//! - [`REGEX_ATTENTION_WASM`] / [`REGEX_ATTENTION_NATIVE`]: the Rust example, built with
//!   cargo for `wasm32-wasip2` and for the host;
//! - [`PYTHON_STATUS_WASM`]: the Python example, built with componentize-py
//!   [`COMPONENTIZE_PY_VERSION`] (installed with pip into a virtualenv under `target/` when
//!   missing; `COMPONENTIZE_PY` names another binary).
//!
//! ```
//! assert!(std::path::Path::new(nightcrow_example_artifacts::PYTHON_STATUS_WASM).is_file());
//! ```
#![forbid(unsafe_code)]

include!(concat!(env!("OUT_DIR"), "/examples.rs"));

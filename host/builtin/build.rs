//! Builds the bundled plugins from source: `nightcrow-recovery` for wasm32-wasip2, embedded.
//! Its native build, which only tests run, is `tests/plugin-artifacts`' job: a first `cargo
//! run` does not pay for it.

use std::fmt::Write;

use nightcrow_guest_build::{GuestTarget, build};

const PACKAGE: &str = "nightcrow-recovery";

fn main() {
    if std::env::var_os("CARGO_FEATURE_EMBED").is_none() {
        return;
    }
    let wasm = build(PACKAGE, GuestTarget::Wasm);
    let wasm = wasm
        .iter()
        .find(|guest| guest.name == PACKAGE)
        .unwrap_or_else(|| panic!("the {PACKAGE} build produced no {PACKAGE} binary"))
        .path
        .clone();
    let mut generated = String::new();
    writeln!(
        generated,
        "/// The `{PACKAGE}` component, built for wasm32-wasip2 from this workspace.\n\
         pub static NIGHTCROW_RECOVERY_WASM: &[u8] = include_bytes!({wasm:?});"
    )
    .expect("writing to a String");
    let out = std::path::PathBuf::from(std::env::var_os("OUT_DIR").expect("set by cargo"));
    std::fs::write(out.join("builtin.rs"), generated).expect("write builtin.rs");
}

//! Keeps the documentation and a few code rules honest, mechanically.

use std::fs;
use std::path::{Path, PathBuf};

fn root() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

/// Every Rust file under `dir`, skipping build output.
fn rust_files(dir: &Path, found: &mut Vec<PathBuf>) {
    for entry in fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        let name = path.file_name().unwrap().to_string_lossy();
        if path.is_dir() {
            if name != "target" && !name.starts_with('.') {
                rust_files(&path, found);
            }
        } else if name.ends_with(".rs") {
            found.push(path);
        }
    }
}

fn crate_sources() -> Vec<PathBuf> {
    let mut found = Vec::new();
    for dir in ["host", "plugins-wasm", "tests"] {
        rust_files(&root().join(dir), &mut found);
    }
    found
}

#[test]
fn every_library_root_starts_with_crate_docs() {
    let missing: Vec<_> = crate_sources()
        .into_iter()
        .filter(|path| path.ends_with("src/lib.rs"))
        .filter(|path| !fs::read_to_string(path).unwrap().starts_with("//!"))
        .collect();
    assert!(missing.is_empty(), "lib.rs without `//!` docs: {missing:?}");
}

#[test]
fn the_host_never_inherits_anything_into_a_plugin() {
    let offenders: Vec<_> = crate_sources()
        .into_iter()
        .filter(|path| path.starts_with(root().join("host")))
        .filter(|path| fs::read_to_string(path).unwrap().contains(".inherit_"))
        .collect();
    assert!(
        offenders.is_empty(),
        "`inherit_*` under host/: {offenders:?}"
    );
}

#[test]
fn every_path_the_architecture_names_exists() {
    let text = fs::read_to_string(root().join("docs/ARCHITECTURE.md")).unwrap();
    let named: Vec<&str> = text
        .split('`')
        .skip(1)
        .step_by(2)
        .filter(|span| span.contains('/') && !span.contains(' '))
        .collect();
    assert!(named.len() > 10, "found only {named:?}");
    let missing: Vec<_> = named
        .into_iter()
        .filter(|path| !root().join(path).exists())
        .collect();
    assert!(
        missing.is_empty(),
        "ARCHITECTURE.md names missing paths: {missing:?}"
    );
}

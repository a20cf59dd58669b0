//! Build-script helper that compiles guest crates of this workspace (the bundled plugin and
//! the test plugins) with a nested `cargo build`.
//!
//! The nested build uses its own target directory (`target/guests`), so it never waits on the
//! outer build's lock, and the guests' dep-info files become `cargo:rerun-if-changed` lines, so
//! the outer build reruns the nested one only when a guest source changed. A failed nested
//! build panics with cargo's own output, which is what a build script should do.
#![forbid(unsafe_code)]

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

/// What the guests are compiled for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum GuestTarget {
    /// `wasm32-wasip2` components.
    Wasm,
    /// The host's own target, for the native-fallback runtime.
    Native,
}

/// One compiled binary of a guest package.
#[derive(Debug, Clone)]
pub struct Guest {
    /// The binary's name (`src/bin/<name>.rs`, or the package's main binary).
    pub name: String,
    /// Absolute path of the built artifact (`.wasm` component or native executable).
    pub path: PathBuf,
}

/// Builds every binary of `package` in release mode for `target`; returns them sorted by name.
///
/// Call from a `build.rs` only: it reads `CARGO`, `CARGO_MANIFEST_DIR` and `TARGET` as cargo
/// sets them for build scripts and prints `cargo:` directives.
pub fn build(package: &str, target: GuestTarget) -> Vec<Guest> {
    let workspace = workspace_root();
    let triple = match target {
        GuestTarget::Wasm => "wasm32-wasip2".to_owned(),
        GuestTarget::Native => {
            std::env::var("TARGET").expect("cargo sets TARGET for build scripts")
        }
    };
    if target == GuestTarget::Wasm {
        let rustc = std::env::var_os("RUSTC").unwrap_or_else(|| "rustc".into());
        if let Some(missing) = missing_std(Command::new(rustc), &triple) {
            panic!("{missing}");
        }
    }
    let mut command = Command::new(std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into()));
    command
        .current_dir(&workspace)
        .args([
            "build",
            "--release",
            "--bins",
            "--message-format=json-render-diagnostics",
        ])
        .args(["--package", package, "--target", &triple, "--target-dir"])
        .arg(workspace.join("target").join("guests"))
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    // Flags exported for the outer crate (coverage, sanitizers) must not leak into guests,
    // nor must `cargo clippy`'s wrapper: under it the guests would be linted with the outer
    // run's `-D warnings` instead of built.
    for var in [
        "CARGO_ENCODED_RUSTFLAGS",
        "RUSTFLAGS",
        "CARGO_TARGET_DIR",
        "CARGO_BUILD_TARGET",
        "RUSTC_WORKSPACE_WRAPPER",
        "CLIPPY_ARGS",
        "CLIPPY_CONF_DIR",
    ] {
        command.env_remove(var);
    }
    let output = command
        .output()
        .expect("failed to run the nested cargo build");
    let messages: Vec<serde_json::Value> = String::from_utf8_lossy(&output.stdout)
        .lines()
        .filter_map(|line| serde_json::from_str::<serde_json::Value>(line).ok())
        .collect();
    if !output.status.success() {
        // Cargo renders the compiler's diagnostics on its stderr; show them, or the failure
        // says nothing about its cause.
        let errors = String::from_utf8_lossy(&output.stderr);
        eprintln!("{errors}");
        if missing_std_in(&errors) {
            panic!(
                "building guest package {package} for {triple} failed\n{}",
                install_hint(&triple)
            );
        }
        panic!("building guest package {package} for {triple} failed");
    }

    let mut package_dirs = std::collections::BTreeSet::new();
    let mut guests: Vec<Guest> = messages
        .iter()
        .filter(|message| message["reason"] == "compiler-artifact")
        .filter(|message| {
            message["target"]["kind"]
                .as_array()
                .is_some_and(|k| k.contains(&"bin".into()))
        })
        .filter(|message| {
            message["package_id"]
                .as_str()
                .is_some_and(|id| names_package(id, package))
        })
        .filter_map(|message| {
            // Dep-info names the sources of the binaries that exist; a new `src/bin/*.rs`
            // (or a manifest edit) shows only as a change somewhere in the package directory.
            let manifest = Path::new(message["manifest_path"].as_str()?);
            package_dirs.insert(manifest.parent()?.to_path_buf());
            let path = PathBuf::from(message["executable"].as_str()?);
            Some(Guest {
                name: message["target"]["name"].as_str()?.to_owned(),
                path,
            })
        })
        .collect();
    for dir in &package_dirs {
        println!("cargo:rerun-if-changed={}", dir.display());
    }
    for guest in &guests {
        emit_rerun_lines(&guest.path.with_extension("d"));
    }
    guests.sort_by(|a, b| a.name.cmp(&b.name));
    guests
}

/// Why nothing can be built for `triple` with this `rustc`, if its standard library is not
/// installed: without it the nested build fails minutes in, on the first crate.
fn missing_std(mut rustc: Command, triple: &str) -> Option<String> {
    let printed = rustc
        .args(["--print", "target-libdir", "--target", triple])
        .stderr(Stdio::null())
        .output()
        .ok()
        .filter(|output| output.status.success())
        .map(|output| String::from_utf8_lossy(&output.stdout).trim().to_owned());
    let Some(libdir) = printed else {
        return Some(format!(
            "this Rust does not know the target {triple}.\n{}",
            install_hint(triple)
        ));
    };
    let has_std = std::fs::read_dir(&libdir).is_ok_and(|entries| {
        entries.flatten().any(|entry| {
            let name = entry.file_name();
            let name = name.to_string_lossy();
            name.starts_with("libstd-") && name.ends_with(".rlib")
        })
    });
    (!has_std).then(|| {
        format!(
            "the Rust standard library for {triple} is not installed ({libdir} has no \
             libstd).\n{}",
            install_hint(triple)
        )
    })
}

/// Whether a failed build's `stderr` says the target's standard library is missing.
fn missing_std_in(stderr: &str) -> bool {
    stderr.contains("can't find crate for `std`") || stderr.contains("can't find crate for `core`")
}

fn install_hint(triple: &str) -> String {
    format!(
        "The plugins bundled with nightcrow and its test plugins are built for {triple}. \
         Run `rustup toolchain install` in the repository root (it installs the toolchain \
         rust-toolchain.toml names, with its targets), or `rustup target add {triple}`."
    )
}

fn workspace_root() -> PathBuf {
    let manifest = PathBuf::from(std::env::var_os("CARGO_MANIFEST_DIR").expect("set by cargo"));
    manifest
        .ancestors()
        .find(|dir| {
            std::fs::read_to_string(dir.join("Cargo.toml"))
                .is_ok_and(|text| text.lines().any(|line| line.trim() == "[workspace]"))
        })
        .expect("the guest build runs inside the nightcrow workspace")
        .to_path_buf()
}

/// Package ids look like `path+file:///…/dir#name@0.1.0` (or `#0.1.0` when the directory is
/// named like the package).
fn names_package(package_id: &str, package: &str) -> bool {
    let Some((location, fragment)) = package_id.rsplit_once('#') else {
        return false;
    };
    match fragment.split_once('@') {
        Some((name, _version)) => name == package,
        None => location.rsplit('/').next() == Some(package),
    }
}

fn emit_rerun_lines(dep_info: &Path) {
    let text = std::fs::read_to_string(dep_info).expect("the nested build writes dep-info");
    for source in dep_info_sources(&text) {
        println!("cargo:rerun-if-changed={}", source.display());
    }
}

/// Sources of the first rule of a Makefile-style dep-info file (`out: src1 src2 …`, spaces
/// inside paths escaped with a backslash).
fn dep_info_sources(text: &str) -> Vec<PathBuf> {
    let rule = text.lines().next().unwrap_or_default();
    let Some((_, sources)) = rule.split_once(": ") else {
        return Vec::new();
    };
    let mut paths = Vec::new();
    let mut current = String::new();
    let mut chars = sources.chars();
    while let Some(c) = chars.next() {
        match c {
            '\\' => current.extend(chars.next()),
            ' ' => paths
                .extend((!current.is_empty()).then(|| PathBuf::from(std::mem::take(&mut current)))),
            _ => current.push(c),
        }
    }
    paths.extend((!current.is_empty()).then(|| PathBuf::from(current)));
    paths
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rustc() -> Command {
        Command::new(std::env::var_os("RUSTC").unwrap_or_else(|| "rustc".into()))
    }

    /// A toolchain without the target, as a real rustc sees one: a sysroot that lacks it.
    fn rustc_without_targets(sysroot: &Path) -> Command {
        let mut rustc = rustc();
        rustc.arg("--sysroot").arg(sysroot);
        rustc
    }

    #[test]
    fn a_missing_target_is_named_with_the_commands_that_install_it() {
        // This repository's toolchain file installs it.
        assert_eq!(missing_std(rustc(), "wasm32-wasip2"), None);
        let empty = std::env::temp_dir().join(format!("guest-build-{}", std::process::id()));
        std::fs::create_dir_all(&empty).unwrap();
        let missing = missing_std(rustc_without_targets(&empty), "wasm32-wasip2")
            .expect("an empty sysroot has no std");
        assert!(
            missing.contains("standard library for wasm32-wasip2 is not installed")
                && missing.contains("`rustup toolchain install` in the repository root")
                && missing.contains("`rustup target add wasm32-wasip2`"),
            "{missing}"
        );
        assert!(missing_std(rustc(), "no-such-target").is_some());

        // What a build that went ahead anyway says, recognised.
        let compiled = rustc_without_targets(&empty)
            .args(["--target", "wasm32-wasip2", "--crate-type", "lib", "-"])
            .arg("--out-dir")
            .arg(&empty)
            .stdin(Stdio::null())
            .output()
            .unwrap();
        std::fs::remove_dir_all(&empty).unwrap();
        let stderr = String::from_utf8_lossy(&compiled.stderr);
        assert!(
            !compiled.status.success() && missing_std_in(&stderr),
            "{stderr}"
        );
        assert!(!missing_std_in("error[E0308]: mismatched types"));
    }

    #[test]
    fn dep_info_sources_unescape_spaces_and_skip_the_target() {
        let text = "/t/echo.wasm: /src/a\\ b.rs /src/c.rs\n\n/src/c.rs:\n";
        assert_eq!(
            dep_info_sources(text),
            [PathBuf::from("/src/a b.rs"), PathBuf::from("/src/c.rs")]
        );
    }

    #[test]
    fn package_ids_match_by_name_in_both_forms() {
        assert!(names_package(
            "path+file:///w/tests/plugins#nightcrow-test-plugins@0.1.0",
            "nightcrow-test-plugins"
        ));
        assert!(names_package(
            "path+file:///w/plugins-wasm/nightcrow-recovery#0.1.0",
            "nightcrow-recovery"
        ));
        assert!(!names_package(
            "registry+https://x#serde@1.0.0",
            "nightcrow-recovery"
        ));
    }
}

//! Builds the example plugins: the Rust one with a nested cargo (like the test guests), the
//! Python one with componentize-py, installed pinned into `target/componentize-py` if the
//! machine has none. Writes `examples.rs` with one path constant per artifact.

use std::path::{Path, PathBuf};
use std::process::Command;

use nightcrow_guest_build::{GuestTarget, build};

/// The componentize-py release the examples and docs are written for.
const COMPONENTIZE_PY_VERSION: &str = "0.25.1";

fn main() {
    let out_dir = PathBuf::from(std::env::var_os("OUT_DIR").expect("set by cargo"));
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    let wasm = one(build("regex-attention", GuestTarget::Wasm));
    let native = one(build("regex-attention", GuestTarget::Native));
    let componentize_py = componentize_py(&root);
    let python = python_example(
        &componentize_py,
        &root,
        &root.join("examples/plugins/python-status"),
    );
    let code = format!(
        "/// The componentize-py release the Python example is built with.\n\
         pub const COMPONENTIZE_PY_VERSION: &str = {COMPONENTIZE_PY_VERSION:?};\n\
         /// `examples/plugins/regex-attention` as a wasm32-wasip2 component.\n\
         pub const REGEX_ATTENTION_WASM: &str = {:?};\n\
         /// `examples/plugins/regex-attention` as a native executable.\n\
         pub const REGEX_ATTENTION_NATIVE: &str = {:?};\n\
         /// `examples/plugins/python-status` as a component built by componentize-py.\n\
         pub const PYTHON_STATUS_WASM: &str = {:?};\n\
         /// The componentize-py binary that built it.\n\
         pub const COMPONENTIZE_PY: &str = {:?};\n",
        utf8(&wasm),
        utf8(&native),
        utf8(&python),
        utf8(&componentize_py)
    );
    std::fs::write(out_dir.join("examples.rs"), code).expect("OUT_DIR is writable");
}

fn one(mut guests: Vec<nightcrow_guest_build::Guest>) -> PathBuf {
    assert_eq!(guests.len(), 1, "regex-attention has one binary");
    guests.remove(0).path
}

fn utf8(path: &Path) -> &str {
    path.to_str().expect("artifact paths are UTF-8")
}

/// `componentize-py -d wit -w nightcrow:plugin/plugin componentize app`, into
/// `target/examples/python-status.wasm`, outside `OUT_DIR` so the test and dev profiles share
/// the ~10 s build.
fn python_example(componentize_py: &Path, root: &Path, source: &Path) -> PathBuf {
    println!("cargo:rerun-if-changed={}", source.join("app.py").display());
    println!("cargo:rerun-if-env-changed=COMPONENTIZE_PY");
    let out = root.join("target/examples");
    std::fs::create_dir_all(&out).expect("target/ is writable");
    let wasm = out.join("python-status.wasm");
    let status = Command::new(componentize_py)
        .current_dir(source)
        .arg("-d")
        .arg(root.join("wit"))
        .args(["-w", "nightcrow:plugin/plugin", "componentize", "app", "-o"])
        .arg(&wasm)
        .status()
        .expect("componentize-py runs");
    assert!(status.success(), "componentize-py failed: {status}");
    wasm
}

/// `$COMPONENTIZE_PY`, else the pinned one in `target/componentize-py/venv`, installed there
/// with `python3 -m venv` and pip when missing.
fn componentize_py(root: &Path) -> PathBuf {
    if let Some(explicit) = std::env::var_os("COMPONENTIZE_PY") {
        return PathBuf::from(explicit);
    }
    let venv = root.join("target/componentize-py/venv");
    let binary = venv.join("bin/componentize-py");
    let pinned = venv.join(format!("componentize-py-{COMPONENTIZE_PY_VERSION}"));
    if binary.is_file() && pinned.is_file() {
        return binary;
    }
    let run = |command: &mut Command, what: &str| {
        let status = command
            .status()
            .unwrap_or_else(|e| panic!("{what}: {e} (python3 with venv and pip is needed to build the Python example; or set COMPONENTIZE_PY)"));
        assert!(status.success(), "{what} failed: {status}");
    };
    run(
        Command::new("python3").arg("-m").arg("venv").arg(&venv),
        "python3 -m venv",
    );
    run(
        Command::new(venv.join("bin/pip")).args([
            "install",
            "--quiet",
            &format!("componentize-py=={COMPONENTIZE_PY_VERSION}"),
        ]),
        "pip install componentize-py",
    );
    std::fs::write(&pinned, "").expect("the venv is writable");
    binary
}

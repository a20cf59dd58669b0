//! `nightcrow plugin new NAME --lang rust|python`: a starting project for a third-party
//! plugin, from the templates under `examples/plugins/templates` (embedded in the binary),
//! with a README of the two commands that build and test it.

use std::path::{Path, PathBuf};

use clap::ValueEnum;

/// Languages with a template.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum Lang {
    /// Rust, built for `wasm32-wasip2` with cargo.
    Rust,
    /// Python, built with componentize-py against the plugin world (written to `wit/`).
    Python,
}

/// (path in the project, text with `{{name}}` placeholders).
type Template = &'static [(&'static str, &'static str)];

const RUST: Template = &[
    (
        "Cargo.toml",
        include_str!("../../examples/plugins/templates/rust/Cargo.toml"),
    ),
    (
        "src/main.rs",
        include_str!("../../examples/plugins/templates/rust/src/main.rs"),
    ),
    (
        "README.md",
        include_str!("../../examples/plugins/templates/rust/README.md"),
    ),
];

const PYTHON: Template = &[
    (
        "app.py",
        include_str!("../../examples/plugins/templates/python/app.py"),
    ),
    (
        "README.md",
        include_str!("../../examples/plugins/templates/python/README.md"),
    ),
    ("wit/world.wit", include_str!("../../wit/world.wit")),
    (
        "wit/deps/cli/cli.wit",
        include_str!("../../wit/deps/cli/cli.wit"),
    ),
    (
        "wit/deps/clocks/clocks.wit",
        include_str!("../../wit/deps/clocks/clocks.wit"),
    ),
    (
        "wit/deps/filesystem/filesystem.wit",
        include_str!("../../wit/deps/filesystem/filesystem.wit"),
    ),
    (
        "wit/deps/io/io.wit",
        include_str!("../../wit/deps/io/io.wit"),
    ),
    (
        "wit/deps/random/random.wit",
        include_str!("../../wit/deps/random/random.wit"),
    ),
    (
        "wit/deps/sockets/sockets.wit",
        include_str!("../../wit/deps/sockets/sockets.wit"),
    ),
];

/// Writes the project into `./NAME` (or `dir`); refuses an existing folder.
pub fn run(name: &str, lang: Lang, dir: Option<&Path>) -> Result<(), String> {
    let valid = name.chars().next().is_some_and(|c| c.is_ascii_lowercase())
        && name
            .chars()
            .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-' || c == '_');
    if !valid {
        return Err(format!(
            "`{name}` is not a plugin name: use lowercase letters, digits, `-` and `_`, \
             starting with a letter"
        ));
    }
    let root: PathBuf = dir.map_or_else(|| PathBuf::from(name), Path::to_owned);
    if root.exists() {
        return Err(format!("{} already exists", root.display()));
    }
    let template = match lang {
        Lang::Rust => RUST,
        Lang::Python => PYTHON,
    };
    for (path, text) in template {
        let file = root.join(path);
        if let Some(parent) = file.parent() {
            std::fs::create_dir_all(parent)
                .map_err(|e| format!("cannot create {}: {e}", parent.display()))?;
        }
        std::fs::write(&file, text.replace("{{name}}", name))
            .map_err(|e| format!("cannot write {}: {e}", file.display()))?;
    }
    outln!("created {} ({lang:?} plugin `{name}`)", root.display());
    let readme = std::fs::read_to_string(root.join("README.md")).unwrap_or_default();
    out!("\n{readme}");
    Ok(())
}

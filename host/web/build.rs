//! Fetches the pinned terminal library (`@xterm/xterm`, `@xterm/addon-fit`) with `npm ci`
//! into `host/web/node_modules` when it is missing or older than `package-lock.json`; the
//! crate then embeds the files it serves (see `docs/web.md`). npm runs once per lockfile
//! change, not per build: a stamp beside the modules records the lockfile it installed.

use std::path::Path;
use std::process::Command;

fn main() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let lock = root.join("package-lock.json");
    let stamp = root.join("node_modules").join(".nightcrow-lock");
    println!("cargo::rerun-if-changed=package-lock.json");
    println!("cargo::rerun-if-changed=package.json");
    println!("cargo::rerun-if-changed=node_modules/.nightcrow-lock");
    let wanted = std::fs::read(&lock).expect("host/web/package-lock.json is part of the source");
    if std::fs::read(&stamp).ok().as_deref() == Some(wanted.as_slice()) {
        return;
    }
    let npm = if cfg!(windows) { "npm.cmd" } else { "npm" };
    let status = Command::new(npm)
        .args(["ci", "--ignore-scripts", "--no-audit", "--no-fund", "--loglevel=error"])
        .current_dir(root)
        .status()
        .unwrap_or_else(|error| {
            panic!(
                "the web client embeds xterm.js from npm, and `{npm}` could not be run ({error}): \
                 install Node.js 18 or newer with npm (Debian: apt-get install nodejs npm), then build again"
            )
        });
    assert!(
        status.success(),
        "`npm ci` in {} failed ({status}); it needs the npm registry once per lockfile change",
        root.display()
    );
    std::fs::write(&stamp, &wanted).expect("writing the npm stamp");
}

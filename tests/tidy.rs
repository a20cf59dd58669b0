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

/// The Rust files under `dir` (relative to the repository) whose text contains `needle`.
fn sources_containing(dir: &str, needle: &str) -> Vec<PathBuf> {
    crate_sources()
        .into_iter()
        .filter(|path| path.starts_with(root().join(dir)))
        .filter(|path| fs::read_to_string(path).unwrap().contains(needle))
        .collect()
}

#[test]
fn the_host_never_inherits_anything_into_a_plugin() {
    let offenders = sources_containing("host", ".inherit_");
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

/// Every module of the host crates, tests and benches folders aside.
fn host_modules() -> Vec<PathBuf> {
    let mut found = Vec::new();
    for entry in fs::read_dir(root().join("host")).unwrap() {
        let krate = entry.unwrap().path();
        let src = krate.join("src");
        // The CLI keeps its modules at the crate root, beside no `src`.
        let dir = if src.is_dir() { src } else { krate };
        rust_files(&dir, &mut found);
    }
    found.retain(|path| {
        !path.components().any(|part| {
            matches!(
                part.as_os_str().to_str(),
                Some("tests" | "benches" | "fuzz")
            )
        })
    });
    found
}

#[test]
fn every_module_starts_with_a_header_saying_its_job() {
    let modules = host_modules();
    assert!(modules.len() > 40, "found only {modules:?}");
    let missing: Vec<_> = modules
        .into_iter()
        .filter(|path| !fs::read_to_string(path).unwrap().starts_with("//!"))
        .collect();
    assert!(
        missing.is_empty(),
        "modules without a `//!` header: {missing:?}"
    );
}

/// The function a backticked span cites: `name(…)` or `Type::name` (a lower-case last
/// segment; `Type::Variant` is not a function).
fn cited_function(span: &str) -> Option<&str> {
    let is_ident = |text: &str| {
        !text.is_empty()
            && text.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')
            && !text.starts_with(|c: char| c.is_ascii_digit())
    };
    let head = span.split('(').next()?;
    let called = span.contains('(');
    let name = match head.rsplit_once("::") {
        Some((path, name)) if is_ident(path.rsplit("::").next()?) => name,
        Some(_) => return None,
        None if called => head,
        None => return None,
    };
    (is_ident(name) && name.starts_with(|c: char| c.is_ascii_lowercase())).then_some(name)
}

#[test]
fn cited_functions_are_recognised() {
    assert_eq!(cited_function("Guard::judge"), Some("judge"));
    assert_eq!(cited_function("PaneArea::of_terminal"), Some("of_terminal"));
    assert_eq!(cited_function("encode_event(…)"), Some("encode_event"));
    assert_eq!(
        cited_function("output_frame(pane, &bytes)"),
        Some("output_frame")
    );
    assert_eq!(cited_function("Frame::Output"), None);
    assert_eq!(cited_function("sandbox_context"), None);
    assert_eq!(cited_function("host/cli/main.rs"), None);
    assert_eq!(cited_function("{\"type\":\"stop\"}"), None);
}

#[test]
fn every_function_the_architecture_cites_exists() {
    let text = fs::read_to_string(root().join("docs/ARCHITECTURE.md")).unwrap();
    let cited: Vec<&str> = text
        .split('`')
        .skip(1)
        .step_by(2)
        .filter_map(cited_function)
        .collect();
    assert!(cited.len() > 10, "found only {cited:?}");
    let sources: Vec<String> = crate_sources()
        .iter()
        .map(|path| fs::read_to_string(path).unwrap())
        .collect();
    let defined = |name: &str| {
        let (call, generic) = (format!("fn {name}("), format!("fn {name}<"));
        sources
            .iter()
            .any(|source| source.contains(&call) || source.contains(&generic))
    };
    let missing: Vec<_> = cited.into_iter().filter(|name| !defined(name)).collect();
    assert!(
        missing.is_empty(),
        "ARCHITECTURE.md cites functions no source defines: {missing:?}"
    );
}

/// The crate names a manifest's `[dependencies]` table lists (not dev-dependencies).
fn dependencies(manifest: &str) -> Vec<String> {
    let text = fs::read_to_string(root().join(manifest)).unwrap();
    text.lines()
        .skip_while(|line| line.trim() != "[dependencies]")
        .skip(1)
        .take_while(|line| !line.starts_with('['))
        .filter_map(|line| line.split(['.', ' ', '=']).next())
        .filter(|name| !name.is_empty() && !name.starts_with('#'))
        .map(str::to_owned)
        .collect()
}

#[test]
fn dependencies_are_read_from_the_manifest() {
    let hub = dependencies("host/hub/Cargo.toml");
    assert!(
        hub.contains(&"nightcrow-client-protocol".to_owned()),
        "{hub:?}"
    );
    assert!(hub.contains(&"nightcrow-plugin-host".to_owned()), "{hub:?}");
    assert!(
        !hub.contains(&"tempfile".to_owned()),
        "a dev-dependency: {hub:?}"
    );
}

/// The crates that make the server: a client builds none of them.
const SERVER_CRATES: [&str; 5] = [
    "nightcrow-hub",
    "nightcrow-daemon",
    "nightcrow-plugin-host",
    "nightcrow-pane",
    "nightcrow-web",
];

/// The terminal client and the client crate speak the client protocol crate and build none
/// of the server: not the hub, the daemon, the plugin runtime (wasmtime) or the panes.
#[test]
fn the_clients_depend_on_the_protocol_not_the_server() {
    for manifest in ["host/tui/Cargo.toml", "host/client/Cargo.toml"] {
        let client = dependencies(manifest);
        let offenders: Vec<_> = client
            .iter()
            .filter(|name| SERVER_CRATES.contains(&name.as_str()))
            .collect();
        assert!(offenders.is_empty(), "{manifest} depends on {offenders:?}");
        assert!(client.contains(&"nightcrow-client-protocol".to_owned()));
    }
}

/// The benchmarks measure the daemon from outside, as a client does: they start its binary
/// and talk through the client crate, never through the server's own types.
#[test]
fn the_benchmarks_reach_the_daemon_as_a_client() {
    let benches = root().join("tests/benches");
    let mut read = 0;
    for entry in fs::read_dir(&benches).unwrap() {
        let path = entry.unwrap().path();
        let source = fs::read_to_string(&path).unwrap();
        read += 1;
        // The web crate's password hash writes the bench's config; no client talks through it.
        for server in SERVER_CRATES
            .iter()
            .filter(|name| **name != "nightcrow-web")
        {
            let module = format!("{}::", server.replace('-', "_"));
            assert!(
                !source.contains(&module),
                "{} uses {module}",
                path.display()
            );
        }
    }
    assert!(read >= 2, "read only {read} files in {}", benches.display());
}

/// Messages between clients and the daemon are tagged by `type`; every such type lives in
/// the client protocol crate, so there is one place to read the wire.
#[test]
fn client_wire_messages_live_only_in_the_client_protocol_crate() {
    let home = root().join("host/client-protocol");
    let offenders: Vec<_> = crate_sources()
        .into_iter()
        .filter(|path| !path.starts_with(&home))
        .filter(|path| {
            let text = fs::read_to_string(path).unwrap();
            text.contains(&["tag = ", "\"type\""].concat())
        })
        .collect();
    assert!(
        offenders.is_empty(),
        "serde types tagged by `type` outside host/client-protocol: {offenders:?}"
    );
}

/// The web client checks sign-in once, as a layer on its routes, not in each handler.
#[test]
fn no_web_handler_checks_sign_in_by_hand() {
    let offenders = sources_containing("host/web", "signed_in(");
    assert!(offenders.is_empty(), "`signed_in(` in {offenders:?}");
}

/// The hub's worker orchestrates three parts (slots, plugins, clients) and none of its
/// methods touches more than two of them itself: what one part's change means for the others
/// goes through the outbox (docs/ARCHITECTURE.md, "Inside host/hub"). The one exception is
/// `shutdown`, which ends each part in turn.
#[test]
fn no_worker_method_touches_more_than_two_parts() {
    let parts = ["self.slots", "self.plugins", "self.clients"];
    let mut methods = 0;
    let mut offenders = Vec::new();
    for entry in fs::read_dir(root().join("host/hub/src/worker")).unwrap() {
        let path = entry.unwrap().path();
        if path.extension().is_none_or(|ext| ext != "rs") {
            continue;
        }
        let text = fs::read_to_string(&path).unwrap();
        for body in worker_methods(&text) {
            methods += 1;
            // Teardown ends every part in turn, in the order its doc comment gives.
            if body.trim_start().starts_with("async fn shutdown(") {
                continue;
            }
            let touched: Vec<_> = parts.iter().filter(|part| body.contains(*part)).collect();
            if touched.len() > 2 {
                let name = body.lines().next().unwrap_or_default().trim().to_owned();
                offenders.push(format!("{}: {name} touches {touched:?}", path.display()));
            }
        }
    }
    assert!(
        methods >= 15,
        "found only {methods} worker methods; is the reader stale?"
    );
    assert!(offenders.is_empty(), "{offenders:#?}");
}

/// The text of each method in the file's `impl Worker` blocks, from its `fn` line on.
fn worker_methods(text: &str) -> Vec<String> {
    let mut methods = Vec::new();
    let mut inside = false;
    for line in text.lines() {
        if line.starts_with("impl Worker") {
            inside = true;
        } else if line == "}" {
            inside = false;
        } else if inside {
            let item = line.strip_prefix("    ").unwrap_or_default();
            let item = ["pub(super) ", "pub(crate) "]
                .iter()
                .fold(item, |item, visibility| item.trim_start_matches(visibility));
            if item.starts_with("fn ") || item.starts_with("async fn ") {
                methods.push(String::new());
            }
            if let Some(method) = methods.last_mut() {
                method.push_str(line);
                method.push('\n');
            }
        }
    }
    methods
}

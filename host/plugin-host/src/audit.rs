//! The import audit: a component may import only the interfaces of the plugin world
//! (`wit/world.wit`), at any `0.2.x` version. Checked before anything is instantiated.

use wasmtime::Engine;
use wasmtime::component::Component;

/// The interfaces `wit/world.wit` lets a plugin import, without their version.
///
/// A test parses the world file and checks that this list matches it exactly.
pub const ALLOWED_IMPORTS: &[&str] = &[
    "wasi:cli/environment",
    "wasi:cli/exit",
    "wasi:cli/stdin",
    "wasi:cli/stdout",
    "wasi:cli/stderr",
    "wasi:cli/terminal-input",
    "wasi:cli/terminal-output",
    "wasi:cli/terminal-stdin",
    "wasi:cli/terminal-stdout",
    "wasi:cli/terminal-stderr",
    "wasi:io/error",
    "wasi:io/poll",
    "wasi:io/streams",
    "wasi:clocks/monotonic-clock",
    "wasi:clocks/wall-clock",
    "wasi:random/random",
    "wasi:random/insecure",
    "wasi:random/insecure-seed",
    "wasi:filesystem/types",
    "wasi:filesystem/preopens",
    "wasi:sockets/network",
    "wasi:sockets/instance-network",
    "wasi:sockets/tcp",
    "wasi:sockets/tcp-create-socket",
    "wasi:sockets/udp",
    "wasi:sockets/udp-create-socket",
    "wasi:sockets/ip-name-lookup",
];

/// What importing each group of the world lets a plugin do, in a user's words, and what it
/// can reach with no grants. Every allowed interface falls in exactly one group (a test
/// checks it), so [`abilities`] never leaves an import unexplained.
const ABILITIES: &[(&[&str], &str)] = &[
    (
        &[
            "wasi:cli/stdin",
            "wasi:cli/stdout",
            "wasi:cli/stderr",
            "wasi:io/streams",
            "wasi:io/error",
            "wasi:io/poll",
            "wasi:cli/exit",
        ],
        "talk to nightcrow: read pane events and send requests, which the guard judges",
    ),
    (
        &["wasi:cli/environment"],
        "read its arguments and the variables of its [plugin.env] (none by default; nothing of yours is inherited)",
    ),
    (
        &[
            "wasi:cli/terminal-input",
            "wasi:cli/terminal-output",
            "wasi:cli/terminal-stdin",
            "wasi:cli/terminal-stdout",
            "wasi:cli/terminal-stderr",
        ],
        "ask whether it runs in a terminal (it never does)",
    ),
    (
        &["wasi:clocks/monotonic-clock", "wasi:clocks/wall-clock"],
        "read the time and wait for deadlines",
    ),
    (
        &[
            "wasi:random/random",
            "wasi:random/insecure",
            "wasi:random/insecure-seed",
        ],
        "get random numbers",
    ),
    (
        &["wasi:filesystem/types", "wasi:filesystem/preopens"],
        "read files, only in the directories its read_dirs grant lists (none by default; never write)",
    ),
    (
        &[
            "wasi:sockets/network",
            "wasi:sockets/instance-network",
            "wasi:sockets/tcp",
            "wasi:sockets/tcp-create-socket",
        ],
        "open TCP connections, only to the loopback addresses its connect grant lists (none by default)",
    ),
    (
        &[
            "wasi:sockets/udp",
            "wasi:sockets/udp-create-socket",
            "wasi:sockets/ip-name-lookup",
        ],
        "nothing with UDP or name lookup: linked for toolchains that import them, every call is refused",
    ),
];

/// What a plugin with these imports will be able to do once enabled, one sentence per
/// group of the world it imports, in the world's order. A wasip1 module's imports are one
/// module, which may use everything its preview-1 adapter maps to the same groups.
pub fn abilities(imports: &[String]) -> Vec<&'static str> {
    let interfaces: Vec<&str> = if imports.iter().any(|i| i.starts_with(WASIP1_MODULE)) {
        ALLOWED_IMPORTS.to_vec()
    } else {
        imports
            .iter()
            .filter_map(|import| import.split_once('@').map(|(name, _)| name))
            .collect()
    };
    ABILITIES
        .iter()
        .filter(|(group, _)| group.iter().any(|name| interfaces.contains(name)))
        .map(|(_, words)| *words)
        .collect()
}

/// The only import module a wasip1 core module may use.
pub const WASIP1_MODULE: &str = "wasi_snapshot_preview1";

/// Whether one component import name (`wasi:cli/stdin@0.2.6`) is in the world.
pub fn import_allowed(name: &str) -> bool {
    let Some((interface, version)) = name.split_once('@') else {
        return false;
    };
    let minor_of_0_2 = version
        .strip_prefix("0.2.")
        .is_some_and(|rest| rest.split(['-', '+']).next().is_some_and(is_number));
    minor_of_0_2 && ALLOWED_IMPORTS.contains(&interface)
}

fn is_number(text: &str) -> bool {
    !text.is_empty() && text.bytes().all(|b| b.is_ascii_digit())
}

/// Every import of `component` that is not in the world, in the component's order.
pub fn offending_component_imports(engine: &Engine, component: &Component) -> Vec<String> {
    component
        .component_type()
        .imports(engine)
        .map(|(name, _)| name)
        .filter(|name| !import_allowed(name))
        .map(str::to_owned)
        .collect()
}

/// Every import of a core module that is not a wasip1 function, as `module::name`.
pub fn offending_module_imports(module: &wasmtime::Module) -> Vec<String> {
    module
        .imports()
        .filter(|import| {
            import.module() != WASIP1_MODULE
                || !matches!(import.ty(), wasmtime::ExternType::Func(_))
        })
        .map(|import| format!("{}::{}", import.module(), import.name()))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The world file, read as text: every `import` line names an interface with a version.
    #[test]
    fn allowed_imports_match_the_world_file() {
        let world =
            std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/../../wit/world.wit"))
                .expect("wit/world.wit is readable");
        let mut in_world: Vec<&str> = world
            .lines()
            .map(str::trim)
            .filter_map(|line| line.strip_prefix("import "))
            .map(|rest| {
                let item = rest.trim_end_matches(';');
                item.split_once('@')
                    .expect("world imports carry a version")
                    .0
            })
            .collect();
        let mut ours = ALLOWED_IMPORTS.to_vec();
        in_world.sort_unstable();
        ours.sort_unstable();
        assert_eq!(ours, in_world);
    }

    #[test]
    fn every_allowed_import_is_explained_once() {
        for import in ALLOWED_IMPORTS {
            let groups = ABILITIES
                .iter()
                .filter(|(group, _)| group.contains(import))
                .count();
            assert_eq!(groups, 1, "{import}");
        }
        let only_stdio = abilities(&["wasi:cli/stdin@0.2.6".to_owned()]);
        assert_eq!(only_stdio.len(), 1);
        assert!(only_stdio[0].starts_with("talk to nightcrow"));
    }

    #[track_caller]
    fn check(name: &str, allowed: bool) {
        assert_eq!(import_allowed(name), allowed, "{name}");
    }

    #[test]
    fn import_names() {
        check("wasi:cli/stdin@0.2.6", true);
        check("wasi:cli/stdin@0.2.12", true);
        check("wasi:sockets/udp@0.2.0", true);
        check("wasi:io/streams@0.2.0-rc-2023-11-10", true);
        check("wasi:cli/stdin@0.3.0", false);
        check("wasi:cli/stdin@1.0.0", false);
        check("wasi:cli/stdin", false);
        check("wasi:http/outgoing-handler@0.2.6", false);
        check("wasi:cli/stdin@0.2.", false);
        check("my:evil/interface@0.2.6", false);
    }
}

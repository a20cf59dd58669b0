//! Builds every guest of `nightcrow-test-plugins` for wasm32-wasip2 and for the host, turns
//! `tests/plugins/foreign_import` (WAT + WIT) into a component, and writes `guests.rs`: one
//! path constant per artifact and the `foreach_guest!` macro.

use std::fmt::Write;
use std::path::{Path, PathBuf};

use nightcrow_guest_build::{Guest, GuestTarget, build};

const PACKAGE: &str = "nightcrow-test-plugins";
/// The bundled plugin, whose wasm build `nightcrow-builtin` embeds; its native build is
/// for tests only, so it is built here.
const RECOVERY: &str = "nightcrow-recovery";

fn main() {
    let wasm = build(PACKAGE, GuestTarget::Wasm);
    let native = build(PACKAGE, GuestTarget::Native);
    let names = |guests: &[Guest]| guests.iter().map(|g| g.name.clone()).collect::<Vec<_>>();
    assert_eq!(
        names(&wasm),
        names(&native),
        "every guest builds for both targets"
    );

    let out_dir = PathBuf::from(std::env::var_os("OUT_DIR").expect("set by cargo"));
    let foreign = foreign_import_component(&out_dir);
    let recovery = build(RECOVERY, GuestTarget::Native);
    let recovery = recovery
        .iter()
        .find(|guest| guest.name == RECOVERY)
        .expect("the recovery build has its binary");

    // (name, wasm path, native path) of every artifact, the foreign component last.
    let mut artifacts: Vec<(&str, &Path, Option<&Path>)> = wasm
        .iter()
        .zip(&native)
        .map(|(wasm, native)| {
            (
                wasm.name.as_str(),
                wasm.path.as_path(),
                Some(native.path.as_path()),
            )
        })
        .collect();
    artifacts.push(("foreign_import", &foreign, None));

    let mut code = format!(
        "/// The bundled `{RECOVERY}` plugin built for the host, for the native runtime's tests.\n\
         pub const RECOVERY_NATIVE: &str = {:?};\n",
        utf8(&recovery.path)
    );
    let mut invocations = String::new();
    for (name, wasm, native) in artifacts {
        let upper = name.to_uppercase();
        let native_const = match native {
            Some(path) => {
                writeln!(
                    code,
                    "/// `{name}` as a native executable.\npub const {upper}_NATIVE: &str = {:?};",
                    utf8(path)
                )
                .expect("writing to a String");
                format!("Some({upper}_NATIVE)")
            }
            None => "None".to_owned(),
        };
        writeln!(
            code,
            "/// `{name}` as a wasm32-wasip2 component.\npub const {upper}_WASM: &str = {:?};\n\
             /// The `{name}` guest.\npub const {upper}: Guest = Guest {{ name: {name:?}, \
             wasm: {upper}_WASM, native: {native_const} }};",
            utf8(wasm)
        )
        .expect("writing to a String");
        writeln!(invocations, "        $macro!({name});").expect("writing to a String");
    }
    write!(
        code,
        "/// Invokes `$macro!(name)` once per guest, so a test module can require a test for each.
#[macro_export]
macro_rules! foreach_guest {{
    ($macro:ident) => {{
{invocations}    }};
}}
"
    )
    .expect("writing to a String");
    std::fs::write(out_dir.join("guests.rs"), code).expect("OUT_DIR is writable");
}

fn utf8(path: &Path) -> &str {
    path.to_str().expect("artifact paths are UTF-8")
}

/// The one guest that cannot be written in Rust without a bindings generator: a component
/// importing an interface outside the plugin world. Encoded with the same crates that
/// `wasm-component-ld` uses for the Rust guests.
fn foreign_import_component(out_dir: &Path) -> PathBuf {
    let source = Path::new(env!("CARGO_MANIFEST_DIR")).join("../plugins/foreign_import");
    let (wat, wit) = (source.join("module.wat"), source.join("world.wit"));
    for file in [&wat, &wit] {
        println!("cargo:rerun-if-changed={}", file.display());
    }
    let mut module = wat::parse_file(&wat).expect("module.wat parses");
    let mut resolve = wit_parser::Resolve::default();
    let package = resolve.push_file(&wit).expect("world.wit parses");
    let world = resolve
        .select_world(&[package], Some("foreign-import"))
        .expect("world.wit defines foreign-import");
    wit_component::embed_component_metadata(
        &mut module,
        &resolve,
        world,
        wit_component::StringEncoding::UTF8,
    )
    .expect("metadata embeds");
    let component = wit_component::ComponentEncoder::default()
        .validate(true)
        .module(&module)
        .expect("the module matches its world")
        .encode()
        .expect("the component encodes");
    let path = out_dir.join("foreign_import.wasm");
    std::fs::write(&path, component).expect("OUT_DIR is writable");
    path
}

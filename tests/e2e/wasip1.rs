//! A `wasm32-wasip1` core module runs through wasmtime's preview-1 support on the same
//! protocol, and one importing anything but `wasi_snapshot_preview1` functions is refused.
//! The modules are written in the text format, which the runtime accepts like the binary.

use nightcrow_plugin_host::{ExitCause, PluginSource, RuntimeKind, StartError};
use nightcrow_protocol::{Command, Event, LogLevel};
use nightcrow_test_plugin_artifacts::ECHO;

use crate::util::{next_command, runtime, spec, within};

/// Writes one `log` command, then reads stdin until end of input and returns.
const GREETER: &str = r#"(module
  (import "wasi_snapshot_preview1" "fd_write" (func $fd_write (param i32 i32 i32 i32) (result i32)))
  (import "wasi_snapshot_preview1" "fd_read" (func $fd_read (param i32 i32 i32 i32) (result i32)))
  (memory (export "memory") 1)
  (data (i32.const 64) "{\"v\":3,\"cmd\":\"log\",\"level\":\"info\",\"message\":\"hello from wasip1\"}\n")
  (func (export "_start")
    (i32.store (i32.const 0) (i32.const 64))
    (i32.store (i32.const 4) (i32.const 65))
    (drop (call $fd_write (i32.const 1) (i32.const 0) (i32.const 1) (i32.const 8)))
    (i32.store (i32.const 16) (i32.const 1024))
    (i32.store (i32.const 20) (i32.const 1024))
    (block $done
      (loop $more
        (br_if $done (call $fd_read (i32.const 0) (i32.const 16) (i32.const 1) (i32.const 24)))
        (br_if $done (i32.eqz (i32.load (i32.const 24))))
        (br $more)))))
"#;

fn module_spec(name: &str, text: &str, dir: &std::path::Path) -> nightcrow_plugin_host::PluginSpec {
    let path = dir.join(format!("{name}.wasm"));
    std::fs::write(
        &path,
        wat::parse_str(text).expect("the test's module text parses"),
    )
    .unwrap();
    let mut spec = spec(name, ECHO, RuntimeKind::Wasm, &[]);
    spec.source = PluginSource::Path(path);
    spec
}

#[tokio::test]
async fn a_wasip1_module_speaks_the_protocol_and_stops_on_shutdown() {
    let dir = tempfile::tempdir().unwrap();
    let spec = module_spec("wasip1-greeter", GREETER, dir.path());
    let mut plugin = within("module start", runtime().start(&spec))
        .await
        .expect("a wasip1 module starts");
    let expected = Command::Log {
        level: LogLevel::Info,
        message: "hello from wasip1".into(),
    };
    assert_eq!(next_command(&mut plugin).await, expected);
    assert!(plugin.send(Event::Shutdown));
    let (cause, requested) = within("module end", plugin.ended()).await;
    assert_eq!((cause, requested), (ExitCause::Exited { code: 0 }, true));
}

#[tokio::test]
async fn a_module_importing_outside_wasip1_is_refused_by_name() {
    let dir = tempfile::tempdir().unwrap();
    let text = r#"(module (import "env" "escape" (func)) (memory (export "memory") 1) (func (export "_start")))"#;
    let spec = module_spec("wasip1-foreign", text, dir.path());
    let error = within("module start", runtime().start(&spec))
        .await
        .expect_err("refused");
    assert_eq!(
        error,
        StartError::ImportsRefused {
            offending: vec!["env::escape".to_owned()]
        }
    );
}

//! `nightcrow plugin check` and `nightcrow plugin run`, as real processes, and the native
//! runtime's promise that a plugin never outlives the process that started it.

use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};

use nightcrow_test_plugin_artifacts as guests;

use crate::util::nightcrow;

fn output(command: &mut Command) -> Output {
    command.output().expect("the nightcrow binary runs")
}

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

#[test]
fn check_lists_the_imports_and_what_the_config_grants() {
    let home = tempfile::tempdir().unwrap();
    let granted = home.path().join("sessions");
    std::fs::create_dir(&granted).unwrap();
    std::fs::write(
        home.path().join("config.toml"),
        format!(
            "[[plugin]]\nname = \"echo\"\ncommand = {:?}\n[plugin.env]\nTOKEN_DIR = \"x\"\n\
             [plugin.sandbox]\nread_dirs = [{:?}]\nconnect = [\"127.0.0.1:4096\"]\nmemory_mib = 32\n",
            guests::ECHO_WASM,
            granted.to_str().unwrap()
        ),
    )
    .unwrap();
    let checked = output(nightcrow(home.path()).args(["plugin", "check", guests::ECHO_WASM]));
    let stdout = text(&checked.stdout);
    assert!(checked.status.success(), "{checked:?}");
    assert!(stdout.contains("imports only the plugin world"), "{stdout}");
    assert!(stdout.contains("wasi:cli/stdin@0.2."), "{stdout}");
    assert!(
        stdout.contains("[[plugin]] \"echo\" (disabled) would grant:"),
        "{stdout}"
    );
    assert!(
        stdout.contains(&format!("read-only directories: {}", granted.display())),
        "{stdout}"
    );
    assert!(stdout.contains("outbound TCP: 127.0.0.1:4096"), "{stdout}");
    assert!(
        stdout.contains("environment variables: TOKEN_DIR"),
        "{stdout}"
    );
    assert!(stdout.contains("32 MiB memory, 200 ms"), "{stdout}");

    let builtin =
        output(nightcrow(home.path()).args(["plugin", "check", "builtin:nightcrow-recovery"]));
    assert!(builtin.status.success(), "{builtin:?}");
    assert!(
        text(&builtin.stdout).contains("granted nothing"),
        "{builtin:?}"
    );
}

#[test]
fn check_refuses_a_foreign_import_by_name_and_a_broken_config_by_position() {
    let home = tempfile::tempdir().unwrap();
    let refused =
        output(nightcrow(home.path()).args(["plugin", "check", guests::FOREIGN_IMPORT_WASM]));
    assert!(!refused.status.success());
    let stderr = text(&refused.stderr);
    assert!(
        stderr.contains(
            "outside the nightcrow plugin world (refused): nightcrow:evil/backdoor@1.0.0"
        ),
        "{stderr}"
    );

    let config = home.path().join("config.toml");
    std::fs::write(
        &config,
        "[[plugin]]\nname = \"x\"\ncommand = \"builtin:nightcrow-recovery\"\nenabeld = true\n",
    )
    .unwrap();
    let broken = output(nightcrow(home.path()).args(["plugin", "check", guests::ECHO_WASM]));
    assert_eq!(broken.status.code(), Some(2), "a config error: {broken:?}");
    let stderr = text(&broken.stderr);
    assert!(
        stderr.contains(&format!("{}:4:1:", config.display())),
        "{stderr}"
    );
}

/// Starts `nightcrow plugin run` with piped stdio.
fn run(home: &Path, args: &[&str]) -> Child {
    nightcrow(home)
        .args(["plugin", "run"])
        .args(args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("the nightcrow binary runs")
}

const IDLE_EVENT: &str = r#"{"v":3,"event":"pane_idle","token":"0123456789abcdef0123456789abcdef","generation":1,"idle_ms":5}"#;

#[test]
fn run_feeds_events_prints_commands_and_survives_bad_input() {
    let home = tempfile::tempdir().unwrap();
    let mut child = run(home.path(), &[guests::ECHO_WASM]);
    let mut stdin = child.stdin.take().unwrap();
    writeln!(stdin, "not json\n{IDLE_EVENT}").unwrap();
    drop(stdin);
    let done = child.wait_with_output().unwrap();
    assert!(done.status.success(), "{done:?}");
    let stdout = text(&done.stdout);
    let commands: Vec<_> = stdout
        .lines()
        .map(|line| nightcrow_protocol::decode_command(line).expect("a v3 command"))
        .collect();
    assert!(
        matches!(&commands[..], [nightcrow_protocol::Command::Status { state, .. }, nightcrow_protocol::Command::Log { .. }] if state == "pane_idle"),
        "stdout:\n{stdout}stderr:\n{}",
        text(&done.stderr)
    );
    assert!(
        text(&done.stderr).contains("not an event, ignored"),
        "{done:?}"
    );
}

/// The native plugin's pid, found as the only child of `parent`.
#[cfg(target_os = "linux")]
fn only_child_of(parent: u32) -> u32 {
    let children: Vec<u32> = std::fs::read_dir("/proc")
        .unwrap()
        .filter_map(|entry| entry.ok()?.file_name().to_str()?.parse().ok())
        .filter(|pid| stat(*pid).is_some_and(|(_, ppid)| ppid == parent))
        .collect();
    assert_eq!(children.len(), 1, "children of {parent}: {children:?}");
    children[0]
}

/// State letter and parent pid from `/proc/PID/stat`; `None` once the process is gone.
#[cfg(target_os = "linux")]
fn stat(pid: u32) -> Option<(char, u32)> {
    let stat = std::fs::read_to_string(PathBuf::from(format!("/proc/{pid}/stat"))).ok()?;
    let mut fields = stat.rsplit_once(')')?.1.split_whitespace();
    let state = fields.next()?.chars().next()?;
    Some((state, fields.next()?.parse().ok()?))
}

/// `kill -9` of the host gives it no chance to clean up; the kernel must end the plugin
/// (`PR_SET_PDEATHSIG`). The guest ignores `shutdown` and end of stdin, so nothing else
/// would.
#[cfg(target_os = "linux")]
#[test]
fn a_native_plugin_dies_with_its_host_even_after_kill_9() {
    let home = tempfile::tempdir().unwrap();
    let native = guests::IGNORE_SHUTDOWN_NATIVE;
    let mut host = run(home.path(), &["--native", native]);
    let mut stdin = host.stdin.take().unwrap();
    writeln!(stdin, "{IDLE_EVENT}").unwrap();
    let mut first = String::new();
    BufReader::new(host.stdout.take().unwrap())
        .read_line(&mut first)
        .unwrap();
    assert!(first.contains(r#""state":"pane_idle""#), "{first}");
    let plugin = only_child_of(host.id());

    host.kill().unwrap();
    host.wait().unwrap();
    // Nothing notifies a non-parent of a death; poll /proc until the plugin is gone (or a
    // zombie, which the new parent reaps) or the generous deadline passes.
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(20);
    while stat(plugin).is_some_and(|(state, _)| state != 'Z') {
        assert!(
            std::time::Instant::now() < deadline,
            "plugin {plugin} outlived its host"
        );
        std::thread::sleep(std::time::Duration::from_millis(10));
    }
    drop(stdin);
}

/// A native plugin starts with its three pipes and nothing else of its host's: the host
/// here inherits a descriptor without close-on-exec (fd 7, as a shell leaves one), and the
/// probe lists `/proc/self/fd`, where the only other entry is the listing's own.
#[cfg(target_os = "linux")]
#[test]
fn a_native_plugin_inherits_no_descriptor_but_its_stdio() {
    let home = tempfile::tempdir().unwrap();
    let host = nightcrow(home.path());
    let mut shell = Command::new("/bin/sh");
    shell
        .arg("-c")
        .arg(r#"exec 7</dev/null; exec "$0" plugin run --native "$1" -- list=/proc/self/fd"#)
        .arg(host.get_program())
        .arg(guests::PROBE_NATIVE)
        .envs(
            host.get_envs()
                .filter_map(|(key, value)| Some((key, value?))),
        )
        .env_remove("NIGHTCROW_LOG")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    let mut running = shell.spawn().expect("the nightcrow binary runs");
    // Stdin stays open until the listing is in: its end stops the plugin, and on a busy
    // machine the 200 ms shutdown grace ended the probe before it had listed anything.
    let stdin = running.stdin.take();
    let listing = BufReader::new(running.stdout.take().unwrap())
        .lines()
        .map_while(Result::ok)
        .filter_map(|line| match nightcrow_protocol::decode_command(&line) {
            Ok(nightcrow_protocol::Command::Log { message, .. }) => Some(message),
            _ => None,
        })
        .find(|message| message.starts_with("list /proc/self/fd:"));
    drop(stdin);
    let done = running.wait_with_output().expect("plugin run ends");
    assert_eq!(
        listing.as_deref(),
        Some("list /proc/self/fd: ok 0,1,2,3"),
        "{done:?}"
    );
    assert!(
        text(&done.stderr).contains("starting a native plugin: trusted code"),
        "{done:?}"
    );
}

/// A trap's message carries names from the module's name section, which the module's
/// author chose: `plugin run` prints it with every control character escaped, so it can
/// neither drive the terminal nor forge a line.
#[test]
fn a_trap_message_reaches_the_terminal_escaped() {
    let home = tempfile::tempdir().unwrap();
    let module = home.path().join("trapper.wasm");
    let text_format = r#"(module
      (memory (export "memory") 1)
      (func (export "_start") (call $evil))
      (func $evil (@name "evil\1b]0;pwned\07\1b[31m\nFAKE LOG LINE") unreachable))"#;
    std::fs::write(&module, wat::parse_str(text_format).unwrap()).unwrap();
    let mut child = run(home.path(), &[module.to_str().unwrap()]);
    // Stdin stays open: the guest traps by itself, not after a requested shutdown.
    let stdin = child.stdin.take();
    let done = child.wait_with_output().unwrap();
    drop(stdin);
    assert!(!done.status.success(), "{done:?}");
    let stderr = text(&done.stderr);
    assert!(stderr.contains("trapped"), "{stderr}");
    assert!(
        stderr.contains(r"evil\u{1b}]0;pwned\u{7}\u{1b}[31m\nFAKE LOG LINE"),
        "{stderr}"
    );
    assert!(
        !stderr.contains(['\u{1b}', '\u{7}']) && !stderr.contains("\nFAKE"),
        "{stderr:?}"
    );
}

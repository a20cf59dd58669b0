//! `nightcrow plugin test` as a real process (one per plugin, so its CPU and memory readings
//! are that plugin's alone): it passes the bundled plugin, both examples and the well-behaved
//! test guests, and fails every hostile guest on the rule it breaks, with the reason.

use std::process::Output;

use nightcrow_example_artifacts as examples;
use nightcrow_test_plugin_artifacts as guests;
use serde_json::Value;

use crate::util::nightcrow;

/// A guest without a case here fails to compile.
macro_rules! guest_has_case {
    ($guest:ident) => {
        #[allow(unused_imports, reason = "only proves that a case of this name exists")]
        use self::$guest as _;
    };
}
nightcrow_test_plugin_artifacts::foreach_guest!(guest_has_case);

/// One `plugin test` (or example build) at a time: several hostile guests spin a core and a
/// Python component's first compile takes both, which would starve the timing-sensitive
/// tests running beside these (the TUI's, the daemon's).
static ONE_AT_A_TIME: std::sync::Mutex<()> = std::sync::Mutex::new(());

fn one_at_a_time() -> std::sync::MutexGuard<'static, ()> {
    ONE_AT_A_TIME
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner())
}

/// Runs `nightcrow plugin test --json` with a short idle window; the report and the output.
fn plugin_test(args: &[&str]) -> (Value, Output) {
    let _turn = one_at_a_time();
    let home = tempfile::tempdir().unwrap();
    let output = nightcrow(home.path())
        .args(["plugin", "test", "--json", "--idle-window-ms", "1000"])
        .args(args)
        .output()
        .expect("the nightcrow binary runs");
    let report = serde_json::from_slice(&output.stdout)
        .unwrap_or_else(|e| panic!("--json prints one JSON object ({e}): {output:?}"));
    (report, output)
}

fn failed(report: &Value) -> Vec<(String, String)> {
    report["verdicts"]
        .as_array()
        .expect("verdicts")
        .iter()
        .filter(|verdict| verdict["passed"] == false)
        .map(|verdict| {
            (
                verdict["check"].as_str().unwrap().to_owned(),
                verdict["detail"].as_str().unwrap().to_owned(),
            )
        })
        .collect()
}

#[track_caller]
fn passes(args: &[&str]) {
    let (report, output) = plugin_test(args);
    assert!(failed(&report).is_empty(), "{report:#}");
    assert!(output.status.success(), "{output:?}");
    assert_eq!(report["verdicts"].as_array().unwrap().len(), 10);
    // The report is the whole answer: no log line of the runtime's beside it.
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(!stderr.contains(" INFO "), "{stderr}");
}

/// Fails `check` with a detail containing `reason` (other checks may fail too when the
/// plugin dies early: those say they were not judged), and exits 1.
#[track_caller]
fn fails(args: &[&str], check: &str, reason: &str) {
    let (report, output) = plugin_test(args);
    let failed = failed(&report);
    assert!(
        failed
            .iter()
            .any(|(id, detail)| id == check && detail.contains(reason)),
        "expected {check} to fail with {reason:?}: {report:#}"
    );
    assert_eq!(output.status.code(), Some(1), "{output:?}");
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(stderr.contains("conformance checks failed"), "{stderr}");
}

#[test]
fn the_bundled_recovery_plugin_passes() {
    passes(&["builtin:nightcrow-recovery"]);
}

#[test]
fn the_python_example_passes() {
    passes(&[examples::PYTHON_STATUS_WASM]);
}

#[test]
fn the_regex_example_passes_with_its_patterns_in_the_sandbox_and_natively() {
    passes(&[examples::REGEX_ATTENTION_WASM, "--", "(?i)usage limit"]);
    passes(&[
        "--native",
        examples::REGEX_ATTENTION_NATIVE,
        "--",
        "(?i)usage limit",
    ]);
}

/// A file that is no plugin at all gets one clear error, not a report of ten failures.
#[test]
fn a_file_that_is_not_wasm_is_one_clear_error() {
    let home = tempfile::tempdir().unwrap();
    let file = home.path().join("notes.wasm");
    std::fs::write(&file, "not a plugin\n").unwrap();
    for json in [false, true] {
        let output = nightcrow(home.path())
            .args(["plugin", "test"])
            .args(json.then_some("--json"))
            .arg(&file)
            .output()
            .unwrap();
        assert_eq!(output.status.code(), Some(1), "{output:?}");
        assert!(output.stdout.is_empty(), "{output:?}");
        assert_eq!(
            String::from_utf8_lossy(&output.stderr),
            format!(
                "{} is neither a WebAssembly component nor a core module\n",
                file.display()
            )
        );
    }
}

#[test]
fn the_text_report_says_pass_or_fail_per_rule() {
    let _turn = one_at_a_time();
    let home = tempfile::tempdir().unwrap();
    let output = nightcrow(home.path())
        .args([
            "plugin",
            "test",
            "--idle-window-ms",
            "500",
            guests::TOKEN_GUESSER_WASM,
        ])
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(
        stdout.contains("PASS  passes the import audit and starts"),
        "{stdout}"
    );
    assert!(
        stdout.contains("FAIL  names only panes it was given: "),
        "{stdout}"
    );
    assert!(stdout.contains("1 of 10 checks failed"), "{stdout}");
    assert_eq!(output.status.code(), Some(1));
}

#[test]
fn echo() {
    passes(&[guests::ECHO_WASM]);
    passes(&["--native", guests::ECHO_NATIVE]);
}

#[test]
fn probe() {
    passes(&[guests::PROBE_WASM]);
}

#[test]
fn scripted() {
    passes(&[guests::SCRIPTED_WASM]);
}

#[test]
fn command_flood() {
    fails(
        &[guests::COMMAND_FLOOD_WASM],
        "quiet_when_idle",
        "% of a core",
    );
}

#[test]
fn exit_failure() {
    fails(
        &[guests::EXIT_FAILURE_WASM],
        "stays_up",
        "exited with code 1",
    );
}

#[test]
fn ignore_shutdown() {
    fails(
        &[guests::IGNORE_SHUTDOWN_WASM],
        "ends_on_shutdown",
        "the host killed it",
    );
}

#[test]
fn invalid_utf8() {
    fails(&[guests::INVALID_UTF8_WASM], "commands_decode", "not UTF-8");
}

#[test]
fn long_lines() {
    fails(
        &[guests::LONG_LINES_WASM],
        "commands_decode",
        "longer than 65536 bytes",
    );
}

#[test]
fn memory_bomb() {
    fails(
        &[guests::MEMORY_BOMB_WASM, "--memory-mib", "32"],
        "memory_within_limit",
        "memory limit hit",
    );
}

#[test]
fn newline_free_flood() {
    fails(
        &[guests::NEWLINE_FREE_FLOOD_WASM],
        "commands_decode",
        "longer than 65536 bytes",
    );
}

#[test]
fn spin_after_event() {
    fails(
        &[guests::SPIN_AFTER_EVENT_WASM],
        "quiet_when_idle",
        "spun until stopped",
    );
}

#[test]
fn spin_at_start() {
    fails(
        &[guests::SPIN_AT_START_WASM],
        "quiet_when_idle",
        "CPU limit hit",
    );
    // Natively nothing stops it; the CPU reading over the idle window does.
    fails(
        &["--native", guests::SPIN_AT_START_NATIVE],
        "quiet_when_idle",
        "% of a core",
    );
}

#[test]
fn hoard_handles() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("held");
    std::fs::write(&file, "x").unwrap();
    let dir = dir.path().to_str().unwrap();
    fails(
        &[
            guests::HOARD_HANDLES_WASM,
            "--read",
            dir,
            "--",
            &format!("open={}", file.display()),
        ],
        "stays_up",
        "handle limit hit",
    );
}

#[test]
fn token_guesser() {
    fails(
        &[guests::TOKEN_GUESSER_WASM],
        "own_panes_only",
        "a token it was never given",
    );
}

#[test]
fn trap() {
    fails(&[guests::TRAP_WASM], "stays_up", "trapped");
}

#[test]
fn wrong_version() {
    fails(
        &[guests::WRONG_VERSION_WASM],
        "v3_only",
        "protocol version mismatch",
    );
}

#[test]
fn foreign_import() {
    fails(
        &[guests::FOREIGN_IMPORT_WASM],
        "starts",
        "outside the nightcrow plugin world",
    );
}

/// `plugin new` in both languages gives a project that builds with the README's command and
/// passes `plugin test` as it is.
#[test]
fn plugin_new_projects_build_and_pass() {
    let scratch = tempfile::tempdir().unwrap();
    let new = |name: &str, lang: &str| {
        let created = nightcrow(scratch.path())
            .current_dir(scratch.path())
            .args(["plugin", "new", name, "--lang", lang])
            .output()
            .unwrap();
        assert!(created.status.success(), "{created:?}");
        let readme = String::from_utf8_lossy(&created.stdout).into_owned();
        assert!(readme.contains("nightcrow plugin test "), "{readme}");
        scratch.path().join(name)
    };

    let python = new("py-starter", "python");
    let turn = one_at_a_time();
    let built = std::process::Command::new(examples::COMPONENTIZE_PY)
        .current_dir(&python)
        .args([
            "-d",
            "wit",
            "-w",
            "nightcrow:plugin/plugin",
            "componentize",
            "app",
            "-o",
        ])
        .arg("py-starter.wasm")
        .output()
        .unwrap();
    assert!(built.status.success(), "{built:?}");
    drop(turn);
    passes(&[python.join("py-starter.wasm").to_str().unwrap()]);

    let rust = new("rs-starter", "rust");
    let turn = one_at_a_time();
    let built = std::process::Command::new(env!("CARGO"))
        .current_dir(&rust)
        .args(["build", "--release", "--target", "wasm32-wasip2"])
        .env_remove("RUSTFLAGS")
        .env_remove("CARGO_ENCODED_RUSTFLAGS")
        .env_remove("CARGO_TARGET_DIR")
        .output()
        .unwrap();
    assert!(built.status.success(), "{built:?}");
    drop(turn);
    let wasm = rust.join("target/wasm32-wasip2/release/rs-starter.wasm");
    passes(&[wasm.to_str().unwrap()]);

    // An existing folder is never overwritten.
    let again = nightcrow(scratch.path())
        .current_dir(scratch.path())
        .args(["plugin", "new", "rs-starter", "--lang", "rust"])
        .output()
        .unwrap();
    assert!(!again.status.success());
    assert!(String::from_utf8_lossy(&again.stderr).contains("already exists"));
}

//! `nightcrow plugin install | list | remove` as real processes in a temp `NIGHTCROW_HOME`,
//! and the daemon-side rule that an installed file runs only with its recorded hash: the
//! bytes checked are the bytes run, at every start and restart.

use std::path::Path;
use std::process::Output;
use std::time::Duration;

use nightcrow_client::Home;
use nightcrow_daemon::mapping;
use nightcrow_daemon::registry::Registry;
use nightcrow_plugin_host::{ExitCause, Lifecycle, RestartPolicy, Supervised, Supervisor};
use nightcrow_protocol::{Command, Event};
use nightcrow_test_plugin_artifacts as guests;

use crate::util::{nightcrow, runtime, token, within};

fn run(home: &Path, args: &[&str]) -> Output {
    nightcrow(home)
        .args(args)
        .output()
        .expect("the nightcrow binary runs")
}

fn stdout(output: &Output) -> String {
    String::from_utf8_lossy(&output.stdout).into_owned()
}

fn stderr(output: &Output) -> String {
    String::from_utf8_lossy(&output.stderr).into_owned()
}

#[test]
fn install_records_the_hash_prints_a_disabled_snippet_and_the_snippet_loads() {
    let home = tempfile::tempdir().unwrap();
    let installed = run(home.path(), &["plugin", "install", guests::ECHO_WASM]);
    assert!(installed.status.success(), "{installed:?}");
    let text = stdout(&installed);
    assert!(text.contains("as `echo`"), "{text}");
    assert!(text.contains("enabled = false"), "{text}");
    assert!(text.contains("wasi:cli/stdin@0.2."), "{text}");

    // The recorded hash is the file's, in sha256sum format.
    let wasm = std::fs::read(home.path().join("plugins/echo.wasm")).unwrap();
    assert_eq!(wasm, std::fs::read(guests::ECHO_WASM).unwrap());
    let recorded = std::fs::read_to_string(home.path().join("plugins/echo.sha256")).unwrap();
    let hash = recorded.split_whitespace().next().unwrap();
    assert_eq!(hash.len(), 64);
    assert!(text.contains(hash), "{text}");

    // The printed snippet is a valid config that names the installed plugin.
    let snippet = &text[text.find("[[plugin]]").expect("a snippet")..];
    std::fs::write(home.path().join("config.toml"), snippet).unwrap();
    let checked = run(
        home.path(),
        &[
            "plugin",
            "check",
            home.path().join("plugins/echo.wasm").to_str().unwrap(),
        ],
    );
    assert!(checked.status.success(), "{checked:?}");
    assert!(
        stdout(&checked).contains("[[plugin]] \"echo\" (disabled) would grant:"),
        "{checked:?}"
    );
    assert!(
        stdout(&checked).contains("read-only directories: none"),
        "{checked:?}"
    );

    let listed = run(home.path(), &["plugin", "list"]);
    assert!(listed.status.success(), "{listed:?}");
    let list = stdout(&listed);
    assert!(
        list.contains(&format!(
            "echo  {} bytes  sha256 {hash} (matches)",
            wasm.len()
        )),
        "{list}"
    );
    assert!(list.contains("imports: "), "{list}");
    // Install and list say the same, in words, of what it can do once enabled.
    for said in [&text, &list] {
        assert!(said.contains("once enabled it can:"), "{said}");
        assert!(said.contains("- talk to nightcrow: "), "{said}");
        // The echo guest imports no filesystem or socket interface, so none is claimed.
        assert!(!said.contains("read files"), "{said}");
        assert!(!said.contains("TCP"), "{said}");
    }
    assert!(text.contains("The snippet below grants nothing"), "{text}");

    // Same name again: refused without --force, replaced with it.
    let again = run(
        home.path(),
        &["plugin", "install", guests::PROBE_WASM, "--name", "echo"],
    );
    assert!(!again.status.success());
    assert!(stderr(&again).contains("--force"), "{again:?}");
    let forced = run(
        home.path(),
        &[
            "plugin",
            "install",
            guests::PROBE_WASM,
            "--name",
            "echo",
            "--force",
        ],
    );
    assert!(forced.status.success(), "{forced:?}");
    assert_eq!(
        std::fs::read(home.path().join("plugins/echo.wasm")).unwrap(),
        std::fs::read(guests::PROBE_WASM).unwrap()
    );

    let removed = run(home.path(), &["plugin", "remove", "echo"]);
    assert!(removed.status.success(), "{removed:?}");
    assert_eq!(
        stdout(&removed),
        format!(
            "removed plugin `echo` ({})\n",
            home.path().join("plugins").join("echo.wasm").display()
        )
    );
    assert!(!home.path().join("plugins/echo.wasm").exists());
    assert!(!home.path().join("plugins/echo.sha256").exists());
    let gone = run(home.path(), &["plugin", "remove", "echo"]);
    assert!(!gone.status.success());
    assert!(stderr(&gone).contains("no plugin named `echo`"), "{gone:?}");
}

#[test]
fn a_file_changed_after_install_is_shown_and_refused() {
    let home = tempfile::tempdir().unwrap();
    assert!(
        run(home.path(), &["plugin", "install", guests::ECHO_WASM])
            .status
            .success()
    );
    std::fs::copy(guests::PROBE_WASM, home.path().join("plugins/echo.wasm")).unwrap();
    let listed = run(home.path(), &["plugin", "list"]);
    assert!(
        stdout(&listed).contains("CHANGED since install; it will not run"),
        "{listed:?}"
    );
    let registry = Registry::of(&Home::new(home.path().to_owned()));
    let refused = registry.resolve("echo").unwrap_err().to_string();
    assert!(
        refused.contains("changed since it was installed"),
        "{refused}"
    );
}

#[test]
fn install_refuses_what_is_not_wasm_what_fails_the_audit_and_bad_names() {
    let home = tempfile::tempdir().unwrap();
    let text_file = home.path().join("notes.wasm");
    std::fs::write(&text_file, "just text").unwrap();
    let cases: [(&[&str], &str); 4] = [
        (
            &["plugin", "install", text_file.to_str().unwrap()],
            "not a WebAssembly component or core module",
        ),
        (
            &["plugin", "install", guests::FOREIGN_IMPORT_WASM],
            "nightcrow:evil/backdoor@1.0.0",
        ),
        (
            &["plugin", "install", guests::ECHO_WASM, "--name=-rf"],
            "not a valid plugin name",
        ),
        (
            &["plugin", "install", guests::ECHO_WASM, "--name", "../up"],
            "not a valid plugin name",
        ),
    ];
    for (args, message) in cases {
        let refused = run(home.path(), args);
        assert!(!refused.status.success(), "{args:?}");
        assert!(stderr(&refused).contains(message), "{args:?}: {refused:?}");
    }
    let listed = run(home.path(), &["plugin", "list"]);
    assert!(
        stdout(&listed).contains("no plugins installed"),
        "{listed:?}"
    );
}

/// The next item from `supervisor`, under the step timeout.
async fn next(supervisor: &mut Supervisor) -> Supervised {
    within("the supervised plugin", supervisor.next()).await
}

#[tokio::test]
async fn a_restarted_installed_plugin_runs_the_bytes_that_were_checked_not_a_swapped_file() {
    let dir = tempfile::tempdir().unwrap();
    let home = Home::new(dir.path().to_owned());
    Registry::of(&home)
        .install(
            runtime(),
            Path::new(guests::SCRIPTED_WASM),
            Some("swap"),
            false,
        )
        .await
        .expect("the scripted guest installs");
    let text = "[[plugin]]\nname = \"swap\"\ncommand = \"swap\"\nargs = [\"exit_on=BOOM\"]\n";
    let config = nightcrow_config::parse(&home.config(), text, dir.path()).expect("config");
    let (hub, unusable) = mapping::hub_config(&config, &home, dir.path());
    assert_eq!(unusable, []);
    let spec = hub.plugins[0].spec.clone();
    let policy = RestartPolicy {
        first_backoff: Duration::from_millis(10),
        max_backoff: Duration::from_millis(10),
        ..RestartPolicy::default()
    };
    let mut supervisor = Supervisor::new(runtime().clone(), spec, policy);
    assert_eq!(
        next(&mut supervisor).await,
        Supervised::Lifecycle(Lifecycle::Started)
    );

    // Swapped behind the registry's back after the check: the echo guest would answer a
    // `pane_output` with its own reply and keep running.
    std::fs::copy(guests::ECHO_WASM, dir.path().join("plugins/swap.wasm")).unwrap();

    let boom = || Event::PaneOutput {
        token: token(1),
        generation: 1,
        text: "BOOM".to_owned(),
    };
    for round in 0..2 {
        assert!(
            supervisor.send(boom()),
            "round {round}: no instance to send to"
        );
        // The scripted guest logs what it saw, then exits; the echo guest would not.
        match next(&mut supervisor).await {
            Supervised::Command(Command::Log { message, .. }) => {
                assert!(message.starts_with("event "), "round {round}: {message}");
            }
            other => panic!("round {round}: not the checked plugin's log: {other:?}"),
        }
        // (A wasip2 guest's nonzero exit code reaches the host as 1.)
        let failed = next(&mut supervisor).await;
        assert!(
            matches!(
                failed,
                Supervised::Lifecycle(Lifecycle::Failed {
                    cause: ExitCause::Exited { code: 1.. }
                })
            ),
            "round {round}: {failed:?}"
        );
        assert!(matches!(
            next(&mut supervisor).await,
            Supervised::Lifecycle(Lifecycle::Restarting { .. })
        ));
        assert_eq!(
            next(&mut supervisor).await,
            Supervised::Lifecycle(Lifecycle::Started),
            "round {round}"
        );
    }
    within("shutdown", supervisor.shutdown()).await;

    // The next resolution reads the file again and refuses it.
    let refused = mapping::hub_config(&config, &home, dir.path()).1;
    assert_eq!(refused.len(), 1);
    assert!(
        refused[0]
            .message
            .contains("changed since it was installed"),
        "{refused:?}"
    );
}

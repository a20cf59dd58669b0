use std::path::Path;
use std::process::Output;

fn nightcrow(home: &Path, args: &[&str]) -> Output {
    crate::util::nightcrow(home)
        .args(args)
        .output()
        .expect("the nightcrow binary runs")
}

#[test]
fn init_writes_a_private_valid_starter_and_never_overwrites_silently() {
    let home = tempfile::tempdir().unwrap();
    let path = home.path().join("config.toml");

    let first = nightcrow(home.path(), &["init"]);
    assert!(first.status.success(), "{first:?}");
    let written = std::fs::read_to_string(&path).unwrap();
    assert_eq!(written, nightcrow_config::STARTER_CONFIG);
    nightcrow_config::load(&path, home.path()).expect("the starter parses");
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        let mode = std::fs::metadata(&path).unwrap().permissions().mode();
        assert_eq!(mode & 0o777, 0o600);
    }

    std::fs::write(&path, "# mine\n").unwrap();
    let second = nightcrow(home.path(), &["init"]);
    assert!(!second.status.success());
    assert!(String::from_utf8_lossy(&second.stderr).contains("pass --force"));
    assert_eq!(std::fs::read_to_string(&path).unwrap(), "# mine\n");

    let forced = nightcrow(home.path(), &["init", "--force"]);
    assert!(forced.status.success(), "{forced:?}");
    assert_eq!(std::fs::read_to_string(&path).unwrap(), written);
}

#[test]
fn an_explicit_config_path_wins_over_nightcrow_home() {
    let home = tempfile::tempdir().unwrap();
    let elsewhere = home.path().join("nested/dir/custom.toml");
    let output = nightcrow(
        home.path(),
        &["init", "--config", elsewhere.to_str().unwrap()],
    );
    assert!(output.status.success(), "{output:?}");
    assert!(elsewhere.exists());
    assert!(!home.path().join("config.toml").exists());
}

#[test]
fn help_lists_attach_and_attach_needs_a_terminal() {
    let home = tempfile::tempdir().unwrap();
    let help = nightcrow(home.path(), &["--help"]);
    let help = String::from_utf8_lossy(&help.stdout);
    assert!(help.contains("\n  attach "), "{help}");
    // Here stdout is a pipe: refused with a reason, and no daemon was started for nothing.
    let attach = nightcrow(home.path(), &["attach"]);
    assert_eq!(attach.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&attach.stderr).contains("attach needs a terminal"));
    assert!(!home.path().join("daemon.lock").exists());
}

#[test]
fn plugin_help_lists_every_plugin_command() {
    let home = tempfile::tempdir().unwrap();
    let help = nightcrow(home.path(), &["plugin", "--help"]);
    let help = String::from_utf8_lossy(&help.stdout);
    for command in ["install", "list", "remove", "check", "run", "test", "new"] {
        assert!(
            help.contains(&format!("\n  {command} ")),
            "{command}: {help}"
        );
    }
    let test = nightcrow(home.path(), &["plugin", "test", "--help"]);
    let test = String::from_utf8_lossy(&test.stdout);
    assert!(
        test.contains("--json") && test.contains("--native"),
        "{test}"
    );
}

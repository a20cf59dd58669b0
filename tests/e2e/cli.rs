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

#[cfg(unix)]
fn mode_of(path: &Path) -> u32 {
    use std::os::unix::fs::PermissionsExt;
    std::fs::metadata(path).unwrap().permissions().mode() & 0o777
}

/// Every command that creates the home creates it private, whatever the umask, and the
/// files in it readable by the user alone: `init` (and `web passwd`) the config, `-d` (which
/// `attach` and `web` use to start a daemon) the log and the lock.
#[cfg(unix)]
#[test]
fn the_home_and_its_files_are_created_private() {
    let base = tempfile::tempdir().unwrap();
    let umask = |command: &mut std::process::Command| {
        // A wide umask must not widen anything nightcrow creates.
        let program = command.get_program().to_owned();
        let mut shell = std::process::Command::new("/bin/sh");
        shell
            .arg("-c")
            .arg(r#"umask 000; exec "$0" "$@""#)
            .arg(program)
            .args(command.get_args())
            .envs(command.get_envs().filter_map(|(k, v)| Some((k, v?))));
        shell.output().unwrap()
    };

    let init_home = base.path().join("init-home");
    let init = umask(crate::util::nightcrow(&init_home).arg("init"));
    assert!(init.status.success(), "{init:?}");
    assert_eq!(mode_of(&init_home), 0o700);
    assert_eq!(mode_of(&init_home.join("config.toml")), 0o600);

    let passwd_home = base.path().join("passwd-home");
    let mut passwd = crate::util::nightcrow(&passwd_home);
    passwd
        .args(["web", "passwd"])
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped());
    let mut child = passwd.spawn().unwrap();
    std::io::Write::write_all(&mut child.stdin.take().unwrap(), b"long enough password\n").unwrap();
    let done = child.wait_with_output().unwrap();
    assert!(done.status.success(), "{done:?}");
    assert_eq!(mode_of(&passwd_home), 0o700);
    assert_eq!(mode_of(&passwd_home.join("config.toml")), 0o600);

    let daemon_home = base.path().join("daemon-home");
    let started = umask(crate::util::nightcrow(&daemon_home).arg("-d"));
    assert!(started.status.success(), "{started:?}");
    let modes = [
        mode_of(&daemon_home),
        mode_of(&daemon_home.join("daemon.log")),
        mode_of(&daemon_home.join("daemon.lock")),
        mode_of(&daemon_home.join("daemon.sock")),
    ];
    let stopped = nightcrow(&daemon_home, &["stop"]);
    assert!(stopped.status.success(), "{stopped:?}");
    assert_eq!(modes, [0o700, 0o600, 0o600, 0o600]);
}

/// A home or a config others may write is refused before the
/// daemon uses it, with the path and the fix in the message; nothing is started.
#[cfg(unix)]
#[test]
fn a_shared_home_or_a_config_others_may_write_is_refused() {
    use std::os::unix::fs::PermissionsExt;
    let home = tempfile::tempdir().unwrap();
    std::fs::set_permissions(home.path(), std::fs::Permissions::from_mode(0o777)).unwrap();
    let refused = nightcrow(home.path(), &["-d"]);
    assert_eq!(refused.status.code(), Some(1), "{refused:?}");
    let stderr = String::from_utf8_lossy(&refused.stderr);
    assert!(
        stderr.contains(&format!(
            "{}: has mode 0777; it must be private (chmod 700 it, or remove it)",
            home.path().display()
        )),
        "{stderr}"
    );
    assert!(!home.path().join("daemon.lock").exists());

    std::fs::set_permissions(home.path(), std::fs::Permissions::from_mode(0o700)).unwrap();
    let config = home.path().join("config.toml");
    std::fs::write(&config, "").unwrap();
    std::fs::set_permissions(&config, std::fs::Permissions::from_mode(0o666)).unwrap();
    for args in [&["-d"][..], &["plugin", "list"]] {
        let refused = nightcrow(home.path(), args);
        assert_eq!(refused.status.code(), Some(2), "{args:?}: {refused:?}");
        let stderr = String::from_utf8_lossy(&refused.stderr);
        assert!(
            stderr.contains(&format!(
                "{}: has mode 0666; others may write to it (chmod go-w it)",
                config.display()
            )),
            "{stderr}"
        );
    }
    assert!(!home.path().join("daemon.lock").exists());
}

/// `web passwd` replaces the config through a new temp file: a file or a symlink someone
/// left where the old code put its temp file is neither written through nor used, and the
/// config comes out 0600 however it was before.
#[cfg(unix)]
#[test]
fn the_config_is_never_written_through_a_planted_file_or_link() {
    use std::os::unix::fs::PermissionsExt;
    let home = tempfile::tempdir().unwrap();
    let config = home.path().join("config.toml");
    std::fs::write(&config, "# mine\n").unwrap();
    std::fs::set_permissions(&config, std::fs::Permissions::from_mode(0o644)).unwrap();
    let planted = home.path().join("config.toml.tmp");
    std::fs::write(&planted, "").unwrap();
    std::fs::set_permissions(&planted, std::fs::Permissions::from_mode(0o644)).unwrap();
    let target = home.path().join("elsewhere");
    std::fs::write(&target, "untouched").unwrap();
    let passwd = |planted_link: bool| {
        if planted_link {
            std::fs::remove_file(&planted).unwrap();
            std::os::unix::fs::symlink(&target, &planted).unwrap();
        }
        let mut child = crate::util::nightcrow(home.path())
            .args(["web", "passwd"])
            .stdin(std::process::Stdio::piped())
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::piped())
            .spawn()
            .unwrap();
        std::io::Write::write_all(&mut child.stdin.take().unwrap(), b"long enough password\n")
            .unwrap();
        let done = child.wait_with_output().unwrap();
        assert!(done.status.success(), "{done:?}");
    };
    passwd(false);
    assert_eq!(std::fs::read_to_string(&planted).unwrap(), "");
    assert_eq!(mode_of(&config), 0o600);
    assert!(std::fs::read_to_string(&config).unwrap().contains("# mine"));
    passwd(true);
    assert_eq!(std::fs::read_to_string(&target).unwrap(), "untouched");
    assert!(
        std::fs::symlink_metadata(&planted)
            .unwrap()
            .file_type()
            .is_symlink()
    );
    assert_eq!(mode_of(&config), 0o600);
    let names: Vec<_> = std::fs::read_dir(home.path())
        .unwrap()
        .map(|entry| entry.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|name| name.ends_with(".tmp") && name != "config.toml.tmp")
        .collect();
    assert!(names.is_empty(), "temp files left: {names:?}");
}

/// Every problem in the file at once, in file order, each with file, line and column: the
/// shape errors serde stops at (an unknown key, a wrong type) and the ones validation finds.
#[test]
fn every_config_problem_is_listed_at_once_in_file_order() {
    let home = tempfile::tempdir().unwrap();
    let path = home.path().join("config.toml");
    std::fs::write(
        &path,
        "[shell]\nprogramm = \"/bin/sh\"\nfoo = 1\n\n[web]\nport = \"x\"\n\n\
         [[startup_command]]\ncommand = \"codex\"\nplugin = \"nobody\"\n\n\
         [[plugin]]\nname = \"p\"\ncommand = \"builtin:nightcrow-recovery\"\nmemory_mb = 5\n",
    )
    .unwrap();
    let refused = nightcrow(home.path(), &["plugin", "list"]);
    assert_eq!(refused.status.code(), Some(2), "{refused:?}");
    let stderr = String::from_utf8_lossy(&refused.stderr);
    let lines: Vec<&str> = stderr
        .lines()
        .map(|line| {
            let at = line.strip_prefix(path.to_str().unwrap()).expect(&stderr);
            at.split(':').nth(1).unwrap()
        })
        .collect();
    assert_eq!(lines, ["2", "3", "6", "10", "15"], "{stderr}");
    assert!(stderr.contains("did you mean `program`?"), "{stderr}");

    // Syntax errors too: every line the parser cannot read, not only the first.
    std::fs::write(&path, "[shell\nprogram = \"/bin/sh\"\n[web]\nport = = 1\n").unwrap();
    let refused = nightcrow(home.path(), &["plugin", "list"]);
    assert_eq!(refused.status.code(), Some(2), "{refused:?}");
    let stderr = String::from_utf8_lossy(&refused.stderr);
    for position in [":1:", ":4:"] {
        assert!(
            stderr.contains(&format!("{}{position}", path.display())),
            "{position}: {stderr}"
        );
    }
}

/// A command whose stdout is closed early (`nightcrow … | head -1`) ends quietly, as a
/// command killed by SIGPIPE would (exit 141), instead of panicking.
#[cfg(unix)]
#[test]
fn a_closed_stdout_ends_a_command_quietly() {
    let home = tempfile::tempdir().unwrap();
    let elsewhere = home.path().join("other.toml");
    for args in [
        &["plugin", "list"][..],
        &["init", "--config", elsewhere.to_str().unwrap()],
        &["plugin", "check", "builtin:nightcrow-recovery"],
    ] {
        let ended = crate::util::nightcrow(home.path())
            .args(args)
            .stdout(closed_pipe())
            .output()
            .unwrap();
        assert_eq!(ended.status.code(), Some(141), "{args:?}: {ended:?}");
        assert!(ended.stderr.is_empty(), "{args:?}: {ended:?}");
    }
}

/// The write end of a pipe whose read end is already closed.
#[cfg(unix)]
pub(crate) fn closed_pipe() -> std::process::Stdio {
    let (reader, writer) = std::io::pipe().unwrap();
    drop(reader);
    writer.into()
}

/// The Rust template's README names the Rust its `edition` needs, and its manifest says so
/// to cargo too (`rust-version`), so an older toolchain is refused with that version.
#[test]
fn the_rust_template_names_the_rust_its_edition_needs() {
    let home = tempfile::tempdir().unwrap();
    let project = home.path().join("mine");
    let created = nightcrow(
        home.path(),
        &[
            "plugin",
            "new",
            "mine",
            "--lang",
            "rust",
            "--dir",
            project.to_str().unwrap(),
        ],
    );
    assert!(created.status.success(), "{created:?}");
    let manifest = std::fs::read_to_string(project.join("Cargo.toml")).unwrap();
    let manifest: toml_edit::DocumentMut = manifest.parse().unwrap();
    let package = &manifest["package"];
    let needed = match package["edition"].as_str().unwrap() {
        "2024" => "1.85",
        "2021" => "1.56",
        other => panic!("edition {other}: add the Rust it needs here"),
    };
    assert_eq!(package["rust-version"].as_str(), Some(needed));
    let readme = std::fs::read_to_string(project.join("README.md")).unwrap();
    assert!(
        readme.contains(&format!("(Rust {needed} or later)")),
        "{readme}"
    );
}

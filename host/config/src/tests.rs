//! The config's table tests: whole files in, a `Config` or every positioned error out.

use std::path::{Path, PathBuf};

use nightcrow_guard::ConnectRule;

use super::*;

const HOME: &str = "/home/a";

fn parse_text(text: &str) -> Result<Config, ConfigErrors> {
    parse(Path::new("config.toml"), text, Path::new(HOME))
}

/// Asserts that `text` is refused with exactly `expected` (`line:column: message` each).
#[track_caller]
fn check_errors(text: &str, expected: &[&str]) {
    let errors = parse_text(text).expect_err("config accepted");
    let shown: Vec<String> = errors
        .0
        .iter()
        .map(|e| format!("{}:{}: {}", e.line, e.column, e.message))
        .collect();
    assert_eq!(shown, expected);
}

const STARTER: &str = r#"
[[startup_command]]
name = "codex"
command = "codex"
plugin = "nightcrow-recovery"

[[plugin]]
name = "nightcrow-recovery"
command = "builtin:nightcrow-recovery"
enabled = false
allowed_resume_flags = ["resume", "--session"]
[plugin.env]
CODEX_HOME = "~/.codex"
[plugin.sandbox]
read_dirs = ["~/.codex/sessions"]
connect = ["127.0.0.1:4096"]
"#;

#[test]
fn the_documented_plugin_block_parses_and_resolves() {
    let config = parse_text(STARTER).unwrap();
    let plugin = &config.plugins[0];
    assert_eq!(plugin.name, "nightcrow-recovery");
    assert_eq!(
        plugin.command,
        PluginCommand::Builtin("nightcrow-recovery".into())
    );
    assert_eq!(plugin.runtime, RuntimeKind::Wasm);
    assert!(!plugin.enabled && !plugin.watch_on_signal);
    assert_eq!(plugin.allowed_resume_flags, ["resume", "--session"]);
    assert_eq!(
        plugin.env,
        [("CODEX_HOME".to_owned(), "/home/a/.codex".to_owned())]
    );
    assert_eq!(
        plugin.sandbox.read_dirs,
        [PathBuf::from("/home/a/.codex/sessions")]
    );
    assert_eq!(
        plugin.sandbox.connect,
        [ConnectRule::parse("127.0.0.1:4096").unwrap()]
    );
    assert_eq!(
        (plugin.sandbox.memory_mib, plugin.sandbox.cpu_slice_ms),
        (64, 200)
    );
    assert_eq!(
        config.startup_commands[0].plugin.as_deref(),
        Some("nightcrow-recovery")
    );
    assert_eq!(config.guard, GuardLimits::default());
    assert_eq!(
        (config.web.bind.to_string().as_str(), config.web.port),
        ("127.0.0.1", 8091)
    );
}

#[test]
fn an_empty_file_is_a_valid_config_with_defaults() {
    let config = parse_text("").unwrap();
    assert!(config.plugins.is_empty() && config.startup_commands.is_empty());
    assert_eq!(config.shell, ShellConfig::default());
}

/// Every refused key and value at once, in file order; a required key refused for its value
/// is not reported missing as well.
#[test]
fn every_problem_is_reported_at_once_in_file_order() {
    check_errors(
        "[web]\nport = \"x\"\n[[plugin]]\nname = 5\ncommand = \"builtin:nightcrow-recovery\"\n\
         args = [\"a\", 1]\n[shell]\nprogam = \"/bin/sh\"\n",
        &[
            "2:8: invalid type: string \"x\", expected u16",
            "4:8: invalid type: integer `5`, expected a string",
            "6:14: invalid type: integer `1`, expected a string",
            "8:1: unknown field `progam`, expected `program` or `command_args`; did you mean `program`?",
        ],
    );
    let errors = parse_text("[shell\nprogram = \"/bin/sh\"\n[web]\nport = = 1\n").unwrap_err();
    let lines: Vec<usize> = errors.0.iter().map(|error| error.line).collect();
    assert_eq!(lines, [1, 4], "{errors}");
}

#[test]
fn unknown_keys_name_their_position_and_a_likely_spelling() {
    check_errors(
        "[[plugin]]\nname = \"p\"\ncomand = \"x\"\n",
        &[
            "3:1: unknown field `comand`, expected one of `name`, `command`, `args`, `enabled`, `watch_on_signal`, `allowed_resume_flags`, `runtime`, `trusted`, `env`, `sandbox`; did you mean `command`?",
        ],
    );
    check_errors(
        "[shel]\nprogram = \"/bin/zsh\"\n",
        &[
            "1:2: unknown field `shel`, expected one of `shell`, `guard`, `web`, `tui`, `startup_command`, `plugin`, `notify`; did you mean `shell`?",
        ],
    );
    // Nothing close: no guess.
    check_errors(
        "[web]\nzzzzzz = 1\n",
        &[
            "2:1: unknown field `zzzzzz`, expected one of `enabled`, `bind`, `port`, `password_hash`, `insecure`, `max_connections`, `request_timeout_secs`, `hosts`, `secure_cookie`",
        ],
    );
}

#[test]
fn type_errors_and_syntax_errors_are_positioned() {
    check_errors(
        "[[plugin]]\nname = \"p\"\ncommand = \"x.wasm\"\nenabled = \"yes\"\n",
        &["4:11: invalid type: string \"yes\", expected a boolean"],
    );
    let errors = parse_text("[[plugin]\n").unwrap_err();
    assert_eq!((errors.0[0].line, errors.0[0].column), (1, 10), "{errors}");
}

#[test]
fn every_validation_error_is_reported_in_file_order() {
    check_errors(
        r#"
[[startup_command]]
command = "codex"
plugin = "recovery"

[[plugin]]
name = "p"
command = "builtin:nope"

[[plugin]]
name = "p"
command = "a.wasm"
runtime = "docker"

[[plugin]]
name = "  "
command = "b.wasm"
[plugin.sandbox]
read_dirs = ["relative/dir"]
memory_mib = 0
"#,
        &[
            "4:10: no [[plugin]] is named `recovery`",
            "8:11: there is no builtin plugin `nope`; builtins: nightcrow-recovery",
            "11:8: a plugin named `p` is already declared",
            "13:11: runtime `docker` is unknown; use \"wasm\" or \"native\"",
            "16:8: plugin name is blank",
            "19:14: read_dirs entry `relative/dir` must be absolute or start with ~/",
            "20:14: memory_mib must be at least 1",
        ],
    );
}

#[test]
fn availability_limits_are_checked_where_written() {
    check_errors(
        r#"[web]
max_connections = 0
request_timeout_secs = 0

[[plugin]]
name = "p"
command = "p.wasm"
[plugin.sandbox]
cpu_percent = 101
cpu_window_secs = 0
"#,
        &[
            "2:19: max_connections must be at least 1",
            "3:24: request_timeout_secs must be at least 1",
            "9:15: cpu_percent must be from 1 to 100",
            "10:19: cpu_window_secs must be at least 1",
        ],
    );
}

#[test]
fn at_most_eight_plugins() {
    let nine: String = (0..9)
        .map(|i| format!("[[plugin]]\nname = \"p{i}\"\ncommand = \"p{i}.wasm\"\n"))
        .collect();
    check_errors(&nine, &["26:8: 9 plugins declared, at most 8 allowed"]);
    let eight: String = (0..8)
        .map(|i| format!("[[plugin]]\nname = \"p{i}\"\ncommand = \"p{i}.wasm\"\n"))
        .collect();
    assert_eq!(parse_text(&eight).unwrap().plugins.len(), 8);
}

#[test]
fn plugin_commands_are_builtins_paths_or_installed_names() {
    let config = parse_text(
        "[[plugin]]\nname = \"a\"\ncommand = \"~/p/a.wasm\"\n\
         [[plugin]]\nname = \"b\"\ncommand = \"adapter\"\n\
         [[plugin]]\nname = \"c\"\ncommand = \"/opt/c\"\nruntime = \"native\"\ntrusted = true\n",
    )
    .unwrap();
    let commands: Vec<_> = config
        .plugins
        .iter()
        .map(|p| (&p.command, p.runtime))
        .collect();
    assert_eq!(
        commands,
        [
            (
                &PluginCommand::Path("/home/a/p/a.wasm".into()),
                RuntimeKind::Wasm
            ),
            (
                &PluginCommand::Installed("adapter".into()),
                RuntimeKind::Wasm
            ),
            (&PluginCommand::Path("/opt/c".into()), RuntimeKind::Native),
        ]
    );
    check_errors(
        "[[plugin]]\nname = \"r\"\ncommand = \"builtin:nightcrow-recovery\"\nruntime = \"native\"\n",
        &[
            "4:11: builtin plugins run only as wasm",
            "4:11: a native plugin runs as you, with no sandbox: it can read, write and send anything you can. Add `trusted = true` to this [[plugin]] if you trust its code, or run it as wasm",
        ],
    );
}

#[test]
fn a_native_plugin_must_be_trusted_and_has_no_sandbox_to_configure() {
    check_errors(
        "[[plugin]]\nname = \"n\"\ncommand = \"/opt/n\"\nruntime = \"native\"\n",
        &[
            "4:11: a native plugin runs as you, with no sandbox: it can read, write and send anything you can. Add `trusted = true` to this [[plugin]] if you trust its code, or run it as wasm",
        ],
    );
    let errors = parse_text(
        "[[plugin]]\nname = \"n\"\ncommand = \"/opt/n\"\nruntime = \"native\"\ntrusted = true\n\n\
         [plugin.sandbox]\nread_dirs = [\"/etc\"]\n",
    )
    .unwrap_err();
    assert_eq!(errors.0.len(), 1, "{errors}");
    assert_eq!(errors.0[0].line, 7, "{errors}");
    assert!(
        errors.0[0]
            .message
            .contains("[plugin.sandbox] does not apply to a native plugin"),
        "{errors}"
    );
    // A wasm plugin keeps its sandbox.
    let config = parse_text(
        "[[plugin]]\nname = \"w\"\ncommand = \"w.wasm\"\n[plugin.sandbox]\nread_dirs = [\"/etc\"]\n",
    )
    .unwrap();
    assert_eq!(
        config.plugins[0].sandbox.read_dirs,
        [std::path::PathBuf::from("/etc")]
    );
}

#[test]
fn guard_limits_are_validated_by_the_guard() {
    let config = parse_text("[guard]\nmax_sends_per_window = 2\n").unwrap();
    assert_ne!(config.guard, GuardLimits::default());
    let errors = parse_text("[guard]\nwindow_secs = 0\n").unwrap_err();
    assert_eq!(errors.0[0].line, 1, "{errors}");
}

#[test]
fn a_missing_file_is_one_clear_error() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("config.toml");
    let errors = load(&path, Path::new(HOME)).unwrap_err();
    assert!(
        errors
            .to_string()
            .starts_with(&format!("{}: cannot read the config file", path.display())),
        "{errors}"
    );
}

#[test]
fn errors_display_as_path_line_column() {
    let errors = parse_text("[[plugin]]\nname = \"\"\ncommand = \"x.wasm\"\n").unwrap_err();
    assert_eq!(errors.to_string(), "config.toml:2:8: plugin name is blank");
}

#[test]
fn the_starter_file_is_valid_and_enables_nothing() {
    let config = parse_text(STARTER_CONFIG).unwrap();
    assert_eq!(config.plugins.len(), 1);
    assert!(!config.plugins[0].enabled);
    assert!(config.startup_commands.is_empty());
    assert_eq!(config.guard, GuardLimits::default());
    assert_eq!(
        config.plugins[0].sandbox.connect,
        [ConnectRule::parse("127.0.0.1:4096").unwrap()]
    );
}

#[test]
fn connect_entries_are_checked_with_their_position() {
    check_errors(
        "[[plugin]]\nname = \"p\"\ncommand = \"/p.wasm\"\n[plugin.sandbox]\n\
         connect = [\"127.0.0.1:4096\", \"10.0.0.1:80\", \"localhost:1\"]\n",
        &[
            "5:30: connect entry `10.0.0.1:80` is not a loopback address; only 127.0.0.0/8 and ::1 can be granted",
            "5:45: connect entry `localhost:1` is not `ADDRESS:PORT` or `ADDRESS:FIRST-LAST` (IPv6 as `[::1]:PORT`)",
        ],
    );
}

#[test]
fn the_tui_leader_is_a_ctrl_letter_and_a_bad_one_is_positioned() {
    assert_eq!(
        parse_text("").unwrap().tui.leader.byte(),
        0x06,
        "Ctrl+F by default"
    );
    let config = parse_text("[tui]\nleader = \"Ctrl-A\"\n").unwrap();
    assert_eq!(config.tui.leader.byte(), 0x01);
    assert_eq!(config.tui.leader.to_string(), "Ctrl+A");
    for bad in [
        "\"f\"",
        "\"ctrl-\"",
        "\"ctrl-ab\"",
        "\"ctrl-1\"",
        "\"ctrl-m\"",
        "\"alt-f\"",
    ] {
        let errors = parse_text(&format!("[tui]\nleader = {bad}\n")).unwrap_err();
        assert_eq!(errors.0.len(), 1, "{bad}: {errors}");
        let error = &errors.0[0];
        assert_eq!((error.line, error.column), (2, 10), "{bad}: {errors}");
        assert!(error.message.contains("like `ctrl-f`"), "{bad}: {errors}");
    }
}

#[test]
fn the_tui_notify_style_is_one_of_its_names_and_a_bad_one_is_positioned() {
    assert_eq!(parse_text("").unwrap().tui.notify, TuiNotify::Auto);
    for (name, notify) in [
        ("auto", TuiNotify::Auto),
        ("osc9", TuiNotify::Osc9),
        ("osc777", TuiNotify::Osc777),
        ("osc99", TuiNotify::Osc99),
        ("bell", TuiNotify::Bell),
        ("off", TuiNotify::Off),
    ] {
        let config = parse_text(&format!("[tui]\nnotify = \"{name}\"\n")).unwrap();
        assert_eq!(config.tui.notify, notify, "{name}");
    }
    check_errors(
        "[tui]\nleader = \"ctrl-a\"\nnotify = \"OSC9\"\n",
        &["3:10: notify `OSC9` is not one of `auto`, `osc9`, `osc777`, `osc99`, `bell`, `off`"],
    );
    check_errors(
        "[tui]\nnotify = true\n",
        &["2:10: invalid type: boolean `true`, expected a string"],
    );
}

#[test]
fn the_web_client_binds_beyond_loopback_only_when_told_it_is_insecure() {
    let config = parse_text("[web]\nbind = \"::1\"\nenabled = true\n").unwrap();
    assert_eq!(
        (config.web.bind.to_string(), config.web.enabled),
        ("::1".to_owned(), true)
    );
    check_errors(
        "[web]\nbind = \"0.0.0.0\"\n",
        &[
            "2:8: bind `0.0.0.0` is reachable from other machines, and the web client speaks plain HTTP (nightcrow has no TLS of its own): the password and the session cookie would cross the network readable. Keep 127.0.0.1 and reach it through an SSH tunnel, or put a TLS reverse proxy in front and set `insecure = true` in [web] to say so",
        ],
    );
    let config = parse_text("[web]\nbind = \"0.0.0.0\"\ninsecure = true\n").unwrap();
    assert_eq!(config.web.bind.to_string(), "0.0.0.0");
    check_errors(
        "[web]\nbind = \"localhost:80\"\npassword_hash = \"hunter2\"\n",
        &[
            "2:8: bind `localhost:80` is not an IP address (like 127.0.0.1 or ::1)",
            "3:17: password_hash is not an Argon2id hash (`$argon2id$...`); set it with `nightcrow web passwd`, never write the password itself",
        ],
    );
}

#[test]
fn web_hosts_and_the_secure_cookie_are_read_and_a_bad_host_is_positioned() {
    let config = parse_text(
        "[web]\nbind = \"0.0.0.0\"\ninsecure = true\nhosts = [\"crow.example\", \"10.0.0.2:8091\"]\nsecure_cookie = true\n",
    )
    .unwrap();
    assert_eq!(config.web.hosts, ["crow.example", "10.0.0.2:8091"]);
    assert!(config.web.secure_cookie);
    let defaults = parse_text("").unwrap().web;
    assert!(defaults.hosts.is_empty() && !defaults.secure_cookie);
    check_errors(
        "[web]\nhosts = [\"ok.example\", \"evil.example/path\"]\n",
        &[
            "2:24: hosts entry `evil.example/path` is not a host name or `name:port` as a browser sends it in `Host`",
        ],
    );
}

#[test]
fn notify_hooks_are_a_command_a_url_or_both_for_the_events_named() {
    assert!(parse_text("").unwrap().notify_hooks.is_empty());
    let config = parse_text(
        "[[notify]]\ncommand = [\"~/bin/tell\", \"nightcrow\", \"~/x\"]\n\n\
         [[notify]]\nurl = \" https://ntfy.sh/my-topic \"\nevents = [\"needs_attention\", \"attention\", \"needs_attention\"]\n\n\
         [[notify]]\ncommand = [\"notify-send\"]\nurl = \"http://127.0.0.1:8080/topic\"\nevents = [\"resumed\"]\n",
    )
    .unwrap();
    let hooks = &config.notify_hooks;
    assert_eq!(
        hooks[0],
        NotifyHook {
            command: Some(vec![
                "/home/a/bin/tell".to_owned(),
                "nightcrow".to_owned(),
                "/home/a/x".to_owned()
            ]),
            url: None,
            events: NOTIFY_EVENTS.map(str::to_owned).to_vec(),
        }
    );
    assert_eq!(
        (hooks[1].command.as_ref(), hooks[1].url.as_deref()),
        (None, Some("https://ntfy.sh/my-topic"))
    );
    assert_eq!(hooks[1].events, ["needs_attention", "attention"]);
    assert!(hooks[1].wants("attention") && !hooks[1].wants("resumed"));
    assert_eq!(
        hooks[2].command.as_deref(),
        Some(&["notify-send".to_owned()][..])
    );
    assert_eq!(hooks[2].url.as_deref(), Some("http://127.0.0.1:8080/topic"));
    assert_eq!(hooks[2].events, ["resumed"]);
}

#[test]
fn bad_notify_hooks_are_positioned() {
    check_errors(
        "[[notify]]\nevents = [\"attention\"]\n\n\
         [[notify]]\ncommand = []\nurl = \"ntfy.sh/topic\"\n\n\
         [[notify]]\ncommand = [\" \", \"x\"]\nurl = \"https:///path\"\nevents = [\"attention\", \"atention\", \"done\"]\n\n\
         [[notify]]\nurl = \"https://ntfy.sh/t\"\nevents = []\n",
        &[
            "1:1: [[notify]] needs a `command` (a program and its arguments) or a `url`, or both",
            "5:11: notify command has no program: write it as a list, program first, like [\"notify-send\", \"nightcrow\"]",
            "6:7: notify url `ntfy.sh/topic` is not an http:// or https:// address with a host",
            "9:11: notify command has no program: write it as a list, program first, like [\"notify-send\", \"nightcrow\"]",
            "10:7: notify url `https:///path` is not an http:// or https:// address with a host",
            "11:24: event `atention` is unknown; events: attention, needs_attention, auto_continued, resumed",
            "11:36: event `done` is unknown; events: attention, needs_attention, auto_continued, resumed",
            "15:10: events is empty, so the hook would never run: name some, or remove the key for all of them",
        ],
    );
    check_errors(
        "[[notify]]\nurl = \"https://ntfy.sh/t\"\nsound = \"loud\"\n",
        &["3:1: unknown field `sound`, expected one of `command`, `url`, `events`"],
    );
}

#[test]
fn at_most_eight_notify_hooks() {
    let nine = "[[notify]]\nurl = \"https://ntfy.sh/t\"\n".repeat(9);
    check_errors(
        &nine,
        &["17:1: 9 [[notify]] hooks declared, at most 8 allowed"],
    );
}

#[test]
fn the_starter_notify_example_is_valid_once_uncommented() {
    let example = [
        "[[notify]]",
        "url =",
        "command = [\"notify-send\"",
        "events =",
    ];
    let uncommented: Vec<&str> = STARTER_CONFIG
        .lines()
        .map(|line| match line.strip_prefix("# ") {
            Some(rest) if example.iter().any(|start| rest.starts_with(start)) => rest,
            _ => line,
        })
        .collect();
    let config = parse_text(&uncommented.join("\n")).unwrap();
    assert_eq!(config.notify_hooks.len(), 1);
    let hook = &config.notify_hooks[0];
    assert!(hook.command.is_some() && hook.url.is_some(), "{hook:?}");
}

#[test]
fn the_tui_mouse_is_on_unless_switched_off_and_takes_only_a_boolean() {
    assert!(parse_text("").unwrap().tui.mouse, "on by default");
    assert!(parse_text("[tui]\nmouse = true\n").unwrap().tui.mouse);
    assert!(!parse_text("[tui]\nmouse = false\n").unwrap().tui.mouse);
    check_errors(
        "[tui]\nmouse = \"off\"\n",
        &["2:9: invalid type: string \"off\", expected a boolean"],
    );
}

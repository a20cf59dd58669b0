//! The overnight case as a person lives it, in a real terminal (tmux) through
//! `nightcrow attach`: the bundled recovery plugin in the daemon watching the interactive
//! Codex stand-in (`examples/demo/codex`, which stays running at the limit with a popup, like
//! the real TUI) or an OpenCode pane backed by the replaying OpenCode server. Keys never end
//! an episode; the session's own progress, an explicit cancel or a close does (SPEC §9.1).
//!
//! Waits are real: the stand-in's limit reset 10 s before it was hit, so the plugin acts at
//! reset + 30 s, 20 s after the limit.

use std::path::Path;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use crate::recovery::opencode::{Server, after, sse_events};
use crate::tui::{Tui, shows_deadline};
use crate::util::open_and_wait_for_status;

pub(crate) const STAND_IN: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/examples/demo/codex");
/// Seconds from the limit to its reset: negative, so the reset + 30 s call-back is 20 s away.
pub(crate) const RESET_IN: i64 = -10;
/// Long enough for the 20 s wait and a relaunch on a busy machine.
const WAIT_PATIENCE: Duration = Duration::from_secs(60);

/// `attach` in a repository whose startup pane runs `command`.
fn attach_watching(command: &str, codex_home: &Path, connect: Option<u16>) -> Option<Tui> {
    Tui::attach(&watching(command, codex_home, connect))
}

/// A config whose startup pane runs `command` (a Codex or OpenCode pane), watched by the
/// bundled plugin with the grants it needs: `codex_home`'s sessions, the port `connect`.
pub(crate) fn watching(command: &str, codex_home: &Path, connect: Option<u16>) -> String {
    watching_with(command, codex_home, connect, "")
}

/// [`watching`], with more `[plugin.env]` lines for the plugin (`plugin_env`).
pub(crate) fn watching_with(
    command: &str,
    codex_home: &Path,
    connect: Option<u16>,
    plugin_env: &str,
) -> String {
    std::fs::create_dir_all(codex_home.join("sessions")).unwrap();
    let codex_home = codex_home.display();
    let connect = connect.map_or(String::new(), |port| {
        format!("connect = [\"127.0.0.1:{port}\"]\n")
    });
    format!(
        r#"[shell]
program = "/bin/sh"
command_args = ["-c"]

[[plugin]]
name = "nightcrow-recovery"
command = "builtin:nightcrow-recovery"
enabled = true
allowed_resume_flags = ["resume", "--session"]
[plugin.env]
CODEX_HOME = "{codex_home}"
{plugin_env}
[plugin.sandbox]
read_dirs = ["{codex_home}/sessions"]
{connect}
[[startup_command]]
name = "agent"
command = "{command}"
plugin = "nightcrow-recovery"
"#
    )
}

/// A Codex pane as people start one: the environment first, then the program by its path.
pub(crate) struct Codex {
    pub(crate) tui: Tui,
    home: tempfile::TempDir,
}

impl Codex {
    pub(crate) fn attach() -> Option<Codex> {
        Codex::attach_with("", "")
    }

    /// The stand-in with more environment (`stand_in_env`, `NAME=value …`), watched by the
    /// plugin with more `[plugin.env]` lines (`plugin_env`).
    pub(crate) fn attach_with(stand_in_env: &str, plugin_env: &str) -> Option<Codex> {
        let home = tempfile::tempdir().unwrap();
        let command = format!(
            "CODEX_HOME='{}' RESET_IN={RESET_IN} {stand_in_env} '{STAND_IN}'",
            home.path().display()
        );
        let tui = Tui::attach(&watching_with(&command, home.path(), None, plugin_env))?;
        tui.wait_for_text("OpenAI Codex (demo stand-in");
        Some(Codex { tui, home })
    }

    /// Types the first prompt, which hits the limit; returns the session id once the plugin
    /// shows its wait, and when that wait ends (the reset + 30 s, unix seconds).
    pub(crate) fn hit_the_limit(&self) -> (String, i64) {
        self.prompt("fix the failing test");
        self.tui.wait_for_text("esc back");
        // The plugin says `limit_detected` first; the wait follows once the reset is known.
        self.tui.wait_for("the wait's marker and chip", |screen| {
            let chip = screen.lines().last().unwrap();
            screen.starts_with(" 1:agent⏳")
                && (shows_deadline(chip, "waiting_for_reset")
                    || chip.starts_with("waiting_for_reset · auto-continue at "))
        });
        self.session()
    }

    /// Types a prompt as a person does: the text, and once it shows, Enter on its own (the
    /// stand-in, like the real TUI, takes text and Enter in one read as a paste).
    pub(crate) fn prompt(&self, line: &str) {
        self.tui.keys(&["-l", line]);
        self.tui.wait_for_text(&format!("› {line}"));
        self.tui.keys(&["Enter"]);
    }

    /// Waits up to `patience` for the call-back whose detail is `detail`: the chip then
    /// reads `needs_attention`.
    pub(crate) fn expect_call_back(&self, detail: &str, patience: Duration) {
        let called = self
            .tui
            .wait_within(patience, "the call-back", |screen| screen.contains(detail));
        let chip = called.lines().last().unwrap();
        assert!(chip.starts_with("needs_attention · "), "{called}");
    }

    /// What the stand-in wrote of settings the person changed (none: empty).
    pub(crate) fn settings(&self) -> String {
        std::fs::read_to_string(self.home.path().join("stand-in.settings")).unwrap_or_default()
    }

    /// The rollout's turns, in order: `limit` or `done`.
    pub(crate) fn turns(&self) -> Vec<&'static str> {
        let rollout = walk(&self.home.path().join("sessions"))
            .into_iter()
            .find(|path| path.extension().is_some_and(|e| e == "jsonl"))
            .expect("a rollout");
        std::fs::read_to_string(rollout)
            .unwrap()
            .lines()
            .filter(|line| line.contains("\"type\":\"task_complete\""))
            .map(|line| {
                if line.contains("usage_limit_exceeded") {
                    "limit"
                } else {
                    "done"
                }
            })
            .collect()
    }

    /// Esc, as a person closes the popup: the TUI says when the limit resets.
    pub(crate) fn dismiss_the_popup(&self) {
        self.tui.keys(&["Escape"]);
        self.tui.wait_for_text("⚠ usage limit · resets at");
    }

    /// The bound session's id and the end of its wait, from its rollout.
    pub(crate) fn session(&self) -> (String, i64) {
        let rollout = walk(&self.home.path().join("sessions"))
            .into_iter()
            .find(|path| path.extension().is_some_and(|e| e == "jsonl"))
            .expect("a rollout");
        let name = rollout.file_stem().unwrap().to_string_lossy().into_owned();
        let id = name[name.len() - 36..].to_owned();
        let text = std::fs::read_to_string(&rollout).unwrap();
        let reset: i64 = text
            .split("\"resets_at\":")
            .nth(1)
            .and_then(|rest| rest.split(|c: char| !c.is_ascii_digit()).next())
            .and_then(|digits| digits.parse().ok())
            .expect("a reset time");
        (id, reset + 30)
    }

    /// The exited pane is held for its wait, then relaunched with `resume <session>` once
    /// the wait is over (`deadline`, unix seconds), not before.
    pub(crate) fn expect_held_then_resumed(&self, session: &str, deadline: i64) {
        let status = self.tui.status();
        assert!(
            status.contains("hold on pane 1: waiting_for_reset, until "),
            "{status}"
        );
        self.tui
            .wait_within(WAIT_PATIENCE, "the relaunch", |screen| {
                screen.contains(&format!("resuming session {session}"))
            });
        assert!(
            unix_now() >= deadline - 1,
            "relaunched before the wait was over ({deadline})"
        );
    }

    /// The relaunch confirmed, in the first tab (no second one), and `status` numbering it
    /// as the tab does, at its second generation.
    pub(crate) fn expect_resumed_in_place(&self) {
        let resumed = self.tui.wait_for("the episode over", |screen| {
            screen.starts_with(" 1:agent │") && screen.contains("1:agent: resumed")
        });
        assert!(!resumed.contains("2:agent"), "same tab: {resumed}");
        let status = self.tui.status();
        assert!(
            status.contains("  pane 1:agent running, generation 2, watched by nightcrow-recovery"),
            "{status}"
        );
    }

    fn pid(&self) -> u32 {
        std::fs::read_to_string(self.home.path().join("stand-in.pid"))
            .unwrap()
            .trim()
            .parse()
            .unwrap()
    }
}

fn walk(dir: &Path) -> Vec<std::path::PathBuf> {
    let mut found = Vec::new();
    for entry in std::fs::read_dir(dir).unwrap().flatten() {
        let path = entry.path();
        if path.is_dir() {
            found.extend(walk(&path));
        } else {
            found.push(path);
        }
    }
    found
}

fn unix_now() -> i64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap()
        .as_secs() as i64
}

#[test]
fn a_dismissed_popup_keeps_the_wait_and_quitting_after_the_call_back_resumes_at_once() {
    let Some(codex) = Codex::attach() else {
        return;
    };
    let tui = &codex.tui;
    let (session, _) = codex.hit_the_limit();
    // The person dismisses the popup and walks away.
    codex.dismiss_the_popup();
    // At reset + 30 s the plugin calls the person back: the wait survived the key.
    codex.expect_call_back("limit reset; continue the session", WAIT_PATIENCE);
    // Auto-continue is off: nothing was typed into the session.
    assert_eq!(codex.turns(), ["limit"]);
    assert_eq!(codex.settings(), "");
    // In the morning: Esc, then `/quit`. The session comes back in the same tab at once.
    tui.keys(&["Escape"]);
    codex.prompt("/quit");
    let resumed = tui.wait_for("the resumed session", |screen| {
        screen.contains(&format!("resuming session {session}"))
    });
    assert!(resumed.starts_with(" 1:agent"), "{resumed}");
    codex.expect_resumed_in_place();
}

#[test]
fn a_prompt_after_the_reset_carries_on_and_a_later_quit_is_a_plain_exit() {
    let Some(codex) = Codex::attach() else {
        return;
    };
    let tui = &codex.tui;
    let (_, deadline) = codex.hit_the_limit();
    codex.dismiss_the_popup();
    // The reset has passed: a new prompt succeeds, and the session shows it carried on.
    codex.prompt("carry on");
    tui.wait_for_text("(stand-in) done: carry on");
    tui.wait_for("the episode ended as continued", |screen| {
        screen.starts_with(" 1:agent │") && screen.contains("1:agent: continued")
    });
    // Quitting now is a plain exit: no call-back, no relaunch, nothing held, even after the
    // moment the wait would have ended.
    codex.prompt("/quit");
    tui.wait_for_text("1:agent exited with code 0");
    let past_deadline = (deadline + 3 - unix_now()).max(0) as u64;
    std::thread::sleep(Duration::from_secs(past_deadline));
    let screen = tui.screen();
    assert!(screen.starts_with(" 1:agent │"), "no marker: {screen}");
    assert!(
        screen
            .lines()
            .last()
            .unwrap()
            .contains("exited with code 0 · Ctrl+F x closes it"),
        "plainly exited: {screen}"
    );
    assert!(!screen.contains("resuming session"), "{screen}");
    // The slot stays relaunchable for its plugin, which has nothing pending.
    let status = tui.status();
    assert!(status.contains("hold on pane 1: idle;"), "{status}");
}

#[test]
fn codex_killed_during_the_wait_is_resumed_once_the_wait_is_over() {
    let Some(codex) = Codex::attach() else {
        return;
    };
    let tui = &codex.tui;
    let (session, deadline) = codex.hit_the_limit();
    codex.dismiss_the_popup();
    let killed = std::process::Command::new("kill")
        .args(["-KILL", &codex.pid().to_string()])
        .status()
        .unwrap();
    assert!(killed.success());
    // Exited and held: the marker and the deadline stay, the screen too.
    let held = tui.wait_for("the exited held pane", |screen| {
        shows_deadline(screen.lines().last().unwrap(), "waiting_for_reset")
            && screen.contains("1:agent exited")
    });
    assert!(held.starts_with(" 1:agent⏳"), "{held}");
    assert!(held.contains("You've hit your usage limit"), "{held}");
    codex.expect_held_then_resumed(&session, deadline);
}

/// The OpenCode pane program: stays until Ctrl+C, then quits like the real TUI.
const OPENCODE: &str = "#!/bin/sh\n\
    echo \"opencode (stand-in) $*\"\n\
    trap 'echo bye; exit 0' INT\n\
    while :; do sleep 1; done\n";

#[test]
fn opencode_that_gave_up_and_is_quit_with_ctrl_c_is_reopened_with_its_session_at_once() {
    let server = Server::start(false);
    let bin = tempfile::tempdir().unwrap();
    let program = bin.path().join("opencode");
    std::fs::write(&program, OPENCODE).unwrap();
    let mut permissions = std::fs::metadata(&program).unwrap().permissions();
    std::os::unix::fs::PermissionsExt::set_mode(&mut permissions, 0o755);
    std::fs::set_permissions(&program, permissions).unwrap();
    let codex_home = tempfile::tempdir().unwrap();
    let command = format!("'{}' --port {}", program.display(), server.port);
    let Some(tui) = attach_watching(&command, codex_home.path(), Some(server.port)) else {
        return;
    };
    server.serve(&tui.repo().display().to_string());
    tui.wait_for_text("opencode (stand-in) --port");
    std::iter::repeat_with(|| server.next_request())
        .find(|request| request.path().starts_with("/event?directory="))
        .expect("the plugin watches the pane's session");
    // b2: five retries, then OpenCode gives up while its TUI stays open.
    let events = sse_events("b2-429-retry-after-ms-3000");
    server.push(&events[..after(&events, "\"type\":\"retry\"", 5)]);
    tui.wait_for("the retry marker", |screen| {
        screen.starts_with(" 1:agent⏳")
    });
    server.push(&events[after(&events, "\"type\":\"retry\"", 5)..]);
    tui.wait_for_text("provider gave up; continue the session");
    // The person quits it with Ctrl+C: the session is reopened at once, in the same tab.
    tui.keys(&["C-c"]);
    let reopened = tui.wait_for("the reopened session", |screen| {
        screen.contains("--session ses_dc8726063ffedwq1HAGXoO7KFL")
    });
    assert!(!reopened.contains("2:agent"), "same tab: {reopened}");
    std::iter::repeat_with(|| server.next_request())
        .find(|request| request.path().starts_with("/event?directory="))
        .expect("the reopened pane is watched again");
}

#[test]
fn a_client_attaching_after_the_exit_sees_the_last_screen_the_name_and_the_wait() {
    let codex_home = tempfile::tempdir().unwrap();
    let command = format!(
        "CODEX_HOME='{}' RESET_IN=3600 '{STAND_IN}' exec 'fix the failing test'",
        codex_home.path().display()
    );
    // The daemon runs in the background and opens the repository with no client attached.
    let Some(tui) = Tui::run(
        &watching(&command, codex_home.path(), None),
        "--detach",
        100,
        30,
    ) else {
        return;
    };
    tui.wait_for_text("EXITED 0");
    // `status` says when, as local time and how long from now.
    let status = open_and_wait_for_status(tui.home(), &tui.repo(), |status| {
        status.contains("hold on pane 1: waiting_for_reset, until ")
    });
    assert!(
        status.contains(" (in 1 h); the hold lapses in ") || status.contains(" (in 59 min)"),
        "{status}"
    );
    // The first client attaches after the exit: the tab's name, its marker, the last screen.
    tui.tmux()
        .args(["respawn-pane", "-k"])
        .arg(format!("{} attach", env!("CARGO_BIN_EXE_nightcrow")))
        .status()
        .unwrap();
    // What it is sent arrives in parts; the screen is judged once all of it is drawn.
    tui.wait_for("the late client's tab, screen and chip", |screen| {
        screen.starts_with(" 1:agent⏳")
            && Tui::pane_text(screen).contains("You've hit your usage limit")
            && screen.lines().last().is_some_and(|chip| {
                chip.contains("exited with code 1 · waiting_for_reset · ")
                    && shows_deadline(chip, "waiting_for_reset")
            })
    });
}

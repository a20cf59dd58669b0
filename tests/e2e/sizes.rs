//! Shared sizes in real terminals (docs/hub.md, "Shared sizes"): a 200×50 and a 100×30
//! `nightcrow attach` on one daemon, each in its own tmux session of one tmux server. The
//! pane runs a loop that prints its PTY size whenever it changes, started by the small
//! client, so nobody types in the big one while the test watches which size the pane has.

use std::time::{Duration, Instant};

use crate::tui::{PLAIN_SHELL, Tui};
use crate::util::nightcrow;

const PATIENCE: Duration = Duration::from_secs(40);

/// Prints `size ROWS COLS` at the start and again whenever the size changes.
const WATCH_SIZE: &str =
    r#"o=; while sleep 0.2; do s=$(stty size); [ "$s" = "$o" ] || echo "size $s"; o=$s; done"#;

/// One tmux session of the test's server, named so that two can be told apart.
struct Session<'a> {
    tui: &'a Tui,
    target: &'static str,
}

impl Session<'_> {
    fn tmux(&self, args: &[&str]) {
        let status = self.tui.tmux().args(args).status().unwrap();
        assert!(status.success(), "tmux {args:?}");
    }

    fn keys(&self, keys: &[&str]) {
        let mut args = vec!["send-keys", "-t", self.target];
        args.extend_from_slice(keys);
        self.tmux(&args);
    }

    fn type_line(&self, line: &str) {
        self.keys(&["-l", line]);
        self.keys(&["Enter"]);
    }

    fn leader(&self, key: &str) {
        self.keys(&["C-f"]);
        self.keys(&[key]);
    }

    fn screen(&self) -> String {
        let output = self
            .tui
            .tmux()
            .args(["capture-pane", "-p", "-t", self.target])
            .output()
            .unwrap();
        String::from_utf8_lossy(&output.stdout).into_owned()
    }

    /// Waits until the screen satisfies `done`; returns that screen.
    #[track_caller]
    fn wait_for(&self, what: &str, done: impl Fn(&str) -> bool) -> String {
        let started = Instant::now();
        loop {
            let screen = self.screen();
            if done(&screen) {
                return screen;
            }
            assert!(
                started.elapsed() < PATIENCE,
                "never saw {what} in {}; the screen:\n{screen}\n--- daemon log ---\n{}",
                self.target,
                std::fs::read_to_string(self.tui.home().join("daemon.log")).unwrap_or_default()
            );
            std::thread::sleep(Duration::from_millis(50));
        }
    }

    /// Waits until the last size the loop printed is `rows cols`.
    #[track_caller]
    fn wait_for_size(&self, rows: u16, cols: u16) -> String {
        let wanted = format!("size {rows} {cols}");
        self.wait_for(&wanted, |screen| {
            screen.lines().rfind(|line| line.starts_with("size ")) == Some(wanted.as_str())
        })
    }
}

/// The big client (200×50, a 48×200 pane area) attached first, then the small one
/// (100×30, 28×100), which becomes the latest client and starts the size loop: both show
/// the pane at 28×100.
fn two_clients() -> Option<Tui> {
    let tui = Tui::run(PLAIN_SHELL, "attach", 200, 50)?;
    let big = session(&tui, "big");
    // With one session `rename-session` needs no target; after that both are named.
    big.tmux(&["rename-session", "big"]);
    big.wait_for("the first pane's tab", |screen| {
        screen.starts_with(" 1:shell")
    });
    let mut small = tui.tmux();
    small.args(["new-session", "-d", "-s", "small", "-x", "100", "-y", "30"]);
    small.arg("-c").arg(tui.repo());
    for (key, value) in nightcrow(tui.home()).get_envs() {
        if let Some(value) = value {
            let pair = format!("{}={}", key.to_string_lossy(), value.to_string_lossy());
            small.arg("-e").arg(pair);
        }
    }
    small.arg(format!(
        "{} attach; exec sleep 600",
        env!("CARGO_BIN_EXE_nightcrow")
    ));
    assert!(small.status().unwrap().success(), "tmux new-session");
    let small = session(&tui, "small");
    small.wait_for("the shared pane's tab", |screen| {
        screen.starts_with(" 1:shell")
    });
    small.type_line(WATCH_SIZE);
    small.wait_for_size(28, 100);
    big.wait_for_size(28, 100);
    Some(tui)
}

fn session<'a>(tui: &'a Tui, target: &'static str) -> Session<'a> {
    Session { tui, target }
}

/// The smaller client detaches: the pane gets the size of the big one back, though nobody
/// typed in it.
#[test]
fn a_client_that_detaches_gives_the_size_back() {
    let Some(tui) = two_clients() else {
        return;
    };
    let (big, small) = (session(&tui, "big"), session(&tui, "small"));
    small.leader("d");
    small.wait_for("the small client detached", |screen| {
        !screen.contains("1:shell")
    });
    big.wait_for_size(48, 200);
    big.keys(&["C-c"]);
    big.type_line("clear; stty size");
    big.wait_for("stty size in the big client", |screen| {
        screen.lines().any(|line| line == "48 200")
    });
}

/// Leader `z` makes the client pressing it the one whose size counts; the other client takes
/// it back the same way.
#[test]
fn the_claim_key_gives_the_pane_this_clients_size() {
    let Some(tui) = two_clients() else {
        return;
    };
    let (big, small) = (session(&tui, "big"), session(&tui, "small"));
    big.leader("z");
    big.wait_for_size(48, 200);
    small.wait_for_size(48, 200);
    small.leader("z");
    small.wait_for_size(28, 100);
    big.wait_for_size(28, 100);
}

//! Auto-continue as a person who went to bed lives it (issue 28, docs/recovery.md
//! "Auto-continue"): the interactive Codex stand-in (`examples/demo/codex`, which behaves
//! like the real 0.169 TUI at the limit — a popup where Enter switches the model, text and
//! Enter in one read taken as a paste) watched by the bundled plugin with
//! `AUTO_CONTINUE = "on"`, in a real terminal through `nightcrow attach`.
//!
//! Waits are real: the limit reset 10 s before it was hit, so the wait ends 20 s after it;
//! each step of the continue then waits for the pane to be quiet for 10 s.

use std::time::{Duration, Instant};

use crate::overnight::Codex;

const AUTO_CONTINUE: &str = r#"AUTO_CONTINUE = "on""#;
/// The 20 s wait, three quiet screens of 10 s, and a busy machine.
const PATIENCE: Duration = Duration::from_secs(150);

fn unix_now() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_secs() as i64
}

/// The person hits the limit and leaves the popup open. At the reset the plugin answers
/// the popup with "Keep current model" (the model stays), types `continue`, then Enter on
/// its own; the next turn succeeds, the episode ends as auto-continued, and that is all.
#[test]
fn at_the_reset_the_session_is_continued_once_and_the_model_is_kept() {
    let Some(codex) = Codex::attach_with("", AUTO_CONTINUE) else {
        return;
    };
    let tui = &codex.tui;
    let (_, deadline) = codex.hit_the_limit();
    let waiting = tui.screen();
    let chip = waiting.lines().last().unwrap();
    assert!(
        chip.starts_with("waiting_for_reset · auto-continue at "),
        "the chip says what will happen: {waiting}"
    );
    let done = tui.wait_within(PATIENCE, "the auto-continued episode", |screen| {
        screen.contains("1:agent: auto-continued")
    });
    assert!(
        unix_now() >= deadline - 1,
        "continued before the wait was over"
    );
    assert!(done.contains("• (stand-in) done: continue"), "{done}");
    assert_eq!(
        codex.settings(),
        "",
        "no setting of the person's was changed"
    );
    assert_eq!(codex.turns(), ["limit", "done"]);
    // Once: nothing more is typed into the session.
    std::thread::sleep(Duration::from_secs(12));
    assert_eq!(codex.turns(), ["limit", "done"]);
    assert_eq!(tui.screen().matches("done: continue").count(), 1);
}

/// The continue runs straight into the limit again: the plugin waits for the new reset
/// (without promising another continue), and with its one continue per episode used it
/// then only calls the person.
#[test]
fn a_continue_into_the_limit_again_waits_then_only_calls_the_person() {
    let Some(codex) = Codex::attach_with("LIMIT_TURNS=2", AUTO_CONTINUE) else {
        return;
    };
    codex.hit_the_limit();
    codex.expect_call_back("limit reset; auto-continue used up", PATIENCE * 2);
    assert_eq!(codex.turns(), ["limit", "limit"]);
    assert_eq!(codex.settings(), "");
}

/// A person who pressed a key just before the reset is at the pane: nothing is typed
/// until they have been quiet for 30 s.
#[test]
fn no_continue_within_30_s_of_a_persons_key() {
    let Some(codex) = Codex::attach_with("", AUTO_CONTINUE) else {
        return;
    };
    let tui = &codex.tui;
    let (_, deadline) = codex.hit_the_limit();
    let before = u64::try_from(deadline - 5 - unix_now()).unwrap_or(0);
    std::thread::sleep(Duration::from_secs(before));
    // Measured from before the key, so the 30 s cannot be overstated.
    let typed = Instant::now();
    codex.dismiss_the_popup();
    tui.wait_within(PATIENCE, "the auto-continued episode", |screen| {
        screen.contains("1:agent: auto-continued")
    });
    assert!(
        typed.elapsed() >= Duration::from_secs(30),
        "continued {:?} after the key",
        typed.elapsed()
    );
    assert_eq!(codex.turns(), ["limit", "done"]);
}

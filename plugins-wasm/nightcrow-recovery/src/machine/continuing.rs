//! Auto-continue (docs/recovery.md, "Auto-continue"): when the wait for a reset is over and
//! the program still runs, type the configured text into it instead of only calling the
//! person — one careful step per quiet screen, bounded, and never when unsure.
//!
//! Checked against the real Codex 0.169 TUI: at the limit it shows a popup where Enter
//! would switch the person's model, so the popup is answered only with the option that
//! keeps it; text and Enter written together are taken as a paste and not submitted, so
//! the Enter goes on its own once the text shows in the prompt. Each step acts on the
//! screen of a `pane_idle` (the guard lets input into a pane only after 10 s without
//! output anyway), never within [`QUIET_AFTER_TYPING`] of a person's keystroke.

use std::time::Duration;

use nightcrow_plugin_sdk::Now;
use nightcrow_protocol::{Command, LogLevel};

use super::{PaneMachine, Phase, WaitKind, detail, state};
use crate::provider::Screen;

/// No input while a person typed this recently: they are at the pane.
pub const QUIET_AFTER_TYPING: Duration = Duration::from_secs(30);
/// Each step must see the screen it needs (or, after Enter, the turn start) within this.
pub const STEP_WITHIN: Duration = Duration::from_secs(120);
/// Continues are counted per pane over this long ("per day").
const DAY: Duration = Duration::from_secs(24 * 3600);

/// Where an auto-continue stands.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Step {
    /// Waiting for a screen to read.
    Look,
    /// The popup was answered; waiting for the prompt.
    Answered,
    /// The text was typed; waiting to see it in the prompt before Enter.
    Typed,
    /// Enter was sent; waiting for the session to start a turn.
    Submitted,
    /// The turn runs; the session's own records say how it ends.
    Working,
}

impl PaneMachine {
    /// Whether the wait that just ended becomes an auto-continue: it is on, the reset time
    /// was known (never on a guessed backoff) and both bounds have room.
    pub(super) fn may_auto_continue(&self, kind: WaitKind, now: Now) -> bool {
        let Some(auto) = &self.auto else {
            return false;
        };
        matches!(kind, WaitKind::Reset(_))
            && self.continues < auto.per_episode
            && self.continues_within_a_day(now) < auto.per_day
    }

    /// Whether a call-back at the end of this wait is because the bounds were used up.
    pub(super) fn auto_continue_used_up(&self, kind: WaitKind, now: Now) -> bool {
        self.auto.is_some()
            && matches!(kind, WaitKind::Reset(_))
            && !self.may_auto_continue(kind, now)
    }

    fn continues_within_a_day(&self, now: Now) -> u32 {
        let recent = self
            .continued_at
            .iter()
            .filter(|at| now.mono.saturating_sub(**at) < DAY)
            .count();
        u32::try_from(recent).unwrap_or(u32::MAX)
    }

    pub(super) fn start_continuing(&mut self, now: Now, out: &mut Vec<Command>) {
        self.set_step(Step::Look, now);
        self.report(out, state::RESUMING, Some(detail::AUTO_CONTINUING), None);
        self.continue_step(now, out);
    }

    fn set_step(&mut self, step: Step, now: Now) {
        let due = (step != Step::Working).then(|| now.mono + STEP_WITHIN);
        self.phase = Phase::Continuing { step, due };
    }

    /// Takes the next step if a fresh screen allows it: answers the popup with the option
    /// that keeps the person's choice, types the text into the empty prompt, sends Enter
    /// once the text shows. Anything else on screen calls the person instead.
    pub(super) fn continue_step(&mut self, now: Now, out: &mut Vec<Command>) {
        let Phase::Continuing { step, .. } = self.phase else {
            return;
        };
        let typing = self
            .typed_at
            .is_some_and(|at| now.mono.saturating_sub(at) < QUIET_AFTER_TYPING);
        if matches!(step, Step::Submitted | Step::Working) || typing {
            return;
        }
        let (Some(screen), Some(auto)) = (self.screen.take(), self.auto.as_ref()) else {
            return;
        };
        let (input, next) = match (step, self.adapter.read_screen(&screen)) {
            (Step::Look, Screen::Popup { keep }) => (keep, Step::Answered),
            (Step::Look | Step::Answered, Screen::Prompt { typed }) if typed.is_empty() => {
                (auto.text.clone(), Step::Typed)
            }
            (Step::Typed, Screen::Prompt { typed }) if typed == auto.text => {
                ("\r".to_owned(), Step::Submitted)
            }
            _ => {
                return self.needs_attention(
                    detail::SCREEN_UNCLEAR,
                    Some(detail::LIMIT_RESET),
                    out,
                );
            }
        };
        if next == Step::Submitted {
            self.continues += 1;
            self.continued_at
                .retain(|at| now.mono.saturating_sub(*at) < DAY);
            self.continued_at.push(now.mono);
            out.push(Command::Log {
                level: LogLevel::Info,
                message: format!(
                    "{}: auto-continue submitted ({} this episode)",
                    self.adapter.name(),
                    self.continues
                ),
            });
        }
        out.push(Command::SendInput {
            token: self.token.clone(),
            generation: self.generation,
            data: input,
        });
        self.set_step(next, now);
    }

    /// Time passed during an auto-continue: a step that saw nothing in time calls the
    /// person; a person who stopped typing lets it go on.
    pub(super) fn continuing_tick(&mut self, now: Now, out: &mut Vec<Command>) {
        let Phase::Continuing { step, due } = self.phase else {
            return;
        };
        if due.is_some_and(|due| due <= now.mono) {
            let why = match step {
                Step::Submitted => detail::AUTO_CONTINUE_UNCONFIRMED,
                _ => detail::SCREEN_UNCLEAR,
            };
            return self.needs_attention(why, Some(detail::LIMIT_RESET), out);
        }
        self.continue_step(now, out);
    }

    /// When an auto-continue wants a tick: its step's deadline, or the end of a person's
    /// typing pause when a screen is waiting to be read.
    pub(super) fn continuing_wake(&self) -> Option<Duration> {
        let Phase::Continuing { due, .. } = self.phase else {
            return None;
        };
        let quiet = self
            .typed_at
            .filter(|_| self.screen.is_some())
            .map(|at| at + QUIET_AFTER_TYPING);
        [due, quiet].into_iter().flatten().min()
    }

    /// The session started a turn: after our Enter, the continue was taken.
    pub(super) fn turn_started(&mut self, now: Now) {
        if let Phase::Continuing {
            step: Step::Submitted,
            ..
        } = self.phase
        {
            self.set_step(Step::Working, now);
        }
    }

    /// Whether the episode's end is the auto-continue's doing.
    pub(super) fn auto_continued(&self) -> bool {
        matches!(
            self.phase,
            Phase::Continuing {
                step: Step::Submitted | Step::Working,
                ..
            }
        )
    }
}

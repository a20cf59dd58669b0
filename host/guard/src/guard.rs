//! `Guard::judge`: the rules of SPEC §3 in order, one exhaustive match per command.

use std::time::{Duration, Instant};

use nightcrow_protocol::{Command, Generation, MAX_INPUT_BYTES, MAX_LOG_MESSAGE_BYTES, Token};

use crate::approved::{
    ApprovedAttention, ApprovedLog, ApprovedRelaunch, ApprovedSendInput, ApprovedStatus,
    ApprovedWatchPane, Target,
};
use crate::budget::{BudgetCharges, Budgets};
use crate::text::{MAX_STATUS_DETAIL_CHARS, MAX_STATUS_STATE_CHARS, escape_controls, shown};
use crate::{
    Approved, BudgetKind, GuardLimits, PaneFacts, PaneOwner, PaneState, PluginPolicy, Refused,
    compose_relaunch_line,
};

/// A pane must have been quiet this long before a plugin may type into it (SPEC §5.3).
pub const IDLE_THRESHOLD: Duration = Duration::from_secs(10);

/// The outcome of [`Guard::judge`].
pub type Verdict = Result<Approved, Refused>;

/// The hub's one guard: judges plugin commands and holds the per-token budgets.
///
/// One per hub for its whole life: it is not rebuilt on reload or relaunch, so budgets
/// persist across both.
#[derive(Debug, Default)]
pub struct Guard {
    limits: GuardLimits,
    budgets: Budgets,
}

impl Guard {
    pub fn new(limits: GuardLimits) -> Guard {
        Guard {
            limits,
            budgets: Budgets::default(),
        }
    }

    /// Applies reloaded `[guard]` limits from the next judgement on; charges already made
    /// still count.
    pub fn set_limits(&mut self, limits: GuardLimits) {
        self.limits = limits;
    }

    /// Clears the token's budgets. The hub calls it on user input, whenever it forgets a
    /// token (close, cancel, expiry, unrelaunchable exit) and when a plugin releases a pane
    /// — never on a successful relaunch (SPEC §3.2).
    pub fn cancel(&mut self, token: &Token) {
        self.budgets.forget(token);
    }

    /// The token's charges still in the window, as ages at `now`, for the daemon's journal.
    pub fn charges(&self, token: &Token, now: Instant) -> BudgetCharges {
        self.budgets.ages(token, now, &self.limits)
    }

    /// Brings back charges a previous daemon journaled (ages at `now`), so that restarting
    /// the daemon never refills a budget (SPEC §3.2).
    pub fn restore_charges(&mut self, token: &Token, charges: &BudgetCharges, now: Instant) {
        self.budgets.restore(token, charges, now, &self.limits);
    }

    /// How many tokens have charges remembered (the budget's memory stays bounded).
    #[cfg(test)]
    pub(crate) fn tracked_tokens(&self) -> usize {
        self.budgets.tracked_tokens()
    }

    /// Judges one command from `plugin` (SPEC §3, rules in order).
    ///
    /// `facts` is what the hub resolved from the command's token, `None` when the token
    /// names no slot (and for `log`, which has none). `now` is the hub's monotonic clock;
    /// the guard never reads a clock, so the same inputs always give the same verdict.
    /// Only an approval of `send_input` or `relaunch` changes the guard (it is charged).
    pub fn judge(
        &mut self,
        plugin: &PluginPolicy,
        command: &Command,
        facts: Option<PaneFacts<'_>>,
        now: Instant,
    ) -> Verdict {
        match command {
            Command::Log { level, message } => Ok(Approved::Log(ApprovedLog {
                plugin: plugin.name.clone(),
                level: *level,
                message: truncate_log_message(&escape_controls(message)).to_owned(),
            })),
            Command::Status {
                token,
                generation,
                state,
                detail,
                deadline_epoch,
                attempt,
            } => {
                let (target, _) = identify(token, *generation, facts)?;
                Ok(Approved::Status(ApprovedStatus {
                    target,
                    state: shown(state, MAX_STATUS_STATE_CHARS),
                    detail: detail
                        .as_deref()
                        .map(|detail| shown(detail, MAX_STATUS_DETAIL_CHARS)),
                    deadline_epoch: *deadline_epoch,
                    attempt: *attempt,
                }))
            }
            Command::Attention { token, generation } => {
                let (target, _) = identify(token, *generation, facts)?;
                Ok(Approved::Attention(ApprovedAttention { target }))
            }
            Command::SendInput {
                token,
                generation,
                data,
            } => {
                let (target, facts) = identify(token, *generation, facts)?;
                match facts.state {
                    PaneState::Exited => return Err(Refused::PaneNotRunning),
                    PaneState::Running { idle } if idle < self.limits.idle_threshold() => {
                        return Err(Refused::PaneBusy {
                            idle,
                            required: self.limits.idle_threshold(),
                        });
                    }
                    PaneState::Running { .. } => {}
                }
                check_input(data)?;
                self.charge_if_within_budget(token, BudgetKind::SendInput, now)?;
                Ok(Approved::SendInput(ApprovedSendInput {
                    target,
                    data: data.clone(),
                }))
            }
            Command::Relaunch {
                token,
                generation,
                resume_args,
            } => {
                let (target, facts) = identify(token, *generation, facts)?;
                if let PaneState::Running { .. } = facts.state {
                    return Err(Refused::PaneStillRunning);
                }
                let line = compose_relaunch_line(
                    facts.launch_command,
                    resume_args,
                    &plugin.allowed_resume_flags,
                )?;
                self.charge_if_within_budget(token, BudgetKind::Relaunch, now)?;
                Ok(Approved::Relaunch(ApprovedRelaunch { target, line }))
            }
            Command::WatchPane { token } => {
                let facts = facts.ok_or(Refused::UnknownPane)?;
                if !plugin.watch_on_signal {
                    return Err(Refused::WatchNotAllowed);
                }
                match facts.owner {
                    PaneOwner::AnotherPlugin => return Err(Refused::PaneWatchedByAnother),
                    PaneOwner::ThisPlugin | PaneOwner::Nobody => {}
                }
                if let PaneState::Exited = facts.state {
                    return Err(Refused::PaneNotRunning);
                }
                Ok(Approved::WatchPane(ApprovedWatchPane {
                    target: Target {
                        pane: facts.pane,
                        token: token.clone(),
                        generation: facts.generation,
                    },
                    plugin: plugin.name.clone(),
                }))
            }
        }
    }

    fn charge_if_within_budget(
        &mut self,
        token: &Token,
        kind: BudgetKind,
        now: Instant,
    ) -> Result<(), Refused> {
        self.budgets.check(token, kind, now, &self.limits)?;
        self.budgets.charge(token, kind, now, &self.limits);
        Ok(())
    }
}

/// Rule 2: the token names a slot, this plugin owns it, and the generation is current.
fn identify<'a>(
    token: &Token,
    generation: Generation,
    facts: Option<PaneFacts<'a>>,
) -> Result<(Target, PaneFacts<'a>), Refused> {
    let facts = facts.ok_or(Refused::UnknownPane)?;
    match facts.owner {
        PaneOwner::ThisPlugin => {}
        PaneOwner::AnotherPlugin | PaneOwner::Nobody => return Err(Refused::NotOptedIn),
    }
    if generation != facts.generation {
        return Err(Refused::StaleGeneration {
            sent: generation,
            current: facts.generation,
        });
    }
    let target = Target {
        pane: facts.pane,
        token: token.clone(),
        generation,
    };
    Ok((target, facts))
}

/// Size, then characters: at most [`MAX_INPUT_BYTES`], no control character but `\r \n \t`.
fn check_input(data: &str) -> Result<(), Refused> {
    if data.len() > MAX_INPUT_BYTES {
        return Err(Refused::InputTooLarge {
            len: data.len(),
            max: MAX_INPUT_BYTES,
        });
    }
    match data
        .char_indices()
        .find(|&(_, c)| c.is_control() && !matches!(c, '\r' | '\n' | '\t'))
    {
        Some((offset, character)) => Err(Refused::ControlCharacter { character, offset }),
        None => Ok(()),
    }
}

/// The longest prefix of `message` within [`MAX_LOG_MESSAGE_BYTES`] that ends on a char
/// boundary.
fn truncate_log_message(message: &str) -> &str {
    &message[..message.floor_char_boundary(MAX_LOG_MESSAGE_BYTES)]
}

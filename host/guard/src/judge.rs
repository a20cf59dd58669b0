//! The rules of SPEC §3, in their order.

use std::time::{Duration, Instant};

use nightcrow_protocol::{
    Command, Generation, MAX_INPUT_BYTES, MAX_LOG_MESSAGE_BYTES, PaneId, Token,
};

use crate::budget::Budgets;
use crate::verdict::{Attention, Log, Relaunch, SendInput, Status, WatchPane};
use crate::{Approved, BudgetKind, GuardLimits, Refused, Verdict, compose_relaunch_line};

/// Quiet time a pane needs before a plugin may type into it; also the `pane_idle` threshold.
pub const IDLE_THRESHOLD: Duration = Duration::from_secs(10);

/// What the hub resolved from a command's token, at the moment of judging.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PaneFacts {
    pub pane: PaneId,
    /// The slot's current generation.
    pub generation: Generation,
    /// The judged plugin owns this pane.
    pub opted_in: bool,
    /// Another plugin owns this pane.
    pub watched_by_another: bool,
    /// The pane's process is running.
    pub alive: bool,
    /// Time since the pane's last output byte.
    pub idle: Duration,
    /// The original configured startup command; `None` for a bare shell or a client pane.
    pub launch_command: Option<String>,
}

/// The judged plugin's configuration, as far as the rules need it. Read at every judgement,
/// so a reload changes it without rebuilding the guard.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct PluginPolicy {
    /// For logs only.
    pub name: String,
    /// Arg 0 and every `-`/`/` arg of a relaunch must be one of these, exactly.
    pub allowed_resume_flags: Vec<String>,
    /// May ask for panes it was not configured for (`watch_pane`); SPEC calls this fact
    /// `may_watch_on_signal`.
    pub watch_on_signal: bool,
}

/// One per hub, for the hub's whole life: holds the budgets.
#[derive(Debug)]
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

    /// New limits after a config reload; charges already made stay.
    pub fn set_limits(&mut self, limits: GuardLimits) {
        self.limits = limits;
    }

    pub fn limits(&self) -> GuardLimits {
        self.limits
    }

    /// Judges one command of `plugin`. `facts` is what the hub resolved from the command's
    /// token (`None`: no pane has it). Only approvals are charged to budgets.
    pub fn judge(
        &mut self,
        plugin: &PluginPolicy,
        command: &Command,
        facts: Option<&PaneFacts>,
        now: Instant,
    ) -> Verdict {
        match command {
            Command::Log { level, message } => Ok(Approved::Log(Log {
                level: *level,
                message: truncate_on_char_boundary(message, MAX_LOG_MESSAGE_BYTES).to_owned(),
            })),
            Command::Status {
                generation,
                state,
                detail,
                deadline_epoch,
                attempt,
                ..
            } => {
                let facts = identify(facts, *generation)?;
                Ok(Approved::Status(Status {
                    pane: facts.pane,
                    state: state.clone(),
                    detail: detail.clone(),
                    deadline_epoch: *deadline_epoch,
                    attempt: *attempt,
                }))
            }
            Command::Attention { generation, .. } => {
                let facts = identify(facts, *generation)?;
                Ok(Approved::Attention(Attention { pane: facts.pane }))
            }
            Command::SendInput {
                token,
                generation,
                data,
            } => {
                let facts = identify(facts, *generation)?;
                check_input(facts, data)?;
                self.charge(token, BudgetKind::SendInput, now)?;
                Ok(Approved::SendInput(SendInput {
                    pane: facts.pane,
                    token: token.clone(),
                    data: data.clone(),
                }))
            }
            Command::Relaunch {
                token,
                generation,
                resume_args,
            } => {
                let facts = identify(facts, *generation)?;
                if facts.alive {
                    return Err(Refused::PaneStillRunning);
                }
                let launch_command = facts
                    .launch_command
                    .as_deref()
                    .ok_or(Refused::NoLaunchCommand)?;
                let line = compose_relaunch_line(
                    launch_command,
                    resume_args,
                    &plugin.allowed_resume_flags,
                )
                .map_err(Refused::ResumeArgsRejected)?;
                self.charge(token, BudgetKind::Relaunch, now)?;
                Ok(Approved::Relaunch(Relaunch {
                    pane: facts.pane,
                    token: token.clone(),
                    generation: facts.generation,
                    line,
                }))
            }
            Command::WatchPane { token } => {
                let facts = facts.ok_or(Refused::UnknownPane)?;
                if !plugin.watch_on_signal {
                    return Err(Refused::WatchNotAllowed);
                }
                if facts.watched_by_another {
                    return Err(Refused::PaneWatchedByAnother);
                }
                if !facts.alive {
                    return Err(Refused::PaneNotRunning);
                }
                Ok(Approved::WatchPane(WatchPane {
                    pane: facts.pane,
                    token: token.clone(),
                }))
            }
        }
    }

    /// Clears both budgets of `token`: on user input, when the hub forgets a slot (close,
    /// cancel, expiry, unrelaunchable exit) and when a plugin releases a pane. A successful
    /// relaunch does not call this, so a relaunch loop stays bounded.
    pub fn cancel(&mut self, token: &Token) {
        self.budgets.clear(token);
    }

    /// Tokens with charges still held (bounded by the tokens approved within one window).
    pub fn tracked_tokens(&self) -> usize {
        self.budgets.tracked_tokens()
    }

    fn charge(&mut self, token: &Token, kind: BudgetKind, now: Instant) -> Result<(), Refused> {
        if !self.budgets.has_room(&self.limits, token, kind, now) {
            return Err(Refused::RateLimited {
                kind,
                limit: match kind {
                    BudgetKind::SendInput => self.limits.max_sends_per_window,
                    BudgetKind::Relaunch => self.limits.max_relaunches_per_window,
                },
                window: self.limits.window(),
            });
        }
        self.budgets.charge(&self.limits, token, kind, now);
        Ok(())
    }
}

/// Rule 2: the token names a pane this plugin owns, at the generation the plugin names.
fn identify(facts: Option<&PaneFacts>, generation: Generation) -> Result<&PaneFacts, Refused> {
    let facts = facts.ok_or(Refused::UnknownPane)?;
    if !facts.opted_in {
        return Err(Refused::NotOptedIn);
    }
    if facts.generation != generation {
        return Err(Refused::StaleGeneration {
            requested: generation,
            current: facts.generation,
        });
    }
    Ok(facts)
}

/// Rule 4 up to the budget: a live, idle pane and plain text within the size limit.
fn check_input(facts: &PaneFacts, data: &str) -> Result<(), Refused> {
    if !facts.alive {
        return Err(Refused::PaneNotRunning);
    }
    if facts.idle < IDLE_THRESHOLD {
        return Err(Refused::PaneBusy {
            idle: facts.idle,
            needed: IDLE_THRESHOLD,
        });
    }
    if data.len() > MAX_INPUT_BYTES {
        return Err(Refused::InputTooLarge {
            len: data.len(),
            max: MAX_INPUT_BYTES,
        });
    }
    // `char::is_control` is Unicode's Cc: C0, DEL and C1 (U+0080–U+009F, CSI among them).
    if let Some((at, found)) = data
        .char_indices()
        .find(|&(_, c)| c.is_control() && !matches!(c, '\r' | '\n' | '\t'))
    {
        return Err(Refused::ControlCharacter { found, at });
    }
    Ok(())
}

fn truncate_on_char_boundary(text: &str, max: usize) -> &str {
    if text.len() <= max {
        return text;
    }
    let mut end = max;
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    &text[..end]
}

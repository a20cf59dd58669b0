//! The per-pane recovery state machine (SPEC §9.1), free of I/O.
//!
//! One [`PaneMachine`] per tracked pane. It is told the pane's events and the time, asks its
//! provider [`Adapter`] what it saw, and decides: which `status` to report (only on a real
//! change), when to wait and for how long, when to relaunch (only an exited pane), when to
//! call the person back. It never sends input. Every `detail` is a fixed literal.

use std::time::Duration;

use nightcrow_plugin_sdk::Now;
use nightcrow_protocol::{Command, Generation, LogLevel, Token};

use crate::provider::{Adapter, Observation, Sink};
use crate::wait::{Wait, backoff, until_reset};

/// Resume attempts per episode before the plugin stops and asks for the person.
pub const MAX_ATTEMPTS: u32 = 4;
/// A relaunch counts as done when the new generation shows up within this long.
pub const CONFIRM_WITHIN: Duration = Duration::from_secs(90);

/// The `state` labels of SPEC §9.1.
pub mod state {
    pub const IDLE: &str = "idle";
    pub const LIMIT_DETECTED: &str = "limit_detected";
    pub const WAITING_FOR_RESET: &str = "waiting_for_reset";
    pub const READY_TO_RESUME: &str = "ready_to_resume";
    pub const RESUMING: &str = "resuming";
    pub const BACKOFF: &str = "backoff";
    pub const NEEDS_ATTENTION: &str = "needs_attention";
}

/// Every `detail` the plugin can send. Fixed literals: nothing from a provider, a
/// transcript or a path ever reaches a client.
pub mod detail {
    pub const USAGE_LIMIT: &str = "usage limit";
    pub const NO_RESET_TIME: &str = "usage limit; no reset time";
    pub const NOT_CONFIRMED: &str = "relaunch not confirmed";
    pub const PROVIDER_RETRYING: &str = "provider retrying";
    pub const LIMIT_RESET: &str = "limit reset";
    pub const RESUMING: &str = "resuming session";
    pub const RESUMED: &str = "resumed";
    pub const CANCELLED: &str = "cancelled";
    pub const RECOVERED: &str = "recovered";
    pub const CONTINUE_AFTER_RESET: &str = "limit reset; continue the session";
    pub const CONTINUE_AFTER_BACKOFF: &str = "backoff over; continue the session";
    pub const PROVIDER_GAVE_UP: &str = "provider gave up; continue the session";
    pub const AMBIGUOUS: &str = "several sessions match; resume by hand";
    pub const ATTEMPTS_USED_UP: &str = "resume attempts used up";
    pub const SESSION_UNKNOWN: &str = "session unknown; resume by hand";
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum WaitKind {
    /// Until a known reset time (the value it was computed from, to spot a repeat report).
    Reset(i64),
    /// No reset time known.
    Backoff,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Phase {
    Idle,
    Waiting {
        wait: Wait,
        kind: WaitKind,
    },
    /// The provider retries by itself: show it, do nothing.
    ProviderRetrying {
        until: Option<i64>,
    },
    /// A relaunch was requested; waiting for the new generation.
    Resuming {
        confirm: Wait,
    },
    /// The person was called. `resume_on_exit`: if the process ends now, relaunching is
    /// still the right thing (the wait is over, the session is known).
    NeedsAttention {
        resume_on_exit: bool,
    },
}

/// The last status sent, to send only real changes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Report {
    state: &'static str,
    detail: Option<&'static str>,
    deadline: Option<i64>,
    attempt: u32,
}

/// What a `pane_opened` meant for a tracked pane.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Opened {
    /// An older generation: ignored.
    Stale,
    /// The same generation again.
    Repeat,
    /// The relaunch the machine asked for came up.
    Resumed,
    /// A new generation the machine did not ask for: give it a fresh adapter.
    Respawned,
}

/// One tracked pane.
pub struct PaneMachine {
    token: Token,
    generation: Generation,
    alive: bool,
    adapter: Box<dyn Adapter>,
    phase: Phase,
    attempts: u32,
    backoff_step: u32,
    reset_known: bool,
    reported: Report,
}

impl PaneMachine {
    pub fn new(token: Token, generation: Generation, adapter: Box<dyn Adapter>) -> PaneMachine {
        PaneMachine {
            token,
            generation,
            alive: true,
            adapter,
            phase: Phase::Idle,
            attempts: 0,
            backoff_step: 0,
            reset_known: false,
            reported: Report {
                state: state::IDLE,
                detail: None,
                deadline: None,
                attempt: 0,
            },
        }
    }

    pub fn generation(&self) -> Generation {
        self.generation
    }

    /// `pane_opened` for this token. A higher generation is either the relaunch the machine
    /// asked for (confirmed) or a respawn it did not ask for (cancels the episode; the
    /// caller then gives it a fresh adapter, since a new process means a new session).
    pub fn opened(&mut self, generation: Generation, now: Now, out: &mut Vec<Command>) -> Opened {
        if generation < self.generation {
            return Opened::Stale;
        }
        let confirming = matches!(self.phase, Phase::Resuming { .. });
        if generation == self.generation {
            // A repeat (plugin restart, repeated watch_pane): the pane is live.
            self.alive = true;
            return Opened::Repeat;
        }
        self.generation = generation;
        self.alive = true;
        if !confirming {
            self.cancel(out);
            return Opened::Respawned;
        }
        self.phase = Phase::Idle;
        if self.reset_known {
            self.attempts = 0;
            self.backoff_step = 0;
        }
        self.reset_known = false;
        self.report(out, state::IDLE, Some(detail::RESUMED), None);
        if self.adapter.attention_after_resume() {
            self.attention(out);
        }
        let mut sink = Sink::default();
        self.adapter.relaunched(now, &mut sink);
        self.absorb(sink, now, out);
        Opened::Resumed
    }

    /// After [`Opened::Respawned`]: the new process's observer.
    pub fn replace_adapter(&mut self, adapter: Box<dyn Adapter>) {
        self.adapter = adapter;
    }

    pub fn exited(&mut self, generation: Generation, now: Now, out: &mut Vec<Command>) {
        if generation != self.generation || !self.alive {
            return;
        }
        self.alive = false;
        let mut sink = Sink::default();
        self.adapter.exited(now, &mut sink);
        self.absorb(sink, now, out);
        match self.phase {
            Phase::NeedsAttention {
                resume_on_exit: true,
            } => self.relaunch_or_give_up(now, out),
            Phase::ProviderRetrying { until } => self.start_wait(until, now, out),
            Phase::Idle
            | Phase::Waiting { .. }
            | Phase::Resuming { .. }
            | Phase::NeedsAttention {
                resume_on_exit: false,
            } => {}
        }
    }

    /// `user_input` or `pane_closed`: the person took over; the episode ends.
    pub fn cancelled_by_person(&mut self, generation: Generation, out: &mut Vec<Command>) {
        if generation == self.generation {
            self.cancel(out);
        }
    }

    /// Time passed: poll the adapter if it asked, end waits that are over.
    pub fn tick(&mut self, now: Now, out: &mut Vec<Command>) {
        if self.adapter.next_poll().is_some_and(|at| at <= now.mono) {
            let mut sink = Sink::default();
            self.adapter.poll(now, &mut sink);
            self.absorb(sink, now, out);
        }
        match &mut self.phase {
            Phase::Waiting { wait, kind } => {
                let (over, kind, deadline) = (wait.observe(now), *kind, wait.deadline_epoch());
                if over {
                    self.wait_over(kind, now, out);
                } else if let WaitKind::Reset(_) = kind {
                    // A clock jump moved the deadline: clients should see the new one.
                    self.report(
                        out,
                        state::WAITING_FOR_RESET,
                        Some(detail::USAGE_LIMIT),
                        Some(deadline),
                    );
                }
            }
            Phase::Resuming { confirm } => {
                if confirm.observe(now) {
                    self.start_backoff(detail::NOT_CONFIRMED, now, out);
                }
            }
            Phase::Idle | Phase::ProviderRetrying { .. } | Phase::NeedsAttention { .. } => {}
        }
    }

    /// When [`PaneMachine::tick`] should run next (monotonic).
    pub fn next_wake(&self) -> Option<Duration> {
        let wait = match &self.phase {
            Phase::Waiting { wait, .. } => Some(wait.due_mono()),
            Phase::Resuming { confirm } => Some(confirm.due_mono()),
            Phase::Idle | Phase::ProviderRetrying { .. } | Phase::NeedsAttention { .. } => None,
        };
        [wait, self.adapter.next_poll()].into_iter().flatten().min()
    }

    fn absorb(&mut self, sink: Sink, now: Now, out: &mut Vec<Command>) {
        for (level, message) in sink.logs {
            out.push(Command::Log { level, message });
        }
        for observation in sink.observations {
            self.observe(observation, now, out);
        }
    }

    fn observe(&mut self, observation: Observation, now: Now, out: &mut Vec<Command>) {
        if let Phase::Resuming { .. } = self.phase {
            // Whatever the old process left behind is settled; the new generation decides.
            return;
        }
        match observation {
            Observation::LimitHit { reset_epoch } => {
                let repeat = match (self.phase, reset_epoch) {
                    (
                        Phase::Waiting {
                            kind: WaitKind::Reset(known),
                            ..
                        },
                        Some(reset),
                    ) => known == reset,
                    (
                        Phase::Waiting {
                            kind: WaitKind::Backoff,
                            ..
                        },
                        None,
                    ) => true,
                    _ => false,
                };
                if !repeat {
                    self.report(
                        out,
                        state::LIMIT_DETECTED,
                        Some(detail::USAGE_LIMIT),
                        reset_epoch,
                    );
                    self.start_wait(reset_epoch, now, out);
                }
            }
            Observation::ProviderRetrying { until_epoch } => {
                self.phase = Phase::ProviderRetrying { until: until_epoch };
                self.report(
                    out,
                    state::WAITING_FOR_RESET,
                    Some(detail::PROVIDER_RETRYING),
                    until_epoch,
                );
            }
            Observation::GaveUp if self.alive => {
                self.needs_attention(detail::PROVIDER_GAVE_UP, true, out);
            }
            Observation::GaveUp => self.relaunch_or_give_up(now, out),
            Observation::Recovered => {
                if self.episode_active() {
                    self.end_episode();
                    self.report(out, state::IDLE, Some(detail::RECOVERED), None);
                }
            }
            Observation::Ambiguous => self.needs_attention(detail::AMBIGUOUS, false, out),
        }
    }

    fn start_wait(&mut self, reset_epoch: Option<i64>, now: Now, out: &mut Vec<Command>) {
        let Some(reset) = reset_epoch else {
            return self.start_backoff(detail::NO_RESET_TIME, now, out);
        };
        self.reset_known = true;
        let wait = Wait::start(now, until_reset(reset, now));
        self.phase = Phase::Waiting {
            wait,
            kind: WaitKind::Reset(reset),
        };
        self.report(
            out,
            state::WAITING_FOR_RESET,
            Some(detail::USAGE_LIMIT),
            Some(wait.deadline_epoch()),
        );
    }

    /// Backoff shows no deadline: without a reset time any clock time would be a guess.
    fn start_backoff(&mut self, why: &'static str, now: Now, out: &mut Vec<Command>) {
        let wait = Wait::start(now, backoff(self.backoff_step));
        self.backoff_step = self.backoff_step.saturating_add(1);
        self.phase = Phase::Waiting {
            wait,
            kind: WaitKind::Backoff,
        };
        self.report(out, state::BACKOFF, Some(why), None);
    }

    fn wait_over(&mut self, kind: WaitKind, now: Now, out: &mut Vec<Command>) {
        if self.alive {
            let why = match kind {
                WaitKind::Reset(_) => detail::CONTINUE_AFTER_RESET,
                WaitKind::Backoff => detail::CONTINUE_AFTER_BACKOFF,
            };
            self.needs_attention(why, true, out);
        } else {
            self.relaunch_or_give_up(now, out);
        }
    }

    fn relaunch_or_give_up(&mut self, now: Now, out: &mut Vec<Command>) {
        if self.attempts >= MAX_ATTEMPTS {
            return self.needs_attention(detail::ATTEMPTS_USED_UP, false, out);
        }
        let Some(resume_args) = self.adapter.resume_args() else {
            return self.needs_attention(detail::SESSION_UNKNOWN, false, out);
        };
        self.report(out, state::READY_TO_RESUME, Some(detail::LIMIT_RESET), None);
        self.attempts += 1;
        out.push(Command::Log {
            level: LogLevel::Info,
            message: format!(
                "{}: relaunching, attempt {}",
                self.adapter.name(),
                self.attempts
            ),
        });
        out.push(Command::Relaunch {
            token: self.token.clone(),
            generation: self.generation,
            resume_args,
        });
        self.phase = Phase::Resuming {
            confirm: Wait::start(now, CONFIRM_WITHIN),
        };
        self.report(out, state::RESUMING, Some(detail::RESUMING), None);
    }

    fn needs_attention(&mut self, why: &'static str, resume_on_exit: bool, out: &mut Vec<Command>) {
        self.phase = Phase::NeedsAttention { resume_on_exit };
        if self.report(out, state::NEEDS_ATTENTION, Some(why), None) {
            self.attention(out);
        }
    }

    fn attention(&self, out: &mut Vec<Command>) {
        out.push(Command::Attention {
            token: self.token.clone(),
            generation: self.generation,
        });
    }

    fn episode_active(&self) -> bool {
        self.phase != Phase::Idle || self.attempts > 0
    }

    fn end_episode(&mut self) {
        self.phase = Phase::Idle;
        self.attempts = 0;
        self.backoff_step = 0;
        self.reset_known = false;
    }

    fn cancel(&mut self, out: &mut Vec<Command>) {
        if self.episode_active() {
            self.end_episode();
            self.report(out, state::IDLE, Some(detail::CANCELLED), None);
        }
    }

    /// Sends a status if it differs from the last one; whether it did.
    fn report(
        &mut self,
        out: &mut Vec<Command>,
        state: &'static str,
        detail: Option<&'static str>,
        deadline: Option<i64>,
    ) -> bool {
        let report = Report {
            state,
            detail,
            deadline,
            attempt: self.attempts,
        };
        if report == self.reported {
            return false;
        }
        self.reported = report;
        out.push(Command::Status {
            token: self.token.clone(),
            generation: self.generation,
            state: state.to_owned(),
            detail: detail.map(str::to_owned),
            deadline_epoch: deadline,
            attempt: self.attempts,
        });
        true
    }
}

//! The per-pane recovery state machine (SPEC §9.1), free of I/O.
//!
//! One [`PaneMachine`] per tracked pane. It is told the pane's events and the time, asks its
//! provider [`Adapter`] what it saw, and decides: which `status` to report (only on a real
//! change), when to wait and for how long, when to relaunch (only an exited pane), when to
//! call the person back, or — when the person turned auto-continue on — type into the
//! program at the reset ([`continuing`]). Every `detail` is a fixed literal.

mod continuing;

use std::time::Duration;

use nightcrow_plugin_sdk::Now;
use nightcrow_protocol::{Command, Generation, LogLevel, Token};

use crate::auto::AutoContinue;
use crate::provider::{Adapter, Observation, Sink};
use crate::wait::{Wait, backoff, until_reset};
use continuing::Step;

/// Resume attempts per episode before the plugin stops and asks for the person.
pub const MAX_ATTEMPTS: u32 = 4;
/// A relaunch counts as done when the new generation shows up within this long.
pub const CONFIRM_WITHIN: Duration = Duration::from_secs(90);
/// A provider retry that stops without an error this soon after a keystroke was stopped by
/// the person (Esc in OpenCode's TUI), not given up by the provider.
pub const STOPPED_BY_KEY_WITHIN: Duration = Duration::from_secs(10);

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
    pub const RETRY_DUE: &str = "retry time reached";
    pub const BACKOFF_OVER: &str = "backoff over";
    pub const GAVE_UP: &str = "provider gave up";
    pub const NO_RETRY_TIME: &str = "provider retrying; no retry time";
    pub const RESUMING: &str = "resuming session";
    pub const RESUMED: &str = "resumed";
    pub const CANCELLED: &str = "cancelled";
    pub const RECOVERED: &str = "recovered";
    pub const CONTINUED: &str = "continued";
    pub const STOPPED: &str = "stopped by you";
    pub const CONTINUE_AFTER_RESET: &str = "limit reset; continue the session";
    pub const CONTINUE_AFTER_RETRY: &str = "retry time reached; continue the session";
    pub const CONTINUE_AFTER_BACKOFF: &str = "backoff over; continue the session";
    pub const PROVIDER_GAVE_UP: &str = "provider gave up; continue the session";
    pub const AMBIGUOUS: &str = "several sessions match; resume by hand";
    pub const ATTEMPTS_USED_UP: &str = "resume attempts used up";
    pub const SESSION_UNKNOWN: &str = "session unknown; resume by hand";
    pub const EXITED_UNSEEN: &str = "ended while unwatched";
    /// Waiting, and auto-continue will act at the deadline (clients say "auto-continue at").
    pub const AUTO_CONTINUE: &str = "auto-continue";
    pub const AUTO_CONTINUING: &str = "auto-continuing";
    pub const AUTO_CONTINUED: &str = "auto-continued";
    pub const AUTO_CONTINUE_USED_UP: &str = "limit reset; auto-continue used up";
    pub const AUTO_CONTINUE_UNCONFIRMED: &str = "auto-continue sent; no turn started";
    pub const SCREEN_UNCLEAR: &str = "limit reset; screen unclear, not typed";
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum WaitKind {
    /// Until a known reset time (the value it was computed from, to spot a repeat report).
    Reset(i64),
    /// Until the retry time of a provider that exited while retrying by itself.
    Retry,
    /// No reset time known.
    Backoff,
}

impl WaitKind {
    /// The `waiting_for_reset` detail; `None` for a backoff, which shows no deadline.
    fn waiting_detail(self) -> Option<&'static str> {
        match self {
            WaitKind::Reset(_) => Some(detail::USAGE_LIMIT),
            WaitKind::Retry => Some(detail::PROVIDER_RETRYING),
            WaitKind::Backoff => None,
        }
    }

    /// Why the session can go on now that the wait is over.
    fn over_detail(self) -> &'static str {
        match self {
            WaitKind::Reset(_) => detail::LIMIT_RESET,
            WaitKind::Retry => detail::RETRY_DUE,
            WaitKind::Backoff => detail::BACKOFF_OVER,
        }
    }

    /// The call to the person when the wait is over and the program still runs.
    fn continue_detail(self) -> &'static str {
        match self {
            WaitKind::Reset(_) => detail::CONTINUE_AFTER_RESET,
            WaitKind::Retry => detail::CONTINUE_AFTER_RETRY,
            WaitKind::Backoff => detail::CONTINUE_AFTER_BACKOFF,
        }
    }
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
    /// still the right thing (the wait is over, the session is known); the `ready_to_resume`
    /// detail that says why.
    NeedsAttention {
        resume_on_exit: Option<&'static str>,
    },
    /// Auto-continue under way; `due`: when its step gives up (none while a turn runs).
    Continuing {
        step: Step,
        due: Option<Duration>,
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
    /// When a person last typed into the pane (monotonic).
    typed_at: Option<Duration>,
    /// The pane was heard from (output, idleness, keys) since this machine was given it.
    heard_alive: bool,
    /// Resume a session whose exit nobody saw (docs/recovery.md, "After a restart").
    resume_unheard_exit: bool,
    /// Auto-continue settings; `None`: off.
    auto: Option<AutoContinue>,
    /// Continues submitted in this episode.
    continues: u32,
    /// When continues were submitted (monotonic), for the per-day bound.
    continued_at: Vec<Duration>,
    /// The pane's screen from its last `pane_idle`, while no output has changed it since.
    screen: Option<String>,
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
            typed_at: None,
            heard_alive: false,
            resume_unheard_exit: false,
            auto: None,
            continues: 0,
            continued_at: Vec::new(),
            screen: None,
            reported: Report {
                state: state::IDLE,
                detail: None,
                deadline: None,
                attempt: 0,
            },
        }
    }

    /// Sets whether an exit nobody saw — the pane given to this machine and exited before it was
    /// heard from, as after a daemon restart — resumes a session that was simply running.
    pub fn resume_unheard_exits(&mut self, on: bool) {
        self.resume_unheard_exit = on;
    }

    /// Turns auto-continue on with these settings (`None`: off).
    pub fn auto_continue(&mut self, settings: Option<AutoContinue>) {
        self.auto = settings;
    }

    pub fn generation(&self) -> Generation {
        self.generation
    }

    /// Output of the pane: it was seen running, and its last screen is out of date.
    pub fn output(&mut self, generation: Generation) {
        if generation == self.generation {
            self.heard_alive = true;
            self.screen = None;
        }
    }

    /// `pane_idle`: the pane is quiet and shows `screen`; an auto-continue may take its
    /// next step.
    pub fn idle(
        &mut self,
        generation: Generation,
        screen: Option<String>,
        now: Now,
        out: &mut Vec<Command>,
    ) {
        if generation == self.generation {
            self.heard_alive = true;
            self.screen = screen;
            self.continue_step(now, out);
        }
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
                resume_on_exit: Some(why),
            } => self.relaunch_or_give_up(why, now, out),
            // The program ended under an auto-continue (it crashed, or the person quit it):
            // the wait is over and the session known, so it is resumed.
            Phase::Continuing { .. } => self.relaunch_or_give_up(detail::LIMIT_RESET, now, out),
            Phase::ProviderRetrying { until: Some(until) } => {
                self.start_wait(WaitKind::Retry, until, now, out)
            }
            Phase::ProviderRetrying { until: None } => {
                self.start_backoff(detail::NO_RETRY_TIME, now, out)
            }
            // Given the pane and told of its exit before hearing from it (a daemon restart
            // is an exit of every pane): the session was simply running; resume it.
            Phase::Idle
                if self.resume_unheard_exit
                    && !self.heard_alive
                    && self.adapter.resume_args().is_some() =>
            {
                // Nothing was at a limit: a confirmed resume leaves no attempt counted, as
                // after a known reset.
                self.reset_known = true;
                self.relaunch_or_give_up(detail::EXITED_UNSEEN, now, out)
            }
            Phase::Idle
            | Phase::Waiting { .. }
            | Phase::Resuming { .. }
            | Phase::NeedsAttention {
                resume_on_exit: None,
            } => {}
        }
    }

    /// `user_input`: a person is at the pane. It does not end the episode (SPEC §9.1): the
    /// real Codex TUI shows a popup at the limit that is dismissed with Esc, and a keystroke
    /// must never silently lose an overnight recovery.
    pub fn typed(&mut self, generation: Generation, now: Now) {
        if generation == self.generation {
            self.typed_at = Some(now.mono);
            self.heard_alive = true;
        }
    }

    /// `pane_closed` (a close, an explicit cancel, a hold that expired): the episode ends.
    pub fn closed(&mut self, generation: Generation, out: &mut Vec<Command>) {
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
                } else if let Some(why) = self.waiting_detail(kind, now) {
                    // A clock jump moved the deadline: clients should see the new one.
                    self.report(out, state::WAITING_FOR_RESET, Some(why), Some(deadline));
                }
            }
            Phase::Resuming { confirm } => {
                if confirm.observe(now) {
                    self.start_backoff(detail::NOT_CONFIRMED, now, out);
                }
            }
            Phase::Continuing { .. } => self.continuing_tick(now, out),
            Phase::Idle | Phase::ProviderRetrying { .. } | Phase::NeedsAttention { .. } => {}
        }
    }

    /// When [`PaneMachine::tick`] should run next (monotonic).
    pub fn next_wake(&self) -> Option<Duration> {
        let wait = match &self.phase {
            Phase::Waiting { wait, .. } => Some(wait.due_mono()),
            Phase::Resuming { confirm } => Some(confirm.due_mono()),
            Phase::Continuing { .. } => self.continuing_wake(),
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
                    match reset_epoch {
                        Some(reset) => self.start_wait(WaitKind::Reset(reset), reset, now, out),
                        None => self.start_backoff(detail::NO_RESET_TIME, now, out),
                    }
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
            Observation::GaveUp | Observation::Stopped if !self.episode_active() => {}
            // A retry stopped without an error right after a keystroke: the person aborted
            // it (Esc); calling them back for their own abort would be noise.
            Observation::Stopped if self.typed_within(STOPPED_BY_KEY_WITHIN, now) => {
                self.end_episode();
                self.report(out, state::IDLE, Some(detail::STOPPED), None);
            }
            Observation::GaveUp | Observation::Stopped if self.alive => {
                self.needs_attention(detail::PROVIDER_GAVE_UP, Some(detail::GAVE_UP), out);
            }
            Observation::GaveUp | Observation::Stopped => {
                self.relaunch_or_give_up(detail::GAVE_UP, now, out)
            }
            Observation::Recovered | Observation::Continued => {
                if self.episode_active() {
                    let why = match observation {
                        Observation::Recovered => detail::RECOVERED,
                        _ if self.auto_continued() => detail::AUTO_CONTINUED,
                        _ => detail::CONTINUED,
                    };
                    self.end_episode();
                    self.report(out, state::IDLE, Some(why), None);
                }
            }
            Observation::Ambiguous => self.needs_attention(detail::AMBIGUOUS, None, out),
            Observation::TurnStarted => self.turn_started(now),
        }
    }

    /// Waits until `until_epoch` (plus the margin) for a limit or a retry time.
    fn start_wait(&mut self, kind: WaitKind, until_epoch: i64, now: Now, out: &mut Vec<Command>) {
        self.reset_known = true;
        let wait = Wait::start(now, until_reset(until_epoch, now));
        self.phase = Phase::Waiting { wait, kind };
        if let Some(why) = self.waiting_detail(kind, now) {
            self.report(
                out,
                state::WAITING_FOR_RESET,
                Some(why),
                Some(wait.deadline_epoch()),
            );
        }
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

    /// The `waiting_for_reset` detail: says so when auto-continue will act at the end.
    fn waiting_detail(&self, kind: WaitKind, now: Now) -> Option<&'static str> {
        if self.alive && self.may_auto_continue(kind, now) {
            return Some(detail::AUTO_CONTINUE);
        }
        kind.waiting_detail()
    }

    fn wait_over(&mut self, kind: WaitKind, now: Now, out: &mut Vec<Command>) {
        if self.alive && self.may_auto_continue(kind, now) {
            self.start_continuing(now, out);
        } else if self.alive {
            let why = if self.auto_continue_used_up(kind, now) {
                detail::AUTO_CONTINUE_USED_UP
            } else {
                kind.continue_detail()
            };
            self.needs_attention(why, Some(kind.over_detail()), out);
        } else {
            self.relaunch_or_give_up(kind.over_detail(), now, out);
        }
    }

    /// `why`: the `ready_to_resume` detail.
    fn relaunch_or_give_up(&mut self, why: &'static str, now: Now, out: &mut Vec<Command>) {
        if self.attempts >= MAX_ATTEMPTS {
            return self.needs_attention(detail::ATTEMPTS_USED_UP, None, out);
        }
        let Some(resume_args) = self.adapter.resume_args() else {
            return self.needs_attention(detail::SESSION_UNKNOWN, None, out);
        };
        self.report(out, state::READY_TO_RESUME, Some(why), None);
        self.attempts += 1;
        out.push(Command::Log {
            level: LogLevel::Info,
            message: format!(
                "{}: relaunching, attempt {}",
                self.adapter.name(),
                self.attempts
            ),
        });
        // Reported before the relaunch: once the host has relaunched, a status for this
        // generation is stale and refused, so clients would never see it.
        self.report(out, state::RESUMING, Some(detail::RESUMING), None);
        out.push(Command::Relaunch {
            token: self.token.clone(),
            generation: self.generation,
            resume_args,
        });
        self.phase = Phase::Resuming {
            confirm: Wait::start(now, CONFIRM_WITHIN),
        };
    }

    fn needs_attention(
        &mut self,
        why: &'static str,
        resume_on_exit: Option<&'static str>,
        out: &mut Vec<Command>,
    ) {
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

    fn typed_within(&self, within: Duration, now: Now) -> bool {
        self.typed_at
            .is_some_and(|at| now.mono.saturating_sub(at) <= within)
    }

    fn episode_active(&self) -> bool {
        self.phase != Phase::Idle || self.attempts > 0
    }

    fn end_episode(&mut self) {
        self.phase = Phase::Idle;
        self.continues = 0;
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

#[cfg(test)]
mod tests {
    use std::cell::RefCell;
    use std::rc::Rc;

    use super::*;

    const T0: i64 = 1_796_227_800_000;
    const TOKEN: &str = "4f1c00000000000000000000000000e2";

    /// A provider double the test scripts: observations queued for the next call, fixed
    /// resume args. The state machine is the unit under test here, not an adapter.
    #[derive(Default)]
    struct Script {
        pending: Vec<Observation>,
        resume_args: Option<Vec<String>>,
        attention_after_resume: bool,
    }

    struct Scripted(Rc<RefCell<Script>>);

    impl Adapter for Scripted {
        fn name(&self) -> &'static str {
            "scripted"
        }
        fn next_poll(&self) -> Option<Duration> {
            None
        }
        fn poll(&mut self, _: Now, sink: &mut Sink) {
            self.exited(
                Now {
                    mono: Duration::ZERO,
                    wall_ms: 0,
                },
                sink,
            );
        }
        fn exited(&mut self, _: Now, sink: &mut Sink) {
            for observation in self.0.borrow_mut().pending.drain(..) {
                sink.observe(observation);
            }
        }
        fn relaunched(&mut self, now: Now, sink: &mut Sink) {
            self.exited(now, sink);
        }
        fn resume_args(&self) -> Option<Vec<String>> {
            self.0.borrow().resume_args.clone()
        }
        fn attention_after_resume(&self) -> bool {
            self.0.borrow().attention_after_resume
        }
        /// The tests' screens are already read: `popup:N`, `prompt:TEXT`, anything else.
        fn read_screen(&self, screen: &str) -> crate::provider::Screen {
            use crate::provider::Screen;
            if let Some(keep) = screen.strip_prefix("popup:") {
                Screen::Popup { keep: keep.into() }
            } else if let Some(typed) = screen.strip_prefix("prompt:") {
                Screen::Prompt {
                    typed: typed.into(),
                }
            } else {
                Screen::Unknown
            }
        }
    }

    /// A pane plus a clock: each step returns the commands it produced, logs left out.
    struct Rig {
        machine: PaneMachine,
        script: Rc<RefCell<Script>>,
        now: Now,
    }

    impl Rig {
        fn new() -> Rig {
            let script = Rc::new(RefCell::new(Script {
                resume_args: Some(vec![
                    "resume".into(),
                    "01a23785-4104-78f1-b4f0-247bed73e273".into(),
                ]),
                ..Script::default()
            }));
            let token = Token::parse(TOKEN).expect("valid token");
            Rig {
                machine: PaneMachine::new(token, 1, Box::new(Scripted(script.clone()))),
                script,
                now: Now {
                    mono: Duration::from_secs(1000),
                    wall_ms: T0,
                },
            }
        }

        /// Advances both clocks by `secs` (and the wall clock by `jump_ms` more), ticks.
        fn advance(&mut self, secs: u64, jump_ms: i64) -> Vec<String> {
            self.now.mono += Duration::from_secs(secs);
            self.now.wall_ms += secs as i64 * 1000 + jump_ms;
            self.step(|m, now, out| m.tick(now, out))
        }

        /// Queues observations and delivers them (the adapter's next poll).
        fn observe(&mut self, observations: Vec<Observation>) -> Vec<String> {
            self.script.borrow_mut().pending = observations;
            self.step(|m, now, out| {
                let mut sink = Sink::default();
                m.adapter.poll(now, &mut sink);
                m.absorb(sink, now, out);
            })
        }

        /// Auto-continue on, `per_episode` and `per_day` bounds, the default text.
        fn auto(per_episode: u32, per_day: u32) -> Rig {
            let mut rig = Rig::new();
            rig.machine.auto_continue(Some(AutoContinue {
                text: "continue".into(),
                per_episode,
                per_day,
            }));
            rig
        }

        /// [`Rig::auto`] at the end of the wait for a limit 600 s away: auto-continuing.
        fn auto_at_the_reset(per_episode: u32, per_day: u32) -> Rig {
            let mut rig = Rig::auto(per_episode, per_day);
            rig.observe(limit(Some(600)));
            rig.advance(630, 0);
            rig
        }

        /// The empty prompt, then the text showing in it: both steps taken, Enter sent.
        fn type_and_enter(&mut self) -> Vec<String> {
            let mut out = self.idle("prompt:");
            out.extend(self.output_then_idle("prompt:continue"));
            out
        }

        /// A limit that resets `secs` from the rig's wall clock; what the plugin said.
        fn limit_from_now(&mut self, secs: i64) -> Vec<String> {
            let now = (self.now.wall_ms - T0) / 1000;
            self.observe(limit(Some(now + secs)))
        }

        /// The pane falls quiet showing `screen` (see `Scripted::read_screen`).
        fn idle(&mut self, screen: &str) -> Vec<String> {
            let generation = self.machine.generation();
            self.step(|m, now, out| m.idle(generation, Some(screen.into()), now, out))
        }

        /// The auto-continue steps from a quiet screen with the popup to the Enter.
        fn continue_through_the_popup(&mut self) {
            assert_eq!(self.idle("popup:2"), [r#"g1 type "2""#]);
            assert_eq!(self.output_then_idle("prompt:"), [r#"g1 type "continue""#]);
            assert_eq!(
                self.output_then_idle("prompt:continue"),
                [r#"g1 type "\r""#]
            );
        }

        /// The program redraws (what was typed shows), then falls quiet with `screen`.
        fn output_then_idle(&mut self, screen: &str) -> Vec<String> {
            self.machine.output(self.machine.generation());
            self.advance(10, 0);
            self.idle(screen)
        }

        fn typed(&mut self) -> Vec<String> {
            let generation = self.machine.generation();
            self.step(|m, now, _| m.typed(generation, now))
        }

        fn close(&mut self, generation: Generation) -> Vec<String> {
            self.step(|m, _, out| m.closed(generation, out))
        }

        fn exit(&mut self) -> Vec<String> {
            let generation = self.machine.generation();
            self.step(|m, now, out| m.exited(generation, now, out))
        }

        fn open(&mut self, generation: Generation) -> (Opened, Vec<String>) {
            let mut opened = Opened::Stale;
            let lines = self.step(|m, now, out| opened = m.opened(generation, now, out));
            (opened, lines)
        }

        fn step(
            &mut self,
            act: impl FnOnce(&mut PaneMachine, Now, &mut Vec<Command>),
        ) -> Vec<String> {
            let mut out = Vec::new();
            act(&mut self.machine, self.now, &mut out);
            out.into_iter().filter_map(describe).collect()
        }
    }

    /// A compact, readable form of a command for table assertions.
    fn describe(command: Command) -> Option<String> {
        Some(match command {
            Command::Status {
                state,
                detail,
                deadline_epoch,
                attempt,
                generation,
                ..
            } => {
                let mut text = format!("g{generation} {state}");
                if let Some(detail) = detail {
                    text += &format!(" ({detail})");
                }
                if let Some(deadline) = deadline_epoch {
                    text += &format!(" @{}", deadline - T0 / 1000);
                }
                if attempt > 0 {
                    text += &format!(" #{attempt}");
                }
                text
            }
            Command::Relaunch {
                generation,
                resume_args,
                ..
            } => {
                format!("g{generation} relaunch {}", resume_args.join(" "))
            }
            Command::Attention { generation, .. } => format!("g{generation} attention"),
            Command::Log { .. } => return None,
            Command::SendInput {
                generation, data, ..
            } => format!("g{generation} type {data:?}"),
            Command::WatchPane { .. } => unreachable!("never sent"),
        })
    }

    fn limit(reset_in_secs: Option<i64>) -> Vec<Observation> {
        vec![Observation::LimitHit {
            reset_epoch: reset_in_secs.map(|s| T0 / 1000 + s),
        }]
    }

    #[test]
    fn a_live_pane_at_a_known_limit_is_called_back_when_the_wait_is_over() {
        let mut rig = Rig::new();
        assert_eq!(
            rig.observe(limit(Some(600))),
            [
                "g1 limit_detected (usage limit) @600",
                "g1 waiting_for_reset (usage limit) @630"
            ]
        );
        // The same limit read again changes nothing.
        assert!(rig.observe(limit(Some(600))).is_empty());
        assert!(rig.advance(629, 0).is_empty());
        assert_eq!(
            rig.advance(1, 0),
            [
                "g1 needs_attention (limit reset; continue the session)",
                "g1 attention"
            ]
        );
        assert!(rig.advance(600, 0).is_empty(), "called once");
        // The person dismisses the popup (Esc): the episode goes on.
        assert!(rig.typed().is_empty());
        // They quit the program: the session is given back at once.
        assert_eq!(
            rig.exit(),
            [
                "g1 ready_to_resume (limit reset)",
                "g1 resuming (resuming session) #1",
                "g1 relaunch resume 01a23785-4104-78f1-b4f0-247bed73e273",
            ]
        );
    }

    #[test]
    fn keystrokes_during_the_wait_never_lose_the_call_back() {
        let mut rig = Rig::new();
        rig.observe(limit(Some(600)));
        for _ in 0..3 {
            assert!(rig.typed().is_empty(), "Esc on the popup ends nothing");
            assert!(rig.advance(60, 0).is_empty());
        }
        assert_eq!(
            rig.advance(450, 0),
            [
                "g1 needs_attention (limit reset; continue the session)",
                "g1 attention"
            ]
        );
    }

    #[test]
    fn a_new_turn_after_the_limit_continues_and_a_later_exit_is_plain() {
        for called_back in [false, true] {
            let mut rig = Rig::new();
            rig.observe(limit(Some(600)));
            if called_back {
                rig.advance(630, 0);
            }
            rig.typed();
            assert_eq!(
                rig.observe(vec![Observation::Continued]),
                ["g1 idle (continued)"],
                "called back: {called_back}"
            );
            assert!(rig.advance(3600, 0).is_empty(), "no call-back any more");
            assert!(rig.exit().is_empty(), "a plain exit");
            assert!(rig.advance(3600, 0).is_empty(), "and no relaunch later");
        }
        // Without an episode a normal turn says nothing.
        let mut rig = Rig::new();
        assert!(rig.observe(vec![Observation::Continued]).is_empty());
    }

    #[test]
    fn an_exit_nobody_saw_resumes_a_session_that_was_simply_running() {
        // A daemon restart: the pane is given to the plugin and exits before it is heard from.
        let restarted = || {
            let mut rig = Rig::new();
            rig.machine.resume_unheard_exits(true);
            rig
        };
        let mut rig = restarted();
        assert_eq!(
            rig.exit(),
            [
                "g1 ready_to_resume (ended while unwatched)",
                "g1 resuming (resuming session) #1",
                "g1 relaunch resume 01a23785-4104-78f1-b4f0-247bed73e273",
            ]
        );
        assert_eq!(rig.open(2).1, ["g2 idle (resumed)"]);
        // Seen running first (output, idleness or keys), an exit is the person's: plain.
        for seen in [0, 1] {
            let mut rig = restarted();
            if seen == 0 {
                rig.machine.output(1);
            } else {
                rig.typed();
            }
            assert!(rig.exit().is_empty(), "a plain exit");
        }
        // Without a known session there is nothing to resume; with the option off, nothing
        // is resumed either.
        let mut rig = restarted();
        rig.script.borrow_mut().resume_args = None;
        assert!(rig.exit().is_empty());
        assert!(Rig::new().exit().is_empty());
    }

    #[test]
    fn an_exited_pane_is_relaunched_and_confirmed_by_its_new_generation() {
        let mut rig = Rig::new();
        rig.observe(limit(Some(600)));
        assert!(rig.exit().is_empty(), "waits on");
        assert_eq!(
            rig.advance(630, 0),
            [
                "g1 ready_to_resume (limit reset)",
                "g1 resuming (resuming session) #1",
                "g1 relaunch resume 01a23785-4104-78f1-b4f0-247bed73e273",
            ]
        );
        let (opened, lines) = rig.open(2);
        assert_eq!(opened, Opened::Resumed);
        // The reset time was known: attempts start over.
        assert_eq!(lines, ["g2 idle (resumed)"]);
        assert!(
            rig.advance(200, 0).is_empty(),
            "no confirm timeout after confirmation"
        );
    }

    #[test]
    fn an_exit_after_the_wait_ended_relaunches_at_once() {
        let mut rig = Rig::new();
        rig.observe(limit(Some(0)));
        rig.advance(30, 0);
        assert_eq!(
            rig.exit(),
            [
                "g1 ready_to_resume (limit reset)",
                "g1 resuming (resuming session) #1",
                "g1 relaunch resume 01a23785-4104-78f1-b4f0-247bed73e273",
            ]
        );
    }

    #[test]
    fn without_a_reset_time_it_backs_off_and_gives_up_after_four_attempts() {
        let mut rig = Rig::new();
        assert_eq!(
            rig.observe(limit(None)),
            [
                "g1 limit_detected (usage limit)",
                "g1 backoff (usage limit; no reset time)"
            ]
        );
        rig.exit();
        let mut transcript = Vec::new();
        // 30 s backoff, relaunch #1, no confirmation in 90 s, 60 s backoff, #2, ...
        let mut wait = 30;
        for attempt in 1..=4 {
            assert!(
                rig.advance(wait - 1, 0).is_empty(),
                "attempt {attempt} not before {wait} s"
            );
            transcript.extend(rig.advance(1, 0));
            assert!(rig.advance(89, 0).is_empty());
            transcript.extend(rig.advance(1, 0));
            wait *= 2;
        }
        let relaunches = transcript
            .iter()
            .filter(|line| line.contains(" relaunch resume "))
            .count();
        assert_eq!(relaunches, 4);
        assert_eq!(transcript[1], "g1 resuming (resuming session) #1");
        assert_eq!(transcript[3], "g1 backoff (relaunch not confirmed) #1");
        assert_eq!(
            transcript.last().expect("lines"),
            "g1 backoff (relaunch not confirmed) #4"
        );
        assert!(
            rig.advance(wait - 1, 0).is_empty(),
            "the fifth wait is {wait} s"
        );
        assert_eq!(
            rig.advance(1, 0),
            [
                "g1 needs_attention (resume attempts used up) #4",
                "g1 attention"
            ]
        );
        assert!(rig.advance(3600, 0).is_empty(), "nothing more");
    }

    #[test]
    fn confirmation_keeps_attempts_when_no_reset_time_was_known() {
        let mut rig = Rig::new();
        rig.observe(limit(None));
        rig.exit();
        rig.advance(30, 0);
        assert_eq!(rig.open(2).1, ["g2 idle (resumed) #1"]);
        // The limit is hit again: the backoff continues from where it was (60 s).
        rig.observe(limit(None));
        rig.exit();
        assert!(rig.advance(59, 0).is_empty());
        assert_eq!(rig.advance(1, 0)[1], "g2 resuming (resuming session) #2");
        // A normal turn later ends the episode for good.
        rig.open(3);
        assert_eq!(
            rig.observe(vec![Observation::Recovered]),
            ["g3 idle (recovered)"]
        );
        assert!(rig.observe(vec![Observation::Recovered]).is_empty());
    }

    #[test]
    fn clock_jumps_move_the_shown_deadline_and_never_end_the_wait_early() {
        let mut rig = Rig::new();
        rig.observe(limit(Some(600)));
        // The wall clock jumps an hour ahead: the deadline moves with it, no early end.
        assert_eq!(
            rig.advance(10, 3_600_000),
            ["g1 waiting_for_reset (usage limit) @4230"]
        );
        assert!(rig.advance(619, 0).is_empty());
        // Then two hours back.
        assert_eq!(
            rig.advance(0, -7_200_000),
            ["g1 waiting_for_reset (usage limit) @-2970"]
        );
        assert_eq!(
            rig.advance(1, 0)[0],
            "g1 needs_attention (limit reset; continue the session)"
        );
    }

    #[test]
    fn waits_are_clamped_between_15_s_and_8_days() {
        let mut rig = Rig::new();
        assert_eq!(
            rig.observe(limit(Some(-3600)))[1],
            "g1 waiting_for_reset (usage limit) @15"
        );
        let mut far = Rig::new();
        assert_eq!(
            far.observe(limit(Some(30 * 86_400)))[1],
            format!("g1 waiting_for_reset (usage limit) @{}", 8 * 86_400)
        );
    }

    #[test]
    fn cancellation_by_close_and_unrequested_respawn() {
        for how in ["close", "respawn"] {
            let mut rig = Rig::new();
            rig.observe(limit(Some(600)));
            let lines = match how {
                "close" => rig.close(1),
                _ => {
                    let (opened, lines) = rig.open(2);
                    assert_eq!(opened, Opened::Respawned);
                    lines
                }
            };
            assert_eq!(
                lines
                    .last()
                    .expect("a status")
                    .split_once(' ')
                    .expect("g")
                    .1,
                "idle (cancelled)",
                "{how}"
            );
            assert!(rig.advance(3600, 0).is_empty(), "{how}: the wait is gone");
        }
        // A stale close and a close with no episode send nothing.
        let mut rig = Rig::new();
        assert!(rig.close(1).is_empty());
        rig.observe(limit(Some(600)));
        assert!(rig.close(0).is_empty());
        assert_eq!(rig.open(1).0, Opened::Repeat);
        assert_eq!(rig.open(0).0, Opened::Stale);
    }

    #[test]
    fn ambiguity_and_unknown_sessions_never_resume() {
        let mut rig = Rig::new();
        assert_eq!(
            rig.observe(vec![Observation::Ambiguous]),
            [
                "g1 needs_attention (several sessions match; resume by hand)",
                "g1 attention"
            ]
        );
        assert!(
            rig.exit().is_empty(),
            "no relaunch after an ambiguous binding"
        );

        let mut rig = Rig::new();
        rig.script.borrow_mut().resume_args = None;
        rig.observe(limit(Some(0)));
        rig.exit();
        assert_eq!(
            rig.advance(30, 0),
            [
                "g1 needs_attention (session unknown; resume by hand)",
                "g1 attention"
            ]
        );
    }

    #[test]
    fn provider_retries_are_shown_and_left_alone_then_gave_up_calls_the_person() {
        let mut rig = Rig::new();
        rig.script.borrow_mut().attention_after_resume = true;
        let retry = |s| {
            vec![Observation::ProviderRetrying {
                until_epoch: Some(T0 / 1000 + s),
            }]
        };
        assert_eq!(
            rig.observe(retry(20)),
            ["g1 waiting_for_reset (provider retrying) @20"]
        );
        assert!(rig.observe(retry(20)).is_empty());
        assert_eq!(
            rig.observe(retry(44)),
            ["g1 waiting_for_reset (provider retrying) @44"]
        );
        assert!(
            rig.advance(3600, 0).is_empty(),
            "never intervenes while retrying"
        );
        assert_eq!(
            rig.observe(vec![Observation::GaveUp]),
            [
                "g1 needs_attention (provider gave up; continue the session)",
                "g1 attention"
            ]
        );
        // It exits later: relaunch with the session, confirmed, then the person is called.
        assert_eq!(
            rig.exit()[2],
            "g1 relaunch resume 01a23785-4104-78f1-b4f0-247bed73e273"
        );
        // No reset time was known, so the attempt count stays for the episode.
        assert_eq!(rig.open(2).1, ["g2 idle (resumed) #1", "g2 attention"]);
    }

    #[test]
    fn a_retry_the_person_stopped_ends_without_an_alarm() {
        let retry = |s| {
            vec![Observation::ProviderRetrying {
                until_epoch: Some(T0 / 1000 + s),
            }]
        };
        let mut rig = Rig::new();
        rig.observe(retry(20));
        // Esc in the TUI: a keystroke, then the retry stops without an error.
        assert!(rig.typed().is_empty());
        rig.advance(2, 0);
        assert_eq!(
            rig.observe(vec![Observation::Stopped]),
            ["g1 idle (stopped by you)"]
        );
        assert!(rig.observe(vec![Observation::GaveUp]).is_empty());
        // A later retry is a new episode; stopped long after any keystroke (an abort
        // through the API) is a give-up, and so is an error whatever was typed.
        rig.observe(retry(50));
        rig.advance(11, 0);
        assert_eq!(
            rig.observe(vec![Observation::Stopped]),
            [
                "g1 needs_attention (provider gave up; continue the session)",
                "g1 attention"
            ]
        );
        let mut rig = Rig::new();
        rig.observe(retry(20));
        rig.typed();
        assert_eq!(
            rig.observe(vec![Observation::GaveUp])[1],
            "g1 attention",
            "a give-up is never the person's doing"
        );
        // The person answers the call-back with a new prompt: the session is busy again.
        rig.typed();
        assert_eq!(
            rig.observe(vec![Observation::Continued]),
            ["g1 idle (continued)"]
        );
    }

    #[test]
    fn a_provider_that_recovers_by_itself_goes_quietly_idle() {
        let mut rig = Rig::new();
        rig.observe(vec![Observation::ProviderRetrying { until_epoch: None }]);
        assert_eq!(
            rig.observe(vec![Observation::Recovered]),
            ["g1 idle (recovered)"]
        );
    }

    #[test]
    fn an_exit_while_the_provider_retried_waits_for_its_retry_time_then_resumes() {
        let mut rig = Rig::new();
        rig.observe(vec![Observation::ProviderRetrying {
            until_epoch: Some(T0 / 1000 + 100),
        }]);
        assert_eq!(
            rig.exit(),
            ["g1 waiting_for_reset (provider retrying) @130"]
        );
        let out = rig.advance(130, 0);
        assert_eq!(out[0], "g1 ready_to_resume (retry time reached)");
        assert_eq!(
            out[2],
            "g1 relaunch resume 01a23785-4104-78f1-b4f0-247bed73e273"
        );
    }

    #[test]
    fn an_exit_while_the_provider_retried_without_a_time_backs_off_and_says_so() {
        let mut rig = Rig::new();
        rig.observe(vec![Observation::ProviderRetrying { until_epoch: None }]);
        assert_eq!(
            rig.exit(),
            ["g1 backoff (provider retrying; no retry time)"]
        );
    }

    #[test]
    fn a_give_up_then_an_exit_says_why_it_resumes() {
        let mut rig = Rig::new();
        rig.observe(vec![Observation::ProviderRetrying { until_epoch: None }]);
        rig.observe(vec![Observation::GaveUp]);
        let out = rig.exit();
        assert_eq!(out[0], "g1 ready_to_resume (provider gave up)", "{out:?}");
    }

    #[test]
    fn auto_continue_answers_the_popup_types_the_text_then_enter_and_ends_as_auto_continued() {
        let mut rig = Rig::auto(1, 3);
        assert_eq!(
            rig.observe(limit(Some(600))),
            [
                "g1 limit_detected (usage limit) @600",
                "g1 waiting_for_reset (auto-continue) @630"
            ]
        );
        // The screen of a quiet pane is kept while the wait runs; output makes it stale.
        assert!(rig.idle("popup:2").is_empty());
        rig.machine.output(1);
        assert_eq!(rig.advance(630, 0), ["g1 resuming (auto-continuing)"]);
        rig.continue_through_the_popup();
        // Enter was taken: a turn starts, then ends normally.
        assert!(rig.observe(vec![Observation::TurnStarted]).is_empty());
        assert!(
            rig.advance(3600, 0).is_empty(),
            "a running turn has no deadline"
        );
        assert_eq!(
            rig.observe(vec![Observation::Continued]),
            ["g1 idle (auto-continued)"]
        );
    }

    #[test]
    fn a_continue_into_the_limit_again_waits_for_the_new_reset_then_only_calls_the_person() {
        let mut rig = Rig::auto_at_the_reset(1, 3);
        // The prompt is empty (the popup was dismissed).
        assert_eq!(
            rig.type_and_enter(),
            [r#"g1 type "continue""#, r#"g1 type "\r""#]
        );
        assert_eq!(
            rig.observe(vec![Observation::TurnStarted, limit(Some(2000)).remove(0)]),
            [
                "g1 limit_detected (usage limit) @2000",
                // The bound is used up, so this wait does not promise a continue.
                "g1 waiting_for_reset (usage limit) @2030"
            ]
        );
        rig.idle("prompt:");
        let now = (rig.now.wall_ms - T0) / 1000;
        assert!(rig.advance((2029 - now) as u64, 0).is_empty());
        assert_eq!(
            rig.advance(1, 0),
            [
                "g1 needs_attention (limit reset; auto-continue used up)",
                "g1 attention"
            ]
        );
        assert!(rig.idle("prompt:").is_empty(), "nothing typed any more");
    }

    #[test]
    fn no_input_while_a_person_typed_in_the_last_30_s() {
        let mut rig = Rig::auto(1, 3);
        rig.observe(limit(Some(600)));
        rig.advance(620, 0);
        rig.typed();
        rig.idle("prompt:");
        assert_eq!(rig.advance(10, 0), ["g1 resuming (auto-continuing)"]);
        assert!(rig.advance(19, 0).is_empty(), "typed 29 s ago");
        assert_eq!(
            rig.machine.next_wake(),
            Some(rig.now.mono + Duration::from_secs(1))
        );
        assert_eq!(rig.advance(1, 0), [r#"g1 type "continue""#]);
    }

    #[test]
    fn what_cannot_be_read_or_confirmed_calls_the_person() {
        // A screen that is neither the popup nor the empty prompt (the person's own text
        // in the prompt, another program): the person is called, nothing typed.
        for screen in ["prompt:half a sentence", "something else"] {
            let mut rig = Rig::auto(1, 3);
            rig.observe(limit(Some(600)));
            rig.idle(screen);
            assert_eq!(
                rig.advance(630, 0),
                [
                    "g1 resuming (auto-continuing)",
                    "g1 needs_attention (limit reset; screen unclear, not typed)",
                    "g1 attention"
                ]
            );
            // Quitting then resumes the session, as after any call-back.
            assert_eq!(rig.exit()[0], "g1 ready_to_resume (limit reset)");
        }
        // No quiet screen within two minutes (the program keeps printing).
        let mut rig = Rig::auto_at_the_reset(1, 3);
        assert!(rig.advance(119, 0).is_empty());
        assert_eq!(
            rig.advance(1, 0)[0],
            "g1 needs_attention (limit reset; screen unclear, not typed)"
        );
        // Enter sent, but no turn starts.
        let mut rig = Rig::auto_at_the_reset(1, 3);
        rig.type_and_enter();
        assert_eq!(
            rig.advance(120, 0)[0],
            "g1 needs_attention (auto-continue sent; no turn started)"
        );
        // A text the prompt does not show as typed: no Enter.
        let mut rig = Rig::auto_at_the_reset(1, 3);
        rig.idle("popup:2");
        assert_eq!(
            rig.output_then_idle("popup:2")[0],
            "g1 needs_attention (limit reset; screen unclear, not typed)"
        );
    }

    #[test]
    fn the_daily_bound_spans_episodes_and_an_exit_is_resumed_not_continued() {
        let continued_once = || {
            let mut rig = Rig::auto_at_the_reset(1, 1);
            rig.type_and_enter();
            rig.observe(vec![Observation::TurnStarted, Observation::Continued]);
            rig
        };
        // A second limit the same day: only the person is called.
        let mut rig = continued_once();
        assert!(rig.limit_from_now(100)[1].starts_with("g1 waiting_for_reset (usage limit)"));
        rig.idle("prompt:");
        assert_eq!(
            rig.advance(130, 0)[0],
            "g1 needs_attention (limit reset; auto-continue used up)"
        );
        // A day later the bound has room again.
        let mut rig = continued_once();
        rig.advance(24 * 3600, 0);
        assert!(rig.limit_from_now(100)[1].starts_with("g1 waiting_for_reset (auto-continue)"));
        // An exited pane is relaunched at the reset, never typed into.
        let mut rig = Rig::auto(1, 3);
        rig.observe(limit(Some(600)));
        rig.exit();
        assert_eq!(rig.advance(630, 0)[0], "g1 ready_to_resume (limit reset)");
    }

    #[test]
    fn every_detail_fits_the_terminal_chip() {
        // The terminal client cuts a detail at 40 columns (nightcrow_tui::format::DETAIL_WIDTH).
        for text in [
            detail::USAGE_LIMIT,
            detail::NO_RESET_TIME,
            detail::NOT_CONFIRMED,
            detail::PROVIDER_RETRYING,
            detail::LIMIT_RESET,
            detail::RETRY_DUE,
            detail::BACKOFF_OVER,
            detail::GAVE_UP,
            detail::NO_RETRY_TIME,
            detail::RESUMING,
            detail::RESUMED,
            detail::CANCELLED,
            detail::RECOVERED,
            detail::CONTINUED,
            detail::STOPPED,
            detail::CONTINUE_AFTER_RESET,
            detail::CONTINUE_AFTER_RETRY,
            detail::CONTINUE_AFTER_BACKOFF,
            detail::PROVIDER_GAVE_UP,
            detail::AMBIGUOUS,
            detail::ATTEMPTS_USED_UP,
            detail::SESSION_UNKNOWN,
            detail::EXITED_UNSEEN,
            detail::AUTO_CONTINUE,
            detail::AUTO_CONTINUING,
            detail::AUTO_CONTINUED,
            detail::AUTO_CONTINUE_USED_UP,
            detail::AUTO_CONTINUE_UNCONFIRMED,
            detail::SCREEN_UNCLEAR,
        ] {
            assert!(text.chars().count() <= 40, "{text}");
        }
    }
}

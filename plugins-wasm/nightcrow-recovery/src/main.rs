//! nightcrow-recovery: the bundled recovery plugin (SPEC §9). See `docs/recovery.md`.
//!
//! It watches Codex and OpenCode panes, notices usage limits and provider retries, shows
//! them as `status`, waits for the reset, relaunches an exited pane with its session's
//! resume arguments, and calls the person back (`attention`) when the pane is alive — or,
//! when the person turned auto-continue on, types the configured text into it.
//!
//! **Invariants:** it sends input only as an auto-continue the person turned on (bounded,
//! after reading the screen; `machine::continuing`), never writes files, never forwards
//! transcript or screen text or provider payloads (every `detail` is a literal in
//! `machine::detail`, logs carry counts, provider names and parse-error kinds only), and
//! it tracks a bounded number of panes and pending `watch_pane` requests.
#![forbid(unsafe_code)]

mod auto;
mod codex;
mod detect;
mod machine;
mod opencode;
mod provider;
mod wait;

use std::collections::{BTreeMap, VecDeque};
use std::time::Duration;

use nightcrow_plugin_sdk::{Context, Now, PaneIdle, PaneOpened, Plugin};
use nightcrow_protocol::{Command, Generation, LogLevel, Token};

use auto::AutoContinue;
use detect::{ProviderKind, detect};
use machine::{Opened, PaneMachine};
use provider::{Adapter, Env, OpenedPane, Sink};

/// Most panes tracked at once.
pub const MAX_PANES: usize = 64;
/// Most `watch_pane` requests awaiting their `pane_opened`.
pub const MAX_PENDING_WATCHES: usize = 8;
/// A token is not asked for again within this long.
pub const WATCH_RETRY_AFTER: Duration = Duration::from_secs(30);
/// Most tokens remembered as "not a provider pane" (so they are never asked for).
const MAX_IGNORED: usize = 256;

struct Recovery {
    env: Env,
    /// `RESUME_AFTER_RESTART` (default on): see [`PaneMachine::resume_unheard_exits`].
    resume_after_restart: bool,
    auto_continue: Option<AutoContinue>,
    /// What reading the settings had to say, sent with the first callback.
    startup_logs: Vec<(LogLevel, String)>,
    panes: BTreeMap<Token, PaneMachine>,
    /// Tokens given to us that are not provider panes; events for them are expected.
    ignored: VecDeque<Token>,
    /// `watch_pane` requests sent and when.
    watches: Vec<(Token, Duration)>,
    warned_full: bool,
}

impl Recovery {
    fn new(env: Env) -> Recovery {
        let resume_after_restart = !matches!(
            env.get("RESUME_AFTER_RESTART")
                .map(|value| value.trim().to_ascii_lowercase())
                .as_deref(),
            Some("false" | "0" | "no" | "off")
        );
        let mut startup_logs = Vec::new();
        let auto_continue = AutoContinue::from_env(&env, &mut startup_logs);
        Recovery {
            env,
            resume_after_restart,
            auto_continue,
            startup_logs,
            panes: BTreeMap::new(),
            ignored: VecDeque::new(),
            watches: Vec::new(),
            warned_full: false,
        }
    }

    fn ignore(&mut self, token: Token) {
        if !self.ignored.contains(&token) {
            if self.ignored.len() == MAX_IGNORED {
                self.ignored.pop_front();
            }
            self.ignored.push_back(token);
        }
    }

    /// An event for a token we hold no state for: we missed its `pane_opened` (dropped from
    /// a full queue, or sent before a restart). Ask for it again, within bounds.
    fn unknown(&mut self, token: &Token, now: Now, out: &mut Vec<Command>) {
        if self.ignored.contains(token) {
            return;
        }
        self.watches
            .retain(|(_, asked)| now.mono.saturating_sub(*asked) < WATCH_RETRY_AFTER);
        if self.watches.len() >= MAX_PENDING_WATCHES || self.watches.iter().any(|(t, _)| t == token)
        {
            return;
        }
        self.watches.push((token.clone(), now.mono));
        out.push(Command::WatchPane {
            token: token.clone(),
        });
    }

    fn with_pane(
        &mut self,
        ctx: &mut Context<'_>,
        token: Token,
        act: impl FnOnce(&mut PaneMachine, Now, &mut Vec<Command>),
    ) {
        let now = ctx.now();
        let mut out = Vec::new();
        match self.panes.get_mut(&token) {
            Some(pane) => act(pane, now, &mut out),
            None => self.unknown(&token, now, &mut out),
        }
        send_all(ctx, out);
    }
}

/// The observer for a provider pane; `None` when the pane cannot be observed at all (the
/// adapter has logged why).
fn build_adapter(
    kind: ProviderKind,
    facts: &OpenedPane,
    env: &Env,
    sink: &mut Sink,
) -> Option<Box<dyn Adapter>> {
    match kind {
        ProviderKind::Codex => Some(Box::new(codex::Codex::new(facts, env, sink))),
        ProviderKind::OpenCode => opencode::OpenCode::new(facts, env, sink)
            .map(|adapter| Box::new(adapter) as Box<dyn Adapter>),
    }
}

/// Said once per pane whose startup command named this plugin but runs neither provider,
/// so a person who expected recovery learns why there is none. The command is the
/// person's own config text (never a transcript), cut and on one line.
fn not_recognised(command: &str) -> Command {
    let shown: String = command
        .chars()
        .map(|c| if c.is_control() { ' ' } else { c })
        .take(200)
        .collect();
    Command::Log {
        level: LogLevel::Warn,
        message: format!(
            "not a Codex or OpenCode command, so this pane gets no recovery: {shown} \
             (recognised forms: docs/recovery.md)"
        ),
    }
}

fn send_all(ctx: &mut Context<'_>, out: Vec<Command>) {
    for command in out {
        ctx.send(&command);
    }
}

impl Plugin for Recovery {
    fn pane_opened(&mut self, ctx: &mut Context<'_>, pane: PaneOpened) {
        let now = ctx.now();
        self.watches.retain(|(token, _)| *token != pane.token);
        let mut out: Vec<Command> = std::mem::take(&mut self.startup_logs)
            .into_iter()
            .map(|(level, message)| Command::Log { level, message })
            .collect();
        let kind = pane.command.as_deref().and_then(detect);
        let (Some(kind), Some(command)) = (kind, pane.command.as_deref()) else {
            self.panes.remove(&pane.token);
            if let Some(command) = pane.command.as_deref()
                && !self.ignored.contains(&pane.token)
            {
                out.push(not_recognised(command));
            }
            self.ignore(pane.token);
            return send_all(ctx, out);
        };
        let command = command.to_owned();
        let facts = OpenedPane {
            command,
            cwd: pane.cwd,
            opened: Now {
                mono: now.mono,
                wall_ms: pane.opened_ms.map_or(now.wall_ms, |ms| ms.min(now.wall_ms)),
            },
        };
        let mut sink = Sink::default();
        if let Some(machine) = self.panes.get_mut(&pane.token) {
            if machine.opened(pane.generation, now, &mut out) == Opened::Respawned {
                match build_adapter(kind, &facts, &self.env, &mut sink) {
                    Some(adapter) => machine.replace_adapter(adapter),
                    None => {
                        self.panes.remove(&pane.token);
                        self.ignore(pane.token);
                    }
                }
            }
        } else if self.panes.len() >= MAX_PANES {
            if !std::mem::replace(&mut self.warned_full, true) {
                out.push(Command::Log {
                    level: LogLevel::Warn,
                    message: format!(
                        "tracking {MAX_PANES} panes already; further panes are not watched"
                    ),
                });
            }
        } else if let Some(adapter) = build_adapter(kind, &facts, &self.env, &mut sink) {
            let mut machine = PaneMachine::new(pane.token.clone(), pane.generation, adapter);
            machine.resume_unheard_exits(self.resume_after_restart);
            machine.auto_continue(self.auto_continue.clone());
            self.panes.insert(pane.token.clone(), machine);
        } else {
            self.ignore(pane.token);
        }
        for (level, message) in sink.logs {
            out.insert(0, Command::Log { level, message });
        }
        send_all(ctx, out);
    }

    fn pane_exited(&mut self, ctx: &mut Context<'_>, token: Token, generation: Generation) {
        self.with_pane(ctx, token, |pane, now, out| {
            pane.exited(generation, now, out)
        });
    }

    fn user_input(&mut self, ctx: &mut Context<'_>, token: Token, generation: Generation) {
        self.with_pane(ctx, token, |pane, now, _| pane.typed(generation, now));
    }

    fn pane_closed(&mut self, ctx: &mut Context<'_>, token: Token, generation: Generation) {
        let mut out = Vec::new();
        if let Some(pane) = self.panes.get_mut(&token) {
            pane.closed(generation, &mut out);
            if pane.generation() <= generation {
                self.panes.remove(&token);
            }
        }
        self.ignored.retain(|ignored| *ignored != token);
        send_all(ctx, out);
    }

    fn pane_output(
        &mut self,
        ctx: &mut Context<'_>,
        token: Token,
        generation: Generation,
        _: String,
    ) {
        // Output text is never interpreted (SPEC §9: never parse human text); it only says
        // the pane was seen running and that its last screen is out of date.
        self.with_pane(ctx, token, |pane, _, _| pane.output(generation));
    }

    fn pane_idle(&mut self, ctx: &mut Context<'_>, idle: PaneIdle) {
        self.with_pane(ctx, idle.token, |pane, now, out| {
            pane.idle(idle.generation, idle.screen, now, out)
        });
    }

    fn timer(&mut self, ctx: &mut Context<'_>) {
        let now = ctx.now();
        let mut out = Vec::new();
        for pane in self.panes.values_mut() {
            if pane.next_wake().is_some_and(|at| at <= now.mono) {
                pane.tick(now, &mut out);
            }
        }
        send_all(ctx, out);
    }

    fn next_timer(&self) -> Option<Duration> {
        self.panes.values().filter_map(PaneMachine::next_wake).min()
    }
}

fn main() {
    nightcrow_plugin_sdk::run(&mut Recovery::new(Env::from_process()));
}

#[cfg(test)]
mod tests {
    use super::*;

    fn token(n: u32) -> Token {
        Token::parse(&format!("{n:032x}")).expect("valid token")
    }

    fn at(mono_s: u64) -> Now {
        Now {
            mono: Duration::from_secs(mono_s),
            wall_ms: 0,
        }
    }

    fn asked(out: &[Command]) -> Vec<String> {
        out.iter()
            .map(|command| match command {
                Command::WatchPane { token } => token.as_str().trim_start_matches('0').to_owned(),
                other => panic!("unexpected {other:?}"),
            })
            .collect()
    }

    #[test]
    fn watch_requests_are_bounded_and_not_repeated_within_30_s() {
        let mut plugin = Recovery::new(Env::default());
        let mut out = Vec::new();
        for n in 1..=10 {
            plugin.unknown(&token(n), at(0), &mut out);
        }
        assert_eq!(asked(&out), ["1", "2", "3", "4", "5", "6", "7", "8"]);
        out.clear();
        plugin.unknown(&token(1), at(29), &mut out);
        plugin.unknown(&token(9), at(29), &mut out);
        assert!(out.is_empty(), "still pending, and the queue is full");
        plugin.unknown(&token(1), at(30), &mut out);
        plugin.unknown(&token(9), at(30), &mut out);
        assert_eq!(asked(&out), ["1", "9"]);
        // Panes given to us and found not to be provider panes are never asked for.
        out.clear();
        plugin.ignore(token(11));
        plugin.unknown(&token(11), at(100), &mut out);
        assert!(out.is_empty());
    }

    #[test]
    fn the_ignored_list_is_bounded() {
        let mut plugin = Recovery::new(Env::default());
        for n in 0..(MAX_IGNORED as u32 + 10) {
            plugin.ignore(token(n));
            plugin.ignore(token(n));
        }
        assert_eq!(plugin.ignored.len(), MAX_IGNORED);
        assert!(
            !plugin.ignored.contains(&token(0))
                && plugin.ignored.contains(&token(MAX_IGNORED as u32 + 9))
        );
    }
}

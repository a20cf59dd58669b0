//! The scripted session: the events a hub would send, step by step, and what the plugin did
//! in each, turned into verdicts.

use std::collections::{BTreeSet, HashMap};
use std::hash::{BuildHasher, RandomState};
use std::time::{Duration, Instant};

use nightcrow_plugin_host::{
    ExitCause, OUTBOUND_QUEUE, Plugin, PluginRuntime, PluginSpec, PluginState, Rejection,
    SHUTDOWN_GRACE, Usage,
};
use nightcrow_protocol::{Command, DecodeError, Event, Generation, Token};

use crate::{CheckId, Options};

/// What a check concluded: passed, and what was seen.
type Outcome = (bool, String);

/// Output lines of the kind an AI CLI prints, cycled through by the stream step.
const OUTPUT: [&str; 4] = [
    "• Running cargo test --workspace\r\n",
    "  compiling nightcrow-protocol v0.1.0\r\n",
    "Thinking… (esc to interrupt)\r\n",
    "test result: ok. 42 passed; 0 failed\r\n",
];

/// How long the plugin gets to answer a step before the next one starts.
const SETTLE: Duration = Duration::from_millis(300);
/// A plugin that takes no event for this long while some wait has fallen behind.
const STALL: Duration = Duration::from_secs(5);

pub(crate) async fn run(
    runtime: &PluginRuntime,
    spec: &PluginSpec,
    options: &Options,
) -> HashMap<CheckId, Outcome> {
    let mut verdicts = HashMap::new();
    let before = Usage::now();
    let plugin = match runtime.start(spec).await {
        Ok(plugin) => plugin,
        Err(error) => {
            verdicts.insert(CheckId::Starts, (false, error.to_string()));
            for check in CheckId::ALL.into_iter().skip(1) {
                verdicts.insert(check, (false, "not judged: it did not start".to_owned()));
            }
            return verdicts;
        }
    };
    verdicts.insert(CheckId::Starts, (true, "started".to_owned()));
    let mut session = Session::new(plugin);

    let first = session.open_pane(1);
    session.lifecycle(&first).await;
    verdicts.insert(CheckId::QuietWhenIdle, session.idle(options).await);
    verdicts.insert(CheckId::ManyPanes, session.many_panes(options).await);
    verdicts.insert(CheckId::KeepsUp, session.stream(options).await);
    verdicts.insert(CheckId::MemoryWithinLimit, session.memory(before, spec));
    session.close_all().await;
    verdicts.insert(CheckId::StaysUp, session.stays_up());
    verdicts.insert(CheckId::EndsOnShutdown, session.shutdown().await);
    verdicts.insert(CheckId::V3Only, session.v3_only());
    verdicts.insert(CheckId::CommandsDecode, session.decodes());
    verdicts.insert(CheckId::OwnPanesOnly, session.own_panes_only());
    verdicts
}

struct Session {
    plugin: Plugin,
    /// Every token given, with the generations given for it.
    given: HashMap<Token, BTreeSet<Generation>>,
    /// Open panes: token and current generation.
    open: Vec<(Token, Generation)>,
    commands: u64,
    /// Commands naming a pane it was not given: how many, and the first.
    trespasses: u64,
    first_trespass: Option<String>,
    /// A random key, so the checker's tokens cannot be guessed from one another.
    tokens: RandomState,
}

impl Session {
    fn new(plugin: Plugin) -> Session {
        Session {
            plugin,
            given: HashMap::new(),
            open: Vec::new(),
            commands: 0,
            trespasses: 0,
            first_trespass: None,
            tokens: RandomState::new(),
        }
    }

    fn token(&self, n: u64) -> Token {
        let high = self.tokens.hash_one((n, 0u8)).to_le_bytes();
        let low = self.tokens.hash_one((n, 1u8)).to_le_bytes();
        let mut bytes = [0; 16];
        bytes[..8].copy_from_slice(&high);
        bytes[8..].copy_from_slice(&low);
        Token::from_bytes(bytes)
    }

    fn send(&mut self, event: Event) {
        if let Event::PaneOpened {
            token, generation, ..
        } = &event
        {
            self.given
                .entry(token.clone())
                .or_default()
                .insert(*generation);
        }
        // A dropped event is counted by the plugin's health; the steps read that.
        self.plugin.send(event);
    }

    fn open_pane(&mut self, n: u64) -> Token {
        let token = self.token(n);
        self.send(Event::PaneOpened {
            token: token.clone(),
            generation: 1,
            title: Some(format!("pane {n}")),
            command: Some("codex".to_owned()),
            cwd: "/home/someone/repo".to_owned(),
            opened_ms: None,
        });
        self.open.push((token.clone(), 1));
        token
    }

    fn observe(&mut self, command: Command) {
        self.commands += 1;
        let trespass = match &command {
            Command::Log { .. } => None,
            Command::WatchPane { token } => (!self.given.contains_key(token))
                .then(|| format!("watch_pane for {token}, a token it was never given")),
            Command::SendInput {
                token, generation, ..
            }
            | Command::Relaunch {
                token, generation, ..
            }
            | Command::Status {
                token, generation, ..
            }
            | Command::Attention { token, generation } => match self.given.get(token) {
                None => Some(format!(
                    "{} for {token}, a token it was never given",
                    command.tag()
                )),
                Some(generations) if !generations.contains(generation) => Some(format!(
                    "{} for {token} generation {generation}, which it was never given",
                    command.tag()
                )),
                Some(_) => None,
            },
        };
        if let Some(trespass) = trespass {
            self.trespasses += 1;
            self.first_trespass.get_or_insert(trespass);
        }
    }

    fn take_waiting(&mut self) {
        while let Some(command) = self.plugin.try_recv() {
            self.observe(command);
        }
    }

    /// Takes commands for `duration`.
    async fn settle(&mut self, duration: Duration) {
        let deadline = tokio::time::Instant::now() + duration;
        loop {
            tokio::select! {
                command = self.plugin.recv() => match command {
                    Some(command) => self.observe(command),
                    None => {
                        tokio::time::sleep_until(deadline).await;
                        return;
                    }
                },
                () = tokio::time::sleep_until(deadline) => return,
            }
        }
    }

    /// How the plugin ended, if it has ended.
    fn ended(&self) -> Option<ExitCause> {
        match self.plugin.health().state {
            PluginState::Ended { cause, .. } => Some(cause),
            PluginState::Running | PluginState::Stopping => None,
        }
    }

    fn ended_first(&self) -> Option<String> {
        self.ended()
            .map(|cause| format!("not judged: it ended first ({cause})"))
    }

    /// Waits until the plugin has taken all but `left` queued events, taking its commands
    /// meanwhile; the reason if it ended or the deadline passed first.
    async fn drain_to(&mut self, left: usize, deadline: Instant) -> Result<(), String> {
        let mut fewest = usize::MAX;
        let mut progress = Instant::now();
        loop {
            self.take_waiting();
            let queued = self.plugin.queued_events();
            if queued <= left {
                return Ok(());
            }
            if let Some(cause) = self.ended() {
                return Err(format!("it ended ({cause})"));
            }
            if queued < fewest {
                (fewest, progress) = (queued, Instant::now());
            }
            if progress.elapsed() >= STALL {
                return Err(format!(
                    "it took no event for {} s ({queued} waiting)",
                    STALL.as_secs()
                ));
            }
            if Instant::now() >= deadline {
                return Err(format!("{queued} events still waiting at the deadline"));
            }
            tokio::time::sleep(Duration::from_millis(1)).await;
        }
    }

    /// One pane's life as a hub tells it: opened, output, idle, typed into, exited,
    /// relaunched (generation 2), more output.
    async fn lifecycle(&mut self, token: &Token) {
        let at = |generation| (token.clone(), generation);
        let (t, g) = at(1);
        for event in [
            Event::PaneOutput {
                token: t.clone(),
                generation: g,
                text: OUTPUT[0].to_owned(),
            },
            Event::PaneOutput {
                token: t.clone(),
                generation: g,
                text: "■ You've hit your usage limit. Try again in 5 minutes.\r\n".to_owned(),
            },
            Event::PaneIdle {
                token: t.clone(),
                generation: g,
                idle_ms: 10_000,
                screen: None,
            },
            Event::UserInput {
                token: t.clone(),
                generation: g,
            },
            Event::PaneExited {
                token: t.clone(),
                generation: g,
            },
            Event::PaneOpened {
                token: t.clone(),
                generation: 2,
                title: Some("pane 1".to_owned()),
                command: Some("codex".to_owned()),
                cwd: "/home/someone/repo".to_owned(),
                opened_ms: None,
            },
            Event::PaneOutput {
                token: t.clone(),
                generation: 2,
                text: OUTPUT[3].to_owned(),
            },
        ] {
            self.send(event);
        }
        self.open = vec![(t, 2)];
        self.settle(SETTLE).await;
    }

    /// CPU over the idle window, after every pane went quiet.
    async fn idle(&mut self, options: &Options) -> Outcome {
        for (token, generation) in self.open.clone() {
            self.send(Event::PaneIdle {
                token,
                generation,
                idle_ms: 10_000,
                screen: None,
            });
        }
        self.settle(SETTLE).await;
        let before = Usage::now();
        let began = Instant::now();
        self.settle(options.idle_window).await;
        let after = Usage::now();
        if let Some(cause) = self.ended() {
            return match cause {
                ExitCause::CpuLimit { .. } | ExitCause::CpuBudget { .. } => {
                    (false, format!("it spun until stopped: {cause}"))
                }
                other => (false, format!("not judged: it ended first ({other})")),
            };
        }
        let (Some(before), Some(after)) = (before, after) else {
            return (
                true,
                "not measured: CPU time is read from /proc (Linux only)".to_owned(),
            );
        };
        let seconds = began.elapsed().as_secs_f64();
        let percent = after.cpu_percent_since(&before, seconds);
        let detail = format!(
            "{percent:.1} % of a core over {seconds:.1} s idle (limit {:.1} %)",
            options.idle_cpu_percent
        );
        (percent <= options.idle_cpu_percent, detail)
    }

    /// `options.panes` panes opened at once, each with output and an idle event.
    async fn many_panes(&mut self, options: &Options) -> Outcome {
        if let Some(reason) = self.ended_first() {
            return (false, reason);
        }
        let dropped = self.plugin.dropped_events();
        let began = Instant::now();
        let deadline = began + options.step_deadline;
        let first_new = self.open.len() as u64 + 1;
        let mut tokens = Vec::with_capacity(options.panes);
        for n in first_new..first_new + options.panes as u64 {
            if let Err(reason) = self.drain_to(OUTBOUND_QUEUE / 2, deadline).await {
                return (false, reason);
            }
            tokens.push(self.open_pane(n));
        }
        for (i, token) in tokens.iter().enumerate() {
            for event in [
                Event::PaneOutput {
                    token: token.clone(),
                    generation: 1,
                    text: OUTPUT[i % OUTPUT.len()].to_owned(),
                },
                Event::PaneIdle {
                    token: token.clone(),
                    generation: 1,
                    idle_ms: 10_000,
                    screen: None,
                },
            ] {
                if let Err(reason) = self.drain_to(OUTBOUND_QUEUE / 2, deadline).await {
                    return (false, reason);
                }
                self.send(event);
            }
        }
        if let Err(reason) = self.drain_to(0, deadline).await {
            return (false, reason);
        }
        self.settle(SETTLE).await;
        if let Some(reason) = self.ended_first() {
            return (false, reason);
        }
        let lost = self.plugin.dropped_events() - dropped;
        let events = options.panes * 3;
        let detail = format!(
            "{} panes open, {events} events taken in {} ms, {lost} dropped",
            self.open.len(),
            began.elapsed().as_millis()
        );
        (lost == 0, detail)
    }

    /// `options.events` output events over the open panes, sent as fast as the plugin takes
    /// them (never more than half its queue ahead); it falls behind if it drops one or does
    /// not take them all within the step deadline.
    async fn stream(&mut self, options: &Options) -> Outcome {
        if let Some(reason) = self.ended_first() {
            return (false, reason);
        }
        let dropped = self.plugin.dropped_events();
        let began = Instant::now();
        let deadline = began + options.step_deadline;
        let panes = self.open.clone();
        for n in 0..options.events {
            if let Err(reason) = self.drain_to(OUTBOUND_QUEUE / 2, deadline).await {
                return (false, format!("after {n} events: {reason}"));
            }
            let (token, generation) = panes[n % panes.len()].clone();
            self.send(Event::PaneOutput {
                token,
                generation,
                text: format!("[{n}] {}", OUTPUT[n % OUTPUT.len()]),
            });
        }
        if let Err(reason) = self.drain_to(0, deadline).await {
            return (
                false,
                format!("after all {} events: {reason}", options.events),
            );
        }
        let seconds = began.elapsed().as_secs_f64();
        self.settle(SETTLE).await;
        if let Some(reason) = self.ended_first() {
            return (false, reason);
        }
        let lost = self.plugin.dropped_events() - dropped;
        let detail = format!(
            "{} events in {seconds:.2} s ({:.0}/s), {lost} dropped",
            options.events,
            options.events as f64 / seconds
        );
        (lost == 0, detail)
    }

    /// Judged after the heaviest steps: the limit is enforced by the runtime (a guest that
    /// grows past it traps), so the verdict is whether it was hit.
    fn memory(&self, before: Option<Usage>, spec: &PluginSpec) -> Outcome {
        match self.ended() {
            Some(cause @ ExitCause::MemoryLimit { .. }) => (false, cause.to_string()),
            Some(cause) => (false, format!("not judged: it ended first ({cause})")),
            None => {
                let grown = before
                    .zip(Usage::now())
                    .map(|(before, now)| {
                        format!(
                            "; this process (runtime, compiler and plugin) grew by {:.1} MiB resident",
                            now.rss_kib.saturating_sub(before.rss_kib) as f64 / 1024.0
                        )
                    })
                    .unwrap_or_default();
                (
                    true,
                    format!("limit {} MiB never hit{grown}", spec.sandbox.memory_mib),
                )
            }
        }
    }

    /// Closes every pane, as a hub does when its repository closes.
    async fn close_all(&mut self) {
        for (token, generation) in std::mem::take(&mut self.open) {
            self.send(Event::PaneClosed { token, generation });
        }
        self.settle(SETTLE).await;
    }

    fn stays_up(&self) -> Outcome {
        match self.ended() {
            Some(cause) => (false, format!("it ended before shutdown: {cause}")),
            None => (true, "ran through the whole session".to_owned()),
        }
    }

    async fn shutdown(&mut self) -> Outcome {
        if let Some(cause) = self.ended() {
            return (
                false,
                format!("not judged: it ended before shutdown ({cause})"),
            );
        }
        let began = Instant::now();
        self.plugin.begin_shutdown();
        // Commands written while it winds down still count; stdout ends with the guest.
        let bound = SHUTDOWN_GRACE * 10;
        while let Ok(Some(command)) = tokio::time::timeout(bound, self.plugin.recv()).await {
            self.observe(command);
        }
        let (cause, _) = self.plugin.ended().await;
        let millis = began.elapsed().as_millis();
        match cause {
            ExitCause::Exited { code: 0 } => (true, format!("exited with code 0 in {millis} ms")),
            ExitCause::Killed => (
                false,
                format!(
                    "still running {} ms after shutdown: the host killed it",
                    SHUTDOWN_GRACE.as_millis()
                ),
            ),
            other => (false, format!("on shutdown it {other}")),
        }
    }

    fn rejections(&self) -> (u64, Vec<Rejection>) {
        let health = self.plugin.health();
        (health.rejected_lines, health.rejections)
    }

    fn v3_only(&self) -> Outcome {
        let (_, rejections) = self.rejections();
        let other_version = rejections.iter().find(|rejection| {
            matches!(
                rejection,
                Rejection::Decode(DecodeError::VersionMismatch { .. })
            )
        });
        match other_version {
            Some(rejection) => (false, format!("a line was refused: {rejection}")),
            None => (true, format!("{} commands, all v3", self.commands)),
        }
    }

    fn decodes(&self) -> Outcome {
        let (refused, rejections) = self.rejections();
        match rejections.first() {
            Some(first) => (
                false,
                format!("{refused} line(s) refused by the host; the first: {first}"),
            ),
            None => (true, format!("{} commands decoded", self.commands)),
        }
    }

    fn own_panes_only(&self) -> Outcome {
        match &self.first_trespass {
            Some(first) => (
                false,
                format!(
                    "{} command(s) for panes it was not given; the first: {first}",
                    self.trespasses
                ),
            ),
            None => (
                true,
                format!(
                    "{} commands, none for a pane it was not given",
                    self.commands
                ),
            ),
        }
    }
}

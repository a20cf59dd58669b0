//! Supervision (SPEC §4.6): restart a failed plugin with exponential backoff, give up after
//! too many failures, and tell the hub each step once.

use std::collections::VecDeque;
use std::time::Duration;

use nightcrow_protocol::{Command, Event};
use tokio::time::Instant;

use crate::plugin::{Plugin, wait_ended};
use crate::process::ExitCause;
use crate::runtime::PluginRuntime;
use crate::spec::PluginSpec;

/// When to restart and when to give up.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RestartPolicy {
    /// Delay before the first restart; doubles with each further failure in the window.
    pub first_backoff: Duration,
    /// Longest delay.
    pub max_backoff: Duration,
    /// This many failures within `window` and the plugin is given up.
    pub max_failures: usize,
    /// How long a failure counts.
    pub window: Duration,
}

impl Default for RestartPolicy {
    /// SPEC §4.6: 1 s doubling to 60 s; 5 failures in 10 minutes.
    fn default() -> RestartPolicy {
        RestartPolicy {
            first_backoff: Duration::from_secs(1),
            max_backoff: Duration::from_secs(60),
            max_failures: 5,
            window: Duration::from_secs(10 * 60),
        }
    }
}

/// What to do after a failure.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Decision {
    /// Start a successor after this delay.
    RestartIn(Duration),
    /// Too many failures: stop trying.
    GiveUp,
}

/// The failure bookkeeping of [`RestartPolicy`], free of I/O and of clocks: the caller
/// passes the time of each failure.
#[derive(Debug, Clone)]
pub struct Backoff {
    policy: RestartPolicy,
    failures: VecDeque<Instant>,
}

impl Backoff {
    /// No failures yet.
    pub fn new(policy: RestartPolicy) -> Backoff {
        Backoff {
            policy,
            failures: VecDeque::new(),
        }
    }

    /// Records a failure at `now`. The delay doubles with each failure still inside the
    /// window, so a plugin that has run cleanly for a whole window starts again at
    /// `first_backoff`.
    pub fn on_failure(&mut self, now: Instant) -> Decision {
        while self
            .failures
            .front()
            .is_some_and(|&at| now.duration_since(at) >= self.policy.window)
        {
            self.failures.pop_front();
        }
        self.failures.push_back(now);
        let recent = self.failures.len();
        if recent >= self.policy.max_failures {
            return Decision::GiveUp;
        }
        let doublings = u32::try_from(recent - 1).unwrap_or(u32::MAX).min(31);
        let delay = self
            .policy
            .first_backoff
            .saturating_mul(1 << doublings)
            .min(self.policy.max_backoff);
        Decision::RestartIn(delay)
    }
}

/// A step in a supervised plugin's life, each reported once.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Lifecycle {
    /// An instance is running: give it `pane_opened` for every live pane it owns.
    Started,
    /// The instance failed (or could not start); its cause has been logged.
    Failed {
        /// Why.
        cause: ExitCause,
    },
    /// A successor starts after this delay.
    Restarting {
        /// The backoff delay.
        after: Duration,
    },
    /// Too many failures: no more restarts; release its panes and tell clients.
    GaveUp,
}

/// What [`Supervisor::next`] yields.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Supervised {
    /// A decoded (not yet judged) command from the running instance.
    Command(Command),
    /// A life-cycle step.
    Lifecycle(Lifecycle),
}

enum State {
    Starting,
    Running(Plugin),
    Waiting(Instant),
    GaveUp,
    Stopped,
}

/// Keeps one plugin running: starts it, reports its failures, restarts it with backoff and
/// gives up per [`RestartPolicy`]. The hub drives it by awaiting [`Supervisor::next`].
pub struct Supervisor {
    runtime: PluginRuntime,
    spec: PluginSpec,
    backoff: Backoff,
    state: State,
    pending: VecDeque<Lifecycle>,
}

impl Supervisor {
    /// Nothing starts until the first [`Supervisor::next`], whose first item is `Started` or
    /// `Failed`.
    pub fn new(runtime: PluginRuntime, spec: PluginSpec, policy: RestartPolicy) -> Supervisor {
        Supervisor {
            runtime,
            spec,
            backoff: Backoff::new(policy),
            state: State::Starting,
            pending: VecDeque::new(),
        }
    }

    /// The running instance, if there is one.
    pub fn plugin(&self) -> Option<&Plugin> {
        match &self.state {
            State::Running(plugin) => Some(plugin),
            _ => None,
        }
    }

    /// Sends to the running instance; `false` (dropped) while none runs.
    pub fn send(&self, event: Event) -> bool {
        self.plugin().is_some_and(|plugin| plugin.send(event))
    }

    /// A queued command of the running instance, without waiting (the hub's fairness
    /// rounds take at most 8 this way).
    pub fn try_recv(&mut self) -> Option<Command> {
        match &mut self.state {
            State::Running(plugin) => plugin.try_recv(),
            _ => None,
        }
    }

    /// The next command or life-cycle step. Cancel-safe, so it can sit in a `select!`.
    /// After `GaveUp` or [`Supervisor::shutdown`] it never resolves.
    pub async fn next(&mut self) -> Supervised {
        loop {
            if let Some(step) = self.pending.pop_front() {
                return Supervised::Lifecycle(step);
            }
            match &mut self.state {
                State::Starting => match self.runtime.start(&self.spec).await {
                    Ok(plugin) => {
                        self.state = State::Running(plugin);
                        return Supervised::Lifecycle(Lifecycle::Started);
                    }
                    Err(error) => {
                        let cause = ExitCause::StartFailed {
                            message: error.to_string(),
                        };
                        tracing::warn!(plugin = %self.spec.name, %cause, "plugin failed");
                        self.failed(cause);
                    }
                },
                State::Running(plugin) => {
                    let state = plugin.state_watch();
                    let (cause, requested) = tokio::select! {
                        // Commands written before the end are still delivered, in order.
                        biased;
                        command = plugin.recv() => match command {
                            Some(command) => return Supervised::Command(command),
                            None => plugin.ended().await,
                        },
                        ended = wait_ended(state) => ended,
                    };
                    if requested {
                        self.state = State::Stopped;
                    } else {
                        self.failed(cause);
                    }
                }
                State::Waiting(deadline) => {
                    tokio::time::sleep_until(*deadline).await;
                    self.state = State::Starting;
                }
                State::GaveUp | State::Stopped => std::future::pending::<()>().await,
            }
        }
    }

    /// Stops the running instance (SPEC §4.5) and any further restart.
    pub async fn shutdown(&mut self) {
        if let State::Running(plugin) = std::mem::replace(&mut self.state, State::Stopped) {
            plugin.shutdown().await;
        }
    }

    fn failed(&mut self, cause: ExitCause) {
        self.pending.push_back(Lifecycle::Failed { cause });
        match self.backoff.on_failure(Instant::now()) {
            Decision::RestartIn(after) => {
                tracing::info!(plugin = %self.spec.name, ?after, "restarting plugin");
                self.pending.push_back(Lifecycle::Restarting { after });
                self.state = State::Waiting(Instant::now() + after);
            }
            Decision::GiveUp => {
                tracing::error!(
                    plugin = %self.spec.name,
                    failures = self.backoff.policy.max_failures,
                    window = ?self.backoff.policy.window,
                    "plugin failed too often; giving up, its panes run unwatched"
                );
                self.pending.push_back(Lifecycle::GaveUp);
                self.state = State::GaveUp;
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[track_caller]
    fn check(failures_at_secs: &[u64], expected: &[Decision]) {
        let start = Instant::now();
        let mut backoff = Backoff::new(RestartPolicy::default());
        let got: Vec<Decision> = failures_at_secs
            .iter()
            .map(|&secs| backoff.on_failure(start + Duration::from_secs(secs)))
            .collect();
        assert_eq!(got, expected);
    }

    fn restart(secs: u64) -> Decision {
        Decision::RestartIn(Duration::from_secs(secs))
    }

    #[test]
    fn backoff_doubles_and_gives_up_after_five_in_ten_minutes() {
        check(&[0], &[restart(1)]);
        check(
            &[0, 1, 3, 7, 15],
            &[
                restart(1),
                restart(2),
                restart(4),
                restart(8),
                Decision::GiveUp,
            ],
        );
        // Failures older than ten minutes no longer count (and no longer lengthen the delay).
        check(
            &[0, 100, 200, 300, 600, 700],
            &[
                restart(1),
                restart(2),
                restart(4),
                restart(8),
                restart(8),
                restart(8),
            ],
        );
        check(&[0, 1000, 2000, 3000, 4000], &[restart(1); 5]);
    }

    #[test]
    fn backoff_is_capped() {
        let start = Instant::now();
        let mut backoff = Backoff::new(RestartPolicy {
            max_failures: 100,
            ..RestartPolicy::default()
        });
        let delays: Vec<Decision> = (0..8)
            .map(|i| backoff.on_failure(start + Duration::from_secs(i)))
            .collect();
        assert_eq!(delays, [1, 2, 4, 8, 16, 32, 60, 60].map(restart).to_vec());
    }
}

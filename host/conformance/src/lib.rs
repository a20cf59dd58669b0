//! The plugin conformance checker behind `nightcrow plugin test`: it starts one plugin in the
//! real runtime (the daemon's sandbox, limits, pumps, `decode_command`), plays it a scripted
//! session of the events a hub sends — and only those: no line a host would never write —
//! and judges what it did against the rules a third-party plugin must keep ([`CheckId`]).
//!
//! **Invariant: the checker sees a plugin only as the hub does.** Commands reach it through
//! [`Plugin::recv`](nightcrow_plugin_host::Plugin::recv), after the capped reader and
//! `decode_command`; refused lines are known only from the plugin's
//! [`Health`](nightcrow_plugin_host::Health). Nothing here executes a command: a checked
//! plugin cannot type into or relaunch anything, whatever it sends.
//!
//! ```no_run
//! # async fn demo(spec: nightcrow_plugin_host::PluginSpec) -> Result<(), Box<dyn std::error::Error>> {
//! use nightcrow_conformance::{Options, check};
//! use nightcrow_plugin_host::{PluginRuntime, RuntimeConfig};
//!
//! let runtime = PluginRuntime::new(RuntimeConfig::user_default())?;
//! let report = check(&runtime, &spec, &Options::default()).await;
//! println!("{}", report.to_text());
//! assert!(report.passed());
//! # Ok(()) }
//! ```

mod session;

use std::fmt::Write;
use std::time::Duration;

use nightcrow_plugin_host::{PluginRuntime, PluginSpec};
use serde::Serialize;

/// One rule a plugin must keep, in the order the report lists them.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum CheckId {
    /// It passes the import audit and starts.
    Starts,
    /// It runs until it is told to stop (no exit, trap or closed stdout on its own).
    StaysUp,
    /// Every line it writes says `"v":3`.
    V3Only,
    /// Every line it writes decodes as a command (JSON, shape, bounds, line cap, UTF-8).
    CommandsDecode,
    /// It names only panes (token and generation) it was given.
    OwnPanesOnly,
    /// It exits by itself, with code 0, within the shutdown grace.
    EndsOnShutdown,
    /// It uses (almost) no CPU while nothing happens.
    QuietWhenIdle,
    /// It never hits its memory limit.
    MemoryWithinLimit,
    /// It takes 64 panes at once without dropping an event.
    ManyPanes,
    /// It keeps up with a long stream of events.
    KeepsUp,
}

impl CheckId {
    /// Every check, in report order.
    pub const ALL: [CheckId; 10] = [
        CheckId::Starts,
        CheckId::StaysUp,
        CheckId::V3Only,
        CheckId::CommandsDecode,
        CheckId::OwnPanesOnly,
        CheckId::EndsOnShutdown,
        CheckId::QuietWhenIdle,
        CheckId::MemoryWithinLimit,
        CheckId::ManyPanes,
        CheckId::KeepsUp,
    ];

    /// The rule, as the report states it.
    pub fn rule(self) -> &'static str {
        match self {
            CheckId::Starts => "passes the import audit and starts",
            CheckId::StaysUp => "runs until it is told to stop",
            CheckId::V3Only => "answers only with protocol v3 lines",
            CheckId::CommandsDecode => "every line it writes decodes as a command",
            CheckId::OwnPanesOnly => "names only panes it was given",
            CheckId::EndsOnShutdown => "exits with code 0 within the shutdown grace",
            CheckId::QuietWhenIdle => "does not spin while idle",
            CheckId::MemoryWithinLimit => "stays under its memory limit",
            CheckId::ManyPanes => "handles 64 panes",
            CheckId::KeepsUp => "takes 10 000 events without falling behind",
        }
    }
}

/// How hard the session pushes. The defaults are what `nightcrow plugin test` uses.
#[derive(Debug, Clone, PartialEq)]
pub struct Options {
    /// Panes open at once in the many-panes step.
    pub panes: usize,
    /// `pane_output` events in the stream step.
    pub events: usize,
    /// How long the plugin is left alone while its CPU is measured.
    pub idle_window: Duration,
    /// CPU over the idle window above this (percent of one core) fails.
    pub idle_cpu_percent: f64,
    /// A step's events must all be taken by the plugin within this, or it fell behind.
    pub step_deadline: Duration,
}

impl Default for Options {
    fn default() -> Options {
        Options {
            panes: 64,
            events: 10_000,
            idle_window: Duration::from_secs(2),
            idle_cpu_percent: 2.0,
            step_deadline: Duration::from_secs(30),
        }
    }
}

/// The verdict on one rule.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Verdict {
    /// Which rule.
    pub check: CheckId,
    /// The rule in words.
    pub rule: &'static str,
    /// Whether the plugin kept it.
    pub passed: bool,
    /// What was seen: the measurement on a pass, the reason on a failure.
    pub detail: String,
}

/// Everything the checker found about one plugin.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Report {
    /// The plugin as named in its spec.
    pub plugin: String,
    /// One verdict per [`CheckId::ALL`], in that order.
    pub verdicts: Vec<Verdict>,
}

impl Report {
    /// Whether every check passed.
    pub fn passed(&self) -> bool {
        self.verdicts.iter().all(|verdict| verdict.passed)
    }

    /// The verdict on `check`.
    pub fn verdict(&self, check: CheckId) -> &Verdict {
        self.verdicts
            .iter()
            .find(|verdict| verdict.check == check)
            .unwrap_or_else(|| unreachable!("a report holds a verdict for every check"))
    }

    /// The checks that failed.
    pub fn failed(&self) -> Vec<CheckId> {
        self.verdicts
            .iter()
            .filter(|verdict| !verdict.passed)
            .map(|verdict| verdict.check)
            .collect()
    }

    /// One line per check (`PASS`/`FAIL`, the rule, what was seen) and a summary line.
    pub fn to_text(&self) -> String {
        let mut text = format!("plugin test {}\n", self.plugin);
        for verdict in &self.verdicts {
            let mark = if verdict.passed { "PASS" } else { "FAIL" };
            let _ = writeln!(text, "{mark}  {}: {}", verdict.rule, verdict.detail);
        }
        let failed = self.failed().len();
        if failed == 0 {
            let _ = writeln!(text, "all {} checks passed", self.verdicts.len());
        } else {
            let _ = writeln!(text, "{failed} of {} checks failed", self.verdicts.len());
        }
        text
    }
}

/// Starts `spec` on `runtime`, plays the scripted session and judges it. Must run inside a
/// multi-threaded tokio runtime. CPU and memory are read for the whole process (a wasm guest
/// runs in it, a native one is its child), so run one check per process when those two
/// verdicts matter.
pub async fn check(runtime: &PluginRuntime, spec: &PluginSpec, options: &Options) -> Report {
    let verdicts = session::run(runtime, spec, options).await;
    Report {
        plugin: spec.name.clone(),
        verdicts: CheckId::ALL
            .iter()
            .map(|&check| {
                let (passed, detail) = verdicts
                    .get(&check)
                    .cloned()
                    .unwrap_or_else(|| (false, "not reached".to_owned()));
                Verdict {
                    check,
                    rule: check.rule(),
                    passed,
                    detail,
                }
            })
            .collect(),
    }
}

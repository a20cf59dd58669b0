//! The Codex adapter (SPEC §9.2): finds the pane's rollout under `$CODEX_HOME/sessions` and
//! follows it incrementally for usage-limit turns.
//!
//! Binding: a rollout is a candidate when its `session_meta.cwd` is the pane's cwd, it was
//! created after the pane opened, and it is not a subagent thread. More than one candidate
//! is ambiguous: a limit then yields [`Observation::Ambiguous`] and there are no resume args.
//! After a requested resume Codex appends to the same (possibly old) file, which is looked
//! up by uuid in any day directory if it moved.
//!
//! Bounds: one record ≤ 64 KiB (longer ones are skipped whole), ≤ 256 KiB read per poll,
//! reads continue from the last offset, day directories scanned are limited to the dates
//! the pane can have written to.

mod rollout;
mod screen;

use std::collections::HashSet;
use std::fs::File;
use std::io::{Read, Seek, SeekFrom};
use std::path::{Path, PathBuf};
use std::time::Duration;

use nightcrow_plugin_sdk::Now;
use nightcrow_protocol::{LineItem, LineSplitter, LogLevel};

use crate::provider::{Adapter, Env, Observation, OpenedPane, Screen, Sink};
use rollout::{SessionMeta, TurnEvent, Turns, civil_from_days};

/// Longest rollout record read.
pub const MAX_RECORD_BYTES: usize = 64 * 1024;
/// Most bytes read from rollouts per poll (discovery included).
pub const MAX_READ_PER_POLL: usize = 256 * 1024;
/// How often the rollouts are looked at.
pub const POLL_EVERY: Duration = Duration::from_secs(2);
/// Most day directories looked at per discovery scan. Twelve: a slot opened before a 9-day relaunch hold still finds its first day, with a day
/// either side for time zones.
const MAX_DAY_DIRS: i64 = 12;
/// Most file names remembered as "not this pane's".
const MAX_REJECTED: usize = 4096;
/// Timestamps and the pane-open time come from different clocks; allow this much skew.
const CREATED_SLACK_MS: i64 = 2_000;

/// One candidate rollout being followed.
struct Followed {
    path: PathBuf,
    uuid: String,
    offset: u64,
    lines: LineSplitter,
    turns: Turns,
}

pub struct Codex {
    /// `$CODEX_HOME/sessions`; `None` when no home is known at all.
    sessions: Option<PathBuf>,
    cwd: String,
    /// Rollouts created before this (unix ms) are not the pane's.
    created_after_ms: i64,
    candidates: Vec<Followed>,
    rejected: HashSet<String>,
    next_poll: Duration,
    warned_unreadable: bool,
    bad_records: u64,
}

impl Codex {
    pub fn new(pane: &OpenedPane, env: &Env, sink: &mut Sink) -> Codex {
        let sessions = codex_home(env).map(|home| home.join("sessions"));
        if sessions.is_none() {
            sink.log(
                LogLevel::Warn,
                "codex: neither CODEX_HOME nor HOME is set; codex panes are not observed",
            );
        }
        Codex {
            warned_unreadable: sessions.is_none(),
            sessions,
            cwd: pane.cwd.clone(),
            created_after_ms: pane.opened.wall_ms - CREATED_SLACK_MS,
            candidates: Vec::new(),
            rejected: HashSet::new(),
            next_poll: pane.opened.mono,
            bad_records: 0,
        }
    }

    /// Day directories for every UTC date from the pane's opening (−1 day for time zones)
    /// to now (+1 day), the most recent [`MAX_DAY_DIRS`] of them.
    fn day_dirs(&self, sessions: &Path, now: Now) -> Vec<PathBuf> {
        let day = |ms: i64| ms.div_euclid(86_400_000);
        let last = day(now.wall_ms) + 1;
        let first = (day(self.created_after_ms) - 1).max(last - MAX_DAY_DIRS + 1);
        (first..=last)
            .map(|days| {
                let (y, m, d) = civil_from_days(days);
                sessions
                    .join(format!("{y:04}"))
                    .join(format!("{m:02}"))
                    .join(format!("{d:02}"))
            })
            .collect()
    }

    fn discover(&mut self, sessions: &Path, now: Now, budget: &mut usize, sink: &mut Sink) {
        if let Err(error) = std::fs::read_dir(sessions) {
            if !self.warned_unreadable {
                self.warned_unreadable = true;
                // Inside the sandbox a folder not granted reads as missing too, so a missing
                // one names both causes: a person who has not run codex yet is not told to
                // change a grant that is right.
                let message = if error.kind() == std::io::ErrorKind::NotFound {
                    format!(
                        "codex: no sessions directory at {} yet (codex makes it on its first run with this CODEX_HOME; if it exists, grant it in read_dirs); codex limits are observed once it can be read",
                        sessions.display()
                    )
                } else {
                    format!(
                        "codex: cannot read the sessions directory {} ({}); codex limits are not observed until it can be read (grant it in read_dirs)",
                        sessions.display(),
                        error.kind()
                    )
                };
                sink.log(LogLevel::Info, message);
            }
            return;
        }
        for dir in self.day_dirs(sessions, now) {
            let Ok(entries) = std::fs::read_dir(&dir) else {
                continue;
            };
            let mut names: Vec<String> = entries
                .filter_map(|entry| entry.ok()?.file_name().into_string().ok())
                .filter(|name| name.starts_with("rollout-") && name.ends_with(".jsonl"))
                .collect();
            names.sort();
            for name in names {
                let path = dir.join(&name);
                if *budget == 0 {
                    return;
                }
                if self.rejected.contains(&name) || self.candidates.iter().any(|c| c.path == path) {
                    continue;
                }
                match first_record(&path, budget) {
                    FirstRecord::NotYet => {}
                    FirstRecord::Line(line) => match rollout::session_meta(&line) {
                        Ok(meta) if self.is_candidate(&meta) => {
                            self.candidates.push(Followed::new(path, meta.id));
                        }
                        Ok(_) => self.reject(name),
                        Err(_) => {
                            self.bad_records += 1;
                            self.reject(name);
                        }
                    },
                    FirstRecord::Unusable => self.reject(name),
                }
            }
        }
    }

    fn is_candidate(&self, meta: &SessionMeta) -> bool {
        same_dir(&meta.cwd, &self.cwd) && meta.created_ms >= self.created_after_ms && !meta.subagent
    }

    fn reject(&mut self, name: String) {
        if self.rejected.len() < MAX_REJECTED {
            self.rejected.insert(name);
        }
    }

    fn follow(&mut self, budget: &mut usize, sink: &mut Sink) {
        let ambiguous = self.candidates.len() > 1;
        let mut ends = Vec::new();
        let mut bad = 0;
        for followed in &mut self.candidates {
            followed.read(budget, &mut ends, &mut bad);
        }
        self.bad_records += bad;
        if bad > 0 {
            sink.log(
                LogLevel::Debug,
                format!(
                    "codex: skipped {bad} unreadable rollout records ({} in all)",
                    self.bad_records
                ),
            );
        }
        for end in ends {
            sink.observe(match end {
                TurnEvent::Limit { .. } if ambiguous => Observation::Ambiguous,
                TurnEvent::Limit { reset_epoch } => Observation::LimitHit { reset_epoch },
                TurnEvent::Normal => Observation::Continued,
                TurnEvent::Started => Observation::TurnStarted,
            });
        }
    }

    /// The file `*-<uuid>.jsonl` in any day directory (bounded walk).
    fn find_by_uuid(sessions: &Path, uuid: &str) -> Option<PathBuf> {
        let suffix = format!("-{uuid}.jsonl");
        let sorted = |dir: &Path| -> Vec<PathBuf> {
            let mut paths: Vec<PathBuf> = std::fs::read_dir(dir)
                .into_iter()
                .flatten()
                .filter_map(|entry| Some(entry.ok()?.path()))
                .collect();
            paths.sort();
            paths.reverse();
            paths
        };
        for year in sorted(sessions).into_iter().take(50) {
            for month in sorted(&year).into_iter().take(12) {
                for day in sorted(&month).into_iter().take(31) {
                    for file in sorted(&day).into_iter().take(10_000) {
                        if file
                            .file_name()
                            .and_then(|n| n.to_str())
                            .is_some_and(|n| n.ends_with(&suffix))
                        {
                            return Some(file);
                        }
                    }
                }
            }
        }
        None
    }
}

impl Adapter for Codex {
    fn name(&self) -> &'static str {
        "codex"
    }

    fn next_poll(&self) -> Option<Duration> {
        self.sessions.as_ref().map(|_| self.next_poll)
    }

    fn poll(&mut self, now: Now, sink: &mut Sink) {
        let Some(sessions) = self.sessions.clone() else {
            return;
        };
        let mut budget = MAX_READ_PER_POLL;
        // Follow known files first, so that discovery cannot starve them of budget.
        self.follow(&mut budget, sink);
        self.discover(&sessions, now, &mut budget, sink);
        self.follow(&mut budget, sink);
        // With budget used up there is more to read: come back at once.
        self.next_poll = if budget == 0 {
            now.mono
        } else {
            now.mono + POLL_EVERY
        };
    }

    fn exited(&mut self, now: Now, sink: &mut Sink) {
        // `codex exec` writes its last records just before it exits.
        self.poll(now, sink);
    }

    fn relaunched(&mut self, now: Now, sink: &mut Sink) {
        // `codex resume <uuid>` appends to the same file; only a new file created from now on
        // would be another candidate.
        self.created_after_ms = now.wall_ms - CREATED_SLACK_MS;
        if let (Some(sessions), [followed]) = (&self.sessions, self.candidates.as_mut_slice())
            && !followed.path.exists()
        {
            match Codex::find_by_uuid(sessions, &followed.uuid) {
                Some(path) => {
                    followed.offset = std::fs::metadata(&path).map_or(0, |m| m.len());
                    followed.lines = LineSplitter::new(MAX_RECORD_BYTES);
                    followed.path = path;
                }
                None => sink.log(
                    LogLevel::Info,
                    "codex: the resumed session's rollout was not found",
                ),
            }
        }
        self.poll(now, sink);
    }

    fn read_screen(&self, screen: &str) -> Screen {
        screen::read(screen)
    }

    fn resume_args(&self) -> Option<Vec<String>> {
        match self.candidates.as_slice() {
            [only] => Some(vec!["resume".to_owned(), only.uuid.clone()]),
            _ => None,
        }
    }
}

impl Followed {
    fn new(path: PathBuf, uuid: String) -> Followed {
        Followed {
            path,
            uuid,
            offset: 0,
            lines: LineSplitter::new(MAX_RECORD_BYTES),
            turns: Turns::default(),
        }
    }

    /// Reads on from the last offset, at most `budget` bytes; collects turn ends.
    fn read(&mut self, budget: &mut usize, ends: &mut Vec<TurnEvent>, bad: &mut u64) {
        let Ok(mut file) = File::open(&self.path) else {
            return;
        };
        let len = file.metadata().map_or(0, |m| m.len());
        if len < self.offset {
            // Truncated or replaced: start over rather than read garbage.
            self.offset = 0;
            self.lines = LineSplitter::new(MAX_RECORD_BYTES);
        }
        if len == self.offset || file.seek(SeekFrom::Start(self.offset)).is_err() {
            return;
        }
        let mut chunk = vec![0; 16 * 1024];
        while *budget > 0 {
            let want = chunk.len().min(*budget);
            let read = match file.read(&mut chunk[..want]) {
                Ok(0) | Err(_) => break,
                Ok(read) => read,
            };
            *budget -= read;
            self.offset += read as u64;
            let mut rest = &chunk[..read];
            while !rest.is_empty() {
                match self.lines.push(&mut rest) {
                    Some(LineItem::Line(line)) => match self.turns.record(&line) {
                        Ok(end) => ends.extend(end),
                        Err(_) => *bad += 1,
                    },
                    Some(LineItem::TooLong { .. } | LineItem::NotUtf8 { .. }) => *bad += 1,
                    None => {}
                }
            }
        }
    }
}

enum FirstRecord {
    /// Complete first line.
    Line(String),
    /// Not complete yet (Codex is still writing it): look again later.
    NotYet,
    /// Over the record cap or not UTF-8: never this pane's.
    Unusable,
}

fn first_record(path: &Path, budget: &mut usize) -> FirstRecord {
    let Ok(file) = File::open(path) else {
        return FirstRecord::NotYet;
    };
    let want = (MAX_RECORD_BYTES + 2).min(*budget);
    let mut head = Vec::with_capacity(want);
    if file.take(want as u64).read_to_end(&mut head).is_err() {
        return FirstRecord::NotYet;
    }
    *budget -= head.len();
    let Some(end) = head.iter().position(|&b| b == b'\n') else {
        return if head.len() > MAX_RECORD_BYTES {
            FirstRecord::Unusable
        } else {
            FirstRecord::NotYet
        };
    };
    match String::from_utf8(head[..end].to_vec()) {
        Ok(line) if line.len() <= MAX_RECORD_BYTES + 1 => {
            FirstRecord::Line(line.trim_end_matches('\r').to_owned())
        }
        _ => FirstRecord::Unusable,
    }
}

fn same_dir(a: &str, b: &str) -> bool {
    let trim = |s: &str| -> String {
        let trimmed = s.trim_end_matches(['/', '\\']);
        if trimmed.is_empty() {
            s.to_owned()
        } else {
            trimmed.to_owned()
        }
    };
    trim(a) == trim(b)
}

/// `CODEX_HOME` (a leading `~/` expanded with `HOME`), else `HOME/.codex`.
fn codex_home(env: &Env) -> Option<PathBuf> {
    let home = env.get("HOME").filter(|home| !home.is_empty());
    match env.get("CODEX_HOME").filter(|value| !value.is_empty()) {
        Some(value) => match value.strip_prefix("~/") {
            Some(rest) => home.map(|home| Path::new(home).join(rest)),
            None => Some(PathBuf::from(value)),
        },
        None => home.map(|home| Path::new(home).join(".codex")),
    }
}

#[cfg(test)]
mod tests;

//! The state journal, `state.json` in the home: what the daemon must not lose when it goes
//! away — the open repositories and, per pane, its slot (token, generation, title, startup
//! command, owner, when it opened), its relaunch hold, its owner's last report, the guard's
//! charges for its token and the tail of its screen. Rewritten whole whenever a hub publishes
//! a change, through a temp file, fsync, rename and an fsync of the folder, so a `kill -9` at
//! any moment leaves the previous file or the new one, never a torn one. Mode 0600: the
//! tokens in it are secrets, and nothing here logs one.
//!
//! Reading trusts nothing: a file in another format is set aside with one line saying so;
//! every repository, pane or field that does not check out is dropped with one line each, and
//! the rest is restored. What a restored pane may run is decided by the config, never by the
//! journal (the hub keeps a journaled command only if the config still has it).

use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use base64::Engine as _;
use nightcrow_client_protocol::RecoveryReport;
use nightcrow_hub::{Charged, HubSnapshot, PaneExit, PaneSnapshot, StartupCommand};
use nightcrow_pane::PaneSize;
use nightcrow_protocol::Token;
use serde::{Deserialize, Serialize};
use serde_json::Value;

use nightcrow_client::Home;

/// The journal format this nightcrow writes and reads.
pub const FORMAT: u32 = 1;
/// Most repositories, and panes per repository, taken from a journal.
const MAX_REPOS: usize = 64;
const MAX_PANES: usize = 64;
/// Longest title, command, plugin name or report text taken from a journal.
const MAX_TEXT_BYTES: usize = 8 * 1024;
/// Most screen bytes per pane: the scrollback a pane keeps (SPEC §5.5).
const MAX_SCREEN_BYTES: usize = 256 * 1024;

/// The journal file of one home.
#[derive(Debug)]
pub struct Journal {
    path: PathBuf,
    /// One write at a time, so that a late write cannot replace a newer one.
    writing: Mutex<()>,
}

/// A repository a previous daemon had open, with the panes it can be trusted with.
#[derive(Debug)]
pub struct RestoredRepo {
    pub root: PathBuf,
    pub panes: Vec<PaneSnapshot>,
}

#[derive(Serialize)]
struct FileOut<'a> {
    nightcrow_state: u32,
    written_by: &'static str,
    repos: Vec<RepoOut<'a>>,
}

#[derive(Serialize)]
struct RepoOut<'a> {
    root: &'a Path,
    panes: Vec<PaneRecord>,
}

#[derive(Deserialize)]
struct Header {
    nightcrow_state: Option<Value>,
    written_by: Option<String>,
}

#[derive(Deserialize)]
struct RepoIn {
    root: PathBuf,
    panes: Vec<Value>,
}

/// One pane as written in the file.
#[derive(Serialize, Deserialize)]
struct PaneRecord {
    token: Token,
    generation: u32,
    title: Option<String>,
    /// The title its program set (absent from journals written before titles were read).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    program_title: Option<String>,
    startup: Option<StartupRecord>,
    owner: Option<String>,
    opened_ms: i64,
    rows: u16,
    cols: u16,
    /// `None` while it ran; `Some(None)` when a signal ended it.
    exit: Option<ExitRecord>,
    hold_until_ms: Option<i64>,
    report: Option<RecoveryReport>,
    sends_ms: Vec<i64>,
    relaunches_ms: Vec<i64>,
    /// Base64 of the raw bytes.
    screen: String,
}

#[derive(Serialize, Deserialize)]
struct StartupRecord {
    name: Option<String>,
    command: String,
    plugin: Option<String>,
}

#[derive(Serialize, Deserialize)]
struct ExitRecord {
    code: Option<u32>,
}

impl Journal {
    pub fn new(home: &Home) -> Journal {
        Journal {
            path: home.journal(),
            writing: Mutex::new(()),
        }
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Replaces the journal with `repos` (whole or not at all).
    pub fn write(&self, repos: &[(PathBuf, Arc<HubSnapshot>)]) -> std::io::Result<()> {
        let file = FileOut {
            nightcrow_state: FORMAT,
            written_by: env!("CARGO_PKG_VERSION"),
            repos: repos
                .iter()
                .map(|(root, snapshot)| RepoOut {
                    root,
                    panes: snapshot.panes.iter().map(PaneRecord::from).collect(),
                })
                .collect(),
        };
        let bytes = serde_json::to_vec(&file).map_err(std::io::Error::other)?;
        let _one_at_a_time = self.writing.lock().unwrap_or_else(|e| e.into_inner());
        crate::write_atomically(&self.path, &bytes)
    }

    /// What a previous daemon left, as far as it can be trusted; every part dropped is said
    /// in one WARN line. A missing file is a first start.
    pub fn load(&self) -> Vec<RestoredRepo> {
        self.remove_torn_writes();
        let bytes = match std::fs::read(&self.path) {
            Ok(bytes) => bytes,
            Err(error) if error.kind() == std::io::ErrorKind::NotFound => return Vec::new(),
            Err(error) => {
                tracing::warn!(path = %self.path.display(), %error, "state journal not read; starting without it");
                return Vec::new();
            }
        };
        let shown = self.path.display();
        let file: Value = match serde_json::from_slice(&bytes) {
            Ok(file) => file,
            Err(error) => {
                let aside = self.set_aside("unreadable");
                tracing::warn!(
                    "state journal {shown} is unreadable ({error}); starting without it{aside}"
                );
                return Vec::new();
            }
        };
        let header = Header::deserialize(&file).unwrap_or(Header {
            nightcrow_state: None,
            written_by: None,
        });
        let by = header.written_by.as_deref().unwrap_or("an unknown version");
        match header.nightcrow_state {
            Some(Value::Number(format)) if format.as_u64() == Some(u64::from(FORMAT)) => {}
            Some(format) => {
                let aside = self.set_aside(&format!("format-{format}"));
                tracing::warn!(
                    "state journal {shown} was written by nightcrow {by} in format {format}; \
                     nightcrow {} reads format {FORMAT} only, so it starts without it{aside}",
                    env!("CARGO_PKG_VERSION")
                );
                return Vec::new();
            }
            None => {
                let aside = self.set_aside("unreadable");
                tracing::warn!(
                    "{shown} is not a nightcrow state journal (no format field); starting \
                     without it{aside}"
                );
                return Vec::new();
            }
        }
        let repos = match file.get("repos").cloned().map(Vec::<Value>::deserialize) {
            Some(Ok(repos)) => repos,
            _ => {
                let aside = self.set_aside("unreadable");
                tracing::warn!(
                    "state journal {shown} has no list of repositories; starting without it{aside}"
                );
                return Vec::new();
            }
        };
        if repos.len() > MAX_REPOS {
            tracing::warn!(
                dropped = repos.len() - MAX_REPOS,
                "state journal: repositories beyond the first {MAX_REPOS} dropped"
            );
        }
        repos
            .into_iter()
            .take(MAX_REPOS)
            .enumerate()
            .filter_map(|(index, repo)| restore_repo(index, repo))
            .collect()
    }

    /// Removes temp files of writes a killed daemon never finished (the journal itself is
    /// whole: a write only replaces it by a rename).
    fn remove_torn_writes(&self) {
        let (Some(folder), Some(name)) = (self.path.parent(), self.path.file_name()) else {
            return;
        };
        let prefix = format!(".{}.", name.to_string_lossy());
        let Ok(entries) = std::fs::read_dir(folder) else {
            return;
        };
        for entry in entries.flatten() {
            let file = entry.file_name();
            let file = file.to_string_lossy();
            if file.starts_with(&prefix) && file.ends_with(".tmp") {
                let _ = std::fs::remove_file(entry.path());
            }
        }
    }

    /// Moves an unusable journal out of the way (the next write would replace it) and says
    /// where it went.
    fn set_aside(&self, why: &str) -> String {
        let aside = self.path.with_extension(format!("json.{why}"));
        match std::fs::rename(&self.path, &aside) {
            Ok(()) => format!(" (kept as {})", aside.display()),
            Err(_) => String::new(),
        }
    }
}

fn restore_repo(index: usize, repo: Value) -> Option<RestoredRepo> {
    let repo = match RepoIn::deserialize(repo) {
        Ok(repo) => repo,
        Err(error) => {
            tracing::warn!("state journal: repository {} dropped: {error}", index + 1);
            return None;
        }
    };
    let shown = repo.root.display();
    let root = match repo.root.canonicalize() {
        Ok(root) if repo.root.is_absolute() && root.is_dir() => root,
        Ok(_) if !repo.root.is_absolute() => {
            tracing::warn!("state journal: repository {shown} dropped: not an absolute path");
            return None;
        }
        Ok(_) => {
            tracing::warn!("state journal: repository {shown} dropped: it is not a directory now");
            return None;
        }
        Err(error) => {
            tracing::warn!("state journal: repository {shown} dropped: {error}");
            return None;
        }
    };
    if repo.panes.len() > MAX_PANES {
        tracing::warn!("state journal: {shown}: panes beyond the first {MAX_PANES} dropped");
    }
    let panes = repo
        .panes
        .into_iter()
        .take(MAX_PANES)
        .enumerate()
        .filter_map(|(index, pane)| {
            let pane = PaneRecord::deserialize(pane)
                .map_err(|error| error.to_string())
                .and_then(PaneRecord::into_snapshot);
            pane.map_err(|error| {
                // serde's messages quote the offending value; a token may be among them.
                tracing::warn!(
                    "state journal: {shown}: pane {} dropped: {}",
                    index + 1,
                    without_tokens(&error)
                );
            })
            .ok()
        })
        .collect();
    Some(RestoredRepo { root, panes })
}

impl From<&PaneSnapshot> for PaneRecord {
    fn from(pane: &PaneSnapshot) -> PaneRecord {
        PaneRecord {
            token: pane.token.clone(),
            generation: pane.generation,
            title: pane.title.clone(),
            program_title: pane.program_title.clone(),
            startup: pane.startup.as_ref().map(|startup| StartupRecord {
                name: startup.name.clone(),
                command: startup.command.clone(),
                plugin: startup.plugin.clone(),
            }),
            owner: pane.owner.clone(),
            opened_ms: pane.opened_ms,
            rows: pane.size.rows(),
            cols: pane.size.cols(),
            exit: pane.exit.map(|exit| ExitRecord { code: exit.code }),
            hold_until_ms: pane.hold_until_ms,
            report: pane.report.clone(),
            sends_ms: pane.charged.sends_ms.clone(),
            relaunches_ms: pane.charged.relaunches_ms.clone(),
            screen: base64::engine::general_purpose::STANDARD.encode(&pane.screen),
        }
    }
}

impl PaneRecord {
    /// Checks every field against the bounds the daemon itself keeps to.
    fn into_snapshot(self) -> Result<PaneSnapshot, String> {
        let size = PaneSize::new(self.rows, self.cols).map_err(|error| error.to_string())?;
        if self.generation == 0 {
            return Err("generation 0".to_owned());
        }
        let texts = [
            self.title.as_deref(),
            self.program_title.as_deref(),
            self.owner.as_deref(),
            self.startup.as_ref().map(|s| s.command.as_str()),
            self.startup.as_ref().and_then(|s| s.name.as_deref()),
            self.startup.as_ref().and_then(|s| s.plugin.as_deref()),
            self.report.as_ref().map(|r| r.state.as_str()),
            self.report.as_ref().and_then(|r| r.detail.as_deref()),
        ];
        if texts
            .into_iter()
            .flatten()
            .any(|text| text.len() > MAX_TEXT_BYTES)
        {
            return Err(format!("a text longer than {MAX_TEXT_BYTES} bytes"));
        }
        let mut screen = base64::engine::general_purpose::STANDARD
            .decode(self.screen.as_bytes())
            .map_err(|error| format!("screen: {error}"))?;
        if screen.len() > MAX_SCREEN_BYTES {
            screen.drain(..screen.len() - MAX_SCREEN_BYTES);
        }
        let bounded = |times: Vec<i64>| times.into_iter().rev().take(64).rev().collect();
        Ok(PaneSnapshot {
            token: self.token,
            generation: self.generation,
            title: self.title,
            program_title: self.program_title,
            startup: self.startup.map(|startup| StartupCommand {
                name: startup.name,
                command: startup.command,
                plugin: startup.plugin,
            }),
            owner: self.owner,
            opened_ms: self.opened_ms,
            size,
            exit: self.exit.map(|exit| PaneExit { code: exit.code }),
            hold_until_ms: self.hold_until_ms,
            report: self.report,
            charged: Charged {
                sends_ms: bounded(self.sends_ms),
                relaunches_ms: bounded(self.relaunches_ms),
            },
            screen,
        })
    }
}

/// `text` with anything shaped like a token (32 hex characters) blanked out.
fn without_tokens(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut run = String::new();
    for c in text.chars().chain(std::iter::once(' ')) {
        if c.is_ascii_hexdigit() {
            run.push(c);
            continue;
        }
        if run.len() >= 32 {
            out.push_str("<token>");
        } else {
            out.push_str(&run);
        }
        run.clear();
        out.push(c);
    }
    out.pop();
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn token_shaped_text_is_never_repeated() {
        assert_eq!(
            without_tokens("invalid token \"0123456789abcdef0123456789abcdef\" at 3"),
            "invalid token \"<token>\" at 3"
        );
        assert_eq!(without_tokens("generation 0"), "generation 0");
    }
}

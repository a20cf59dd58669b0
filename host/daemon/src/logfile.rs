//! The background daemon's log file, `daemon.log`: once a line would take it past
//! [`LOG_ROTATE_BYTES`] it is renamed to `daemon.log.1` (replacing the previous one) and a
//! new one is started, so however much is logged, the two files hold at most twice that.
//! Each write is one whole log line (the log formatter writes a line at once), so a line
//! is never split across the two files.
//!
//! The process's own stdout and stderr (where a panic message goes) are pointed at the new
//! file on Unix, so they follow the rotation instead of writing into a removed file.

use std::fs::{File, OpenOptions};
use std::io::{self, Write};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, MutexGuard};

/// Size at which `daemon.log` is rotated.
pub const LOG_ROTATE_BYTES: u64 = 10 << 20;

/// A size-capped, rotating log file; clones write to the same file.
#[derive(Debug, Clone)]
pub struct LogFile {
    state: Arc<Mutex<State>>,
}

#[derive(Debug)]
struct State {
    path: PathBuf,
    file: File,
    written: u64,
    limit: u64,
    /// Point this process's stdout and stderr at each new file (the daemon's own log).
    stdio: bool,
}

impl LogFile {
    /// Opens (appending to) `path`, rotating it at `limit` bytes.
    pub fn open(path: &Path, limit: u64) -> io::Result<LogFile> {
        let file = open_append(path)?;
        let written = file.metadata()?.len();
        Ok(LogFile {
            state: Arc::new(Mutex::new(State {
                path: path.to_owned(),
                file,
                written,
                limit,
                stdio: false,
            })),
        })
    }

    /// Also points this process's stdout and stderr at the new file whenever it rotates
    /// (Unix), for a daemon whose stdout and stderr are this file.
    pub fn with_stdio(self) -> LogFile {
        self.state().stdio = true;
        self
    }

    /// Where the previous file goes: `daemon.log.1` beside `daemon.log`.
    pub fn rotated_path(path: &Path) -> PathBuf {
        let mut name = path.as_os_str().to_owned();
        name.push(".1");
        PathBuf::from(name)
    }

    fn state(&self) -> MutexGuard<'_, State> {
        self.state
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }
}

impl State {
    fn rotate(&mut self) -> io::Result<()> {
        std::fs::rename(&self.path, LogFile::rotated_path(&self.path))?;
        self.file = open_append(&self.path)?;
        self.written = 0;
        #[cfg(unix)]
        if self.stdio {
            follow_with_stdio(&self.file);
        }
        Ok(())
    }
}

impl Write for LogFile {
    fn write(&mut self, bytes: &[u8]) -> io::Result<usize> {
        let mut state = self.state();
        let length = bytes.len() as u64;
        if state.written > 0 && state.written + length > state.limit {
            // A failed rotation (the folder went read-only) keeps writing where it was.
            let _ = state.rotate();
        }
        state.file.write_all(bytes)?;
        state.written += length;
        Ok(bytes.len())
    }

    fn flush(&mut self) -> io::Result<()> {
        self.state().file.flush()
    }
}

fn open_append(path: &Path) -> io::Result<File> {
    let mut options = OpenOptions::new();
    options.create(true).append(true);
    #[cfg(unix)]
    std::os::unix::fs::OpenOptionsExt::mode(&mut options, 0o600);
    options.open(path)
}

/// Points fds 1 and 2 at `file`.
#[cfg(unix)]
fn follow_with_stdio(file: &File) {
    let _ = rustix::stdio::dup2_stdout(file);
    let _ = rustix::stdio::dup2_stderr(file);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rotates_to_one_old_file_at_the_limit() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("daemon.log");
        std::fs::write(&path, "from before\n").unwrap();
        let mut log = LogFile::open(&path, 1024).unwrap();
        let line = format!("{}\n", "x".repeat(99));
        for _ in 0..1000 {
            log.write_all(line.as_bytes()).unwrap();
        }
        let current = std::fs::read_to_string(&path).unwrap();
        let old = std::fs::read_to_string(LogFile::rotated_path(&path)).unwrap();
        assert!(current.len() <= 1024 && old.len() <= 1024);
        assert!(!old.contains("from before"), "the oldest lines are gone");
        for text in [current, old] {
            assert!(
                text.lines().all(|l| l == line.trim_end()),
                "whole lines only"
            );
        }
        let files = std::fs::read_dir(dir.path()).unwrap().count();
        assert_eq!(files, 2);
    }

    #[test]
    fn a_line_longer_than_the_limit_is_written_whole() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("daemon.log");
        let mut log = LogFile::open(&path, 10).unwrap();
        log.write_all(b"a long first line\n").unwrap();
        log.write_all(b"next\n").unwrap();
        assert_eq!(std::fs::read_to_string(&path).unwrap(), "next\n");
        assert_eq!(
            std::fs::read_to_string(LogFile::rotated_path(&path)).unwrap(),
            "a long first line\n"
        );
    }
}

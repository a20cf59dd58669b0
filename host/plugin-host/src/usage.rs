//! What a running plugin costs the machine, as the operating system counts it: resident
//! memory and CPU time of this process plus its direct children (a wasm guest runs in this
//! process, a native one is a child). Read from `/proc`, so Linux only; elsewhere
//! [`Usage::now`] is `None`. The runtime benchmark and `nightcrow plugin test` measure with it.

use std::path::{Path, PathBuf};

/// One reading.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Usage {
    /// Resident memory, KiB.
    pub rss_kib: u64,
    /// User plus system CPU time since each process started, seconds.
    pub cpu_secs: f64,
}

impl Usage {
    /// This process and its children now; `None` where `/proc` does not describe them.
    pub fn now() -> Option<Usage> {
        let me = std::process::id();
        let own = PathBuf::from(format!("/proc/{me}"));
        let mut usage = Usage {
            rss_kib: rss_kib(&own)?,
            cpu_secs: cpu_secs(&own)?,
        };
        for pid in children_of(me) {
            let dir = PathBuf::from(format!("/proc/{pid}"));
            usage.rss_kib += rss_kib(&dir).unwrap_or(0);
            usage.cpu_secs += cpu_secs(&dir).unwrap_or(0.0);
        }
        Some(usage)
    }

    /// Percent of one core used between `earlier` and `self`, `seconds` apart.
    pub fn cpu_percent_since(&self, earlier: &Usage, seconds: f64) -> f64 {
        100.0 * (self.cpu_secs - earlier.cpu_secs).max(0.0) / seconds
    }
}

/// CPU time (user plus system) of one process so far; `None` where `/proc` does not
/// describe it. The native runtime charges it to the plugin's CPU budget.
pub(crate) fn process_cpu_time(pid: u32) -> Option<std::time::Duration> {
    cpu_secs(&PathBuf::from(format!("/proc/{pid}"))).map(std::time::Duration::from_secs_f64)
}

fn children_of(parent: u32) -> Vec<u32> {
    let Ok(entries) = std::fs::read_dir("/proc") else {
        return Vec::new();
    };
    entries
        .filter_map(|entry| entry.ok()?.file_name().to_str()?.parse::<u32>().ok())
        .filter(|pid| {
            stat_fields(&PathBuf::from(format!("/proc/{pid}")))
                .is_some_and(|f| f.get(1).and_then(|ppid| ppid.parse().ok()) == Some(parent))
        })
        .collect()
}

/// The fields of `/proc/PID/stat` after the command name, from `state` on.
fn stat_fields(dir: &Path) -> Option<Vec<String>> {
    let stat = std::fs::read_to_string(dir.join("stat")).ok()?;
    let (_, rest) = stat.rsplit_once(')')?;
    Some(rest.split_whitespace().map(str::to_owned).collect())
}

fn cpu_secs(dir: &Path) -> Option<f64> {
    let fields = stat_fields(dir)?;
    // utime and stime, fields 14 and 15 of stat(5), in clock ticks (100 per second on Linux).
    let ticks: u64 = fields.get(11)?.parse::<u64>().ok()? + fields.get(12)?.parse::<u64>().ok()?;
    Some(ticks as f64 / 100.0)
}

fn rss_kib(dir: &Path) -> Option<u64> {
    let status = std::fs::read_to_string(dir.join("status")).ok()?;
    status
        .lines()
        .find_map(|line| line.strip_prefix("VmRSS:"))?
        .trim()
        .trim_end_matches("kB")
        .trim()
        .parse()
        .ok()
}

#[cfg(all(test, target_os = "linux"))]
mod tests {
    use super::*;

    #[test]
    fn a_busy_loop_shows_as_cpu_time() {
        let before = Usage::now().expect("/proc is there on Linux");
        assert!(before.rss_kib > 0);
        let began = std::time::Instant::now();
        let mut x = 0u64;
        while began.elapsed() < std::time::Duration::from_millis(300) {
            x = std::hint::black_box(x.wrapping_add(1));
        }
        let after = Usage::now().unwrap();
        assert!(after.cpu_percent_since(&before, 0.3) > 10.0);
    }
}

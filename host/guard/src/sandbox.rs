//! The sandbox settings of one wasm plugin: what it may reach and how much it may use. One
//! resolved value flows from the config (which validates it with positions) through the hub
//! to the plugin runtime (which turns it into the guest's only capabilities), so a new grant
//! is a field here, its key in the config, and its use in the runtime.

use std::path::PathBuf;

use crate::ConnectRule;

/// `[plugin.sandbox]`: what a wasm guest may reach (default: nothing) and its limits.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Sandbox {
    /// Read-only preopens; each appears in the guest under its host path. Must be absolute.
    pub read_dirs: Vec<PathBuf>,
    /// Outbound TCP the guest may open; everything else is refused at `connect`.
    pub connect: Vec<ConnectRule>,
    /// Cap on each linear memory and table; growth past it traps the guest.
    pub memory_mib: u32,
    /// Longest the guest may compute without blocking before it is killed as a runaway.
    pub cpu_slice_ms: u32,
    /// Share of one core the guest may use, in percent, averaged over `cpu_window_secs`;
    /// over it the guest is stopped (short sleeps do not reset the count).
    pub cpu_percent: u32,
    /// The window `cpu_percent` is averaged over, in seconds.
    pub cpu_window_secs: u32,
}

impl Sandbox {
    /// SPEC §4.3 default for `memory_mib`.
    pub const DEFAULT_MEMORY_MIB: u32 = 64;
    /// SPEC §4.3 default for `cpu_slice_ms`.
    pub const DEFAULT_CPU_SLICE_MS: u32 = 200;
    /// Default for `cpu_percent`: a quarter of a core.
    pub const DEFAULT_CPU_PERCENT: u32 = 25;
    /// Default for `cpu_window_secs`.
    pub const DEFAULT_CPU_WINDOW_SECS: u32 = 10;

    /// The grants and limits as a person reads them, one `(what, value)` pair per line:
    /// `("outbound TCP", "127.0.0.1:4096")`; an empty grant reads `none`.
    pub fn describe(&self) -> Vec<(&'static str, String)> {
        let or_none = |items: Vec<String>| {
            if items.is_empty() {
                "none".to_owned()
            } else {
                items.join(", ")
            }
        };
        let dirs = self.read_dirs.iter().map(|d| d.display().to_string());
        let rules = self.connect.iter().map(ToString::to_string);
        vec![
            ("read-only directories", or_none(dirs.collect())),
            ("outbound TCP", or_none(rules.collect())),
            (
                "limits",
                format!(
                    "{} MiB memory, {} ms without blocking, {} % of a core over {} s",
                    self.memory_mib, self.cpu_slice_ms, self.cpu_percent, self.cpu_window_secs
                ),
            ),
        ]
    }
}

impl Default for Sandbox {
    /// No grants, default limits.
    fn default() -> Sandbox {
        Sandbox {
            read_dirs: Vec::new(),
            connect: Vec::new(),
            memory_mib: Sandbox::DEFAULT_MEMORY_MIB,
            cpu_slice_ms: Sandbox::DEFAULT_CPU_SLICE_MS,
            cpu_percent: Sandbox::DEFAULT_CPU_PERCENT,
            cpu_window_secs: Sandbox::DEFAULT_CPU_WINDOW_SECS,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_default_sandbox_grants_nothing() {
        let lines = Sandbox::default().describe();
        assert_eq!(
            lines,
            [
                ("read-only directories", "none".to_owned()),
                ("outbound TCP", "none".to_owned()),
                (
                    "limits",
                    "64 MiB memory, 200 ms without blocking, 25 % of a core over 10 s".to_owned()
                ),
            ]
        );
    }
}

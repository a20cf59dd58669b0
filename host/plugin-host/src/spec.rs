//! What the hub asks for: one plugin, its runtime, its source and its sandbox grants.

use std::fmt;
use std::net::{IpAddr, SocketAddr};
use std::ops::RangeInclusive;
use std::path::PathBuf;
use std::sync::Arc;

/// Everything needed to start one plugin instance. Built by the hub from a `[[plugin]]`
/// table (paths already absolute, `~` already expanded).
#[derive(Debug, Clone)]
pub struct PluginSpec {
    /// The configured plugin name; attributes every log line and event.
    pub name: String,
    /// Which runtime runs it.
    pub runtime: RuntimeKind,
    /// Where the code comes from.
    pub source: PluginSource,
    /// The guest's arguments after `argv[0]` (which is the plugin name).
    pub args: Vec<String>,
    /// The guest's entire environment (`[plugin.env]`); nothing is inherited.
    pub env: Vec<(String, String)>,
    /// Value of `NIGHTCROW_PLUGIN_RUNTIME_DIR` (SPEC §5.4), set after `env` so it cannot be
    /// overridden. For wasm plugins it is only a name unless `read_dirs` grants it.
    pub runtime_dir: PathBuf,
    /// Capabilities and limits; applies to wasm plugins only (native plugins are trusted).
    pub sandbox: Sandbox,
}

/// The two runtimes behind one contract (SPEC §4.1).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum RuntimeKind {
    /// A WASI p2 command component (or a wasip1 core module) run by wasmtime in the daemon.
    Wasm,
    /// A child process with piped stdio: trusted code, no sandbox.
    Native,
}

/// Where a plugin's code comes from.
#[derive(Clone)]
pub enum PluginSource {
    /// A component embedded in the daemon (`builtin:<name>`); wasm only.
    Builtin {
        /// The name after `builtin:`.
        name: String,
        /// The component's bytes.
        bytes: Arc<[u8]>,
    },
    /// A `.wasm` file (wasm) or an executable (native).
    Path(PathBuf),
}

impl fmt::Debug for PluginSource {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            PluginSource::Builtin { name, bytes } => {
                write!(f, "builtin:{name} ({} bytes)", bytes.len())
            }
            PluginSource::Path(path) => write!(f, "{}", path.display()),
        }
    }
}

impl fmt::Display for PluginSource {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            PluginSource::Builtin { name, .. } => write!(f, "builtin:{name}"),
            PluginSource::Path(path) => write!(f, "{}", path.display()),
        }
    }
}

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
}

impl Sandbox {
    /// SPEC §4.3 default for `memory_mib`.
    pub const DEFAULT_MEMORY_MIB: u32 = 64;
    /// SPEC §4.3 default for `cpu_slice_ms`.
    pub const DEFAULT_CPU_SLICE_MS: u32 = 200;
}

impl Default for Sandbox {
    /// No grants, default limits.
    fn default() -> Sandbox {
        Sandbox {
            read_dirs: Vec::new(),
            connect: Vec::new(),
            memory_mib: Sandbox::DEFAULT_MEMORY_MIB,
            cpu_slice_ms: Sandbox::DEFAULT_CPU_SLICE_MS,
        }
    }
}

/// One `connect` grant: a loopback address and a port or an inclusive port range.
///
/// Only loopback addresses can be granted; [`ConnectRule::parse`] refuses anything else, so a
/// value of this type never names a remote host.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct ConnectRule {
    ip: IpAddr,
    ports: RangeInclusive<u16>,
}

/// Why a `connect` entry was refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ConnectRuleError {
    #[error("`{0}` is not `ADDRESS:PORT` or `ADDRESS:FIRST-LAST` (IPv6 as `[::1]:PORT`)")]
    Syntax(String),
    #[error("`{0}` is not a loopback address; only 127.0.0.0/8 and ::1 can be granted")]
    NotLoopback(String),
    #[error("`{0}`: port range is empty or starts at port 0")]
    BadPorts(String),
}

impl ConnectRule {
    /// Parses `127.0.0.1:4096`, `127.0.0.1:4100-4110` or `[::1]:4096`. Host names are refused
    /// (name lookup is denied to guests, so a rule could never match one).
    pub fn parse(text: &str) -> Result<ConnectRule, ConnectRuleError> {
        let syntax = || ConnectRuleError::Syntax(text.to_owned());
        let (host, ports) = text.rsplit_once(':').ok_or_else(syntax)?;
        let host = host
            .strip_prefix('[')
            .and_then(|h| h.strip_suffix(']'))
            .unwrap_or(host);
        let ip: IpAddr = host.parse().map_err(|_| syntax())?;
        if !ip.is_loopback() {
            return Err(ConnectRuleError::NotLoopback(text.to_owned()));
        }
        let (first, last) = ports.split_once('-').unwrap_or((ports, ports));
        let first: u16 = first.parse().map_err(|_| syntax())?;
        let last: u16 = last.parse().map_err(|_| syntax())?;
        if first == 0 || first > last {
            return Err(ConnectRuleError::BadPorts(text.to_owned()));
        }
        Ok(ConnectRule {
            ip,
            ports: first..=last,
        })
    }

    /// Whether an outbound connection to `addr` is granted by this rule.
    pub fn allows(&self, addr: SocketAddr) -> bool {
        addr.ip() == self.ip && self.ports.contains(&addr.port())
    }
}

impl fmt::Display for ConnectRule {
    /// As a person reads a grant: `127.0.0.1:4100-4110`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let (first, last) = (self.ports.start(), self.ports.end());
        let addr = SocketAddr::new(self.ip, *first);
        if first == last {
            write!(f, "{addr}")
        } else {
            write!(f, "{addr}-{last}")
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[track_caller]
    fn check(text: &str, expected: Result<&str, &str>) {
        let got = ConnectRule::parse(text)
            .map(|rule| rule.to_string())
            .map_err(|e| e.to_string());
        match (got, expected) {
            (Ok(rule), Ok(want)) => assert_eq!(rule, want),
            (Err(err), Err(want)) => assert!(err.contains(want), "{err:?} lacks {want:?}"),
            (got, want) => panic!("{text}: got {got:?}, want {want:?}"),
        }
    }

    #[test]
    fn connect_rules() {
        check("127.0.0.1:4096", Ok("127.0.0.1:4096"));
        check("127.0.0.1:4100-4110", Ok("127.0.0.1:4100-4110"));
        check("127.1.2.3:80", Ok("127.1.2.3:80"));
        check("[::1]:4096", Ok("[::1]:4096"));
        check("10.0.0.1:4096", Err("not a loopback"));
        check("0.0.0.0:4096", Err("not a loopback"));
        check("[::]:4096", Err("not a loopback"));
        check("localhost:4096", Err("is not `ADDRESS:PORT`"));
        check("127.0.0.1", Err("is not `ADDRESS:PORT`"));
        check("127.0.0.1:x", Err("is not `ADDRESS:PORT`"));
        check("127.0.0.1:70000", Err("is not `ADDRESS:PORT`"));
        check("127.0.0.1:0", Err("port range"));
        check("127.0.0.1:10-5", Err("port range"));
    }

    #[test]
    fn rule_matches_address_and_port_range() {
        let rule = ConnectRule::parse("127.0.0.1:4100-4110").unwrap();
        let at = |text: &str| rule.allows(text.parse().unwrap());
        assert!(at("127.0.0.1:4100"));
        assert!(at("127.0.0.1:4110"));
        assert!(!at("127.0.0.1:4099"));
        assert!(!at("127.0.0.1:4111"));
        assert!(!at("127.0.0.2:4100"));
        assert!(!at("[::1]:4100"));
    }
}

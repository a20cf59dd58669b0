//! Where an OpenCode pane's server listens, read from the pane's startup command.
//!
//! Only an explicit `--port N` / `--port=N` with N > 0 is knowable: without it OpenCode
//! either opens no socket (the TUI) or picks 4096 or a random port — never assume 4096.
//! The address is OpenCode's default `127.0.0.1` unless `--hostname` says otherwise, and only
//! a loopback server is observed (SPEC §9.3).

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr};

use crate::detect::invocation;

/// Why a pane's server cannot be observed. Each reason has a fixed log text (no command
/// text is ever logged).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Unobservable {
    /// No explicit `--port N` with N > 0 (or the command's quoting is broken).
    NoExplicitPort,
    /// `--hostname` names an address that is not loopback.
    NotLoopback,
}

impl Unobservable {
    pub fn log_text(self) -> &'static str {
        match self {
            Unobservable::NoExplicitPort => {
                "opencode: pane is unobservable: its command has no explicit --port N (N > 0)"
            }
            Unobservable::NotLoopback => {
                "opencode: pane is unobservable: its --hostname is not a loopback address"
            }
        }
    }
}

/// The loopback address to reach the pane's server at.
pub fn server_address(command: &str, windows: bool) -> Result<SocketAddr, Unobservable> {
    let (_, words) = invocation(command, windows).ok_or(Unobservable::NoExplicitPort)?;
    let port = last_value(&words, "--port")
        .and_then(|value| value.parse::<u16>().ok())
        .filter(|&port| port > 0)
        .ok_or(Unobservable::NoExplicitPort)?;
    let ip = match last_value(&words, "--hostname") {
        None => IpAddr::V4(Ipv4Addr::LOCALHOST),
        Some(host) => loopback_for(host).ok_or(Unobservable::NotLoopback)?,
    };
    Ok(SocketAddr::new(ip, port))
}

/// The value of the last `--flag V` / `--flag=V` (the last occurrence wins, as in yargs);
/// `--flag` with nothing after it counts as no value.
fn last_value<'a>(words: &'a [String], flag: &str) -> Option<&'a str> {
    let mut found = None;
    let mut args = words.iter().skip(1);
    while let Some(word) = args.next() {
        if word == flag {
            found = args.next().map(String::as_str);
        } else if let Some(value) = word.strip_prefix(flag).and_then(|v| v.strip_prefix('=')) {
            found = Some(value);
        }
    }
    found
}

/// Where a server listening on `host` accepts loopback connections: a loopback address
/// itself, `localhost` as `127.0.0.1` (name lookup is not available in the sandbox), and a
/// wildcard bind (`0.0.0.0`, `::`, what `--mdns` uses) through the loopback address of its
/// family. Any other name or address is not observed.
fn loopback_for(host: &str) -> Option<IpAddr> {
    let host = host.trim_start_matches('[').trim_end_matches(']');
    if host.eq_ignore_ascii_case("localhost") || host.eq_ignore_ascii_case("localhost.") {
        return Some(IpAddr::V4(Ipv4Addr::LOCALHOST));
    }
    match host.parse::<IpAddr>().ok()? {
        ip if ip.is_loopback() => Some(ip),
        IpAddr::V4(ip) if ip.is_unspecified() => Some(IpAddr::V4(Ipv4Addr::LOCALHOST)),
        IpAddr::V6(ip) if ip.is_unspecified() => Some(IpAddr::V6(Ipv6Addr::LOCALHOST)),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[track_caller]
    fn check(command: &str, expected: Result<&str, Unobservable>) {
        let expected = expected.map(|addr| addr.parse::<SocketAddr>().expect("test address"));
        assert_eq!(server_address(command, false), expected, "{command}");
    }

    #[test]
    fn only_an_explicit_nonzero_port_counts() {
        use Unobservable::NoExplicitPort;
        let cases: &[(&str, Result<&str, Unobservable>)] = &[
            ("opencode --port 4100", Ok("127.0.0.1:4100")),
            ("opencode --port=4101", Ok("127.0.0.1:4101")),
            ("opencode '--port' \"4103\"", Ok("127.0.0.1:4103")),
            ("OC=1 npx -y opencode-ai --port 4105", Ok("127.0.0.1:4105")),
            ("opencode --port 4100 --port 4104", Ok("127.0.0.1:4104")),
            ("opencode --port 4100 --port 0", Err(NoExplicitPort)),
            ("opencode", Err(NoExplicitPort)),
            ("opencode --port 0", Err(NoExplicitPort)),
            ("opencode --port=0", Err(NoExplicitPort)),
            ("opencode --hostname 127.0.0.1", Err(NoExplicitPort)),
            ("opencode --port", Err(NoExplicitPort)),
            ("opencode --port http", Err(NoExplicitPort)),
            ("opencode --port 70000", Err(NoExplicitPort)),
            ("opencode --portal 4100", Err(NoExplicitPort)),
            ("opencode \"--port 4100", Err(NoExplicitPort)),
        ];
        for &(command, expected) in cases {
            check(command, expected);
        }
    }

    #[test]
    fn the_hostname_must_reach_loopback() {
        use Unobservable::NotLoopback;
        let cases: &[(&str, Result<&str, Unobservable>)] = &[
            (
                "/usr/bin/opencode serve --hostname 127.0.0.1 --port 4102",
                Ok("127.0.0.1:4102"),
            ),
            ("opencode --port 9 --hostname=127.0.0.2", Ok("127.0.0.2:9")),
            ("opencode --port 9 --hostname ::1", Ok("[::1]:9")),
            ("opencode --port 9 --hostname [::1]", Ok("[::1]:9")),
            ("opencode --port 9 --hostname localhost", Ok("127.0.0.1:9")),
            ("opencode --port 9 --hostname LocalHost.", Ok("127.0.0.1:9")),
            ("opencode --port 9 --hostname 0.0.0.0", Ok("127.0.0.1:9")),
            ("opencode --port 9 --hostname ::", Ok("[::1]:9")),
            ("opencode --mdns --port 9", Ok("127.0.0.1:9")),
            (
                "opencode --port 9 --hostname 192.168.1.20",
                Err(NotLoopback),
            ),
            ("opencode --port 9 --hostname fe80::1", Err(NotLoopback)),
            ("opencode --port 9 --hostname devbox.lan", Err(NotLoopback)),
            ("opencode --port 9 --hostname ''", Err(NotLoopback)),
            // The last --hostname wins, like the last --port.
            (
                "opencode --port 9 --hostname 10.0.0.1 --hostname 127.0.0.1",
                Ok("127.0.0.1:9"),
            ),
        ];
        for &(command, expected) in cases {
            check(command, expected);
        }
    }
}

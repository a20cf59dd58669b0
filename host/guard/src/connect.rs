//! The sandbox's network grant: which loopback `address:port` ranges a wasm plugin may
//! connect to. A pure policy value like the rest of this crate; the plugin runtime asks
//! [`ConnectRule::allows`] at every `connect`, and the config parses it so that a bad entry
//! is reported with its position.

use std::fmt;
use std::net::{IpAddr, SocketAddr};
use std::ops::RangeInclusive;

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

//! Who may use the web client: the password (an Argon2id hash in the config, checked off
//! the async threads), the sessions it opens (random 256-bit ids in an HttpOnly,
//! SameSite=Strict cookie, expired on the server), and the per-address brake on failed
//! logins.

use std::collections::HashMap;
use std::net::IpAddr;
use std::sync::Mutex;
use std::time::{Duration, Instant};

use argon2::Argon2;
use argon2::password_hash::{PasswordHasher, PasswordVerifier, phc::PasswordHash};
use sha2::{Digest, Sha256};

/// The session cookie's name.
pub const COOKIE: &str = "nightcrow_session";
/// How long a session lasts after its login, whatever it does.
pub const SESSION_LIFETIME: Duration = Duration::from_secs(12 * 60 * 60);
/// Most sessions kept at once; a login beyond it ends the oldest.
const MAX_SESSIONS: usize = 64;
/// Failed logins an address may make before it has to wait.
const FREE_FAILURES: u32 = 3;
/// The longest wait a run of failures earns.
const MAX_LOCKOUT: Duration = Duration::from_secs(300);
/// Addresses remembered at once; the ones whose wait is over go first.
const MAX_ADDRESSES: usize = 4096;
/// Shortest password `nightcrow web passwd` accepts.
pub const MIN_PASSWORD_CHARS: usize = 8;

/// The PHC string (`$argon2id$v=19$...`, a fresh random salt) to keep in the config.
pub fn hash_password(password: &str) -> Result<String, String> {
    if password.chars().count() < MIN_PASSWORD_CHARS {
        return Err(format!(
            "the password is shorter than {MIN_PASSWORD_CHARS} characters"
        ));
    }
    Argon2::default()
        .hash_password(password.as_bytes())
        .map(|hash| hash.to_string())
        .map_err(|error| format!("hashing the password failed: {error}"))
}

/// Whether `password` matches `hash`. Slow on purpose (Argon2id): call it off the async
/// threads. A hash that does not parse matches nothing.
pub fn password_matches(password: &str, hash: &str) -> bool {
    PasswordHash::new(hash).is_ok_and(|hash| {
        Argon2::default()
            .verify_password(password.as_bytes(), &hash)
            .is_ok()
    })
}

/// The open sessions, by the SHA-256 of their id (the id itself is only in the cookie).
#[derive(Default)]
pub struct Sessions {
    open: Mutex<HashMap<[u8; 32], Instant>>,
}

impl Sessions {
    /// Opens a session; returns its id (64 hex digits, 256 random bits) for the cookie.
    pub fn open(&self) -> String {
        let mut bytes = [0u8; 32];
        getrandom::fill(&mut bytes).expect("the OS random source works");
        let id: String = bytes.iter().map(|byte| format!("{byte:02x}")).collect();
        let now = Instant::now();
        let mut open = self.open.lock().expect("sessions lock");
        open.retain(|_, expires| *expires > now);
        if open.len() >= MAX_SESSIONS
            && let Some(oldest) = open.iter().min_by_key(|(_, expires)| **expires)
        {
            let oldest = *oldest.0;
            open.remove(&oldest);
        }
        open.insert(digest(&id), now + SESSION_LIFETIME);
        id
    }

    /// Whether the `Cookie` header carries a session that is open and not expired.
    pub fn check(&self, cookie_header: Option<&str>) -> bool {
        let Some(id) = cookie_header.and_then(session_id) else {
            return false;
        };
        let mut open = self.open.lock().expect("sessions lock");
        match open.get(&digest(id)) {
            Some(expires) if *expires > Instant::now() => true,
            Some(_) => {
                open.remove(&digest(id));
                false
            }
            None => false,
        }
    }

    /// Ends the session the `Cookie` header names, if any.
    pub fn close(&self, cookie_header: Option<&str>) {
        if let Some(id) = cookie_header.and_then(session_id) {
            self.open.lock().expect("sessions lock").remove(&digest(id));
        }
    }
}

/// The `Set-Cookie` value for session `id` (an empty id with no lifetime clears it).
pub fn set_cookie(id: &str) -> String {
    let max_age = if id.is_empty() {
        0
    } else {
        SESSION_LIFETIME.as_secs()
    };
    format!("{COOKIE}={id}; Path=/; HttpOnly; SameSite=Strict; Max-Age={max_age}")
}

/// Our session id in a `Cookie` header (`a=1; nightcrow_session=...`).
fn session_id(header: &str) -> Option<&str> {
    header.split(';').find_map(|pair| {
        let (name, value) = pair.trim().split_once('=')?;
        (name == COOKIE && !value.is_empty()).then_some(value)
    })
}

fn digest(id: &str) -> [u8; 32] {
    Sha256::digest(id.as_bytes()).into()
}

/// Failed logins per address: after [`FREE_FAILURES`] in a row, each further failure
/// doubles the wait before the next try is even checked (1 s, 2 s, 4 s… up to
/// [`MAX_LOCKOUT`]). A good login clears the address.
#[derive(Default)]
pub struct LoginBrake {
    addresses: Mutex<HashMap<IpAddr, Failures>>,
}

#[derive(Clone, Copy)]
struct Failures {
    count: u32,
    wait_until: Instant,
}

impl LoginBrake {
    /// How long `address` must still wait before a login is checked; `None` if it may try.
    pub fn wait(&self, address: IpAddr) -> Option<Duration> {
        let addresses = self.addresses.lock().expect("brake lock");
        let left = addresses
            .get(&address)?
            .wait_until
            .saturating_duration_since(Instant::now());
        (!left.is_zero()).then_some(left)
    }

    pub fn failed(&self, address: IpAddr) {
        let now = Instant::now();
        let mut addresses = self.addresses.lock().expect("brake lock");
        if addresses.len() >= MAX_ADDRESSES {
            addresses.retain(|_, failures| failures.wait_until > now);
        }
        let failures = addresses.entry(address).or_insert(Failures {
            count: 0,
            wait_until: now,
        });
        failures.count += 1;
        if let Some(over) = failures.count.checked_sub(FREE_FAILURES).filter(|n| *n > 0) {
            let wait = Duration::from_secs(1u64 << (over - 1).min(16)).min(MAX_LOCKOUT);
            failures.wait_until = now + wait;
        }
    }

    pub fn succeeded(&self, address: IpAddr) {
        self.addresses.lock().expect("brake lock").remove(&address);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_hash_matches_its_password_only() {
        let hash = hash_password("correct horse").unwrap();
        assert!(hash.starts_with("$argon2id$"), "{hash}");
        assert!(password_matches("correct horse", &hash));
        assert!(!password_matches("correct horsE", &hash));
        assert!(!password_matches("correct horse", "$argon2id$garbage"));
        assert!(hash_password("short").is_err());
    }

    #[test]
    fn sessions_are_found_by_cookie_and_end_when_closed() {
        let sessions = Sessions::default();
        let id = sessions.open();
        assert_eq!(id.len(), 64);
        let header = format!("theme=dark; {COOKIE}={id}");
        assert!(sessions.check(Some(&header)));
        assert!(!sessions.check(Some(&format!("{COOKIE}={}", "0".repeat(64)))));
        assert!(!sessions.check(Some("theme=dark")));
        assert!(!sessions.check(None));
        sessions.close(Some(&header));
        assert!(!sessions.check(Some(&header)));
        assert_ne!(sessions.open(), id);
        let cookie = set_cookie(&id);
        assert!(cookie.contains("HttpOnly") && cookie.contains("SameSite=Strict"));
    }

    #[test]
    fn failures_beyond_the_free_ones_make_the_address_wait() {
        let brake = LoginBrake::default();
        let address: IpAddr = "127.0.0.1".parse().unwrap();
        let other: IpAddr = "127.0.0.2".parse().unwrap();
        for _ in 0..FREE_FAILURES {
            assert_eq!(brake.wait(address), None);
            brake.failed(address);
        }
        assert_eq!(brake.wait(address), None);
        brake.failed(address);
        assert!(brake.wait(address).is_some());
        assert_eq!(brake.wait(other), None);
        brake.succeeded(address);
        assert_eq!(brake.wait(address), None);
    }
}

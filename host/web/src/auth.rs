//! Who may use the web client: the password (an Argon2id hash in the config, checked off
//! the async threads), the sessions it opens (random 256-bit ids in an HttpOnly,
//! SameSite=Strict cookie, expired on the server, all ended when the password changes), and
//! the server-wide brake on failed logins.

use std::collections::HashMap;
use std::sync::{Mutex, RwLock};
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
/// Failed logins the server takes before every login has to wait. One count for all
/// addresses: on loopback every local user can pick a source address of their own.
pub const FREE_FAILURES: u32 = 3;
/// The longest wait a run of failures earns.
const MAX_LOCKOUT: Duration = Duration::from_secs(300);
/// A run of failures this long without another is forgotten.
const FAILURES_FORGOTTEN_AFTER: Duration = Duration::from_secs(15 * 60);
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

/// The password and what depends on it: the sessions it opened and the failed-login brake.
pub struct Login {
    password_hash: RwLock<Option<String>>,
    pub sessions: Sessions,
    pub brake: LoginBrake,
}

impl Login {
    pub fn new(password_hash: Option<String>) -> Login {
        Login {
            password_hash: RwLock::new(password_hash),
            sessions: Sessions::default(),
            brake: LoginBrake::default(),
        }
    }

    pub fn password_hash(&self) -> Option<String> {
        self.password_hash.read().expect("password lock").clone()
    }

    /// Takes a new hash (a config reload; `None` refuses every login). A changed password
    /// ends every session: whoever logged in with the old one is out.
    pub fn set_password_hash(&self, hash: Option<String>) {
        let mut current = self.password_hash.write().expect("password lock");
        if *current != hash {
            *current = hash;
            self.sessions.close_all();
        }
    }
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

    fn close_all(&self) {
        self.open.lock().expect("sessions lock").clear();
    }
}

/// The `Set-Cookie` value for session `id` (an empty id with no lifetime clears it);
/// `secure` adds `Secure`, for a server reached through a TLS proxy.
pub fn set_cookie(id: &str, secure: bool) -> String {
    let max_age = if id.is_empty() {
        0
    } else {
        SESSION_LIFETIME.as_secs()
    };
    let secure = if secure { "; Secure" } else { "" };
    format!("{COOKIE}={id}; Path=/; HttpOnly; SameSite=Strict; Max-Age={max_age}{secure}")
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

/// Failed logins, for the whole server: after [`FREE_FAILURES`] in a row, each further
/// failure doubles the wait before the next login is even checked (1 s, 2 s, 4 s… up to
/// [`MAX_LOCKOUT`]). An attempt counts as a failure from the moment it is let through, before
/// its password is hashed, so a burst of parallel tries cannot all be checked; a good login
/// clears the count, and so do [`FAILURES_FORGOTTEN_AFTER`] without a failure.
#[derive(Default)]
pub struct LoginBrake {
    failures: Mutex<Option<Failures>>,
}

#[derive(Clone, Copy)]
struct Failures {
    count: u32,
    last: Instant,
    wait_until: Instant,
}

impl LoginBrake {
    /// Lets one login be checked and counts it as failed until [`LoginBrake::succeeded`]; or
    /// says how long every login must still wait.
    pub fn attempt(&self, now: Instant) -> Result<(), Duration> {
        let mut failures = self.failures.lock().expect("brake lock");
        let run = match *failures {
            Some(run) if now.saturating_duration_since(run.last) < FAILURES_FORGOTTEN_AFTER => {
                let left = run.wait_until.saturating_duration_since(now);
                if !left.is_zero() {
                    return Err(left);
                }
                run
            }
            _ => Failures {
                count: 0,
                last: now,
                wait_until: now,
            },
        };
        let count = run.count + 1;
        let wait_until = match count.checked_sub(FREE_FAILURES).filter(|over| *over > 0) {
            Some(over) => now + Duration::from_secs(1u64 << (over - 1).min(16)).min(MAX_LOCKOUT),
            None => now,
        };
        *failures = Some(Failures {
            count,
            last: now,
            wait_until,
        });
        Ok(())
    }

    pub fn succeeded(&self) {
        *self.failures.lock().expect("brake lock") = None;
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
        let cookie = set_cookie(&id, false);
        assert!(cookie.contains("HttpOnly") && cookie.contains("SameSite=Strict"));
    }

    #[test]
    fn a_new_password_ends_every_session() {
        let login = Login::new(Some("$argon2id$one".to_owned()));
        let header = format!("{COOKIE}={}", login.sessions.open());
        login.set_password_hash(Some("$argon2id$one".to_owned()));
        assert!(login.sessions.check(Some(&header)), "the same hash again");
        login.set_password_hash(Some("$argon2id$two".to_owned()));
        assert!(!login.sessions.check(Some(&header)));
        assert_eq!(login.password_hash().as_deref(), Some("$argon2id$two"));
        assert!(set_cookie("x", true).ends_with("; Secure"));
        assert!(!set_cookie("x", false).contains("Secure"));
    }

    #[test]
    fn attempts_beyond_the_free_ones_make_every_login_wait() {
        let brake = LoginBrake::default();
        let start = Instant::now();
        for _ in 0..=FREE_FAILURES {
            assert_eq!(brake.attempt(start), Ok(()));
        }
        assert_eq!(brake.attempt(start), Err(Duration::from_secs(1)));
        let later = start + Duration::from_secs(1);
        assert_eq!(brake.attempt(later), Ok(()));
        assert_eq!(brake.attempt(later), Err(Duration::from_secs(2)));
        let quiet = later + FAILURES_FORGOTTEN_AFTER;
        assert_eq!(brake.attempt(quiet), Ok(()));
        brake.succeeded();
        for _ in 0..=FREE_FAILURES {
            assert_eq!(brake.attempt(quiet), Ok(()));
        }
        assert!(brake.attempt(quiet).is_err());
    }
}

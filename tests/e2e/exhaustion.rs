//! The daemon as a real background process (`nightcrow -d`) under a low open-files limit,
//! attacked the way issue 25 found it weak: idle and slow connections to the web port, and
//! a plugin flooding `log`. The owner's `status` must keep answering, connections must be
//! closed by the cap and the timeouts, and `daemon.log` must stay small.
#![cfg(target_os = "linux")]

use std::io::{Read, Write};
use std::net::TcpStream;
use std::path::Path;
use std::process::Output;
use std::time::{Duration, Instant};

use nightcrow_test_plugin_artifacts as guests;

use crate::util::{nightcrow, nightcrow_with_open_files};
use crate::web::set_password;

/// The daemon's descriptor limit in these tests: a quarter (64) is the web client's.
const OPEN_FILES: u64 = 256;

/// A background daemon; stopped (or killed) when dropped, its log printed if a test fails.
struct Background {
    home: tempfile::TempDir,
}

impl Background {
    fn start(config: &str) -> Background {
        let home = tempfile::tempdir().unwrap();
        std::fs::write(home.path().join("config.toml"), config).unwrap();
        if config.contains("[web]") {
            set_password(home.path(), "a password for the exhaustion tests");
        }
        let started = nightcrow_with_open_files(home.path(), OPEN_FILES)
            .arg("-d")
            .output()
            .unwrap();
        assert!(started.status.success(), "{started:?}");
        Background { home }
    }

    fn home(&self) -> &Path {
        self.home.path()
    }

    fn log_bytes(&self) -> u64 {
        std::fs::metadata(self.home().join("daemon.log")).map_or(0, |m| m.len())
    }

    /// `nightcrow ARGS`, killed if it has not answered within `patience`.
    fn run_within(&self, args: &[&str], patience: Duration) -> Result<Output, String> {
        let mut child = nightcrow(self.home())
            .args(args)
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::piped())
            .spawn()
            .unwrap();
        let began = Instant::now();
        while child.try_wait().unwrap().is_none() {
            if began.elapsed() > patience {
                let _ = child.kill();
                let _ = child.wait();
                return Err(format!(
                    "`nightcrow {}` did not answer in {patience:?}",
                    args.join(" ")
                ));
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        Ok(child.wait_with_output().unwrap())
    }
}

impl Drop for Background {
    fn drop(&mut self) {
        let stopped = self.run_within(&["stop"], Duration::from_secs(10));
        if !stopped.is_ok_and(|output| output.status.success())
            && let Ok(lock) = std::fs::read_to_string(self.home().join("daemon.lock"))
        {
            let _ = std::process::Command::new("kill")
                .args(["-9", lock.trim()])
                .status();
        }
        if std::thread::panicking() {
            let log = std::fs::read(self.home().join("daemon.log")).unwrap_or_default();
            let tail = &log[log.len().saturating_sub(4000)..];
            eprintln!("--- daemon.log tail ---\n{}", String::from_utf8_lossy(tail));
        }
    }
}

/// Whether the peer has closed `stream` (a read gives end of file or an error at once).
fn closed(mut stream: &TcpStream) -> bool {
    stream.set_nonblocking(true).unwrap();
    let mut byte = [0u8; 1];
    !matches!(stream.read(&mut byte), Err(error) if error.kind() == std::io::ErrorKind::WouldBlock)
}

#[test]
fn idle_and_slow_web_connections_leave_the_control_socket_answering() {
    let daemon = Background::start("[web]\nenabled = true\nport = 0\nrequest_timeout_secs = 2\n");
    let web = daemon
        .run_within(&["web"], Duration::from_secs(10))
        .unwrap();
    let page = String::from_utf8_lossy(&web.stdout).into_owned();
    let authority = page
        .split_whitespace()
        .find_map(|word| word.strip_prefix("http://"))
        .unwrap_or_else(|| panic!("no address in {page}"))
        .split('/')
        .next()
        .unwrap()
        .to_owned();
    let address = authority.parse().unwrap();
    let log_before = daemon.log_bytes();

    let mut slow = TcpStream::connect(address).unwrap();
    slow.write_all(b"GET / HTTP/1.1\r\n").unwrap();
    let began = Instant::now();
    // More idle connections than the daemon has descriptors.
    let idle: Vec<TcpStream> = (0..OPEN_FILES + 100)
        .filter_map(|_| TcpStream::connect_timeout(&address, Duration::from_secs(1)).ok())
        .collect();
    let status = daemon
        .run_within(&["status"], Duration::from_secs(5))
        .unwrap();
    assert!(status.status.success(), "{status:?}");

    // The slow request, one header line every half second, is cut off by the timeout.
    let cut_off = loop {
        std::thread::sleep(Duration::from_millis(500));
        if slow.write_all(b"X-Slow: 1\r\n").is_err() {
            break began.elapsed();
        }
        assert!(
            began.elapsed() < Duration::from_secs(8),
            "the slow request is still open"
        );
    };
    assert!(
        cut_off > Duration::from_millis(1500),
        "closed before its timeout: {cut_off:?}"
    );
    // Those over the cap were closed at once, the others when they idled past the timeout.
    std::thread::sleep(Duration::from_secs(1));
    let open = idle.iter().filter(|stream| !closed(stream)).count();
    assert_eq!(open, 0, "idle connections still open after {cut_off:?}");

    let status = daemon
        .run_within(&["status"], Duration::from_secs(5))
        .unwrap();
    assert!(status.status.success(), "{status:?}");
    let grown = daemon.log_bytes() - log_before;
    assert!(grown < 64 << 10, "daemon.log grew by {grown} bytes");
}

#[test]
fn a_plugin_flooding_log_grows_the_log_by_a_bounded_amount() {
    let config = format!(
        "[[plugin]]\nname = \"flood\"\ncommand = {:?}\nenabled = true\n\
         args = [\"bytes=1900\", \"level=error\"]\n\n\
         [[startup_command]]\nname = \"idle\"\ncommand = \"sleep 60\"\nplugin = \"flood\"\n",
        guests::COMMAND_FLOOD_WASM
    );
    let daemon = Background::start(&config);
    let repo = tempfile::tempdir().unwrap();
    let before = daemon.log_bytes();
    let opened = daemon
        .run_within(
            &["open", repo.path().to_str().unwrap()],
            Duration::from_secs(20),
        )
        .unwrap();
    assert!(opened.status.success(), "{opened:?}");
    std::thread::sleep(Duration::from_secs(4));
    let grown = daemon.log_bytes() - before;
    let log = std::fs::read_to_string(daemon.home().join("daemon.log")).unwrap();
    assert!(log.contains("plugin log"), "the flood is logged at all");
    let most_suppressed = log
        .split("suppressed=")
        .skip(1)
        .filter_map(|rest| {
            rest.split(|c: char| !c.is_ascii_digit())
                .next()?
                .parse::<u64>()
                .ok()
        })
        .max();
    assert!(
        most_suppressed.is_some_and(|n| n > 0),
        "suppressed lines are counted: {most_suppressed:?}"
    );
    // 20 lines a second of at most 2 KiB each, for about 4 s, plus the daemon's own lines.
    assert!(grown < 400 << 10, "daemon.log grew by {grown} bytes in 4 s");
    let status = daemon
        .run_within(&["status"], Duration::from_secs(5))
        .unwrap();
    assert!(status.status.success(), "{status:?}");
}

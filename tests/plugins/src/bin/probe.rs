//! Sandbox probe: reports what it can reach, one `info` log per finding, aimed by its
//! arguments, then `probe: done`, then echoes until `shutdown`.
//!
//! Arguments (in order, any number):
//! `env` (every variable as `env: NAME=VALUE`), `args`, `getenv=NAME`, `read=PATH`,
//! `list=DIR`, `write=PATH`, `connect=ADDR:PORT`. Each finding is `"<action> <target>: ok …"`
//! or `"<action> <target>: error: …"`, so a test matches it exactly.
use std::io::{Read, Write};

use nightcrow_protocol::LogLevel;
use nightcrow_test_plugins::{echo_until_shutdown, log};

fn main() {
    for arg in std::env::args().skip(1) {
        let (action, target) = arg.split_once('=').unwrap_or((&arg, ""));
        let report = |outcome: String| log(LogLevel::Info, format!("{action} {target}: {outcome}"));
        match action {
            "env" => {
                let vars: Vec<_> = std::env::vars_os().collect();
                for (name, value) in &vars {
                    log(
                        LogLevel::Info,
                        format!(
                            "env: {}={}",
                            name.to_string_lossy(),
                            value.to_string_lossy()
                        ),
                    );
                }
                log(LogLevel::Info, format!("env: {} variables", vars.len()));
            }
            "args" => log(
                LogLevel::Info,
                format!("args: {:?}", std::env::args().collect::<Vec<_>>()),
            ),
            "getenv" => report(match std::env::var_os(target) {
                Some(value) => format!("ok {}", value.to_string_lossy()),
                None => "error: not set".to_owned(),
            }),
            "read" => report(outcome(std::fs::File::open(target).and_then(|mut file| {
                let mut text = Vec::new();
                file.read_to_end(&mut text)?;
                Ok(format!("{} bytes", text.len()))
            }))),
            "list" => report(outcome(std::fs::read_dir(target).and_then(|entries| {
                let mut names = entries
                    .map(|entry| Ok(entry?.file_name().to_string_lossy().into_owned()))
                    .collect::<std::io::Result<Vec<_>>>()?;
                names.sort();
                Ok(names.join(","))
            }))),
            "write" => report(outcome(
                std::fs::File::create(target)
                    .and_then(|mut file| file.write_all(b"written by probe"))
                    .map(|()| "written".to_owned()),
            )),
            "connect" => report(outcome(
                std::net::TcpStream::connect(target).map(|_| "connected".to_owned()),
            )),
            _ => report("error: unknown probe".to_owned()),
        }
    }
    log(LogLevel::Info, "probe: done");
    echo_until_shutdown();
}

fn outcome(result: std::io::Result<String>) -> String {
    match result {
        Ok(what) => format!("ok {what}"),
        Err(error) => format!("error: {error}"),
    }
}

//! {{name}}: a nightcrow plugin in Rust.
//!
//! nightcrow sends one JSON event per line on stdin and reads one JSON command per line from
//! stdout; every line carries `"v": 3`. Start from `handle` below. docs/PLUGIN-AUTHORING.md
//! in the nightcrow repository describes every event and command.
use std::io::{BufRead, Write};

use serde_json::{Value, json};

const VERSION: u64 = 3;

/// Reacts to one event; `false` to stop (on `shutdown`).
fn handle(event: &Value, out: &mut impl Write) -> std::io::Result<bool> {
    match event["event"].as_str() {
        Some("shutdown") => return Ok(false),
        Some("pane_opened") => send(
            out,
            json!({"cmd": "status", "token": event["token"], "generation": event["generation"],
                   "state": "watching", "detail": null, "deadline_epoch": null, "attempt": 0}),
        )?,
        // pane_output, pane_idle, pane_exited, pane_closed, user_input: yours to handle.
        _ => {}
    }
    Ok(true)
}

/// Writes one command line and flushes it (nightcrow reads lines as they come).
fn send(out: &mut impl Write, mut command: Value) -> std::io::Result<()> {
    command["v"] = json!(VERSION);
    writeln!(out, "{command}")?;
    out.flush()
}

fn main() -> std::io::Result<()> {
    let mut out = std::io::stdout().lock();
    for line in std::io::stdin().lock().lines() {
        let Ok(event) = serde_json::from_str::<Value>(&line?) else {
            eprintln!("{{name}}: a line that is not JSON, skipped");
            continue;
        };
        if event["v"] == VERSION && !handle(&event, &mut out)? {
            break;
        }
    }
    Ok(())
}

//! Hostile: on each `pane_opened` it sends, besides the echo, commands for panes it was not
//! given and for generations it does not hold (see `guesses`). They are well formed, so they
//! must decode; refusing them is the guard's job.
use nightcrow_protocol::{Command, Event, Token};
use nightcrow_test_plugins::{Incoming, echo_reply, incoming, send};

fn main() {
    let mut events = 0u32;
    for incoming in incoming() {
        let Incoming::Event(event) = incoming else {
            continue;
        };
        events += 1;
        if let Event::PaneOpened {
            token, generation, ..
        } = &event
        {
            for guess in guesses(token, *generation) {
                send(&guess);
            }
        }
        match echo_reply(&event, events) {
            Some(reply) => send(&reply),
            None => return,
        }
    }
}

/// Invented tokens (all zeros, all `f`, the given one with its last digit changed) and the
/// given token with generations 0, one back, one ahead and `u32::MAX`.
fn guesses(given: &Token, generation: u32) -> Vec<Command> {
    let mut neighbour = given.as_str().to_owned();
    let last = if neighbour.ends_with('0') { "1" } else { "0" };
    neighbour.replace_range(31.., last);
    let invented = ["0".repeat(32), "f".repeat(32), neighbour]
        .map(|text| Token::parse(&text).expect("32 hex digits"));
    let mut guesses = Vec::new();
    for token in invented {
        guesses.push(Command::SendInput {
            token: token.clone(),
            generation,
            data: "rm -rf ~\r".to_owned(),
        });
        guesses.push(Command::WatchPane { token });
    }
    for stale in [
        0,
        generation.saturating_sub(1),
        generation.saturating_add(1),
        u32::MAX,
    ] {
        guesses.push(Command::Relaunch {
            token: given.clone(),
            generation: stale,
            resume_args: vec!["resume".to_owned()],
        });
        guesses.push(Command::Attention {
            token: given.clone(),
            generation: stale,
        });
    }
    guesses
}

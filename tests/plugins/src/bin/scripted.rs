//! Scriptable guest for the hub's tests: logs every event it receives as an `info` log whose
//! message is the event's own protocol line (`event <json>`), so a test reads back exactly
//! what the plugin saw, in order; and answers some events with commands chosen by its
//! arguments:
//! - `open_send=TEXT`: on `pane_opened`, `send_input` of `TEXT\r`;
//! - `open_status=STATE`: on `pane_opened`, a `status` with that state (attempt 0) and the
//!   deadline below;
//! - `idle_send=TEXT`: on `pane_idle`, `send_input` of `TEXT\r`;
//! - `exit_status=STATE`: on `pane_exited`, a `status` with that state (attempt 1) and a
//!   deadline, or none with `no_deadline`;
//! - `deadline_epoch=N`: that deadline (unix seconds) instead of the fixed one, for a test
//!   that needs one still to come;
//! - `exit_relaunch=A,B`: on `pane_exited`, `relaunch` with those resume args (empty: none);
//! - `watch_echoed`: on `pane_output` containing `watch:<token>`, `watch_pane` for it;
//! - `attention_on=WORD`: on `pane_output` containing WORD, `attention`;
//! - `exit_on=WORD`: on `pane_output` containing WORD, exit with code 3 (a crash);
//! - `relaunch_on=WORD`: on `pane_output` containing WORD, `relaunch` (no args) of the pane
//!   that exited last.
//!
//! Leaves on `shutdown`.
use nightcrow_protocol::{Command, Event, LogLevel, TOKEN_HEX_LEN, Token, encode_event};
use nightcrow_test_plugins::{Incoming, arg, incoming, log, send};

fn main() {
    let open_send = arg("open_send");
    let open_status = arg("open_status");
    let idle_send = arg("idle_send");
    let exit_status = arg("exit_status");
    let deadline_epoch = (!std::env::args().any(|arg| arg == "no_deadline")).then(|| {
        arg("deadline_epoch")
            .and_then(|epoch| epoch.parse().ok())
            .unwrap_or(1_771_890_527)
    });
    let exit_relaunch = arg("exit_relaunch").map(|args| {
        args.split(',')
            .filter(|arg| !arg.is_empty())
            .map(str::to_owned)
            .collect::<Vec<_>>()
    });
    let watch_echoed = std::env::args().any(|arg| arg == "watch_echoed");
    let attention_on = arg("attention_on");
    let exit_on = arg("exit_on");
    let relaunch_on = arg("relaunch_on");
    let mut exited_last: Option<(Token, u32)> = None;
    for incoming in incoming() {
        let event = match incoming {
            Incoming::Event(event) => event,
            Incoming::Undecodable(why) => {
                log(LogLevel::Warn, format!("scripted: undecodable: {why}"));
                continue;
            }
        };
        let line = encode_event(&event).unwrap_or_default();
        log(LogLevel::Info, format!("event {}", line.trim_end()));
        let input = |token: &Token, generation: u32, text: &str| Command::SendInput {
            token: token.clone(),
            generation,
            data: format!("{text}\r"),
        };
        match &event {
            Event::PaneOpened {
                token, generation, ..
            } => {
                if let Some(text) = &open_send {
                    send(&input(token, *generation, text));
                }
                if let Some(state) = &open_status {
                    send(&Command::Status {
                        token: token.clone(),
                        generation: *generation,
                        state: state.clone(),
                        detail: None,
                        deadline_epoch,
                        attempt: 0,
                    });
                }
            }
            Event::PaneIdle {
                token, generation, ..
            } => {
                if let Some(text) = &idle_send {
                    send(&input(token, *generation, text));
                }
            }
            Event::PaneExited { token, generation } => {
                exited_last = Some((token.clone(), *generation));
                if let Some(state) = &exit_status {
                    send(&Command::Status {
                        token: token.clone(),
                        generation: *generation,
                        state: state.clone(),
                        detail: Some("scripted".to_owned()),
                        deadline_epoch,
                        attempt: 1,
                    });
                }
                if let Some(resume_args) = &exit_relaunch {
                    send(&Command::Relaunch {
                        token: token.clone(),
                        generation: *generation,
                        resume_args: resume_args.clone(),
                    });
                }
            }
            Event::PaneOutput {
                token,
                generation,
                text,
            } => {
                if watch_echoed {
                    for watched in watched_tokens(text) {
                        send(&Command::WatchPane { token: watched });
                    }
                }
                if let Some((token, generation)) = exited_last
                    .as_ref()
                    .filter(|_| relaunch_on.as_ref().is_some_and(|word| text.contains(word)))
                {
                    send(&Command::Relaunch {
                        token: token.clone(),
                        generation: *generation,
                        resume_args: Vec::new(),
                    });
                }
                if exit_on.as_ref().is_some_and(|word| text.contains(word)) {
                    std::process::exit(3);
                }
                if attention_on
                    .as_ref()
                    .is_some_and(|word| text.contains(word))
                {
                    send(&Command::Attention {
                        token: token.clone(),
                        generation: *generation,
                    });
                }
            }
            Event::PaneClosed { .. } | Event::UserInput { .. } => {}
            Event::Shutdown => return,
        }
    }
}

/// Every well-formed token written as `watch:<token>` in `text`.
fn watched_tokens(text: &str) -> Vec<Token> {
    text.match_indices("watch:")
        .filter_map(|(at, prefix)| {
            let start = at + prefix.len();
            text.get(start..start + TOKEN_HEX_LEN)
                .and_then(|hex| Token::parse(hex).ok())
        })
        .collect()
}

//! Example plugin: "the program wants the person back" for any CLI, by pattern. Every
//! argument is a regular expression (Rust `regex` syntax, e.g. `(?i)rate limit`); when a line
//! of pane output matches one, the plugin sends `attention` for that pane and a `status`
//! whose detail is the matching line. It then stays quiet for that pane until the person
//! types into it or the pane is relaunched, so a repeated line does not ring again.
//!
//! No provider knowledge, no grants: it reads only what the host sends it.
use std::collections::HashMap;

use nightcrow_plugin_sdk::{Context, PaneOpened, Plugin};
use nightcrow_protocol::{Command, Generation, LogLevel, Token};
use regex_automata::meta::Regex;

/// Longest status detail, in characters: clients show a short line, not a transcript.
const DETAIL_CHARS: usize = 120;

struct RegexAttention {
    patterns: Option<Regex>,
    /// Panes already flagged since the person last typed, with the generation flagged.
    rung: HashMap<Token, Generation>,
}

impl Plugin for RegexAttention {
    fn pane_opened(&mut self, _ctx: &mut Context<'_>, pane: PaneOpened) {
        self.rung.remove(&pane.token);
    }

    fn pane_output(
        &mut self,
        ctx: &mut Context<'_>,
        token: Token,
        generation: Generation,
        text: String,
    ) {
        let Some(patterns) = &self.patterns else {
            return;
        };
        if self.rung.get(&token) == Some(&generation) {
            return;
        }
        let Some(line) = text.lines().find(|line| patterns.is_match(line)) else {
            return;
        };
        let detail: String = line.trim().chars().take(DETAIL_CHARS).collect();
        ctx.send(&Command::Attention {
            token: token.clone(),
            generation,
        });
        ctx.send(&Command::Status {
            token: token.clone(),
            generation,
            state: "needs_you".to_owned(),
            detail: Some(detail),
            deadline_epoch: None,
            attempt: 0,
        });
        self.rung.insert(token, generation);
    }

    fn user_input(&mut self, _ctx: &mut Context<'_>, token: Token, _generation: Generation) {
        self.rung.remove(&token);
    }

    fn pane_closed(&mut self, _ctx: &mut Context<'_>, token: Token, _generation: Generation) {
        self.rung.remove(&token);
    }
}

fn main() {
    let patterns: Vec<String> = std::env::args().skip(1).collect();
    let (compiled, problem) = if patterns.is_empty() {
        (
            None,
            Some("no patterns given (add them as `args`)".to_owned()),
        )
    } else {
        match Regex::new_many(&patterns) {
            Ok(regex) => (Some(regex), None),
            Err(error) => (None, Some(format!("bad pattern: {error}"))),
        }
    };
    let mut plugin = RegexAttention {
        patterns: compiled,
        rung: HashMap::new(),
    };
    if let Some(problem) = problem {
        // Said once, then the plugin idles: a misconfigured plugin must not crash-loop.
        let mut outbox = nightcrow_plugin_sdk::Outbox::new(std::io::stdout());
        outbox.send(&Command::Log {
            level: LogLevel::Error,
            message: format!("regex-attention: {problem}; watching nothing"),
        });
    }
    nightcrow_plugin_sdk::run(&mut plugin);
}

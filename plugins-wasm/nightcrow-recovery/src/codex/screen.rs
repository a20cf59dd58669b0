//! How the Codex TUI shows that it waits for a person, read from the pane's screen: the
//! usage-limit popup and the prompt (checked against the real 0.169 TUI,
//! `tests/fixtures/codex/real-0.169-tui-screens/`).
//!
//! At the limit Codex opens a popup — "1. Switch to <cheaper model> / 2. Keep current model
//! / 3. Keep current model (never show again)", footer `enter select · esc back` — in which
//! letters are ignored and Enter picks option 1, switching the person's model. So the popup
//! is answered only with the number of the option that reads exactly "Keep current model".
//! The prompt is the last `›` line near the bottom; its placeholder "Ask Codex to do
//! anything" means it is empty. Anything else is `Unknown`: never typed into.

use crate::provider::Screen;

/// The popup's footer, its last line.
const POPUP_FOOTER: &str = "esc back";
/// The popup's options are drawn right above its footer.
const OPTIONS_WITHIN_LAST_LINES: usize = 8;
/// The popup option that keeps the person's model (and not the one that also hides
/// future reminders, which would change a setting).
const KEEP_OPTION: &str = "Keep current model";
/// The prompt's mark, and what an empty prompt shows.
const PROMPT_MARK: char = '›';
const PLACEHOLDER: &str = "Ask Codex to do anything";
/// The prompt sits above at most the model line and the footer.
const PROMPT_WITHIN_LAST_LINES: usize = 4;

pub(crate) fn read(screen: &str) -> Screen {
    let lines: Vec<&str> = screen
        .lines()
        .map(str::trim)
        .filter(|line| !line.is_empty())
        .collect();
    // Only a popup at the bottom is open: a program that prints line by line leaves a
    // closed one's text above.
    if lines
        .last()
        .is_some_and(|line| line.ends_with(POPUP_FOOTER))
    {
        return bottom(&lines, OPTIONS_WITHIN_LAST_LINES)
            .iter()
            .find_map(|line| keep_option(line))
            .map_or(Screen::Unknown, |keep| Screen::Popup { keep });
    }
    let Some(prompt) = bottom(&lines, PROMPT_WITHIN_LAST_LINES)
        .iter()
        .rev()
        .find_map(|line| line.strip_prefix(PROMPT_MARK))
    else {
        return Screen::Unknown;
    };
    let typed = prompt.trim();
    if option_number(typed).is_some() {
        return Screen::Unknown;
    }
    Screen::Prompt {
        typed: if typed == PLACEHOLDER { "" } else { typed }.to_owned(),
    }
}

fn bottom<'a>(lines: &'a [&'a str], count: usize) -> &'a [&'a str] {
    &lines[lines.len().saturating_sub(count)..]
}

/// `2` for `2. Keep current model` (selected or not), nothing for any other line.
fn keep_option(line: &str) -> Option<String> {
    let line = line.trim_start_matches(PROMPT_MARK).trim_start();
    let (number, label) = option_number(line)?;
    (label == KEEP_OPTION).then(|| number.to_owned())
}

/// A numbered option `N. label`: the number and the label.
fn option_number(line: &str) -> Option<(&str, &str)> {
    let (number, label) = line.split_once(". ")?;
    let numeric = !number.is_empty() && number.len() <= 2;
    (numeric && number.bytes().all(|b| b.is_ascii_digit())).then(|| (number, label.trim()))
}

#[cfg(test)]
mod tests {
    use std::path::Path;

    use super::*;

    fn fixture(name: &str) -> String {
        let path = Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("tests/fixtures/codex/real-0.169-tui-screens")
            .join(name);
        std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
    }

    fn prompt(typed: &str) -> Screen {
        Screen::Prompt {
            typed: typed.to_owned(),
        }
    }

    #[test]
    fn the_real_tui_screens_read_as_a_person_reads_them() {
        let keep_2 = Screen::Popup { keep: "2".into() };
        for (name, expected) in [
            ("screen-03-at-limit.txt", keep_2.clone()),
            ("screen-04-at-limit-plus-30s.txt", keep_2),
            ("screen-05-after-escape.txt", prompt("")),
            ("screen-06-after-quit.txt", Screen::Unknown),
            ("screen-07-resume-start.txt", prompt("")),
        ] {
            assert_eq!(read(&fixture(name)), expected, "{name}");
        }
    }

    #[test]
    fn typed_text_and_unknown_popups() {
        let after_escape = fixture("screen-05-after-escape.txt");
        let typed = after_escape.replace("› Ask Codex to do anything", "› continue");
        assert_eq!(read(&typed), prompt("continue"));
        // A popup without the option that keeps the model: never guessed at.
        let popup =
            fixture("screen-03-at-limit.txt").replace("2. Keep current model\n", "2. Other\n");
        assert_eq!(read(&popup), Screen::Unknown);
        // Only "never show again" left: that changes a setting, so it is not an answer.
        let hide = fixture("screen-03-at-limit.txt").replace("2. Keep current model\n", "");
        assert_eq!(read(&hide), Screen::Unknown);
        // The prompt history far above the bottom is not the prompt.
        let history = "› first prompt: say hello\n\n• Mock reply\n\nWorked\n\nline\nline\nline";
        assert_eq!(read(history), Screen::Unknown);
        assert_eq!(read(""), Screen::Unknown);
        // A numbered option shown as the prompt line is not a prompt.
        assert_eq!(read("› 1. Switch model"), Screen::Unknown);
        // The stand-in's own screen (examples/demo/codex), which prints line by line: a
        // closed popup's text stays above the prompt.
        let closed = "■ limit\n› 1. Switch\n  2. Keep current model\n  enter select · esc back\n\n\
                      ⚠ usage limit · resets at 04:00\n\n› Ask Codex to do anything";
        assert_eq!(read(closed), prompt(""));
        let typed = closed.replace("Ask Codex to do anything", "continue");
        assert_eq!(read(&typed), prompt("continue"));
    }
}

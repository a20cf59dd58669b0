//! Desktop notifications through the person's terminal (`[tui] notify`): the escape
//! sequence that asks the terminal for one (OSC 9, OSC 777, OSC 99) or the bell, chosen by
//! the config or, for `auto`, by what the environment says the terminal is, and wrapped for
//! tmux's passthrough inside tmux. Pure text, so every sequence is table-tested; the run
//! loop writes them with a frame's draw, never inside ratatui's output (docs/tui.md).

use nightcrow_config::TuiNotify;

/// Title of a notification where the sequence has one (OSC 777), and the prefix of its
/// text where it does not.
const TITLE: &str = "nightcrow";
/// The bell: the fallback, and what `notify = "bell"` writes.
pub const BELL: &str = "\x07";
/// Most characters of text a notification carries; longer text is cut with `…`.
pub const MAX_TEXT_CHARS: usize = 200;

/// What is written to the terminal for one notice.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Signal {
    Osc9,
    Osc777,
    Osc99,
    Bell,
}

/// What the environment says about the person's terminal, read once when the TUI starts.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Environment {
    /// `$TMUX` is set: escape sequences must pass through tmux.
    pub tmux: bool,
    /// Inside tmux: whether the pane lets passthrough sequences out (`allow-passthrough`).
    pub passthrough: bool,
    /// Names the terminal goes by, most telling first: tmux's idea of its client terminal
    /// (`client_termtype`, `client_termname`), then `TERM_PROGRAM`, `LC_TERMINAL`, `TERM`,
    /// then the terminal each identifying variable belongs to (`KITTY_WINDOW_ID`: kitty).
    pub names: Vec<String>,
}

/// Variables a terminal sets in its shells (they survive into tmux, which replaces
/// `TERM` and `TERM_PROGRAM`), and the terminal each one means.
const IDENTIFYING_VARIABLES: [(&str, &str); 4] = [
    ("KITTY_WINDOW_ID", "kitty"),
    ("ITERM_SESSION_ID", "iTerm2"),
    ("WEZTERM_PANE", "WezTerm"),
    ("GHOSTTY_RESOURCES_DIR", "ghostty"),
];

impl Environment {
    /// This process's environment; inside tmux also what tmux knows of the client
    /// terminal and whether it lets passthrough out (one `tmux display`).
    pub fn current() -> Environment {
        let var = |name: &str| std::env::var(name).ok().filter(|value| !value.is_empty());
        let tmux = var("TMUX").is_some();
        let mut environment = Environment {
            tmux,
            ..Environment::default()
        };
        if tmux
            && let Some(answer) =
                tmux_display("#{client_termtype}\t#{client_termname}\t#{allow-passthrough}")
        {
            let mut fields = answer.trim_end().split('\t');
            for name in [fields.next(), fields.next()].into_iter().flatten() {
                environment.names.push(name.to_owned());
            }
            environment.passthrough = !matches!(fields.next(), None | Some("" | "0" | "off"));
        }
        environment.names.extend(
            ["TERM_PROGRAM", "LC_TERMINAL", "TERM"]
                .into_iter()
                .filter_map(var),
        );
        environment.names.extend(
            IDENTIFYING_VARIABLES
                .iter()
                .filter(|(name, _)| var(name).is_some())
                .map(|(_, terminal)| (*terminal).to_owned()),
        );
        environment.names.retain(|name| !name.is_empty());
        environment
    }

    /// What `auto` picks: the first name that is a terminal known to show notifications
    /// for an escape sequence decides; else the bell. Inside tmux without passthrough an
    /// escape sequence would be dropped, so the bell it is.
    pub fn auto_signal(&self) -> Signal {
        if self.tmux && !self.passthrough {
            return Signal::Bell;
        }
        self.names
            .iter()
            .find_map(|name| signal_of_terminal(name))
            .unwrap_or(Signal::Bell)
    }
}

/// What tmux makes of `format` for the pane this runs in (`#{allow-passthrough}`…);
/// `None` when tmux does not answer.
pub(crate) fn tmux_display(format: &str) -> Option<String> {
    let output = std::process::Command::new("tmux")
        .args(["display-message", "-p", format])
        .stdin(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .output()
        .ok()?;
    output
        .status
        .success()
        .then(|| String::from_utf8_lossy(&output.stdout).into_owned())
}

/// The sequence a terminal of this name shows as a notification (docs/tui.md has the
/// table and where each fact comes from); `None` for a terminal that shows none, or one
/// not known.
fn signal_of_terminal(name: &str) -> Option<Signal> {
    let name = name.to_ascii_lowercase();
    if name.contains("kitty") {
        Some(Signal::Osc99)
    } else if ["iterm", "wezterm", "ghostty"]
        .iter()
        .any(|terminal| name.contains(terminal))
    {
        Some(Signal::Osc9)
    } else if name.starts_with("foot") {
        Some(Signal::Osc777)
    } else {
        None
    }
}

/// How this client tells the person's terminal about a notice.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Notifier {
    /// `None`: `notify = "off"`.
    signal: Option<Signal>,
    /// Wrap escape sequences for tmux's passthrough.
    tmux: bool,
}

impl Notifier {
    pub fn new(setting: TuiNotify, environment: &Environment) -> Notifier {
        let signal = match setting {
            TuiNotify::Auto => Some(environment.auto_signal()),
            TuiNotify::Osc9 => Some(Signal::Osc9),
            TuiNotify::Osc777 => Some(Signal::Osc777),
            TuiNotify::Osc99 => Some(Signal::Osc99),
            TuiNotify::Bell => Some(Signal::Bell),
            TuiNotify::Off => None,
        };
        Notifier {
            signal,
            tmux: environment.tmux,
        }
    }

    /// The bytes that ask the terminal to show `text`; `None` when notifications are off.
    pub fn sequence(&self, text: &str) -> Option<String> {
        let text = field(text);
        let sequence = match self.signal? {
            // A bell needs no passthrough: tmux passes it on (and marks the window) itself.
            Signal::Bell => return Some(BELL.to_owned()),
            Signal::Osc9 => format!("\x1b]9;{TITLE}: {text}\x07"),
            Signal::Osc777 => format!("\x1b]777;notify;{TITLE};{text}\x07"),
            Signal::Osc99 => format!("\x1b]99;;{TITLE}: {text}\x1b\\"),
        };
        Some(if self.tmux {
            tmux_passthrough(&sequence)
        } else {
            sequence
        })
    }
}

/// `text` made safe as one field of an OSC sequence: control characters (which could end
/// the sequence or start another) become spaces, `;` (which would start a new field, and
/// which OSC 9 readers such as ConEmu take as a command's separator) becomes `,`, and at
/// most [`MAX_TEXT_CHARS`] characters are kept.
fn field(text: &str) -> String {
    let clean: String = text
        .chars()
        .map(|c| match c {
            ';' => ',',
            c if c.is_control() => ' ',
            c => c,
        })
        .collect();
    if clean.chars().count() <= MAX_TEXT_CHARS {
        return clean;
    }
    let mut cut: String = clean.chars().take(MAX_TEXT_CHARS - 1).collect();
    cut.push('…');
    cut
}

/// `sequence` inside tmux's passthrough: `ESC P tmux;` then the sequence with every ESC
/// doubled, then `ESC \`. tmux lets it out only with `allow-passthrough on`.
pub(crate) fn tmux_passthrough(sequence: &str) -> String {
    format!("\x1bPtmux;{}\x1b\\", sequence.replace('\x1b', "\x1b\x1b"))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn environment(tmux: bool, passthrough: bool, names: &[&str]) -> Environment {
        Environment {
            tmux,
            passthrough,
            names: names.iter().map(|name| (*name).to_owned()).collect(),
        }
    }

    fn outside_tmux() -> Environment {
        environment(false, false, &[])
    }

    #[test]
    fn each_kind_of_notification() {
        let sequence =
            |setting| Notifier::new(setting, &outside_tmux()).sequence("pane 2 needs you");
        assert_eq!(
            sequence(TuiNotify::Osc9).unwrap(),
            "\x1b]9;nightcrow: pane 2 needs you\x07"
        );
        assert_eq!(
            sequence(TuiNotify::Osc777).unwrap(),
            "\x1b]777;notify;nightcrow;pane 2 needs you\x07"
        );
        assert_eq!(
            sequence(TuiNotify::Osc99).unwrap(),
            "\x1b]99;;nightcrow: pane 2 needs you\x1b\\"
        );
        assert_eq!(sequence(TuiNotify::Bell).unwrap(), "\x07");
        assert_eq!(sequence(TuiNotify::Off), None);
        // Outside any known terminal, auto rings the bell.
        assert_eq!(sequence(TuiNotify::Auto).unwrap(), "\x07");
    }

    #[test]
    fn text_is_one_safe_field() {
        let notifier = Notifier::new(TuiNotify::Osc777, &outside_tmux());
        // A plugin's detail could hold anything: a BEL or ST would end the sequence early,
        // an ESC start another, a `;` a new field, a C1 control (ST is 0x9c) the same.
        assert_eq!(
            notifier
                .sequence("pane 1 needs you: a\x07b\x1b]0;title\x1b\\c;d\u{9c}e\nf")
                .unwrap(),
            "\x1b]777;notify;nightcrow;pane 1 needs you: a b ]0,title \\c,d e f\x07"
        );
        let long = "é".repeat(MAX_TEXT_CHARS + 50);
        let sequence = notifier.sequence(&long).unwrap();
        let text = sequence
            .strip_prefix("\x1b]777;notify;nightcrow;")
            .and_then(|rest| rest.strip_suffix('\x07'))
            .unwrap();
        assert_eq!(text.chars().count(), MAX_TEXT_CHARS);
        assert!(text.ends_with('…'), "{text}");
    }

    #[test]
    fn inside_tmux_sequences_pass_through_with_every_escape_doubled() {
        let inside = environment(true, true, &[]);
        let sequence = |setting| Notifier::new(setting, &inside).sequence("pane 3 wants you back");
        assert_eq!(
            sequence(TuiNotify::Osc9).unwrap(),
            "\x1bPtmux;\x1b\x1b]9;nightcrow: pane 3 wants you back\x07\x1b\\"
        );
        assert_eq!(
            sequence(TuiNotify::Osc777).unwrap(),
            "\x1bPtmux;\x1b\x1b]777;notify;nightcrow;pane 3 wants you back\x07\x1b\\"
        );
        assert_eq!(
            sequence(TuiNotify::Osc99).unwrap(),
            "\x1bPtmux;\x1b\x1b]99;;nightcrow: pane 3 wants you back\x1b\x1b\\\x1b\\"
        );
        assert_eq!(
            sequence(TuiNotify::Bell).unwrap(),
            "\x07",
            "a bell is not wrapped"
        );
    }

    #[test]
    fn auto_picks_what_the_terminal_shows() {
        #[track_caller]
        fn check(environment: Environment, expected: Signal) {
            assert_eq!(environment.auto_signal(), expected, "{environment:?}");
        }
        check(environment(false, false, &["iTerm.app"]), Signal::Osc9);
        check(environment(false, false, &["iTerm2"]), Signal::Osc9);
        check(environment(false, false, &["WezTerm"]), Signal::Osc9);
        check(environment(false, false, &["ghostty"]), Signal::Osc9);
        check(environment(false, false, &["xterm-ghostty"]), Signal::Osc9);
        check(environment(false, false, &["xterm-kitty"]), Signal::Osc99);
        check(environment(false, false, &["foot"]), Signal::Osc777);
        check(environment(false, false, &["foot-extra"]), Signal::Osc777);
        for silent in [
            "Apple_Terminal",
            "vscode",
            "alacritty",
            "xterm-256color",
            "vte",
        ] {
            check(environment(false, false, &[silent]), Signal::Bell);
        }
        check(environment(false, false, &[]), Signal::Bell);
        // The first known name decides: tmux's client terminal before stale variables.
        check(
            environment(
                true,
                true,
                &["xterm-kitty", "tmux", "tmux-256color", "iTerm2"],
            ),
            Signal::Osc99,
        );
        check(
            environment(true, true, &["tmux", "tmux-256color", "WezTerm"]),
            Signal::Osc9,
        );
        // tmux without passthrough would drop the sequence: the bell gets through.
        check(environment(true, false, &["xterm-kitty"]), Signal::Bell);
        let notifier = Notifier::new(TuiNotify::Auto, &environment(true, true, &["xterm-kitty"]));
        assert_eq!(
            notifier.sequence("x").unwrap(),
            "\x1bPtmux;\x1b\x1b]99;;nightcrow: x\x1b\x1b\\\x1b\\"
        );
    }
}

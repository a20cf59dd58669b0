//! Auto-continue settings (docs/recovery.md, "Auto-continue"): off unless the person turns
//! it on in `[plugin.env]`, bounded per episode and per day.

use nightcrow_protocol::LogLevel;

use crate::provider::Env;

/// What is typed by default: the word a person would type.
pub const DEFAULT_TEXT: &str = "continue";
pub const DEFAULT_PER_EPISODE: u32 = 1;
pub const DEFAULT_PER_DAY: u32 = 3;
/// Ceilings on the bounds a person may set: an unattended loop that types into a session
/// at its limit must stay a handful of tries, whatever the config says.
pub const MAX_PER_EPISODE: u32 = 5;
pub const MAX_PER_DAY: u32 = 24;
/// Longest text, in bytes.
pub const MAX_TEXT_BYTES: usize = 200;

/// Auto-continue is on, with these bounds.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AutoContinue {
    /// Typed into the empty prompt, then submitted with a separate Enter.
    pub text: String,
    /// Continues per episode (one limit and what follows it until the session carries on).
    pub per_episode: u32,
    /// Continues per pane in any 24 hours.
    pub per_day: u32,
}

impl AutoContinue {
    /// `AUTO_CONTINUE = "on"` turns it on; `AUTO_CONTINUE_TEXT`,
    /// `AUTO_CONTINUE_PER_EPISODE`, `AUTO_CONTINUE_PER_DAY` adjust it. `None` when off; a
    /// bad value keeps it off with a log line that says which and why.
    pub fn from_env(env: &Env, logs: &mut Vec<(LogLevel, String)>) -> Option<AutoContinue> {
        let on = match env
            .get("AUTO_CONTINUE")
            .map(|v| v.trim().to_ascii_lowercase())
        {
            None => false,
            Some(value) => match value.as_str() {
                "on" | "true" | "yes" | "1" => true,
                "off" | "false" | "no" | "0" | "" => false,
                _ => {
                    logs.push((
                        LogLevel::Warn,
                        "AUTO_CONTINUE must be \"on\" or \"off\"; auto-continue stays off".into(),
                    ));
                    false
                }
            },
        };
        if !on {
            return None;
        }
        let settings = AutoContinue {
            text: text(env.get("AUTO_CONTINUE_TEXT")),
            per_episode: bound(
                env.get("AUTO_CONTINUE_PER_EPISODE"),
                DEFAULT_PER_EPISODE,
                MAX_PER_EPISODE,
            ),
            per_day: bound(
                env.get("AUTO_CONTINUE_PER_DAY"),
                DEFAULT_PER_DAY,
                MAX_PER_DAY,
            ),
        };
        match settings.check() {
            Ok(()) => {
                logs.push((
                    LogLevel::Info,
                    format!(
                        "auto-continue is on: at most {} per episode and {} per day per pane",
                        settings.per_episode, settings.per_day
                    ),
                ));
                Some(settings)
            }
            Err(why) => {
                logs.push((LogLevel::Warn, format!("{why}; auto-continue stays off")));
                None
            }
        }
    }

    fn check(&self) -> Result<(), String> {
        if self.text.trim().is_empty() {
            return Err("AUTO_CONTINUE_TEXT is blank".into());
        }
        if self.text.len() > MAX_TEXT_BYTES {
            return Err(format!("AUTO_CONTINUE_TEXT is over {MAX_TEXT_BYTES} bytes"));
        }
        if self.text.chars().any(char::is_control) {
            return Err("AUTO_CONTINUE_TEXT has a control character (one line only)".into());
        }
        if self.per_episode == 0 || self.per_day == 0 {
            return Err(format!(
                "AUTO_CONTINUE_PER_EPISODE (1–{MAX_PER_EPISODE}) and AUTO_CONTINUE_PER_DAY \
                 (1–{MAX_PER_DAY}) must be whole numbers in range"
            ));
        }
        Ok(())
    }
}

fn text(value: Option<&str>) -> String {
    value.unwrap_or(DEFAULT_TEXT).trim().to_owned()
}

/// The number given, the default when absent, 0 (refused by `check`) when not a number in
/// `1..=max`.
fn bound(value: Option<&str>, default: u32, max: u32) -> u32 {
    match value.map(|v| v.trim().parse::<u32>()) {
        None => default,
        Some(Ok(n)) if (1..=max).contains(&n) => n,
        Some(_) => 0,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn read(pairs: &[(&str, &str)]) -> (Option<AutoContinue>, Vec<String>) {
        let env = Env::from_pairs(pairs.iter().map(|(k, v)| (k.to_string(), v.to_string())));
        let mut logs = Vec::new();
        let settings = AutoContinue::from_env(&env, &mut logs);
        (settings, logs.into_iter().map(|(_, line)| line).collect())
    }

    #[test]
    fn off_unless_turned_on_and_bounded() {
        assert_eq!(read(&[]), (None, vec![]));
        assert_eq!(read(&[("AUTO_CONTINUE", "off")]).0, None);
        let (on, logs) = read(&[("AUTO_CONTINUE", "on")]);
        assert_eq!(
            on,
            Some(AutoContinue {
                text: "continue".into(),
                per_episode: 1,
                per_day: 3
            })
        );
        assert_eq!(
            logs,
            ["auto-continue is on: at most 1 per episode and 3 per day per pane"]
        );
        let (custom, _) = read(&[
            ("AUTO_CONTINUE", " TRUE "),
            ("AUTO_CONTINUE_TEXT", "go on from where you stopped"),
            ("AUTO_CONTINUE_PER_EPISODE", "2"),
            ("AUTO_CONTINUE_PER_DAY", "24"),
        ]);
        assert_eq!(
            custom,
            Some(AutoContinue {
                text: "go on from where you stopped".into(),
                per_episode: 2,
                per_day: 24
            })
        );
    }

    #[test]
    fn a_bad_value_keeps_it_off_and_says_why() {
        for (pairs, why) in [
            (vec![("AUTO_CONTINUE", "maybe")], "AUTO_CONTINUE must be"),
            (
                vec![("AUTO_CONTINUE", "on"), ("AUTO_CONTINUE_TEXT", "  ")],
                "blank",
            ),
            (
                vec![("AUTO_CONTINUE", "on"), ("AUTO_CONTINUE_TEXT", "a\u{1b}b")],
                "control",
            ),
            (
                vec![("AUTO_CONTINUE", "on"), ("AUTO_CONTINUE_PER_DAY", "25")],
                "in range",
            ),
            (
                vec![("AUTO_CONTINUE", "on"), ("AUTO_CONTINUE_PER_EPISODE", "0")],
                "in range",
            ),
            (
                vec![("AUTO_CONTINUE", "on"), ("AUTO_CONTINUE_PER_EPISODE", "x")],
                "in range",
            ),
        ] {
            let (settings, logs) = read(&pairs);
            assert_eq!(settings, None, "{pairs:?}");
            assert!(
                logs.len() == 1 && logs[0].contains(why),
                "{pairs:?}: {logs:?}"
            );
        }
        let long = "x".repeat(MAX_TEXT_BYTES + 1);
        let (settings, logs) = read(&[("AUTO_CONTINUE", "on"), ("AUTO_CONTINUE_TEXT", &long)]);
        assert!(settings.is_none() && logs[0].contains("over 200 bytes"));
    }
}

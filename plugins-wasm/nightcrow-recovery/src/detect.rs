//! Which provider a pane runs, from the first word of its startup command (SPEC §9.1).

/// The providers this plugin knows.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ProviderKind {
    Codex,
    OpenCode,
}

/// The provider named by the first word of `command`, if any.
///
/// The first word is read shell-style (single quotes literal, double quotes with `\`
/// escapes, a backslash outside quotes escapes the next char), then reduced to its basename
/// (`/` and, on Windows, `\` separate). On Windows the name is lowercased and one of
/// `.exe .cmd .bat .com .ps1` is dropped. Only the program itself counts: `npx codex` runs
/// `npx`.
pub fn detect(command: &str) -> Option<ProviderKind> {
    detect_for(command, cfg!(windows))
}

fn detect_for(command: &str, windows: bool) -> Option<ProviderKind> {
    let word = first_word(command, windows)?;
    let base = word
        .rsplit(|c| c == '/' || (windows && c == '\\'))
        .next()
        .unwrap_or_default();
    let name = if windows {
        let lower = base.to_ascii_lowercase();
        [".exe", ".cmd", ".bat", ".com", ".ps1"]
            .iter()
            .find_map(|suffix| lower.strip_suffix(suffix).map(str::to_owned))
            .unwrap_or(lower)
    } else {
        base.to_owned()
    };
    match name.as_str() {
        "codex" => Some(ProviderKind::Codex),
        "opencode" => Some(ProviderKind::OpenCode),
        _ => None,
    }
}

/// Shell-style words of `command`: single quotes literal, double quotes with `\` escapes
/// of `" \ $ \``, a backslash outside quotes escaping the next char (on Windows a backslash
/// is a path separator instead). `None` when a quote or a trailing escape is unbalanced.
/// Used for detection here and for the OpenCode adapter's `--port`/`--hostname`.
pub fn shell_words(command: &str, windows: bool) -> Option<Vec<String>> {
    let mut words = Vec::new();
    let mut word = String::new();
    let mut in_word = false;
    let mut chars = command.chars().peekable();
    while let Some(c) = chars.next() {
        match c {
            c if c.is_whitespace() => {
                if std::mem::take(&mut in_word) {
                    words.push(std::mem::take(&mut word));
                }
            }
            '\'' => {
                in_word = true;
                loop {
                    match chars.next()? {
                        '\'' => break,
                        c => word.push(c),
                    }
                }
            }
            '"' => {
                in_word = true;
                loop {
                    match chars.next()? {
                        '"' => break,
                        '\\' if !windows
                            && matches!(chars.peek(), Some('"' | '\\' | '$' | '`')) =>
                        {
                            word.extend(chars.next());
                        }
                        c => word.push(c),
                    }
                }
            }
            '\\' if !windows => {
                in_word = true;
                word.push(chars.next()?);
            }
            c => {
                in_word = true;
                word.push(c);
            }
        }
    }
    if in_word {
        words.push(word);
    }
    Some(words)
}

/// The first shell word of `command`; `None` when there is none, it is empty, or the
/// command's quoting is unbalanced.
fn first_word(command: &str, windows: bool) -> Option<String> {
    shell_words(command, windows)?
        .into_iter()
        .next()
        .filter(|word| !word.is_empty())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[track_caller]
    fn check(command: &str, windows: bool, expected: Option<ProviderKind>) {
        assert_eq!(
            detect_for(command, windows),
            expected,
            "{command:?} windows={windows}"
        );
    }

    #[test]
    fn first_word_rules() {
        use ProviderKind::{Codex, OpenCode};
        let cases: &[(&str, bool, Option<ProviderKind>)] = &[
            ("codex", false, Some(Codex)),
            ("  codex --yolo", false, Some(Codex)),
            ("opencode --port 4096", false, Some(OpenCode)),
            ("/usr/local/bin/codex resume", false, Some(Codex)),
            ("~/bin/opencode", false, Some(OpenCode)),
            ("'codex' exec", false, Some(Codex)),
            ("\"/opt/my tools/codex\" exec", false, Some(Codex)),
            ("'/opt/my tools/opencode'", false, Some(OpenCode)),
            ("co\\dex", false, Some(Codex)),
            ("co\"de\"x", false, Some(Codex)),
            ("npx codex", false, None),
            ("env codex", false, None),
            ("codex-wrapper", false, None),
            ("Codex", false, None),
            ("codex.exe", false, None),
            ("'codex", false, None),
            ("", false, None),
            ("   ", false, None),
            ("''", false, None),
            ("/usr/bin/", false, None),
            ("mycodex", false, None),
            // Windows: backslash paths, case, suffixes.
            ("C:\\Tools\\Codex.EXE --yolo", true, Some(Codex)),
            ("codex.cmd", true, Some(Codex)),
            ("opencode.ps1 --port 4100", true, Some(OpenCode)),
            (
                "\"C:\\Program Files\\nodejs\\codex.bat\"",
                true,
                Some(Codex),
            ),
            ("OPENCODE.COM", true, Some(OpenCode)),
            ("codex.exe.exe", true, None),
            ("codex.sh", true, None),
            ("npx.cmd codex", true, None),
            // The whole command must be well quoted; a trailing escape is unbalanced too.
            ("codex \"unbalanced", false, None),
            ("codex \\", false, None),
        ];
        for &(command, windows, expected) in cases {
            check(command, windows, expected);
        }
    }

    #[test]
    fn words_follow_shell_quoting() {
        assert_eq!(
            shell_words(r#"a 'b c' "d \"e\"" f\ g"#, false).unwrap(),
            ["a", "b c", "d \"e\"", "f g"]
        );
        assert_eq!(
            shell_words(r#"C:\tools\opencode.exe --port 9"#, true).unwrap(),
            [r"C:\tools\opencode.exe", "--port", "9"]
        );
        assert_eq!(shell_words("''", false).unwrap(), [""]);
        assert_eq!(shell_words("  ", false).unwrap(), Vec::<String>::new());
        assert_eq!(shell_words("'open", false), None);
        assert_eq!(shell_words("open\\", false), None);
    }
}

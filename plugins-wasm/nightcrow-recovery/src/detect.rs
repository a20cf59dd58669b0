//! Which provider a pane runs, from its startup command (SPEC §9.1, widened in
//! `docs/recovery.md`): the program word, after the usual ways people start these CLIs —
//! leading `VAR=value` assignments, `env [options] [VAR=value…]`, `exec`, and package runners
//! (`npx`, `bunx`, `pnpx`, `pnpm dlx`, `yarn dlx`) naming the published package
//! (`@openai/codex`, `opencode-ai`) or the program itself.

/// The providers this plugin knows.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ProviderKind {
    Codex,
    OpenCode,
}

/// The provider named by `command`, if any.
pub fn detect(command: &str) -> Option<ProviderKind> {
    invocation(command, cfg!(windows)).map(|(kind, _)| kind)
}

/// The provider `command` runs and its words from the program (or package) word on, so
/// `words[1..]` are the provider's own arguments. `None` when the command runs something
/// else, or its quoting is unbalanced.
///
/// Words are read shell-style (see [`shell_words`]) and each program word is reduced to its
/// basename (`/` and, on Windows, `\` separate); on Windows it is also lowercased and one of
/// `.exe .cmd .bat .com .ps1` is dropped.
pub fn invocation(command: &str, windows: bool) -> Option<(ProviderKind, Vec<String>)> {
    let words = shell_words(command, windows)?;
    let mut at = 0;
    while words.get(at).is_some_and(|word| is_assignment(word)) {
        at += 1;
    }
    loop {
        let program = program_name(words.get(at)?, windows);
        match program.as_str() {
            "env" => at = skip_env_prefix(&words, at + 1)?,
            "exec" => at += 1,
            "npx" | "bunx" | "pnpx" => at = skip_options(&words, at + 1),
            "pnpm" | "yarn" if words.get(at + 1).is_some_and(|word| word == "dlx") => {
                at = skip_options(&words, at + 2)
            }
            _ => break,
        }
    }
    let word = words.get(at).filter(|word| !word.is_empty())?;
    let kind = match program_name(word, windows).as_str() {
        "codex" => ProviderKind::Codex,
        "opencode" => ProviderKind::OpenCode,
        _ => package_kind(word)?,
    };
    Some((kind, words[at..].to_vec()))
}

/// A package spec a runner installs and starts: `@openai/codex`, `opencode-ai`, with an
/// optional `@version`.
fn package_kind(word: &str) -> Option<ProviderKind> {
    let name = match word.strip_prefix('@') {
        Some(scoped) => format!("@{}", scoped.split('@').next()?),
        None => word.split('@').next()?.to_owned(),
    };
    match name.as_str() {
        "@openai/codex" => Some(ProviderKind::Codex),
        "opencode-ai" => Some(ProviderKind::OpenCode),
        _ => None,
    }
}

fn program_name(word: &str, windows: bool) -> String {
    let base = word
        .rsplit(|c| c == '/' || (windows && c == '\\'))
        .next()
        .unwrap_or_default();
    if !windows {
        return base.to_owned();
    }
    let lower = base.to_ascii_lowercase();
    [".exe", ".cmd", ".bat", ".com", ".ps1"]
        .iter()
        .find_map(|suffix| lower.strip_suffix(suffix).map(str::to_owned))
        .unwrap_or(lower)
}

/// `NAME=value`, as a shell or `env` takes it.
fn is_assignment(word: &str) -> bool {
    let Some((name, _)) = word.split_once('=') else {
        return false;
    };
    let mut chars = name.chars();
    chars
        .next()
        .is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
        && chars.all(|c| c.is_ascii_alphanumeric() || c == '_')
}

/// After `env`: its options and assignments; the index of the program word. `None` for
/// `-S`/`--split-string`, whose one argument holds a whole command line.
fn skip_env_prefix(words: &[String], mut at: usize) -> Option<usize> {
    while let Some(word) = words.get(at) {
        match word.as_str() {
            "-S" | "--split-string" => return None,
            "-u" | "--unset" | "-C" | "--chdir" => at += 2,
            "--" => return Some(at + 1),
            option if option.starts_with('-') => at += 1,
            assignment if is_assignment(assignment) => at += 1,
            _ => break,
        }
    }
    Some(at)
}

/// After a package runner: its own flags (`-y`, `--yes`, `--quiet`, …); the index of the
/// package word.
fn skip_options(words: &[String], mut at: usize) -> usize {
    while words.get(at).is_some_and(|word| word.starts_with('-')) {
        at += 1;
    }
    at
}

/// Shell-style words of `command`: single quotes literal, double quotes with `\` escapes
/// of `" \ $ \``, a backslash outside quotes escaping the next char (on Windows a backslash
/// is a path separator instead). `None` when a quote or a trailing escape is unbalanced.
/// Used by [`invocation`].
fn shell_words(command: &str, windows: bool) -> Option<Vec<String>> {
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

#[cfg(test)]
mod tests {
    use super::*;

    #[track_caller]
    fn check(command: &str, windows: bool, expected: Option<ProviderKind>) {
        assert_eq!(
            invocation(command, windows).map(|(kind, _)| kind),
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
            // The usual ways people start them (docs/recovery.md).
            ("npx codex", false, Some(Codex)),
            ("env codex", false, Some(Codex)),
            (
                "CODEX_HOME=/tmp/c RUST_LOG=info codex --yolo",
                false,
                Some(Codex),
            ),
            ("env -u OPENAI_API_KEY -i FOO=1 codex", false, Some(Codex)),
            ("env -- opencode --port 4100", false, Some(OpenCode)),
            (
                "/usr/bin/env DEBUG=1 /opt/bin/opencode",
                false,
                Some(OpenCode),
            ),
            ("exec codex resume", false, Some(Codex)),
            ("npx @openai/codex", false, Some(Codex)),
            ("npx -y @openai/codex@0.169.0 exec", false, Some(Codex)),
            ("npx opencode-ai --port 4096", false, Some(OpenCode)),
            ("bunx opencode-ai@latest", false, Some(OpenCode)),
            ("pnpm dlx @openai/codex", false, Some(Codex)),
            ("env -S 'codex --yolo'", false, None),
            ("npx @openai/codex-wrapper", false, None),
            ("npx opencode-ai-plus", false, None),
            ("pnpm install codex", false, None),
            ("FOO=1", false, None),
            ("1FOO=2 codex", false, None),
            ("npx", false, None),
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
            ("npx.cmd @openai/codex", true, Some(Codex)),
            ("npx.cmd something-else", true, None),
            // The whole command must be well quoted; a trailing escape is unbalanced too.
            ("codex \"unbalanced", false, None),
            ("codex \\", false, None),
        ];
        for &(command, windows, expected) in cases {
            check(command, windows, expected);
        }
    }

    #[test]
    fn the_provider_arguments_follow_the_program_word() {
        let (kind, words) = invocation("PORT=1 npx -y opencode-ai --port 4100", false).unwrap();
        assert_eq!(kind, ProviderKind::OpenCode);
        assert_eq!(words, ["opencode-ai", "--port", "4100"]);
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

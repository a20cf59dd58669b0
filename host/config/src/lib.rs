//! The nightcrow config file (SPEC §7): read in two named stages.
//!
//! 1. [`parse`] turns the TOML text into the file's own shape, refusing unknown keys and
//!    wrong types with the file, line and column of the offending key or value, and a
//!    suggestion when a key looks like a known one misspelt.
//! 2. The same call validates the whole file (at most 8 plugins, unique non-blank names,
//!    every `startup_command.plugin` naming a declared plugin, `builtin:` names, `runtime`)
//!    and resolves it: `~/` expanded in `read_dirs` and `[plugin.env]` values, defaults
//!    filled in. Every error is collected; a file with any error yields no [`Config`], so a
//!    reload with a bad file changes nothing.
//!
//! The crate does no I/O besides [`load`] reading the one file, and applies nothing.
#![forbid(unsafe_code)]

mod raw;
mod resolve;

use std::fmt;
use std::path::{Path, PathBuf};

pub use nightcrow_guard::{GuardLimits, Sandbox};
pub use resolve::{
    Config, LeaderKey, MAX_NOTIFY_HOOKS, MAX_PLUGINS, NOTIFY_EVENTS, NotifyHook, PluginCommand,
    PluginConfig, Runtime, ShellConfig, StartupCommand, TuiConfig, TuiNotify, WebConfig,
};

/// The commented starter file `nightcrow init` writes; it parses to a valid config with the
/// bundled plugin declared and disabled.
pub const STARTER_CONFIG: &str = include_str!("starter.toml");

/// One problem in a config file, positioned at the key or value it is about.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ConfigError {
    pub path: PathBuf,
    /// 1-based; 0 when the problem has no position (the file could not be read).
    pub line: usize,
    pub column: usize,
    pub message: String,
}

impl fmt::Display for ConfigError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.line == 0 {
            write!(f, "{}: {}", self.path.display(), self.message)
        } else {
            write!(
                f,
                "{}:{}:{}: {}",
                self.path.display(),
                self.line,
                self.column,
                self.message
            )
        }
    }
}

/// Every problem found in one file, in file order.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub struct ConfigErrors(pub Vec<ConfigError>);

impl fmt::Display for ConfigErrors {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for (index, error) in self.0.iter().enumerate() {
            if index > 0 {
                writeln!(f)?;
            }
            write!(f, "{error}")?;
        }
        Ok(())
    }
}

/// Reads and resolves the config file at `path`; `home` is where `~/` points.
pub fn load(path: &Path, home: &Path) -> Result<Config, ConfigErrors> {
    let text = std::fs::read_to_string(path).map_err(|error| {
        ConfigErrors(vec![ConfigError {
            path: path.to_owned(),
            line: 0,
            column: 0,
            message: format!("cannot read the config file: {error}"),
        }])
    })?;
    parse(path, &text, home)
}

/// Parses and resolves config `text`; `path` is used in messages only.
pub fn parse(path: &Path, text: &str, home: &Path) -> Result<Config, ConfigErrors> {
    let locate = |span: Option<std::ops::Range<usize>>, message: String| {
        let (line, column) = span.map_or((0, 0), |span| line_and_column(text, span.start));
        ConfigError {
            path: path.to_owned(),
            line,
            column,
            message,
        }
    };
    let raw: raw::RawConfig = toml::from_str(text).map_err(|error| {
        ConfigErrors(vec![locate(
            error.span(),
            with_suggestion(error.message().trim_end()),
        )])
    })?;
    resolve::resolve(raw, home).map_err(|problems| {
        ConfigErrors(
            problems
                .into_iter()
                .map(|(span, message)| locate(Some(span), message))
                .collect(),
        )
    })
}

/// 1-based line and column (in characters) of byte `offset`.
fn line_and_column(text: &str, offset: usize) -> (usize, usize) {
    let before = &text[..offset.min(text.len())];
    let line = before.matches('\n').count() + 1;
    let line_start = before.rfind('\n').map_or(0, |at| at + 1);
    (line, before[line_start..].chars().count() + 1)
}

/// serde words an unknown key as "unknown field `x`, expected one of `a`, `b`"; when one of
/// the expected keys is a likely misspelling target, say so.
fn with_suggestion(message: &str) -> String {
    let Some(rest) = message.strip_prefix("unknown field `") else {
        return message.to_owned();
    };
    let Some((unknown, expected)) = rest.split_once('`') else {
        return message.to_owned();
    };
    let closest = expected
        .split('`')
        .skip(1)
        .step_by(2)
        .map(|candidate| (edit_distance(unknown, candidate), candidate))
        .filter(|&(distance, _)| distance <= 2.max(unknown.len() / 3))
        .min();
    match closest {
        Some((_, candidate)) => format!("{message}; did you mean `{candidate}`?"),
        None => message.to_owned(),
    }
}

fn edit_distance(a: &str, b: &str) -> usize {
    let b: Vec<char> = b.chars().collect();
    let mut row: Vec<usize> = (0..=b.len()).collect();
    for (i, ca) in a.chars().enumerate() {
        let mut diagonal = row[0];
        row[0] = i + 1;
        for (j, &cb) in b.iter().enumerate() {
            let substitution = diagonal + usize::from(ca != cb);
            diagonal = row[j + 1];
            row[j + 1] = substitution.min(row[j] + 1).min(row[j + 1] + 1);
        }
    }
    row[b.len()]
}

#[cfg(test)]
mod tests;

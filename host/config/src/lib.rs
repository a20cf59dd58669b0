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
use std::ops::Range;
use std::path::{Path, PathBuf};

use serde::Deserialize;
use toml::Spanned;
use toml::de::{DeArray, DeTable, DeValue, Deserializer};

pub use nightcrow_guard::{GuardLimits, RuntimeKind, Sandbox, StartupCommand};
pub use resolve::{
    Config, LeaderKey, MAX_NOTIFY_HOOKS, MAX_PLUGINS, NOTIFY_EVENTS, NotifyHook, PluginCommand,
    PluginConfig, ShellConfig, TuiConfig, TuiNotify, WebConfig,
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

/// Parses and resolves config `text`; `path` is used in messages only. Every problem is
/// reported, in file order: all the syntax errors the parser recovers from, else every key
/// the file's shape refuses and every value validation refuses.
pub fn parse(path: &Path, text: &str, home: &Path) -> Result<Config, ConfigErrors> {
    let locate = |span: Option<Range<usize>>, message: String| {
        let (line, column) = span.map_or((0, 0), |span| line_and_column(text, span.start));
        ConfigError {
            path: path.to_owned(),
            line,
            column,
            message,
        }
    };
    let in_file_order = |mut errors: Vec<ConfigError>| {
        errors.sort_by_key(|error| (error.line, error.column));
        ConfigErrors(errors)
    };
    let (mut document, syntax) = DeTable::parse_recoverable(text);
    if !syntax.is_empty() {
        let mut errors = in_file_order(
            syntax
                .iter()
                .map(|error| locate(error.span(), error.message().trim_end().to_owned()))
                .collect(),
        );
        // What follows a syntax error on its line is mostly the parser losing its way.
        errors.0.dedup_by_key(|error| error.line);
        return Err(errors);
    }
    // serde stops at the first key it refuses: each refused key is taken out and the rest
    // read again, until the rest reads.
    let mut errors = Vec::new();
    // Keys whose absence has been accounted for, by the span of their table: a required key
    // taken out for its bad value, or misspelt, is missing now, which was already said.
    let mut accounted: Vec<(Range<usize>, String)> = Vec::new();
    let raw = loop {
        let error = match raw::RawConfig::deserialize(Deserializer::from(document.clone())) {
            Ok(raw) => break Some(raw),
            Err(error) => error,
        };
        let message = error.message().trim_end();
        let Some(span) = error.span() else {
            errors.push(locate(None, with_suggestion(message)));
            break None;
        };
        let already_said = accounted.iter().any(|(table, key)| {
            *table == span && message.starts_with(&format!("missing field `{key}`"))
        });
        if !already_said {
            errors.push(locate(Some(span.clone()), with_suggestion(message)));
        }
        let Some((table, key)) = take_out(&mut document, &span) else {
            break None;
        };
        if let Some(meant) = likely_meant(message) {
            accounted.push((table.clone(), meant.to_owned()));
        }
        accounted.push((table, key));
    };
    match raw.map(|raw| resolve::resolve(raw, home)) {
        Some(Ok(config)) if errors.is_empty() => return Ok(config),
        Some(Err(problems)) => errors.extend(
            problems
                .into_iter()
                .map(|(span, message)| locate(Some(span), message)),
        ),
        _ => {}
    }
    Err(in_file_order(errors))
}

/// Removes the key or array item of `document` that `span` points at (a key, or its value);
/// returns the span of the table it was in and its key ("" for an array item).
fn take_out<'i>(
    document: &mut Spanned<DeTable<'i>>,
    span: &Range<usize>,
) -> Option<(Range<usize>, String)> {
    let table_span = document.span();
    take_from_table(document.get_mut(), table_span, span)
}

fn take_from_table<'i>(
    table: &mut DeTable<'i>,
    table_span: Range<usize>,
    span: &Range<usize>,
) -> Option<(Range<usize>, String)> {
    let found = table
        .iter()
        .find(|(key, value)| key.span() == *span || value.span() == *span)
        .map(|(key, _)| key.clone());
    if let Some(key) = found {
        table.remove(&key);
        return Some((table_span, key.into_inner().into_owned()));
    }
    table
        .iter_mut()
        .find_map(|(_, value)| take_from_value(value, span))
}

fn take_from_value<'i>(
    value: &mut Spanned<DeValue<'i>>,
    span: &Range<usize>,
) -> Option<(Range<usize>, String)> {
    let value_span = value.span();
    match value.get_mut() {
        DeValue::Table(table) => take_from_table(table, value_span, span),
        DeValue::Array(items) => {
            if let Some(at) = items.iter().position(|item| item.span() == *span) {
                let mut kept = DeArray::new();
                for (index, item) in std::mem::replace(items, DeArray::new())
                    .into_iter()
                    .enumerate()
                {
                    if index != at {
                        kept.push(item);
                    }
                }
                *items = kept;
                return Some((value_span, String::new()));
            }
            items
                .iter_mut()
                .find_map(|item| take_from_value(item, span))
        }
        _ => None,
    }
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
    match likely_meant(message) {
        Some(candidate) => format!("{message}; did you mean `{candidate}`?"),
        None => message.to_owned(),
    }
}

/// The expected key an unknown one is likely a misspelling of.
fn likely_meant(message: &str) -> Option<&str> {
    let rest = message.strip_prefix("unknown field `")?;
    let (unknown, expected) = rest.split_once('`')?;
    expected
        .split('`')
        .skip(1)
        .step_by(2)
        .map(|candidate| (edit_distance(unknown, candidate), candidate))
        .filter(|&(distance, _)| distance <= 2.max(unknown.len() / 3))
        .min()
        .map(|(_, candidate)| candidate)
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

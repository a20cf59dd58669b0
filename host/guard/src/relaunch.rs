//! Relaunch lines: the original command plus resume args checked against the plugin's flags.

use std::fmt;

/// Most resume args a relaunch may carry (SPEC §3.1).
pub const MAX_RESUME_ARGS: usize = 6;
/// Longest resume arg in bytes (SPEC §3.1).
pub const MAX_RESUME_ARG_BYTES: usize = 256;

/// A relaunch line composed by [`compose_relaunch_line`]: the original launch command
/// followed by validated resume args.
///
/// A `RelaunchLine` proves *validation*, not permission: permission to relaunch is an
/// [`ApprovedRelaunch`](crate::ApprovedRelaunch), which carries one. The hub runs the line
/// through the configured shell as one argv item (`$SHELL -lc "<line>"`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RelaunchLine(String);

impl RelaunchLine {
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl fmt::Display for RelaunchLine {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

/// Why no relaunch line could be composed.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum RelaunchLineError {
    /// The slot has no original command (a bare shell or client-opened pane), or only a blank
    /// one. Checked before the args, so no allowlist gets past it.
    #[error("the pane has no launch command to relaunch")]
    NoLaunchCommand,
    #[error(transparent)]
    ResumeArgs(#[from] ResumeArgsError),
}

/// Why a plugin's `resume_args` were rejected (SPEC §3.1). Args are checked in order, every
/// rule for one arg before the next arg, so the first offending arg is reported.
///
/// Plugin text appears in the messages only `{:?}`-escaped or after it passed the charset
/// check, so a message cannot forge log lines.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ResumeArgsError {
    #[error("{count} resume args, at most {max} allowed")]
    TooMany { count: usize, max: usize },
    #[error("resume arg {index} is empty")]
    Empty { index: usize },
    #[error("resume arg {index} is {len} bytes, at most {max} allowed")]
    TooLong {
        index: usize,
        len: usize,
        max: usize,
    },
    #[error(
        "resume arg {index} contains {character:?} (U+{code:04X}) at byte {offset}; only ASCII \
         letters, digits and . _ - : / = @ + are allowed",
        code = u32::from(*character)
    )]
    ForbiddenCharacter {
        index: usize,
        offset: usize,
        character: char,
    },
    #[error(
        "resume arg {index} {arg:?} must appear exactly in allowed_resume_flags \
         (arg 0 and every arg starting with - or / must)"
    )]
    NotAllowed { index: usize, arg: String },
}

/// Validates `resume_args` against SPEC §3.1 and composes the relaunch line from the
/// *original* `launch_command`.
///
/// The line is `launch_command` followed by `" " + arg` for each arg, unquoted: the allowed
/// charset is literal in POSIX shells and in cmd.exe. Because the line is always built from
/// the original command, args never accumulate across relaunches. The guard uses this to
/// judge a `relaunch`; the hub may call it again when it carries the relaunch out.
///
/// ```
/// use nightcrow_guard::{compose_relaunch_line, RelaunchLineError};
///
/// let flags = ["resume".to_owned()];
/// let args = ["resume".to_owned(), "019c8bfe-ec25-79e0-97d7-bda6a9c575ff".to_owned()];
/// let line = compose_relaunch_line(Some("codex"), &args, &flags).unwrap();
/// assert_eq!(line.as_str(), "codex resume 019c8bfe-ec25-79e0-97d7-bda6a9c575ff");
///
/// assert_eq!(
///     compose_relaunch_line(None, &args, &flags),
///     Err(RelaunchLineError::NoLaunchCommand),
/// );
/// ```
pub fn compose_relaunch_line(
    launch_command: Option<&str>,
    resume_args: &[String],
    allowed_resume_flags: &[String],
) -> Result<RelaunchLine, RelaunchLineError> {
    let launch_command = launch_command
        .filter(|command| !command.trim().is_empty())
        .ok_or(RelaunchLineError::NoLaunchCommand)?;
    validate_resume_args(resume_args, allowed_resume_flags)?;
    let mut line = String::with_capacity(
        launch_command.len() + resume_args.iter().map(|arg| arg.len() + 1).sum::<usize>(),
    );
    line.push_str(launch_command);
    for arg in resume_args {
        line.push(' ');
        line.push_str(arg);
    }
    Ok(RelaunchLine(line))
}

fn validate_resume_args(
    resume_args: &[String],
    allowed_resume_flags: &[String],
) -> Result<(), ResumeArgsError> {
    if resume_args.len() > MAX_RESUME_ARGS {
        return Err(ResumeArgsError::TooMany {
            count: resume_args.len(),
            max: MAX_RESUME_ARGS,
        });
    }
    for (index, arg) in resume_args.iter().enumerate() {
        if arg.is_empty() {
            return Err(ResumeArgsError::Empty { index });
        }
        if arg.len() > MAX_RESUME_ARG_BYTES {
            return Err(ResumeArgsError::TooLong {
                index,
                len: arg.len(),
                max: MAX_RESUME_ARG_BYTES,
            });
        }
        if let Some((offset, character)) = arg.char_indices().find(|&(_, c)| !is_literal(c)) {
            return Err(ResumeArgsError::ForbiddenCharacter {
                index,
                offset,
                character,
            });
        }
        let needs_approval = index == 0 || arg.starts_with(['-', '/']);
        if needs_approval && !allowed_resume_flags.contains(arg) {
            return Err(ResumeArgsError::NotAllowed {
                index,
                arg: arg.clone(),
            });
        }
    }
    Ok(())
}

/// Characters that mean themselves, unquoted, to POSIX shells and to cmd.exe.
fn is_literal(c: char) -> bool {
    c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '-' | ':' | '/' | '=' | '@' | '+')
}

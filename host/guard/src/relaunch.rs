//! The relaunch line of SPEC §3.1: the original launch command plus validated arguments.

/// Most arguments a plugin may ask to append.
pub const MAX_RESUME_ARGS: usize = 6;
/// Longest single argument, in bytes.
pub const MAX_RESUME_ARG_BYTES: usize = 256;

/// Why a plugin's `resume_args` cannot be appended. Indices count from 0.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ResumeArgsError {
    #[error("{count} resume args, at most {MAX_RESUME_ARGS} allowed")]
    TooMany { count: usize },
    #[error("resume arg {index} is empty")]
    Empty { index: usize },
    #[error("resume arg {index} is {len} bytes, at most {MAX_RESUME_ARG_BYTES} allowed")]
    TooLong { index: usize, len: usize },
    #[error(
        "resume arg {index} contains {found:?}; only ASCII letters, digits and . _ - : / = @ + are allowed"
    )]
    ForbiddenCharacter { index: usize, found: char },
    #[error("resume arg {index} ({arg:?}) is not in the plugin's allowed_resume_flags")]
    NotAllowed { index: usize, arg: String },
}

/// Appends `args` to `launch_command`, one space before each, after checking every rule of
/// SPEC §3.1. Arg 0 and every arg starting with `-` or `/` must appear exactly in
/// `allowed_flags`; other args are values (a session id, say). The line is always composed
/// from the original command, so arguments never accumulate across relaunches.
///
/// The charset is literal in POSIX shells and in cmd.exe, so the line needs no quoting; it is
/// run as one argv item of the configured shell (`$SHELL -lc "<line>"`).
pub fn compose_relaunch_line(
    launch_command: &str,
    args: &[String],
    allowed_flags: &[String],
) -> Result<String, ResumeArgsError> {
    if args.len() > MAX_RESUME_ARGS {
        return Err(ResumeArgsError::TooMany { count: args.len() });
    }
    for (index, arg) in args.iter().enumerate() {
        check_arg(index, arg, allowed_flags)?;
    }
    let mut line = String::with_capacity(
        launch_command.len() + args.iter().map(|a| a.len() + 1).sum::<usize>(),
    );
    line.push_str(launch_command);
    for arg in args {
        line.push(' ');
        line.push_str(arg);
    }
    Ok(line)
}

fn check_arg(index: usize, arg: &str, allowed_flags: &[String]) -> Result<(), ResumeArgsError> {
    if arg.is_empty() {
        return Err(ResumeArgsError::Empty { index });
    }
    if arg.len() > MAX_RESUME_ARG_BYTES {
        return Err(ResumeArgsError::TooLong {
            index,
            len: arg.len(),
        });
    }
    if let Some(found) = arg.chars().find(|&c| !is_literal_in_shells(c)) {
        return Err(ResumeArgsError::ForbiddenCharacter { index, found });
    }
    let needs_approval = index == 0 || arg.starts_with('-') || arg.starts_with('/');
    if needs_approval && !allowed_flags.iter().any(|flag| flag == arg) {
        return Err(ResumeArgsError::NotAllowed {
            index,
            arg: arg.to_owned(),
        });
    }
    Ok(())
}

fn is_literal_in_shells(c: char) -> bool {
    c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '-' | ':' | '/' | '=' | '@' | '+')
}

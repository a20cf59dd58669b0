//! The shell a pane runs and how a startup command is handed to it.

use std::path::PathBuf;

/// The program a pane runs and how a startup command is handed to it (SPEC §5.1).
///
/// With a command line the pane runs `program command_args… <line>`, the line as one argv
/// item, so the shell parses it exactly once; without one it runs `program` alone, an
/// interactive shell.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Shell {
    pub program: PathBuf,
    pub command_args: Vec<String>,
}

impl Shell {
    /// `$SHELL -lc` (else `/bin/sh -lc`); on Windows `%ComSpec% /C` (else `cmd.exe /C`).
    pub fn user_default() -> Shell {
        #[cfg(windows)]
        let (variable, fallback, args) = ("ComSpec", "cmd.exe", "/C");
        #[cfg(not(windows))]
        let (variable, fallback, args) = ("SHELL", "/bin/sh", "-lc");
        let program = std::env::var_os(variable)
            .filter(|value| !value.is_empty())
            .map_or_else(|| PathBuf::from(fallback), PathBuf::from);
        Shell {
            program,
            command_args: vec![args.to_owned()],
        }
    }

    pub(crate) fn command(&self, line: Option<&str>) -> portable_pty::CommandBuilder {
        let mut command = portable_pty::CommandBuilder::new(&self.program);
        if let Some(line) = line {
            command.args(&self.command_args);
            command.arg(line);
        }
        command
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sh() -> Shell {
        Shell {
            program: PathBuf::from("/bin/sh"),
            command_args: vec!["-c".to_owned()],
        }
    }

    #[test]
    fn a_command_line_is_one_argv_item_after_the_shell_args() {
        let command = sh().command(Some("echo 'a b'; exit 3"));
        assert_eq!(command.get_argv(), &["/bin/sh", "-c", "echo 'a b'; exit 3"]);
    }

    #[test]
    fn without_a_command_the_shell_runs_alone() {
        assert_eq!(sh().command(None).get_argv(), &["/bin/sh"]);
    }

    #[test]
    fn the_user_default_passes_the_line_through_its_command_flag() {
        let shell = Shell::user_default();
        #[cfg(not(windows))]
        assert_eq!(shell.command_args, ["-lc"]);
        #[cfg(windows)]
        assert_eq!(shell.command_args, ["/C"]);
        assert!(!shell.program.as_os_str().is_empty());
    }
}

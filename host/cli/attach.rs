//! `nightcrow attach [DIR]`: the TUI on a repository's hub, through the daemon (started in
//! the background when none runs, as `tmux attach` would).

use std::path::{Path, PathBuf};

use nightcrow_client::Connection;
use nightcrow_client_protocol::daemon::{DaemonAnswer, DaemonRequest};
use nightcrow_config::TuiConfig;
use nightcrow_tui::{Attachment, FirstPane, Options, Outcome, Role};

use crate::daemon::open_repo;
use crate::{Failure, Settings};

/// `tui` is the client's part of the config, or why the config does not load: then a
/// running daemon is attached to with the default client settings after a warning, and
/// none is started.
pub fn run(
    settings: &Settings,
    dir: Option<&Path>,
    tui: Result<TuiConfig, Failure>,
) -> Result<(), Failure> {
    if !std::io::IsTerminal::is_terminal(&std::io::stdout()) {
        return Err(Failure::from(
            "attach needs a terminal: stdout is not one".to_owned(),
        ));
    }
    let home = &settings.home;
    let repo = repository_root(&start_dir(dir)?);
    let tokio = crate::daemon::tokio()?;
    let running = tokio.block_on(Connection::open(home)).is_ok();
    let tui = match tui {
        Ok(tui) => tui,
        Err(failure) if running => {
            let problems = failure.message();
            // Printed before the TUI takes the screen, so it is there again after it.
            eprintln!(
                "warning: {problems}\nattaching with the default client settings; \
                 the running daemon keeps the config it has"
            );
            TuiConfig::default()
        }
        Err(failure) => return Err(failure),
    };
    if !running {
        crate::daemon::background(settings)?;
    }
    let (root, hub_was_empty, (frames, requests)) = tokio.block_on(async {
        let mut connection = Connection::open(home).await?;
        let root = open_repo(&mut connection, repo).await?;
        let DaemonAnswer::Status(status) = connection.ask(&DaemonRequest::Status).await? else {
            return Err(Failure::from(
                "the daemon did not answer `status` with a status".to_owned(),
            ));
        };
        let empty = status
            .repos
            .iter()
            .filter(|entry| entry.repo == root)
            .all(|entry| entry.panes.is_empty() && entry.holds.is_empty());
        let attached = connection.attach(&root).await?;
        Ok::<_, Failure>((root, empty, attached))
    })?;
    let options = Options {
        leader: tui.leader,
        first_pane: if hub_was_empty {
            FirstPane::Open
        } else {
            FirstPane::Existing
        },
        role: Role::Attached,
        notify: tui.notify,
        mouse: tui.mouse,
    };
    let outcome = tokio
        .block_on(nightcrow_tui::run(Attachment { frames, requests }, options))
        .map_err(|e| format!("the terminal: {e}"))?;
    tokio.shutdown_background();
    match outcome {
        Outcome::Detached => {
            outln!(
                "detached from {}; its panes keep running (`nightcrow attach` comes back)",
                root.display()
            );
            Ok(())
        }
        Outcome::NoPanes => {
            outln!("every pane of {} has ended", root.display());
            Ok(())
        }
        Outcome::Closed => Err(Failure::from(
            "the daemon closed the connection (it stopped, or its hub did)".to_owned(),
        )),
        Outcome::Signalled => Err(Failure::from(
            "stopped by a signal; the panes keep running".to_owned(),
        )),
    }
}

/// `dir` made absolute, or the current directory.
pub(crate) fn start_dir(dir: Option<&Path>) -> Result<PathBuf, Failure> {
    let path = match dir {
        Some(dir) => std::path::absolute(dir).map_err(|e| format!("{}: {e}", dir.display())),
        None => std::env::current_dir().map_err(|e| format!("the current directory: {e}")),
    };
    Ok(path?)
}

/// The repository `dir` is in: the nearest folder up from it holding `.git` (a folder, or
/// a file in a worktree); `dir` itself when there is none.
pub(crate) fn repository_root(dir: &Path) -> PathBuf {
    dir.ancestors()
        .find(|folder| folder.join(".git").exists())
        .unwrap_or(dir)
        .to_owned()
}

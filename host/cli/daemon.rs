//! The daemon and the commands that talk to it: `nightcrow` (foreground), `nightcrow -d`
//! (background), `stop`, `restart`, `status`, `open DIR`, `reload`.

use std::path::{Path, PathBuf};
use std::time::Duration;

use nightcrow_client::{ClientError, Connection, Home};
use nightcrow_client_protocol::daemon::{DaemonAnswer, DaemonRequest};
use nightcrow_daemon::server::{ConfigSource, Daemon};
use nightcrow_daemon::transport::{Claim, ClaimError};
use nightcrow_guard::escape_controls;
use nightcrow_plugin_host::{PluginRuntime, RuntimeConfig};
use nightcrow_tui::format;

use crate::{Failure, LogFormat, Settings};

/// How long `-d` and `stop` wait for the daemon to come up or go away.
const PATIENCE: Duration = Duration::from_secs(15);

pub(crate) fn tokio() -> Result<tokio::runtime::Runtime, Failure> {
    tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .map_err(|e| Failure::from(format!("cannot start the async runtime: {e}")))
}

/// Runs the daemon in this process until Ctrl-C, SIGTERM or `nightcrow stop`.
pub fn foreground(settings: &Settings) -> Result<(), Failure> {
    let source = ConfigSource {
        path: settings.config.clone(),
        user_home: settings.user_home.clone(),
    };
    let config = source.load().map_err(Failure::Config)?;
    let tokio = tokio()?;
    let home = &settings.home;
    let result = tokio.block_on(async {
        let claim = Claim::take(home).map_err(|e| e.to_string())?;
        let runtime =
            PluginRuntime::new(RuntimeConfig::user_default()).map_err(|e| e.to_string())?;
        Daemon::new(home.clone(), source, config, runtime)
            .serve(claim, interrupted())
            .await;
        Ok(())
    });
    tokio.shutdown_background();
    result
}

/// Ctrl-C, or SIGTERM on Unix (what `kill` and service managers send).
async fn interrupted() {
    #[cfg(unix)]
    {
        use tokio::signal::unix::{SignalKind, signal};
        match signal(SignalKind::terminate()) {
            Ok(mut term) => {
                tokio::select! {
                    _ = tokio::signal::ctrl_c() => {}
                    _ = term.recv() => {}
                }
            }
            Err(_) => {
                let _ = tokio::signal::ctrl_c().await;
            }
        }
    }
    #[cfg(not(unix))]
    {
        let _ = tokio::signal::ctrl_c().await;
    }
}

/// Starts a daemon in the background unless one answers already.
pub(crate) fn ensure_running(
    settings: &Settings,
    tokio: &tokio::runtime::Runtime,
) -> Result<(), Failure> {
    if tokio.block_on(Connection::open(&settings.home)).is_err() {
        background(settings)?;
    }
    Ok(())
}

/// Opens the repository `dir` is in (the daemon finds its root); returns the root.
pub(crate) async fn open_repo(
    connection: &mut Connection,
    dir: PathBuf,
) -> Result<PathBuf, Failure> {
    match connection.ask(&DaemonRequest::Open { dir }).await? {
        DaemonAnswer::Opened { repo } => Ok(repo),
        other => Err(unexpected(&other)),
    }
}

/// Starts the daemon as a background process logging to `daemon.log` and waits until it
/// answers.
pub fn background(settings: &Settings) -> Result<(), Failure> {
    let home = &settings.home;
    home.ensure_private()?;
    // A second daemon would give up at once: say which one runs instead. One that holds the
    // home without answering is going away (killed, or stopping): start once it has gone.
    if home.is_held() {
        match running_pid(home) {
            Ok(pid) => return Err(already_running(home, pid)),
            Err(_) if released_within(home, PATIENCE) => {}
            Err(failure) => {
                return Err(Failure::from(format!(
                    "a daemon holds {} but does not answer ({}); see {}",
                    home.root().display(),
                    failure.message(),
                    home.log().display()
                )));
            }
        }
    }
    let log_path = home.log();
    let cannot_open = |e: std::io::Error| format!("{}: {e}", log_path.display());
    let log = nightcrow_daemon::open_private_file(&log_path).map_err(cannot_open)?;
    let err_log = log.try_clone().map_err(cannot_open)?;
    let exe = std::env::current_exe().map_err(|e| format!("cannot find myself: {e}"))?;
    let mut command = std::process::Command::new(exe);
    command
        .env("NIGHTCROW_HOME", home.root())
        .arg("--log-file")
        .arg(&log_path);
    if let Some(config) = &settings.explicit_config {
        command.arg("--config").arg(config);
    }
    if settings.log_format == LogFormat::Json {
        command.args(["--log-format", "json"]);
    }
    command
        .stdin(std::process::Stdio::null())
        .stdout(log)
        .stderr(err_log);
    // Its own process group (Unix) or no console (Windows): a Ctrl-C in this terminal is
    // not meant for the daemon.
    #[cfg(unix)]
    std::os::unix::process::CommandExt::process_group(&mut command, 0);
    #[cfg(windows)]
    std::os::windows::process::CommandExt::creation_flags(&mut command, 0x0000_0008);
    let mut child = command
        .spawn()
        .map_err(|e| format!("cannot start the daemon: {e}"))?;
    let tokio = tokio()?;
    let started = std::time::Instant::now();
    loop {
        if tokio.block_on(Connection::open(home)).is_ok() {
            let pid = running_pid(home)?;
            if pid != child.id() {
                // Another daemon took the home since the check above; ours gave up.
                let _ = child.wait();
                return Err(already_running(home, pid));
            }
            outln!(
                "nightcrow daemon running (pid {pid}), log: {}",
                log_path.display()
            );
            return Ok(());
        }
        if let Ok(Some(status)) = child.try_wait() {
            return Err(Failure::from(format!(
                "the daemon exited ({status}); see {}",
                log_path.display()
            )));
        }
        if started.elapsed() > PATIENCE {
            return Err(Failure::from(format!(
                "the daemon did not answer within {PATIENCE:?}; see {}",
                log_path.display()
            )));
        }
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// The pid of the daemon that answers for `home`, unless it takes longer than [`PATIENCE`]
/// to say it (one that is frozen or going away may never).
fn running_pid(home: &Home) -> Result<u32, Failure> {
    let status = async {
        Connection::open(home)
            .await?
            .ask(&DaemonRequest::Status)
            .await
    };
    match tokio()?.block_on(async { tokio::time::timeout(PATIENCE, status).await }) {
        Ok(Ok(DaemonAnswer::Status(status))) => Ok(status.pid),
        Ok(Ok(other)) => Err(unexpected(&other)),
        Ok(Err(error)) => Err(error.into()),
        Err(_) => Err(Failure::from(format!("no answer within {PATIENCE:?}"))),
    }
}

/// Whether the daemon holding `home` lets go of it within `patience`.
fn released_within(home: &Home, patience: Duration) -> bool {
    let started = std::time::Instant::now();
    while home.is_held() {
        if started.elapsed() > patience {
            return false;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    true
}

/// What the foreground daemon says when the home is taken.
fn already_running(home: &Home, pid: u32) -> Failure {
    let taken = ClaimError::AlreadyRunning {
        home: home.root().to_owned(),
        pid: pid.to_string(),
    };
    Failure::Other(taken.to_string())
}

/// One request to the running daemon and its answer.
fn ask(home: &Home, request: &DaemonRequest) -> Result<DaemonAnswer, Failure> {
    tokio()?.block_on(async { Ok(Connection::open(home).await?.ask(request).await?) })
}

/// An answer of another kind than the request calls for.
fn unexpected(answer: &DaemonAnswer) -> Failure {
    Failure::Other(format!("the daemon answered out of turn: {answer:?}"))
}

pub fn stop(home: &Home) -> Result<(), Failure> {
    ask(home, &DaemonRequest::Stop)?;
    // Gone once it let go of the home: its panes are ended and its journal written.
    if !released_within(home, PATIENCE) {
        return Err(Failure::Other(
            "the daemon is still stopping; see its log".to_owned(),
        ));
    }
    outln!("nightcrow daemon stopped");
    Ok(())
}

/// `stop` (if a daemon runs), then `-d`: the new daemon takes every repository back from
/// the state journal. Says what came back.
pub fn restart(settings: &Settings) -> Result<(), Failure> {
    let home = &settings.home;
    if home.is_held() {
        stop(home)?;
    }
    background(settings)?;
    let answer = ask(home, &DaemonRequest::Status)?;
    let DaemonAnswer::Status(status) = answer else {
        return Err(unexpected(&answer));
    };
    let panes: usize = status.repos.iter().map(|repo| repo.panes.len()).sum();
    let holds: usize = status.repos.iter().map(|repo| repo.holds.len()).sum();
    outln!(
        "back: {} {}, {panes} {}, {holds} held for a relaunch",
        status.repos.len(),
        plural(status.repos.len(), "repository", "repositories"),
        plural(panes, "pane", "panes"),
    );
    Ok(())
}

fn plural(n: usize, one: &'static str, many: &'static str) -> &'static str {
    if n == 1 { one } else { many }
}

pub fn open(home: &Home, dir: &Path) -> Result<(), Failure> {
    let dir = std::path::absolute(dir).map_err(|e| format!("{}: {e}", dir.display()))?;
    let repo =
        tokio()?.block_on(async { open_repo(&mut Connection::open(home).await?, dir).await })?;
    outln!("opened {}", repo.display());
    Ok(())
}

pub fn reload(home: &Home) -> Result<(), Failure> {
    let answer = tokio()?.block_on(async {
        let mut connection = Connection::open(home).await?;
        connection
            .ask(&DaemonRequest::Reload)
            .await
            .map_err(|error| match error {
                // The daemon refuses a reload only when the file does not load.
                ClientError::Refused(message) => Failure::Config(format!(
                    "{message}\nnothing was changed: the running config stays in force"
                )),
                other => Failure::from(other),
            })
    })?;
    let DaemonAnswer::Reloaded { repos } = answer else {
        return Err(unexpected(&answer));
    };
    if repos.is_empty() {
        outln!("config reloaded; no repository is open");
        return Ok(());
    }
    let mut quiet = true;
    for repo in repos {
        let mut lines: Vec<String> = [
            ("started", &repo.started),
            ("stopped", &repo.stopped),
            ("restarted", &repo.restarted),
            ("failed", &repo.failed),
            ("unusable", &repo.unusable),
        ]
        .into_iter()
        .filter(|(_, items)| !items.is_empty())
        .map(|(key, items)| format!("  {key}: {}", items.join(", ")))
        .collect();
        if !repo.retired.is_empty() {
            lines.push(format!("  relaunch holds retired: {}", repo.retired.len()));
        }
        if !lines.is_empty() {
            quiet = false;
            outln!("{}:\n{}", repo.repo.display(), lines.join("\n"));
        }
    }
    if quiet {
        // What else a reload changes shows later: running panes keep their commands.
        outln!(
            "config reloaded; no plugin started, stopped or restarted (running panes keep \
             their commands; changed startup commands apply when the daemon next opens a \
             repository, e.g. after `nightcrow restart`)"
        );
    }
    Ok(())
}

pub fn status(home: &Home) -> Result<(), Failure> {
    let answer = ask(home, &DaemonRequest::Status)?;
    let DaemonAnswer::Status(status) = answer else {
        return Err(unexpected(&answer));
    };
    // Every text in the answer may have come from a plugin, a pane or a file name: none
    // may write a control character to this terminal.
    let shown = |text: &str| escape_controls(text).into_owned();
    let path = |path: &Path| shown(&path.display().to_string());
    outln!(
        "nightcrow daemon {} (pid {}), home {}",
        shown(&status.version),
        status.pid,
        path(home.root())
    );
    if status.repos.is_empty() {
        outln!("no repository open (`nightcrow open DIR`)");
    }
    let now = chrono::Utc::now().timestamp();
    for repo in status.repos {
        outln!("{}", path(&repo.repo));
        // Panes are numbered by their place, as the tabs of every client number them.
        let number = |id: u64| {
            repo.panes
                .iter()
                .position(|pane| pane.pane == id)
                .map_or_else(|| format!("(id {id})"), |index| (index + 1).to_string())
        };
        for (index, pane) in repo.panes.iter().enumerate() {
            // Named as its tab is: the title its program set, else the configured one.
            let title = pane.program_title.as_deref().or(pane.title.as_deref());
            outln!(
                "  pane {}:{} {}, generation {}{}",
                index + 1,
                shown(title.unwrap_or("shell")),
                if pane.alive { "running" } else { "exited" },
                pane.generation,
                pane.owner
                    .as_deref()
                    .map(|owner| format!(", watched by {}", shown(owner)))
                    .unwrap_or_default()
            );
        }
        for plugin in &repo.plugins {
            outln!(
                "  plugin {} {} (dropped events: {}, rejected lines: {})",
                shown(&plugin.name),
                shown(&plugin.state.to_string()),
                plugin.dropped_events,
                plugin.rejected_lines
            );
        }
        for hold in &repo.holds {
            let report = hold.report.as_ref();
            let deadline = report
                .and_then(|report| report.deadline_epoch)
                .map(|epoch| {
                    format!(
                        ", until {}",
                        format::deadline_text(epoch, now, &chrono::Local)
                    )
                })
                .unwrap_or_default();
            outln!(
                "  hold on pane {}: {}{deadline}; the hold lapses in {}",
                number(hold.pane),
                shown(report.map_or("no report yet", |report| report.state.as_str())),
                format::span(hold.expires_in_secs)
            );
        }
    }
    Ok(())
}

//! The `nightcrow` binary: daemon, CLI and TUI client in one program (see
//! `docs/ARCHITECTURE.md`).
#![forbid(unsafe_code)]

/// `print!` for what a command prints: see [`write_out`].
macro_rules! out {
    ($($arg:tt)*) => { $crate::write_out(format_args!($($arg)*)) };
}

/// `println!` for what a command prints: see [`write_out`].
macro_rules! outln {
    () => { $crate::write_out(format_args!("\n")) };
    ($($arg:tt)*) => { $crate::write_out(format_args!("{}\n", format_args!($($arg)*))) };
}

mod attach;
mod daemon;
mod demo;
mod new;
mod plugin;
mod web;

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use clap::{Parser, Subcommand, ValueEnum};
use nightcrow_client::Home;
use nightcrow_daemon::logfile::{LOG_ROTATE_BYTES, LogFile};
use tracing_subscriber::fmt::writer::BoxMakeWriter;

/// Terminal session daemon with a sandboxed WebAssembly plugin host for AI coding CLIs.
///
/// `nightcrow attach` is the everyday way in: the current repository's panes as tabs in
/// your terminal (a daemon is started if none runs). Without a command it runs the daemon
/// in the foreground (Ctrl-C stops it: plugins first, then panes). Files live in `$NIGHTCROW_HOME` (default `~/.nightcrow`): `config.toml`,
/// `plugins/`, `daemon.sock`, `daemon.log`. Try `nightcrow demo` first.
#[derive(Debug, Parser)]
#[command(name = "nightcrow", version, about, long_about)]
struct Cli {
    /// Config file to use instead of `$NIGHTCROW_HOME/config.toml`.
    #[arg(long, global = true, value_name = "FILE")]
    config: Option<PathBuf>,
    /// Run the daemon in the background, logging to `$NIGHTCROW_HOME/daemon.log`.
    #[arg(short = 'd', long = "detach")]
    detach: bool,
    /// Log line format (filter with `NIGHTCROW_LOG`, e.g. `debug` or `nightcrow_hub=trace`).
    #[arg(long, global = true, value_enum, default_value_t = LogFormat::Text)]
    log_format: LogFormat,
    /// Log to this file, rotated at 10 MiB to FILE.1 (what `-d` gives the daemon it starts).
    #[arg(long, hide = true, value_name = "FILE")]
    log_file: Option<PathBuf>,
    #[command(subcommand)]
    command: Option<Action>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub(crate) enum LogFormat {
    /// Human-readable lines.
    Text,
    /// One JSON object per line.
    Json,
}

#[derive(Debug, Subcommand)]
enum Action {
    /// See and type into a repository's panes: tabs, recovery markers, the leader key
    /// (Ctrl+F by default; Ctrl+F ? lists the keys). Starts a daemon if none runs.
    /// Detaching (Ctrl+F d) leaves every pane running.
    Attach {
        /// A folder in the repository (default: the current one); its repository root is
        /// the nearest folder up that holds `.git`.
        dir: Option<PathBuf>,
    },
    /// Watch a usage-limit recovery happen: a throw-away hub, a scripted Codex stand-in
    /// that hits its limit, and the sandboxed recovery plugin resuming it. No account, no
    /// network; about 45 s. In a terminal it runs in the TUI (q, Esc or Ctrl+C ends it);
    /// `--plain` (or a stdout that is not a terminal) prints a transcript instead.
    Demo {
        /// Print a transcript instead of showing the TUI.
        #[arg(long)]
        plain: bool,
    },
    /// Write a commented starter config (the bundled plugin declared, disabled).
    Init {
        /// Replace an existing config file.
        #[arg(long)]
        force: bool,
    },
    /// Open a repository in the running daemon: its startup panes start, with their plugins.
    Open {
        /// The repository's folder.
        dir: PathBuf,
    },
    /// Show the running daemon: repositories, panes, plugins with their health and dropped
    /// events, relaunch holds with their deadlines.
    Status,
    /// Re-read the config and apply it to every open repository (a file with errors changes
    /// nothing); prints what started, stopped, restarted and was retired.
    Reload,
    /// Stop the running daemon (plugins first, then panes). Its state journal keeps every
    /// pane's screen and relaunch hold: the next daemon shows them again.
    Stop,
    /// Stop the running daemon and start it again in the background: every repository comes
    /// back with its panes shown exited, their last screens and their recovery, which the
    /// plugins take up again (a Codex session waiting for its reset is resumed at the reset).
    /// After installing a new nightcrow, this is how the daemon becomes the new version.
    Restart,
    /// Install, list, remove, check, run, test or start writing plugins.
    #[command(subcommand)]
    Plugin(plugin::PluginAction),
    /// The repository's panes in a browser: starts the web client in the daemon (a daemon
    /// is started if none runs) and prints its address, 127.0.0.1:8091 unless `[web]`
    /// says otherwise. Set a password first with `nightcrow web passwd`.
    #[command(args_conflicts_with_subcommands = true)]
    Web {
        #[command(subcommand)]
        action: Option<WebAction>,
        /// A folder in the repository to show (default: the current one).
        dir: Option<PathBuf>,
    },
}

#[derive(Debug, Subcommand)]
enum WebAction {
    /// Set the web client's password: asked twice without echo at a terminal, else read as
    /// one line from stdin. Only its Argon2id hash is written, into `[web] password_hash`
    /// of the config; a running daemon takes it at once.
    Passwd,
}

/// Why a command failed; decides the exit code.
#[derive(Debug)]
enum Failure {
    /// The config does not load (exit code 2, like a usage error: nothing was done).
    Config(String),
    /// Anything else (exit code 1).
    Other(String),
}

impl From<String> for Failure {
    fn from(message: String) -> Failure {
        Failure::Other(message)
    }
}

impl From<nightcrow_client::ClientError> for Failure {
    fn from(error: nightcrow_client::ClientError) -> Failure {
        Failure::Other(error.to_string())
    }
}

impl Failure {
    fn message(self) -> String {
        match self {
            Failure::Config(message) | Failure::Other(message) => message,
        }
    }
}

/// Where a command's files are, resolved once before it runs.
pub(crate) struct Settings {
    pub home: Home,
    /// The config file: `--config` (made absolute, so that a daemon started from here reads
    /// the same file from any folder), else the home's `config.toml`.
    pub config: PathBuf,
    /// `--config` as given to this command, made absolute: what a daemon started from here
    /// is told.
    pub explicit_config: Option<PathBuf>,
    /// The user's home folder, which `~` in the config means.
    pub user_home: PathBuf,
    pub log_format: LogFormat,
}

impl Settings {
    fn resolve(cli: &Cli) -> Result<Settings, Failure> {
        let missing = || "cannot find your home directory; set NIGHTCROW_HOME".to_owned();
        let home = Home::from_env().ok_or_else(missing)?;
        let user_home = nightcrow_client::user_home().ok_or_else(missing)?;
        let explicit_config = (cli.config.as_deref())
            .map(|path| std::path::absolute(path).map_err(|e| format!("{}: {e}", path.display())))
            .transpose()?;
        Ok(Settings {
            config: explicit_config.clone().unwrap_or_else(|| home.config()),
            home,
            explicit_config,
            user_home,
            log_format: cli.log_format,
        })
    }

    /// The config if its file exists (a missing one is not an error here); every problem
    /// in it, with file, line and column, if it does not load.
    pub fn load_config(&self) -> Result<Option<nightcrow_config::Config>, Failure> {
        if !self.config.exists() {
            return Ok(None);
        }
        nightcrow_daemon::check_config_file(&self.config).map_err(Failure::Config)?;
        nightcrow_config::load(&self.config, &self.user_home)
            .map(Some)
            .map_err(|errors| Failure::Config(errors.to_string()))
    }
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    let result = Settings::resolve(&cli).and_then(|settings| run(cli, &settings));
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(Failure::Config(message)) => {
            eprintln!("{message}");
            ExitCode::from(2)
        }
        Err(Failure::Other(message)) => {
            eprintln!("{message}");
            ExitCode::FAILURE
        }
    }
}

fn run(cli: Cli, settings: &Settings) -> Result<(), Failure> {
    match cli.command {
        Some(Action::Init { force }) => Ok(init(settings, force)?),
        Some(Action::Demo { plain }) => {
            let tui = !plain && std::io::IsTerminal::is_terminal(&std::io::stdout());
            if tui {
                // Log lines would scribble over the TUI: keep only errors, on stderr.
                install_logging(cli.log_format, "error", None);
            } else {
                install_logging(cli.log_format, "warn", None);
            }
            demo::run(tui)
        }
        Some(Action::Attach { dir }) => {
            // A running daemon has its config already: a broken file only costs this
            // client its own settings (attach::run refuses it if a daemon must start).
            let tui = (settings.load_config())
                .map(|config| config.map(|config| config.tui).unwrap_or_default());
            attach::run(settings, dir.as_deref(), tui)
        }
        Some(Action::Plugin(action)) => {
            // `plugin test`'s report says how the plugin ran; a log line beside it would only
            // repeat it. A plugin's stderr is a warning, so it still shows.
            let level = match action {
                plugin::PluginAction::Test(_) => "warn",
                _ => "info",
            };
            install_logging(cli.log_format, level, None);
            let config = settings.load_config()?;
            Ok(plugin::run(action, config.as_ref(), &settings.home)?)
        }
        Some(Action::Web {
            action: Some(WebAction::Passwd),
            ..
        }) => web::passwd(settings),
        Some(Action::Web { action: None, dir }) => {
            settings.load_config()?;
            web::run(settings, dir.as_deref())
        }
        Some(Action::Open { dir }) => daemon::open(&settings.home, &dir),
        Some(Action::Status) => daemon::status(&settings.home),
        Some(Action::Reload) => daemon::reload(&settings.home),
        Some(Action::Stop) => daemon::stop(&settings.home),
        Some(Action::Restart) => {
            // The new daemon must be able to start before the old one is stopped.
            settings.load_config()?;
            daemon::restart(settings)
        }
        None if cli.detach => {
            // The child reads the file itself; checking it here gives the error at once.
            settings.load_config()?;
            daemon::background(settings)
        }
        None => {
            install_logging(cli.log_format, "info", cli.log_file.as_deref());
            daemon::foreground(settings)
        }
    }
}

/// The exit code of a command whose stdout was closed early, as a shell shows one that
/// SIGPIPE ended (128 + 13).
const CLOSED_STDOUT_EXIT: i32 = 141;

/// Writes to stdout. A reader that went away (`nightcrow status | head -1`) ends the
/// command quietly with [`CLOSED_STDOUT_EXIT`], as SIGPIPE ends a C tool: Rust ignores
/// SIGPIPE, and `println!` would panic instead.
fn write_out(text: std::fmt::Arguments<'_>) {
    let mut stdout = std::io::stdout().lock();
    if let Err(error) = stdout.write_fmt(text).and_then(|()| stdout.flush()) {
        exit_on_stdout_error(&error);
    }
}

/// Ends the process for an error writing to stdout: quietly if its reader went away.
fn exit_on_stdout_error(error: &std::io::Error) -> ! {
    if error.kind() == std::io::ErrorKind::BrokenPipe {
        std::process::exit(CLOSED_STDOUT_EXIT);
    }
    eprintln!("cannot write to stdout: {error}");
    std::process::exit(1);
}

/// Log lines (a plugin's stderr among them) to stderr, or to `file` (rotating). `NIGHTCROW_LOG`
/// filters like `RUST_LOG`; wasmtime's own DEBUG lines echo guest output, so they stay off
/// by default.
fn install_logging(format: LogFormat, level: &str, file: Option<&Path>) {
    let filter =
        tracing_subscriber::EnvFilter::try_from_env("NIGHTCROW_LOG").unwrap_or_else(|_| {
            tracing_subscriber::EnvFilter::new(format!(
                "{level},wasmtime=warn,wasmtime_wasi=warn,cranelift=warn"
            ))
        });
    let opened = file.map(|path| (path, LogFile::open(path, LOG_ROTATE_BYTES)));
    let (writer, ansi) = match opened {
        Some((_, Ok(log))) => {
            let log = log.with_stdio();
            (BoxMakeWriter::new(move || log.clone()), false)
        }
        other => {
            if let Some((path, Err(error))) = other {
                eprintln!("cannot open {}: {error}; logging to stderr", path.display());
            }
            let ansi = std::io::IsTerminal::is_terminal(&std::io::stderr());
            (BoxMakeWriter::new(std::io::stderr), ansi)
        }
    };
    let builder = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(writer);
    match format {
        LogFormat::Text => builder.with_ansi(ansi).init(),
        LogFormat::Json => builder.json().init(),
    }
}

fn init(settings: &Settings, force: bool) -> Result<(), String> {
    let path = &settings.config;
    if path.exists() && !force {
        return Err(format!(
            "{} already exists; pass --force to replace it",
            path.display()
        ));
    }
    create_config_folder(&settings.home, path).map_err(Failure::message)?;
    write_atomically(path, nightcrow_config::STARTER_CONFIG).map_err(Failure::message)?;
    outln!("wrote {}", path.display());
    Ok(())
}

/// Creates the folder the config file goes in: the home private (0700, refused if it is
/// not this user's), any other folder (`--config`) as the user's defaults make it.
fn create_config_folder(home: &Home, config: &Path) -> Result<(), Failure> {
    let Some(folder) = config.parent().filter(|p| !p.as_os_str().is_empty()) else {
        return Ok(());
    };
    if folder == home.root() {
        return Ok(home.ensure_private()?);
    }
    std::fs::create_dir_all(folder)
        .map_err(|e| Failure::from(format!("cannot create {}: {e}", folder.display())))
}

/// Writes the config file whole or not at all, readable by this user alone (it may hold
/// the web password hash).
fn write_atomically(path: &Path, text: &str) -> Result<(), Failure> {
    nightcrow_daemon::write_atomically(path, text.as_bytes())
        .map_err(|e| Failure::from(format!("cannot write {}: {e}", path.display())))
}

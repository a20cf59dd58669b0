//! `nightcrow plugin …`: the installed-plugin registry (`install`, `list`, `remove`) and a
//! plugin author's (and a careful user's) view of one plugin file (`check`, `run`), through
//! the same runtime the daemon uses.

use std::path::{Path, PathBuf};

use clap::{Args, Subcommand};
use nightcrow_client::Home;
use nightcrow_config::{Config, PluginCommand};
use nightcrow_daemon::registry::{self, Registry};
use nightcrow_plugin_host::{
    ConnectRule, PluginRuntime, PluginSource, PluginSpec, RuntimeConfig, RuntimeKind, Sandbox,
    StartError,
};
use nightcrow_protocol::{LineItem, MAX_LINE_BYTES, decode_event, encode_command};
use tokio::io::{AsyncWriteExt, BufReader};

#[derive(Debug, Subcommand)]
pub enum PluginAction {
    /// Copy a `.wasm` plugin into `$NIGHTCROW_HOME/plugins/` after checking it, record its
    /// SHA-256, and print a config snippet for it (disabled, granted nothing).
    Install {
        /// The `.wasm` component or wasip1 module.
        file: PathBuf,
        /// The name to install it as (default: the file name without `.wasm`).
        #[arg(long)]
        name: Option<String>,
        /// Replace an installed plugin of the same name.
        #[arg(long)]
        force: bool,
    },
    /// Show the installed plugins: name, size, recorded SHA-256, whether the file still
    /// matches it, and what it imports.
    List,
    /// Delete an installed plugin.
    Remove {
        /// The installed name.
        name: String,
    },
    /// Audit a plugin file: load and compile it, check its imports against the plugin
    /// world, and show what the current config would grant it.
    Check {
        /// A `.wasm` component (or wasip1 module), or `builtin:<name>`.
        file: String,
    },
    /// Run one plugin as the daemon would, with no panes: each line on stdin is an event
    /// (NDJSON, protocol v3) sent to it; each command it writes is decoded and printed on
    /// stdout (not judged: with no panes, nothing would be approved). End of stdin stops it.
    Run(PluginArgs),
    /// Conformance test for plugin authors: run the plugin in the real sandbox through a
    /// scripted session (panes opened, output, idle, typing, exit, relaunch, 64 panes,
    /// 10 000 events, close, shutdown) and report PASS/FAIL per rule with the reason. Exits
    /// 0 only if every check passes. Give it the grants your plugin's README asks for.
    Test(TestArgs),
    /// Start a new plugin project: a folder with a template in Rust or Python that builds to
    /// a component importing only the plugin world, and a README with the two commands that
    /// build it and run `plugin test` on it.
    New {
        /// The plugin's name (lowercase letters, digits, `-`, `_`); also the folder's.
        name: String,
        /// The language of the template.
        #[arg(long, value_enum)]
        lang: crate::new::Lang,
        /// Create the project here instead of in `./NAME`.
        #[arg(long, value_name = "DIR")]
        dir: Option<PathBuf>,
    },
}

#[derive(Debug, Args)]
pub struct TestArgs {
    #[command(flatten)]
    plugin: PluginArgs,
    /// Print the report as one JSON object (for CI) instead of text.
    #[arg(long)]
    json: bool,
    /// How long the plugin is left idle while its CPU use is measured, in milliseconds.
    #[arg(long, default_value_t = 2000)]
    idle_window_ms: u64,
}

/// One plugin and what it is granted, for `plugin run` and `plugin test`.
#[derive(Debug, Args)]
pub struct PluginArgs {
    /// A `.wasm` component, `builtin:<name>`, or (with `--native`) an executable.
    file: String,
    /// Run it as a trusted native child process instead of in the sandbox.
    #[arg(long)]
    native: bool,
    /// Grant read-only access to this directory (repeatable).
    #[arg(long = "read", value_name = "DIR")]
    read_dirs: Vec<PathBuf>,
    /// Grant outbound TCP to this loopback `ADDRESS:PORT[-LAST]` (repeatable).
    #[arg(long = "connect", value_name = "ADDR", value_parser = ConnectRule::parse)]
    connect: Vec<ConnectRule>,
    /// Set this environment variable for the plugin (repeatable); nothing is inherited.
    #[arg(long = "env", value_name = "KEY=VALUE", value_parser = parse_env)]
    env: Vec<(String, String)>,
    /// Memory limit in MiB.
    #[arg(long, default_value_t = Sandbox::DEFAULT_MEMORY_MIB)]
    memory_mib: u32,
    /// Longest run without blocking, in milliseconds.
    #[arg(long, default_value_t = Sandbox::DEFAULT_CPU_SLICE_MS)]
    cpu_slice_ms: u32,
    /// Share of one core the plugin may use, in percent, averaged over `--cpu-window-secs`.
    #[arg(long, default_value_t = Sandbox::DEFAULT_CPU_PERCENT)]
    cpu_percent: u32,
    /// The window `--cpu-percent` is averaged over, in seconds.
    #[arg(long, default_value_t = Sandbox::DEFAULT_CPU_WINDOW_SECS)]
    cpu_window_secs: u32,
    /// Arguments for the plugin.
    #[arg(last = true)]
    args: Vec<String>,
}

fn parse_env(text: &str) -> Result<(String, String), String> {
    match text.split_once('=') {
        Some((key, value)) if !key.is_empty() => Ok((key.to_owned(), value.to_owned())),
        _ => Err(format!("`{text}` is not KEY=VALUE")),
    }
}

pub fn run(action: PluginAction, config: Option<&Config>, home: &Home) -> Result<(), String> {
    let tokio = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .map_err(|e| format!("cannot start the async runtime: {e}"))?;
    let result = match action {
        PluginAction::Install { file, name, force } => {
            tokio.block_on(install(home, &file, name.as_deref(), force))
        }
        PluginAction::List => tokio.block_on(list(home)),
        PluginAction::Remove { name } => Registry::of(home)
            .remove(&name)
            .map(|file| outln!("removed plugin `{name}` ({})", file.display()))
            .map_err(|e| e.to_string()),
        PluginAction::Check { file } => tokio.block_on(check(&file, config, home)),
        PluginAction::Run(args) => tokio.block_on(run_plugin(args)),
        PluginAction::Test(args) => tokio.block_on(test_plugin(args)),
        PluginAction::New { name, lang, dir } => crate::new::run(&name, lang, dir.as_deref()),
    };
    // tokio reads stdin on a blocking thread that no shutdown can interrupt: waiting for it
    // would keep `plugin run` alive after a `shutdown` event until its stdin closes.
    tokio.shutdown_background();
    result
}

fn source(file: &str) -> Result<PluginSource, String> {
    if let Some(name) = file.strip_prefix(nightcrow_builtin::PREFIX) {
        let bytes = nightcrow_builtin::lookup(file).ok_or_else(|| {
            format!(
                "there is no {file}; built in: {}",
                nightcrow_builtin::NAMES.join(", ")
            )
        })?;
        return Ok(PluginSource::Builtin {
            name: name.to_owned(),
            bytes: bytes.into(),
        });
    }
    Ok(PluginSource::Path(PathBuf::from(file)))
}

fn runtime() -> Result<PluginRuntime, String> {
    PluginRuntime::new(RuntimeConfig::user_default()).map_err(|e| e.to_string())
}

async fn install(home: &Home, file: &Path, name: Option<&str>, force: bool) -> Result<(), String> {
    let (installed, imports) = Registry::of(home)
        .install(&runtime()?, file, name, force)
        .await
        .map_err(|e| e.to_string())?;
    outln!(
        "installed {} as `{}` ({} bytes, sha256 {})",
        file.display(),
        installed.name,
        installed.size,
        installed.sha256
    );
    print_abilities(&imports);
    outln!(
        "The snippet below grants nothing: no directory, no connection, no environment \
         variable, default limits (64 MiB, 200 ms). Add grants only for what its author says \
         it needs, then set enabled = true.\n"
    );
    out!("{}", registry::config_snippet(&installed.name));
    Ok(())
}

/// What the plugin will be able to do once enabled, in words, then its imports.
fn print_abilities(imports: &[String]) {
    outln!("  once enabled it can:");
    for ability in nightcrow_plugin_host::abilities(imports) {
        outln!("    - {ability}");
    }
    outln!("  (imports: {})", imports.join(", "));
}

async fn list(home: &Home) -> Result<(), String> {
    let registry = Registry::of(home);
    let installed = registry.list().map_err(|e| e.to_string())?;
    if installed.is_empty() {
        outln!("no plugins installed in {}", registry.dir().display());
        return Ok(());
    }
    let runtime = runtime()?;
    for plugin in installed {
        let state = if plugin.intact {
            "matches"
        } else {
            "CHANGED since install; it will not run"
        };
        outln!(
            "{}  {} bytes  sha256 {} ({state})",
            plugin.name,
            plugin.size,
            plugin.sha256
        );
        match runtime.check(&PluginSource::Path(plugin.path)).await {
            Ok(imports) => print_abilities(&imports),
            Err(error) => outln!("  refused by the import audit: {error}"),
        }
    }
    Ok(())
}

async fn check(file: &str, config: Option<&Config>, home: &Home) -> Result<(), String> {
    let source = source(file)?;
    let imports = runtime()?
        .check(&source)
        .await
        .map_err(|e| format!("{file}: {e}"))?;
    outln!("{file}: loads, and imports only the plugin world:");
    for import in &imports {
        outln!("  {import}");
    }
    let granted: Vec<_> = config
        .map(|config| {
            config
                .plugins
                .iter()
                .filter(|plugin| names_file(&plugin.command, file, home))
                .collect()
        })
        .unwrap_or_default();
    if granted.is_empty() {
        outln!("no [[plugin]] in the config runs this file, so it is granted nothing");
    }
    for plugin in granted {
        let state = if plugin.enabled {
            "enabled"
        } else {
            "disabled"
        };
        outln!("[[plugin]] {:?} ({state}) would grant:", plugin.name);
        if plugin.runtime == RuntimeKind::Native {
            outln!("  everything: runtime = \"native\" runs it unsandboxed, as you");
            continue;
        }
        let keys: Vec<_> = plugin.env.iter().map(|(key, _)| key.as_str()).collect();
        let keys = if keys.is_empty() {
            "none".to_owned()
        } else {
            keys.join(", ")
        };
        outln!("  environment variables: {keys}");
        for (what, value) in plugin.sandbox.describe() {
            outln!("  {what}: {value}");
        }
    }
    Ok(())
}

fn names_file(command: &PluginCommand, file: &str, home: &Home) -> bool {
    match command {
        PluginCommand::Builtin(name) => file.strip_prefix(nightcrow_builtin::PREFIX) == Some(name),
        PluginCommand::Path(path) => same_file(path, Path::new(file)),
        PluginCommand::Installed(name) => {
            file == name
                || Registry::of(home)
                    .resolve(name)
                    .is_ok_and(|path| same_file(&path, Path::new(file)))
        }
    }
}

fn same_file(a: &Path, b: &Path) -> bool {
    match (a.canonicalize(), b.canonicalize()) {
        (Ok(a), Ok(b)) => a == b,
        _ => false,
    }
}

impl PluginArgs {
    fn spec(self) -> Result<PluginSpec, String> {
        Ok(PluginSpec {
            name: self.file.clone(),
            runtime: if self.native {
                RuntimeKind::Native
            } else {
                RuntimeKind::Wasm
            },
            source: source(&self.file)?,
            args: self.args,
            env: self.env,
            runtime_dir: std::env::temp_dir().join("nightcrow-plugin-run"),
            sandbox: Sandbox {
                read_dirs: self.read_dirs,
                connect: self.connect,
                memory_mib: self.memory_mib,
                cpu_slice_ms: self.cpu_slice_ms,
                cpu_percent: self.cpu_percent,
                cpu_window_secs: self.cpu_window_secs,
            },
        })
    }
}

async fn test_plugin(args: TestArgs) -> Result<(), String> {
    let spec = args.plugin.spec()?;
    let options = nightcrow_conformance::Options {
        idle_window: std::time::Duration::from_millis(args.idle_window_ms),
        ..nightcrow_conformance::Options::default()
    };
    let runtime = runtime()?;
    // A file that is no plugin at all has nothing to report on, rule by rule. (What does not
    // pass the import audit is the report's first failure.)
    if spec.runtime == RuntimeKind::Wasm
        && let Err(error @ (StartError::Read { .. } | StartError::NotWasm { .. })) =
            runtime.check(&spec.source).await
    {
        return Err(error.to_string());
    }
    let report = nightcrow_conformance::check(&runtime, &spec, &options).await;
    if args.json {
        let json = serde_json::to_string_pretty(&report).map_err(|e| e.to_string())?;
        outln!("{json}");
    } else {
        out!("{}", report.to_text());
    }
    if report.passed() {
        Ok(())
    } else {
        Err(format!(
            "{}: {} of {} conformance checks failed",
            spec.name,
            report.failed().len(),
            report.verdicts.len()
        ))
    }
}

async fn run_plugin(args: PluginArgs) -> Result<(), String> {
    let spec = args.spec()?;
    let mut plugin = runtime()?
        .start(&spec)
        .await
        .map_err(|e| format!("{}: {e}", spec.name))?;
    let mut events =
        nightcrow_protocol::AsyncLines::new(BufReader::new(tokio::io::stdin()), MAX_LINE_BYTES);
    let mut stdout = tokio::io::stdout();
    let mut stdin_open = true;
    loop {
        tokio::select! {
            frame = events.next_item(), if stdin_open => match frame {
                Ok(Some(LineItem::Line(line))) => match decode_event(&line) {
                    Ok(event) => {
                        if !plugin.send(event) {
                            eprintln!("event dropped: the plugin is not keeping up");
                        }
                    }
                    Err(error) => eprintln!("not an event, ignored: {error}"),
                },
                Ok(Some(other)) => eprintln!("stdin line ignored: {other:?}"),
                Ok(None) | Err(_) => {
                    stdin_open = false;
                    plugin.begin_shutdown();
                }
            },
            command = plugin.recv() => match command {
                Some(command) => {
                    let line = encode_command(&command).map_err(|e| e.to_string())?;
                    if let Err(error) = stdout
                        .write_all(line.as_bytes())
                        .await
                        .and(stdout.flush().await)
                    {
                        crate::exit_on_stdout_error(&error);
                    }
                }
                None => break,
            },
        }
    }
    let (cause, requested) = plugin.ended().await;
    if requested {
        Ok(())
    } else {
        Err(format!("{}: {cause}", spec.name))
    }
}

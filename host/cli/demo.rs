//! `nightcrow demo` (SPEC §8.3): a throw-away hub in a temp directory, one startup pane
//! running the scripted Codex stand-in of `examples/demo/codex`, and the bundled wasm
//! recovery plugin watching it with one grant — the temp sessions folder, read-only. The
//! stand-in hits a usage limit that resets a few seconds ahead and exits; the plugin waits
//! for the reset and has the pane relaunched with `resume <id>`. A transcript of what
//! happens is shown as it happens — in the TUI when stdout is a terminal (the countdown
//! marker on the pane's tab, the relaunch in the same tab), else as a printed transcript —
//! and the demo ends (exit 0) once the resumed pane runs. No accounts, no network.

use std::path::Path;
use std::sync::Arc;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use nightcrow_client_protocol::{ClientRequest, Frame, HubMessage};
use nightcrow_hub::relay::{Inbound, PeerGone, Transport, relay};
use nightcrow_hub::{Hub, HubConfig, HubPlugin, StartupCommand};
use nightcrow_pane::Shell;
use nightcrow_plugin_host::{
    PluginRuntime, PluginSource, PluginSpec, RuntimeConfig, RuntimeKind, Sandbox,
};

use crate::Failure;

const STAND_IN: &str = include_str!("../../examples/demo/codex");
/// Seconds until the stand-in's limit resets (the plugin adds its 30 s margin).
const RESET_IN_SECS: u32 = 10;
/// The whole demo takes about 45 s; past this something is broken.
const GIVE_UP_AFTER: Duration = Duration::from_secs(180);

/// How long the TUI keeps showing the resumed pane before the demo ends.
const LINGER: Duration = Duration::from_secs(4);

pub fn run(tui: bool) -> Result<(), Failure> {
    if cfg!(windows) {
        return Err(Failure::from(
            "the demo's Codex stand-in is a POSIX shell script; run it on Linux or macOS"
                .to_owned(),
        ));
    }
    let scratch = tempfile::Builder::new()
        .prefix("nightcrow-demo-")
        .tempdir()
        .map_err(|e| format!("cannot create a temp directory: {e}"))?;
    let layout = Layout::create(scratch.path()).map_err(|e| e.to_string())?;
    let tokio = crate::daemon::tokio()?;
    let result = tokio.block_on(layout.watch(tui));
    tokio.shutdown_background();
    // After the TUI has given the terminal back, or as the transcript's last line.
    outln!("{}", result?);
    Ok(())
}

/// The demo's temp directory: `repo/` (the pane's cwd), `codex-home/` (the only folder the
/// plugin may read), `bin/` (the stand-in and the `codex` launcher that points it at
/// `codex-home`), `run/` (runtime dir).
struct Layout {
    repo: std::path::PathBuf,
    codex_home: std::path::PathBuf,
    launcher: std::path::PathBuf,
    run: std::path::PathBuf,
}

impl Layout {
    fn create(root: &Path) -> std::io::Result<Layout> {
        let layout = Layout {
            repo: root.join("repo"),
            codex_home: root.join("codex-home"),
            launcher: root.join("bin").join("codex"),
            run: root.join("run"),
        };
        for dir in [&layout.repo, &layout.codex_home, &root.join("bin")] {
            std::fs::create_dir_all(dir)?;
        }
        let stand_in = root.join("bin").join("codex-stand-in");
        write_executable(&stand_in, STAND_IN)?;
        // Named `codex`, so the plugin recognises the pane; the launcher carries the
        // stand-in's environment, so the pane's command reads as a person would type it.
        write_executable(
            &layout.launcher,
            &format!(
                "#!/bin/sh\nCODEX_HOME={} RESET_IN={RESET_IN_SECS} exec {} \"$@\"\n",
                quoted(&layout.codex_home),
                quoted(&stand_in)
            ),
        )?;
        Ok(layout)
    }

    fn hub_config(&self) -> HubConfig {
        let runtime_dir = nightcrow_pane::runtime_dir_for(&self.run, &self.repo);
        let mut config = HubConfig::new(self.repo.clone(), runtime_dir.clone());
        // A plain POSIX shell: the user's login shell could print anything first.
        config.shell = Shell {
            program: "/bin/sh".into(),
            command_args: vec!["-c".to_owned()],
        };
        config.startup_commands.push(StartupCommand {
            name: Some("codex".to_owned()),
            command: format!("{} exec 'fix the failing test'", quoted(&self.launcher)),
            plugin: Some("recovery".to_owned()),
        });
        let bytes = nightcrow_builtin::lookup("builtin:nightcrow-recovery")
            .expect("the recovery plugin is bundled");
        config.plugins.push(HubPlugin {
            spec: PluginSpec {
                name: "recovery".to_owned(),
                runtime: RuntimeKind::Wasm,
                source: PluginSource::Builtin {
                    name: "nightcrow-recovery".to_owned(),
                    bytes: Arc::from(bytes),
                },
                args: Vec::new(),
                env: vec![(
                    "CODEX_HOME".to_owned(),
                    self.codex_home.display().to_string(),
                )],
                runtime_dir,
                sandbox: Sandbox {
                    read_dirs: vec![self.codex_home.clone()],
                    ..Sandbox::default()
                },
            },
            allowed_resume_flags: vec!["resume".to_owned()],
            watch_on_signal: false,
            enabled: true,
        });
        config
    }

    /// Runs the hub and shows it until the relaunched pane is running; returns the line
    /// that ends the demo.
    async fn watch(&self, tui: bool) -> Result<String, String> {
        let narrate = !tui;
        if narrate {
            outln!("nightcrow demo: a scripted Codex hits its usage limit; the sandboxed");
            outln!("recovery plugin (wasm, allowed to read only the demo's sessions folder)");
            outln!("waits for the reset and resumes the session in its pane.\n");
        }
        let runtime = PluginRuntime::new(RuntimeConfig::user_default())
            .map_err(|e| format!("cannot start the plugin runtime: {e}"))?;
        let config = self.hub_config();
        nightcrow_daemon::mapping::precompile(&runtime, &config).await;
        let hub = Hub::spawn(config, runtime).map_err(|e| format!("cannot open: {e}"))?;
        let outcome = if tui {
            in_tui(hub.clone()).await
        } else {
            let mut demo = Demo::new(Story::new(narrate), None);
            relay(&hub, &mut demo).await;
            demo.outcome()
        };
        hub.shutdown().await;
        outcome
    }
}

/// The demo in the TUI: the relay hands the hub's frames to the TUI and its requests to the
/// hub; once the resumed pane runs (and a moment to see it), the relay ends, which closes the
/// attachment, and the TUI ends.
async fn in_tui(hub: nightcrow_hub::HubHandle) -> Result<String, String> {
    let (frames_tx, frames) = tokio::sync::mpsc::unbounded_channel();
    let (requests, requests_rx) = tokio::sync::mpsc::unbounded_channel();
    let story = tokio::spawn(async move {
        let mut demo = Demo::new(Story::new(false), Some((frames_tx, requests_rx)));
        relay(&hub, &mut demo).await;
        demo.outcome()
    });
    let options = nightcrow_tui::Options {
        leader: nightcrow_config::LeaderKey::default(),
        first_pane: nightcrow_tui::FirstPane::Existing,
        role: nightcrow_tui::Role::Demo,
        notify: nightcrow_config::TuiNotify::default(),
        mouse: true,
    };
    let ended = nightcrow_tui::run(nightcrow_tui::Attachment { frames, requests }, options)
        .await
        .map_err(|e| format!("the terminal: {e}"))?;
    if ended != nightcrow_tui::Outcome::Closed {
        // Its requests channel is closed with it, which ends the relay.
        return Ok("demo left before the recovery; nothing was kept".to_owned());
    }
    story.await.map_err(|e| e.to_string())?
}

/// The TUI's ends of an attachment, seen from the hub's side.
type TuiLink = (
    tokio::sync::mpsc::UnboundedSender<Frame>,
    tokio::sync::mpsc::UnboundedReceiver<ClientRequest>,
);

/// The demo's connection to its hub, a [`Transport`] for the same relay as the daemon's
/// socket and the web page's: every frame goes to the story, and to the TUI when it shows
/// the demo; the TUI's requests go to the hub. It ends the relay [`LINGER`] after the
/// recovery in the TUI (at once for the transcript), or after [`GIVE_UP_AFTER`] without one.
struct Demo {
    story: Story,
    tui: Option<TuiLink>,
    ticks: tokio::time::Interval,
    /// When the relay ends.
    until: tokio::time::Instant,
    /// The line that ends the demo, once known.
    ended: Option<Result<String, String>>,
}

impl Demo {
    fn new(story: Story, tui: Option<TuiLink>) -> Demo {
        Demo {
            story,
            tui,
            ticks: tokio::time::interval(Duration::from_secs(1)),
            until: tokio::time::Instant::now() + GIVE_UP_AFTER,
            ended: None,
        }
    }

    /// The line that ends the demo, after the relay ended.
    fn outcome(self) -> Result<String, String> {
        self.ended
            .unwrap_or_else(|| Err("the hub ended before the recovery".to_owned()))
    }
}

impl Transport for Demo {
    async fn send(&mut self, frame: Frame) -> Result<(), PeerGone> {
        if self.ended.is_none()
            && let Some(number) = self.story.tell(frame.clone())
        {
            self.ended = Some(Ok(format!(
                "\u{2714} recovered: the session was resumed in pane {number}."
            )));
            let linger = if self.tui.is_some() {
                LINGER
            } else {
                Duration::ZERO
            };
            self.until = tokio::time::Instant::now() + linger;
        }
        match &self.tui {
            Some((frames, _)) => frames.send(frame).map_err(|_| PeerGone),
            None => Ok(()),
        }
    }

    async fn recv(&mut self) -> Inbound {
        loop {
            tokio::select! {
                request = next_request(&mut self.tui) => return match request {
                    Some(request) => match serde_json::to_string(&request) {
                        Ok(text) => Inbound::Request(text),
                        Err(error) => Inbound::Refused(error.to_string()),
                    },
                    None => Inbound::Closed,
                },
                _ = self.ticks.tick() => self.story.countdown(),
                () = tokio::time::sleep_until(self.until) => {
                    self.ended.get_or_insert_with(|| Err(format!(
                        "no recovery within {GIVE_UP_AFTER:?}; run with NIGHTCROW_LOG=debug to see why"
                    )));
                    return Inbound::Closed;
                }
            }
        }
    }
}

/// The TUI's next request; pending forever for the transcript, which has no TUI.
async fn next_request(tui: &mut Option<TuiLink>) -> Option<ClientRequest> {
    match tui {
        Some((_, requests)) => requests.recv().await,
        None => std::future::pending().await,
    }
}

/// What the transcript has seen so far.
struct Story {
    /// Print the transcript (off while the TUI shows the demo).
    narrate: bool,
    /// The hub's pane ids in display order (what a pane is called is its place, as on the
    /// TUI's tabs), and the line of output being collected.
    panes: Vec<u64>,
    partial: String,
    /// The deadline of the current wait, and when the countdown last spoke.
    deadline: Option<i64>,
    last_countdown: Option<Instant>,
    relaunched: bool,
}

impl Story {
    fn new(narrate: bool) -> Story {
        Story {
            narrate,
            panes: Vec::new(),
            partial: String::new(),
            deadline: None,
            last_countdown: None,
            relaunched: false,
        }
    }

    fn say(&self, line: &str) {
        if self.narrate {
            outln!("{line}");
        }
    }

    /// Tells one frame; the resumed pane's number once it shows it carries on.
    fn tell(&mut self, frame: Frame) -> Option<String> {
        match frame {
            Frame::Message(HubMessage::Created {
                pane,
                title,
                replaces,
                ..
            }) => {
                // Only the startup pane opens by itself; the relaunch takes its place.
                let place = replaces.and_then(|old| self.panes.iter().position(|p| *p == old));
                self.relaunched = place.is_some();
                match place {
                    Some(index) => self.panes[index] = pane,
                    None => self.panes.push(pane),
                }
                let title = title.unwrap_or_else(|| "shell".to_owned());
                let number = self.number(pane);
                if self.relaunched {
                    self.say(&format!(
                        "▶ pane {number} ({title}) started again: the relaunched session"
                    ));
                } else {
                    self.say(&format!("▶ pane {number} ({title}) started"));
                }
            }
            Frame::Output { pane, bytes } => {
                self.partial.push_str(&String::from_utf8_lossy(&bytes));
                while let Some(end) = self.partial.find('\n') {
                    let line: String = self.partial.drain(..=end).collect();
                    let line = line.trim_end();
                    if !line.is_empty() {
                        self.say(&format!("  │ pane {}: {line}", self.number(pane)));
                    }
                    if self.relaunched && line.contains("carrying on") {
                        self.say("");
                        return Some(self.number(pane));
                    }
                }
            }
            Frame::Message(HubMessage::Exited { pane, code, .. }) => {
                let code = code.map_or("a signal".to_owned(), |code| format!("code {code}"));
                self.say(&format!("■ pane {} exited ({code})", self.number(pane)));
            }
            // The hold of a replaced pane ends with it; its successor speaks for the session.
            Frame::Message(HubMessage::Recovery(report)) if !self.panes.contains(&report.pane) => {}
            Frame::Message(HubMessage::Recovery(report)) => {
                let mut line = format!(
                    "◆ recovery, pane {}: {}",
                    self.number(report.pane),
                    report.state
                );
                if let Some(detail) = &report.detail {
                    line.push_str(&format!(" — {detail}"));
                }
                if let Some(deadline) = report.deadline_epoch {
                    line.push_str(&format!(" (acts in {} s)", seconds_until(deadline)));
                }
                if report.attempt > 0 {
                    line.push_str(&format!(", attempt {}", report.attempt));
                }
                self.say(&line);
                self.deadline = match report.state.as_str() {
                    "waiting_for_reset" => report.deadline_epoch,
                    _ => None,
                };
            }
            Frame::Message(HubMessage::Attention { pane }) => {
                self.say(&format!("🔔 pane {} wants you back", self.number(pane)));
            }
            Frame::Message(HubMessage::Plugin {
                name,
                state,
                detail,
            }) => self.say(&format!(
                "plugin {name}: {state}{}",
                detail.map(|d| format!(" ({d})")).unwrap_or_default()
            )),
            Frame::Message(HubMessage::Error { message }) => self.say(&format!("error: {message}")),
            Frame::Message(
                HubMessage::Hello { .. }
                | HubMessage::Live
                | HubMessage::Resized { .. }
                | HubMessage::Title { .. }
                | HubMessage::Closed { .. },
            ) => {}
        }
        None
    }

    /// The pane's place in display order, from 1; a pane already gone keeps its id.
    fn number(&self, pane: u64) -> String {
        self.panes
            .iter()
            .position(|p| *p == pane)
            .map_or_else(|| format!("#{pane}"), |index| (index + 1).to_string())
    }

    /// Every 5 s while a wait with a deadline runs: how long is left.
    fn countdown(&mut self) {
        let Some(deadline) = self.deadline else {
            return;
        };
        let due = self
            .last_countdown
            .is_none_or(|last| last.elapsed() >= Duration::from_secs(5));
        let left = seconds_until(deadline);
        if due && left > 0 {
            self.say(&format!(
                "  ⏳ {left} s until the plugin acts (limit reset + its 30 s margin)"
            ));
            self.last_countdown = Some(Instant::now());
        }
    }
}

fn seconds_until(epoch: i64) -> i64 {
    let now = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |since| since.as_secs() as i64);
    (epoch - now).max(0)
}

/// `path` as one single-quoted POSIX shell word.
fn quoted(path: &Path) -> String {
    format!("'{}'", path.display().to_string().replace('\'', r"'\''"))
}

fn write_executable(path: &Path, text: &str) -> std::io::Result<()> {
    std::fs::write(path, text)?;
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o755))?;
    }
    Ok(())
}

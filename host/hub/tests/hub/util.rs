//! Harness: a hub in a temp repository with short timers, an attached client, captured logs.

use std::path::PathBuf;
use std::time::Duration;

use nightcrow_client_protocol::{Frame, HubMessage};
use nightcrow_guard::PaneId;
use nightcrow_hub::{Client, Hub, HubConfig, HubHandle, HubPlugin, StartupCommand};
use nightcrow_pane::Shell;
use nightcrow_plugin_host::{
    PluginRuntime, PluginSource, PluginSpec, RestartPolicy, RuntimeKind, Sandbox,
};
use nightcrow_protocol::{Event, Token, decode_event};
use nightcrow_test_plugin_artifacts::Guest;
pub use nightcrow_test_support::{logged, logs_of, wait_logs, within, within_longer};

/// The hub's idle threshold in tests (the spec's 10 s would make every test slow).
pub const IDLE: Duration = Duration::from_millis(200);

/// This binary's plugin runtime, its compilation cache under the test target folder.
pub fn runtime() -> PluginRuntime {
    let cache_dir = || PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("hub-wasmtime-cache");
    nightcrow_test_support::runtime(cache_dir).clone()
}

/// A plugin from a test guest, enabled, with no grants.
pub fn plugin(name: &str, guest: Guest, kind: RuntimeKind, args: &[&str]) -> HubPlugin {
    let path = match kind {
        RuntimeKind::Wasm => guest.wasm,
        RuntimeKind::Native => guest.native.expect("a native build"),
    };
    HubPlugin {
        spec: PluginSpec {
            name: name.to_owned(),
            runtime: kind,
            source: PluginSource::Path(PathBuf::from(path)),
            args: args.iter().map(|arg| (*arg).to_owned()).collect(),
            env: Vec::new(),
            runtime_dir: std::env::temp_dir().join("nightcrow-hub-tests").join(name),
            sandbox: Sandbox::default(),
        },
        allowed_resume_flags: vec!["resume".to_owned()],
        watch_on_signal: false,
        enabled: true,
    }
}

/// The scripted guest (`tests/plugins/src/bin/scripted.rs`) as wasm.
pub fn scripted(name: &str, args: &[&str]) -> HubPlugin {
    scripted_on(name, RuntimeKind::Wasm, args)
}

/// The scripted guest on `kind`.
pub fn scripted_on(name: &str, kind: RuntimeKind, args: &[&str]) -> HubPlugin {
    plugin(name, nightcrow_test_plugin_artifacts::SCRIPTED, kind, args)
}

/// `command`, once the test calls [`TestHub::go`]: a pane that exits at once would otherwise
/// exit (and be held, relaunched or expire) before the test's client is attached, and the
/// attach replay lists running panes only.
pub fn after_go(command: &str) -> String {
    format!("until [ -e go ]; do sleep 0.01; done; {command}")
}

pub fn startup(name: &str, command: &str, plugin: Option<&str>) -> StartupCommand {
    StartupCommand {
        name: Some(name.to_owned()),
        command: command.to_owned(),
        plugin: plugin.map(str::to_owned),
    }
}

/// A hub under test with one attached client; the temp repository lives as long as it.
pub struct TestHub {
    pub hub: HubHandle,
    pub client: Watcher,
    pub config: HubConfig,
    repo: tempfile::TempDir,
}

impl TestHub {
    /// A config for a fresh temp repository: `/bin/sh -c`, [`IDLE`], quick restarts.
    pub fn config() -> (HubConfig, tempfile::TempDir) {
        let repo = tempfile::tempdir().expect("temp repo");
        let runtime_dir = repo.path().join(".run");
        let mut config = HubConfig::new(repo.path().to_path_buf(), runtime_dir);
        config.shell = Shell {
            program: PathBuf::from("/bin/sh"),
            command_args: vec!["-c".to_owned()],
        };
        config.guard_limits = config.guard_limits.with_idle_threshold(IDLE);
        config.restart_policy = RestartPolicy {
            first_backoff: Duration::from_millis(50),
            ..RestartPolicy::default()
        };
        (config, repo)
    }

    pub async fn start(config: HubConfig, repo: tempfile::TempDir) -> TestHub {
        let hub = Hub::spawn(config.clone(), runtime()).expect("hub spawns");
        TestHub::attach(hub, config, repo).await
    }

    /// Attaches the test's client to a hub spawned elsewhere (e.g. on another runtime).
    pub async fn attach(hub: HubHandle, config: HubConfig, repo: tempfile::TempDir) -> TestHub {
        let client = Watcher::new(within("attach", hub.attach()).await.expect("attach"));
        TestHub {
            hub,
            client,
            config,
            repo,
        }
    }

    /// The pane created for startup command number `n` (in config order): the `n`-th
    /// `created` the client got, since startup panes open before the client attaches.
    pub async fn startup_pane(&mut self, n: usize) -> PaneId {
        PaneId::new(self.client.nth_created(n).await)
    }

    /// Lets the panes started with [`after_go`] run.
    pub fn go(&self) {
        self.touch("go");
    }

    /// Creates the empty file `name` in the repository (what waiting panes look for).
    pub fn touch(&self, name: &str) {
        std::fs::write(self.repo.path().join(name), "").expect("a file in the repository");
    }

    pub async fn input(&self, pane: PaneId, data: &str) {
        within("input", self.hub.input(pane, data))
            .await
            .unwrap_or_else(|error| panic!("input to {pane}: {error}"));
    }

    pub async fn shutdown(self) {
        within("shutdown", self.hub.shutdown()).await;
    }
}

/// A client stream with what it has seen so far, so a test can wait for one thing without
/// losing the others.
pub struct Watcher {
    pub client: Client,
    pub messages: Vec<HubMessage>,
    pub output: std::collections::HashMap<u64, Vec<u8>>,
    /// Messages before this index were already returned by [`Watcher::message`].
    consumed: usize,
}

impl Watcher {
    pub fn new(client: Client) -> Watcher {
        Watcher {
            client,
            messages: Vec::new(),
            output: Default::default(),
            consumed: 0,
        }
    }

    /// Takes the next frame into the record; `false` once the stream ended.
    pub async fn take_one(&mut self) -> bool {
        match self.client.recv().await {
            Some(Frame::Message(message)) => self.messages.push(message),
            Some(Frame::Output { pane, bytes }) => self
                .output
                .entry(pane)
                .or_default()
                .extend_from_slice(&bytes),
            None => return false,
        }
        true
    }

    /// Waits for the next message (after those already matched) that `pick` maps to a value.
    pub async fn message<T>(&mut self, mut pick: impl FnMut(&HubMessage) -> Option<T>) -> T {
        let mut checked = self.consumed;
        within("a client message", async {
            loop {
                while checked < self.messages.len() {
                    let found = pick(&self.messages[checked]);
                    checked += 1;
                    if let Some(found) = found {
                        self.consumed = checked;
                        return found;
                    }
                }
                assert!(self.take_one().await, "the client stream ended");
            }
        })
        .await
    }

    /// The `n`-th `created` pane of the stream; later [`Watcher::message`] calls start after it.
    pub async fn nth_created(&mut self, n: usize) -> u64 {
        within(&format!("created #{n}"), async {
            loop {
                let found = self
                    .messages
                    .iter()
                    .enumerate()
                    .filter_map(|(index, message)| match message {
                        HubMessage::Created { pane, .. } => Some((index, *pane)),
                        _ => None,
                    })
                    .nth(n);
                if let Some((index, pane)) = found {
                    self.consumed = self.consumed.max(index + 1);
                    return pane;
                }
                assert!(self.take_one().await, "the client stream ended");
            }
        })
        .await
    }

    /// Waits until a message equal to `expected` has arrived (at any time).
    pub async fn saw(&mut self, expected: HubMessage) {
        within(&format!("{expected:?}"), async {
            while !self.messages.contains(&expected) {
                assert!(self.take_one().await, "the client stream ended");
            }
        })
        .await
    }

    /// Waits until the pane's output contains `needle`; returns the output as text.
    pub async fn output_contains(&mut self, pane: PaneId, needle: &str) -> String {
        within(&format!("{needle:?} in the output of pane {pane}"), async {
            loop {
                let text = String::from_utf8_lossy(
                    self.output.get(&pane.get()).map_or(&[][..], Vec::as_slice),
                )
                .into_owned();
                if text.contains(needle) {
                    return text;
                }
                assert!(self.take_one().await, "the client stream ended");
            }
        })
        .await
    }
}

/// Every event the scripted plugin `plugin` has reported receiving, in order.
pub fn events_of(plugin: &str) -> Vec<Event> {
    logs_of(plugin)
        .into_iter()
        .filter_map(|line| {
            let text = line.plugin_text?;
            let json = text.strip_prefix("event ")?;
            decode_event(json).ok()
        })
        .collect()
}

/// Waits until the scripted plugin reports an event `pick` accepts; returns it.
pub async fn event<T>(plugin: &str, mut pick: impl FnMut(&Event) -> Option<T>) -> T {
    wait_logs(&format!("an event reported by {plugin}"), || {
        events_of(plugin).iter().find_map(&mut pick)
    })
    .await
}

/// Waits until the scripted plugin has reported `count` events `pick` accepts.
pub async fn events<T>(
    plugin: &str,
    count: usize,
    mut pick: impl FnMut(&Event) -> Option<T>,
) -> Vec<T> {
    wait_logs(&format!("{count} events reported by {plugin}"), || {
        let found: Vec<T> = events_of(plugin).iter().filter_map(&mut pick).collect();
        (found.len() >= count).then_some(found)
    })
    .await
}

/// The token of the pane opened for `plugin` with title `title`.
pub async fn opened_token(plugin: &str, title: &str) -> (Token, u32) {
    event(plugin, |event| match event {
        Event::PaneOpened {
            token,
            generation,
            title: Some(t),
            ..
        } if t == title => Some((token.clone(), *generation)),
        _ => None,
    })
    .await
}

//! The repository hub of nightcrow (SPEC §6): one worker task per open repository that owns
//! its PTY panes, its plugin instances, the one [`Guard`](nightcrow_guard::Guard), the
//! owners of panes, the panes opted into a plugin by a startup command, and the relaunch
//! holds. Everything else talks to it through a [`HubHandle`], whose calls are messages on a
//! bounded queue; clients get an ordered, bounded [`Client`] stream of [`Frame`](nightcrow_client_protocol::Frame)s.
//!
//! **Invariants:**
//! - the only path from a plugin's request to a pane is `Supervisor` → facts resolved from
//!   the token → `Guard::judge` → a match on the `Approved` value; a refusal is logged and
//!   goes nowhere else;
//! - PTY output is never held back by a client or a plugin: a client that falls behind is
//!   disconnected, events to a plugin are dropped and counted when its queue is full;
//! - plugins see tokens and generations, never pane ids, and never the pane token variable;
//! - wherever a relaunch hold ends, clients get `recovery` with state `cancelled`.
//!
//! It refuses to know about config files and sockets: the daemon maps its configuration to
//! a [`HubConfig`] and carries [`Frame`](nightcrow_client_protocol::Frame)s to its transports. What clients are sent and may
//! ask is the client protocol crate's ([`nightcrow_client_protocol`]).
//!
//! ```no_run
//! # async fn demo(runtime: nightcrow_plugin_host::PluginRuntime) -> Result<(), nightcrow_hub::HubError> {
//! use nightcrow_client_protocol::{Frame, HubMessage};
//! use nightcrow_hub::{Hub, HubConfig};
//!
//! let config = HubConfig::new("/srv/repo".into(), "/run/user/1000/nightcrow/0123456789abcdef".into());
//! let hub = Hub::spawn(config, runtime)?;
//! let mut client = hub.attach().await?;
//! let pane = hub.create(None, None).await?;
//! hub.input(pane, "echo hi\r").await?;
//! while let Some(frame) = client.recv().await {
//!     match frame {
//!         Frame::Message(message) => println!("{}", message.to_json()),
//!         Frame::Output { pane, bytes } => {
//!             let wire = nightcrow_client_protocol::output_frame(pane, &bytes);
//! #           drop(wire);
//!         }
//!     }
//! }
//! hub.shutdown().await;
//! # Ok(()) }
//! ```
#![forbid(unsafe_code)]

mod clock;
mod config;
mod frames;
mod handle;
pub mod relay;
mod snapshot;
mod worker;

use nightcrow_plugin_host::PluginRuntime;
use tokio::sync::mpsc;

pub use config::{HubConfig, HubPlugin, PENDING_RELAUNCH_TTL, StartupCommand};
pub use frames::CLIENT_QUEUE_BYTES;
pub use handle::{
    Client, HoldStatus, HubError, HubHandle, HubStatus, PaneStatus, PluginStatus, REQUEST_QUEUE,
    ReloadReport, RequestOutcome,
};
pub use snapshot::{Charged, HubSnapshot, PaneExit, PaneSnapshot, SCREEN_EVERY};

/// Starts hubs.
pub struct Hub;

impl Hub {
    /// Creates the runtime dir and the pane table, opens the startup panes, then starts the
    /// worker task, which starts the plugins that should run. Must be called inside a
    /// tokio runtime. Fails only when the repository root or the runtime dir is unusable.
    pub fn spawn(config: HubConfig, runtime: PluginRuntime) -> Result<HubHandle, HubError> {
        Hub::spawn_restored(config, runtime, Vec::new())
    }

    /// [`spawn`](Self::spawn), taking back the panes a previous daemon journaled
    /// (docs/hub.md, "After a restart"): each is shown exited with its last screen, and held
    /// for its plugin when the config still names one for its startup command. Startup
    /// commands with a restored pane are not opened again.
    pub fn spawn_restored(
        config: HubConfig,
        runtime: PluginRuntime,
        restored: Vec<PaneSnapshot>,
    ) -> Result<HubHandle, HubError> {
        let (requests, receiver) = mpsc::channel(REQUEST_QUEUE);
        let worker =
            worker::Worker::new(config, runtime, requests.downgrade(), receiver, restored)?;
        let snapshots = worker.snapshots();
        let notices = worker.notice_sender();
        tokio::spawn(worker.run());
        Ok(HubHandle {
            requests,
            snapshots,
            notices,
        })
    }
}

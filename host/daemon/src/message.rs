//! The daemon's answers made from its hubs' reports: the typed messages themselves live in
//! the client protocol crate ([`nightcrow_client_protocol::daemon`]), which the CLI shares.

use std::path::Path;

use nightcrow_client_protocol::daemon::{
    HoldEntry, PaneEntry, PluginEntry, PluginPhase, RepoReload, RepoStatus,
};
use nightcrow_hub::{HubStatus, ReloadReport};
use nightcrow_plugin_host::PluginState;

use crate::mapping::UnusablePlugin;

/// One open repository as a `status` answer shows it.
pub fn repo_status(repo: &Path, status: &HubStatus) -> RepoStatus {
    let panes = status
        .panes
        .iter()
        .map(|pane| PaneEntry {
            pane: pane.pane.get(),
            title: pane.title.clone(),
            program_title: pane.program_title.clone(),
            generation: pane.generation,
            alive: pane.alive,
            owner: pane.owner.clone(),
        })
        .collect();
    let plugins = status
        .plugins
        .iter()
        .map(|plugin| {
            let state = match (&plugin.health, plugin.gave_up) {
                (_, true) => PluginPhase::GaveUp,
                (None, false) => PluginPhase::Restarting,
                (Some(health), false) => match &health.state {
                    PluginState::Running => PluginPhase::Running,
                    PluginState::Stopping => PluginPhase::Stopping,
                    PluginState::Ended { cause, .. } => PluginPhase::Ended {
                        cause: cause.to_string(),
                    },
                },
            };
            PluginEntry {
                name: plugin.name.clone(),
                state,
                dropped_events: plugin.health.as_ref().map_or(0, |h| h.dropped_events),
                rejected_lines: plugin.health.as_ref().map_or(0, |h| h.rejected_lines),
            }
        })
        .collect();
    let holds = status
        .holds
        .iter()
        .map(|hold| HoldEntry {
            pane: hold.pane.get(),
            expires_in_secs: hold.expires_in.as_secs(),
            report: hold.report.clone(),
        })
        .collect();
    RepoStatus {
        repo: repo.to_owned(),
        panes,
        plugins,
        holds,
    }
}

/// What a `reload` changed in one open repository, with the plugins it could not run.
pub fn repo_reload(repo: &Path, report: ReloadReport, unusable: &[UnusablePlugin]) -> RepoReload {
    RepoReload {
        repo: repo.to_owned(),
        started: report.started,
        stopped: report.stopped,
        restarted: report.restarted,
        retired: report.retired.iter().map(|pane| pane.get()).collect(),
        failed: report.failed,
        unusable: unusable.iter().map(ToString::to_string).collect(),
    }
}

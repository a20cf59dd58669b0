//! The daemon's file descriptors: the soft limit is raised to the hard one at start (Unix),
//! and the web client may hold at most a quarter of them, so however many connections a
//! neighbour opens to the web port, the control socket, panes and plugins keep the rest
//! (and each wasm plugin at most `MAX_HANDLES` of them, enforced in the plugin host).

/// Raises the soft limit on open files to the hard limit; returns the soft limit now in
/// force (`None` where there is none, or off Unix).
pub fn raise_open_files_limit() -> Option<u64> {
    #[cfg(unix)]
    {
        use rustix::process::{Resource, Rlimit, getrlimit, setrlimit};
        let limit = getrlimit(Resource::Nofile);
        // macOS refuses a soft limit above OPEN_MAX even when the hard one is unlimited.
        let ceiling = if cfg!(target_os = "macos") {
            10_240
        } else {
            u64::MAX
        };
        let wanted = limit.maximum.map_or(ceiling, |hard| hard.min(ceiling));
        if limit.current.is_some_and(|soft| soft < wanted) {
            let raised = Rlimit {
                current: Some(wanted),
                maximum: limit.maximum,
            };
            if let Err(error) = setrlimit(Resource::Nofile, raised) {
                tracing::warn!(%error, "could not raise the open-files limit");
            }
        }
        getrlimit(Resource::Nofile).current
    }
    #[cfg(not(unix))]
    {
        None
    }
}

/// The web client's connection cap: what the config says, but at most a quarter of the
/// open-files limit (and at least one).
pub fn web_connection_cap(configured: usize, open_files: Option<u64>) -> usize {
    let share = open_files
        .map(|limit| usize::try_from(limit / 4).unwrap_or(usize::MAX))
        .unwrap_or(usize::MAX);
    configured.min(share).max(1)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_web_gets_at_most_a_quarter() {
        assert_eq!(web_connection_cap(64, Some(1024)), 64);
        assert_eq!(web_connection_cap(64, Some(128)), 32);
        assert_eq!(web_connection_cap(64, Some(2)), 1);
        assert_eq!(web_connection_cap(64, None), 64);
    }

    #[cfg(unix)]
    #[test]
    fn the_soft_limit_ends_at_the_hard_one() {
        let soft = raise_open_files_limit().expect("a limit on Unix");
        let hard = rustix::process::getrlimit(rustix::process::Resource::Nofile).maximum;
        assert!(hard.is_none_or(|hard| soft == hard || cfg!(target_os = "macos")));
    }
}

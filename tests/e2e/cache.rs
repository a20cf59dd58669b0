//! The compilation cache: a daemon restart loads compiled code instead of compiling again,
//! a supervised restart reuses it from memory, and a cache directory others can write is
//! refused (wasmtime would load native code from it).

use nightcrow_plugin_host::{CacheStats, PluginRuntime, RuntimeConfig, RuntimeKind};
use nightcrow_test_plugin_artifacts::ECHO;

use crate::util::{spec, within};

async fn start_once(runtime: &PluginRuntime) {
    let started = within(
        "echo start",
        runtime.start(&spec("cache-echo", ECHO, RuntimeKind::Wasm, &[])),
    )
    .await
    .expect("echo starts");
    within("echo shutdown", started.shutdown()).await;
}

#[tokio::test]
async fn a_second_start_of_the_same_file_does_not_compile_again() {
    let _exclusive = crate::util::memory_exclusive().await;
    let dir = tempfile::tempdir().unwrap();
    let config = RuntimeConfig {
        cache_dir: Some(dir.path().join("cache")),
    };

    let first = PluginRuntime::new(config.clone()).unwrap();
    start_once(&first).await;
    let compiled = first.cache_stats();
    assert!(
        compiled.disk_misses > 0 && compiled.disk_hits == 0,
        "{compiled:?}"
    );
    start_once(&first).await;
    assert_eq!(
        first.cache_stats(),
        CacheStats {
            memory_hits: 1,
            ..compiled
        }
    );

    let restarted_daemon = PluginRuntime::new(config).unwrap();
    start_once(&restarted_daemon).await;
    let loaded = restarted_daemon.cache_stats();
    assert!(
        loaded.disk_hits > 0 && loaded.disk_misses == 0,
        "{loaded:?}"
    );
}

#[cfg(unix)]
#[test]
fn a_cache_directory_others_can_access_is_refused() {
    use std::os::unix::fs::PermissionsExt;
    let dir = tempfile::tempdir().unwrap();
    let cache = dir.path().join("cache");
    std::fs::create_dir(&cache).unwrap();
    std::fs::set_permissions(&cache, std::fs::Permissions::from_mode(0o777)).unwrap();
    let error = PluginRuntime::new(RuntimeConfig {
        cache_dir: Some(cache),
    })
    .unwrap_err();
    assert!(
        error
            .to_string()
            .contains("has mode 0777; it must be private"),
        "{error}"
    );
}

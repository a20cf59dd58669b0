//! The daemon's one wasmtime `Engine` and what hangs off it: its configuration, the epoch
//! ticker, the private on-disk compilation cache, the linkers, and the in-memory cache of
//! compiled plugins keyed by their bytes' SHA-256.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

use sha2::{Digest, Sha256};
use wasmtime::component::{Component, Linker as ComponentLinker};
use wasmtime::{Cache, CacheConfig, Config, Engine, Linker as ModuleLinker, Module};
use wasmtime_wasi::p2::bindings::CommandPre;

use crate::StartError;
use crate::audit::{offending_component_imports, offending_module_imports};
use crate::limits::Ticker;
use crate::sniff::{WasmLayer, wasm_layer};
use crate::spec::PluginSource;
use crate::wasm::{Compiled, ComponentState, ModuleState};

/// How the daemon's runtime is set up.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RuntimeConfig {
    /// Directory for wasmtime's compilation cache, created with mode 0700 if missing and
    /// refused if another user owns it or others can access it. `None`: compile every
    /// daemon start (tests that measure cold starts; machines without a cache dir).
    pub cache_dir: Option<PathBuf>,
}

impl RuntimeConfig {
    /// The per-user default: `<user cache dir>/nightcrow/wasmtime` (e.g.
    /// `~/.cache/nightcrow/wasmtime` on Linux), or no cache if there is no home directory.
    pub fn user_default() -> RuntimeConfig {
        let cache_dir = directories_next::ProjectDirs::from("", "", "nightcrow")
            .map(|dirs| dirs.cache_dir().join("wasmtime"));
        RuntimeConfig { cache_dir }
    }
}

/// Why the runtime could not be set up.
#[derive(Debug, thiserror::Error)]
pub enum RuntimeError {
    #[error("compilation cache directory {}: {message}", path.display())]
    CacheDir { path: PathBuf, message: String },
    #[error("wasmtime engine: {0}")]
    Engine(String),
}

/// Compilation cache counters (wasmtime's own, since this runtime was created).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct CacheStats {
    /// Compilations served from the on-disk cache.
    pub disk_hits: usize,
    /// Compilations that ran cranelift and were then stored.
    pub disk_misses: usize,
    /// Starts that reused a component already compiled by this runtime (no disk access).
    pub memory_hits: usize,
}

/// The engine, its caches and its linkers; shared (in an `Arc`) by every clone of the
/// runtime.
pub(crate) struct WasmEngine {
    engine: Engine,
    cache: Option<Cache>,
    component_linker: ComponentLinker<ComponentState>,
    module_linker: ModuleLinker<ModuleState>,
    compiled: Mutex<HashMap<[u8; 32], Compiled>>,
    memory_hits: AtomicUsize,
    ticker: Arc<Ticker>,
}

impl WasmEngine {
    /// Builds the engine (epoch interruption on, the cache if configured), the linkers, and
    /// starts the epoch ticker.
    pub(crate) fn new(config: &RuntimeConfig) -> Result<WasmEngine, RuntimeError> {
        let cache = match &config.cache_dir {
            Some(dir) => Some(open_cache(dir)?),
            None => None,
        };
        let mut wasm_config = Config::new();
        wasm_config.epoch_interruption(true);
        wasm_config.cache(cache.clone());
        let engine =
            Engine::new(&wasm_config).map_err(|e| RuntimeError::Engine(format!("{e:#}")))?;
        let mut component_linker = ComponentLinker::new(&engine);
        wasmtime_wasi::p2::add_to_linker_async(&mut component_linker)
            .map_err(|e| RuntimeError::Engine(format!("{e:#}")))?;
        let mut module_linker = ModuleLinker::new(&engine);
        wasmtime_wasi::p1::add_to_linker_async(&mut module_linker, |state: &mut ModuleState| {
            &mut state.wasi
        })
        .map_err(|e| RuntimeError::Engine(format!("{e:#}")))?;
        // Without ticks no guest is ever interrupted; the runtime must not run like that.
        let ticker = Ticker::start(&engine)
            .map_err(|e| RuntimeError::Engine(format!("cannot start the epoch ticker: {e}")))?;
        Ok(WasmEngine {
            engine,
            cache,
            component_linker,
            module_linker,
            compiled: Mutex::new(HashMap::new()),
            memory_hits: AtomicUsize::new(0),
            ticker,
        })
    }

    pub(crate) fn engine(&self) -> &Engine {
        &self.engine
    }

    pub(crate) fn ticker(&self) -> &Arc<Ticker> {
        &self.ticker
    }

    pub(crate) fn cache_dir(&self) -> Option<&Path> {
        self.cache.as_ref().map(|cache| cache.directory().as_path())
    }

    /// wasmtime's cache counters plus in-memory reuse.
    pub(crate) fn cache_stats(&self) -> CacheStats {
        let (disk_hits, disk_misses) = self
            .cache
            .as_ref()
            .map_or((0, 0), |cache| (cache.cache_hits(), cache.cache_misses()));
        CacheStats {
            disk_hits,
            disk_misses,
            memory_hits: self.memory_hits.load(Ordering::Relaxed),
        }
    }

    /// The compiled form of `source`: from memory if these bytes were compiled before, else
    /// compiled (or loaded from the disk cache) and audited on the blocking pool.
    pub(crate) async fn compile(
        self: &Arc<Self>,
        source: &PluginSource,
    ) -> Result<Compiled, StartError> {
        let bytes: Arc<[u8]> = match source {
            PluginSource::Builtin { bytes, .. } | PluginSource::Installed { bytes, .. } => {
                bytes.clone()
            }
            PluginSource::Path(path) => tokio::fs::read(path)
                .await
                .map_err(|error| StartError::Read {
                    path: path.clone(),
                    message: error.to_string(),
                })?
                .into(),
        };
        // Keyed by content, never by path: a file replaced in place is a new plugin.
        let key: [u8; 32] = Sha256::digest(&bytes).into();
        if let Some(compiled) = self.lookup(&key) {
            self.memory_hits.fetch_add(1, Ordering::Relaxed);
            return Ok(compiled);
        }
        let inner = self.clone();
        let label = source.to_string();
        let compiled = tokio::task::spawn_blocking(move || inner.compile_blocking(&bytes, &label))
            .await
            .map_err(|error| StartError::Compile {
                message: error.to_string(),
            })??;
        self.compiled
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
            .insert(key, compiled.clone());
        Ok(compiled)
    }

    fn lookup(&self, key: &[u8; 32]) -> Option<Compiled> {
        self.compiled
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
            .get(key)
            .cloned()
    }

    fn compile_blocking(&self, bytes: &[u8], label: &str) -> Result<Compiled, StartError> {
        let compile_error = |error: wasmtime::Error| StartError::Compile {
            message: format!("{error:#}"),
        };
        let link_error = |error: wasmtime::Error| StartError::NotACommand {
            message: format!("{error:#}"),
        };
        match wasm_layer(bytes) {
            Some(WasmLayer::Component) => {
                let component = Component::new(&self.engine, bytes).map_err(compile_error)?;
                let offending = offending_component_imports(&self.engine, &component);
                if !offending.is_empty() {
                    return Err(StartError::ImportsRefused { offending });
                }
                let pre = self
                    .component_linker
                    .instantiate_pre(&component)
                    .map_err(link_error)?;
                Ok(Compiled::Component(
                    CommandPre::new(pre).map_err(link_error)?,
                ))
            }
            Some(WasmLayer::Module) => {
                let module = Module::new(&self.engine, bytes).map_err(compile_error)?;
                let offending = offending_module_imports(&module);
                if !offending.is_empty() {
                    return Err(StartError::ImportsRefused { offending });
                }
                if module.get_export("_start").is_none() {
                    return Err(StartError::NotACommand {
                        message: "core module exports no `_start`".to_owned(),
                    });
                }
                let pre = self
                    .module_linker
                    .instantiate_pre(&module)
                    .map_err(link_error)?;
                Ok(Compiled::Module(pre))
            }
            None => Err(StartError::NotWasm {
                plugin: label.to_owned(),
            }),
        }
    }
}

/// Creates the cache directory private to this user and refuses one that is not: wasmtime
/// loads native code from it, so whoever can write there can run code in the daemon.
fn open_cache(dir: &Path) -> Result<Cache, RuntimeError> {
    let refuse = |message: String| RuntimeError::CacheDir {
        path: dir.to_owned(),
        message,
    };
    nightcrow_trust::ensure_private_dir(dir).map_err(refuse)?;
    let mut config = CacheConfig::new();
    config.with_directory(dir);
    Cache::new(config).map_err(|error| refuse(format!("{error:#}")))
}

//! The plugin runtime as the rest of the daemon sees it: [`PluginRuntime`] starts a plugin
//! on the wasm or the native runtime, checks a wasm plugin without starting it, and reports
//! the compilation cache's counters. The engine behind it is in [`crate::engine`].

use std::sync::Arc;

use crate::engine::{CacheStats, RuntimeConfig, RuntimeError, WasmEngine};
use crate::plugin::Plugin;
use crate::spec::{PluginSource, PluginSpec, RuntimeKind};
use crate::wasm::Compiled;
use crate::{StartError, native, wasm};

/// One per daemon: shared by every hub, every plugin instance and every restart.
///
/// Cheap to clone. Creating it starts the epoch ticker thread, which ends when the last
/// clone and the last instance are gone.
#[derive(Clone)]
pub struct PluginRuntime {
    inner: Arc<WasmEngine>,
}

impl std::fmt::Debug for PluginRuntime {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PluginRuntime")
            .field("cache_dir", &self.inner.cache_dir())
            .field("cache", &self.cache_stats())
            .finish()
    }
}

impl PluginRuntime {
    /// Builds the engine (epoch interruption on, the cache if configured), the linkers, and
    /// starts the epoch ticker.
    pub fn new(config: RuntimeConfig) -> Result<PluginRuntime, RuntimeError> {
        Ok(PluginRuntime {
            inner: Arc::new(WasmEngine::new(&config)?),
        })
    }

    /// Starts one instance of `spec`. Must be called inside a tokio runtime (the pumps and
    /// the wasm task run on it); compiling runs on the blocking pool.
    pub async fn start(&self, spec: &PluginSpec) -> Result<Plugin, StartError> {
        let launched = match spec.runtime {
            RuntimeKind::Wasm => {
                let compiled = self.inner.compile(&spec.source).await?;
                wasm::launch(self.inner.engine(), self.inner.ticker(), compiled, spec)?
            }
            RuntimeKind::Native => native::launch(spec)?,
        };
        Ok(Plugin::from_launched(&spec.name, launched))
    }

    /// Compiles (or reuses) and audits a wasm plugin without starting it: what `nightcrow
    /// plugin check` reports. Returns the imports it passed the audit with; errors name the
    /// offending ones.
    pub async fn check(&self, source: &PluginSource) -> Result<Vec<String>, StartError> {
        let imports = match self.inner.compile(source).await? {
            Compiled::Component(pre) => pre
                .instance_pre()
                .component()
                .component_type()
                .imports(self.inner.engine())
                .map(|(name, _)| name.to_owned())
                .collect(),
            Compiled::Module(pre) => pre
                .module()
                .imports()
                .map(|import| format!("{}::{}", import.module(), import.name()))
                .collect(),
        };
        Ok(imports)
    }

    /// wasmtime's cache counters plus in-memory reuse.
    pub fn cache_stats(&self) -> CacheStats {
        self.inner.cache_stats()
    }
}

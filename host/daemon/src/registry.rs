//! Installed plugins: `$NIGHTCROW_HOME/plugins/<name>.wasm`, each beside a `<name>.sha256`
//! recorded at install (in `sha256sum` format, so `sha256sum -c` checks it too).
//!
//! A config names an installed plugin by its bare name. The daemon runs it only if the file
//! still has the hash it was installed with: a file swapped behind the registry's back is
//! refused, not run with the grants the user gave the original. [`Registry::load`] reads the
//! file once and hands out the bytes it checked, so what runs (at every start and restart)
//! is exactly what was checked, never a later read of the same path.

use std::io::Read;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use nightcrow_client::Home;
use nightcrow_plugin_host::{PluginRuntime, PluginSource};
use sha2::{Digest, Sha256};

/// Longest accepted plugin name (SPEC §7).
pub const MAX_NAME_LEN: usize = 64;
/// Larger files are refused before reading them whole; real components are a few MiB.
pub const MAX_PLUGIN_BYTES: u64 = 256 * 1024 * 1024;

/// Why a registry operation failed. Each message names the file or plugin it is about.
#[derive(Debug, thiserror::Error)]
pub enum RegistryError {
    #[error(
        "`{0}` is not a valid plugin name: use 1 to {MAX_NAME_LEN} of A-Z a-z 0-9 . _ -, not starting with `-`"
    )]
    BadName(String),
    #[error("{0}: not a WebAssembly component or core module (no `\\0asm` header)")]
    NotWasm(PathBuf),
    #[error("{path}: larger than {MAX_PLUGIN_BYTES} bytes")]
    TooLarge { path: PathBuf },
    #[error("{path}: refused by the import audit: {message}")]
    Audit { path: PathBuf, message: String },
    #[error("a plugin named `{0}` is installed already; pass --force to replace it")]
    Exists(String),
    #[error("no plugin named `{0}` is installed (see `nightcrow plugin list`)")]
    NotInstalled(String),
    #[error(
        "{path}: changed since it was installed (sha256 {actual}, installed as {recorded}); reinstall it to trust the new file"
    )]
    Modified {
        path: PathBuf,
        recorded: String,
        actual: String,
    },
    #[error("{path}: {source}")]
    Io {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("{path}: {message}")]
    Untrusted { path: PathBuf, message: String },
}

fn io(path: &Path) -> impl FnOnce(std::io::Error) -> RegistryError + '_ {
    move |source| RegistryError::Io {
        path: path.to_owned(),
        source,
    }
}

/// One installed plugin as `plugin list` shows it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Installed {
    pub name: String,
    pub path: PathBuf,
    pub size: u64,
    /// The hash recorded at install.
    pub sha256: String,
    /// Whether the file still has that hash.
    pub intact: bool,
}

/// The plugins folder of one nightcrow home.
#[derive(Debug, Clone)]
pub struct Registry {
    dir: PathBuf,
}

impl Registry {
    /// The registry in `home`'s plugins folder.
    pub fn of(home: &Home) -> Registry {
        Registry {
            dir: home.plugins(),
        }
    }

    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// Copies `file` in as `name` (default: the file's stem) after checking that it is wasm
    /// and passes the import audit; records its hash. Returns the entry and the imports.
    pub async fn install(
        &self,
        runtime: &PluginRuntime,
        file: &Path,
        name: Option<&str>,
        force: bool,
    ) -> Result<(Installed, Vec<String>), RegistryError> {
        let name = match name {
            Some(name) => name.to_owned(),
            None => file
                .file_stem()
                .and_then(|stem| stem.to_str())
                .unwrap_or_default()
                .to_owned(),
        };
        validate_name(&name)?;
        let bytes = read_capped(file)?;
        if !bytes.starts_with(b"\0asm") {
            return Err(RegistryError::NotWasm(file.to_owned()));
        }
        let bytes: Arc<[u8]> = bytes.into();
        // The audit sees the bytes that are copied in, not a second read of `file`.
        let audited = PluginSource::Installed {
            name: name.clone(),
            path: file.to_owned(),
            bytes: bytes.clone(),
        };
        let imports = runtime
            .check(&audited)
            .await
            .map_err(|e| RegistryError::Audit {
                path: file.to_owned(),
                message: e.to_string(),
            })?;
        let target = self.wasm_path(&name);
        if target.exists() && !force {
            return Err(RegistryError::Exists(name));
        }
        create_private_dir(&self.dir)?;
        let sha256 = hex_sha256(&bytes);
        // Hash first, then the file, each via a temp file and a rename: a crash in between
        // leaves a hash without its file or an old file under a new hash, and either is
        // refused at start rather than trusted.
        write_atomically(
            &self.hash_path(&name),
            format!("{sha256}  {name}.wasm\n").as_bytes(),
        )?;
        write_atomically(&target, &bytes)?;
        let entry = Installed {
            name,
            path: target,
            size: bytes.len() as u64,
            sha256,
            intact: true,
        };
        Ok((entry, imports))
    }

    /// Every installed plugin, sorted by name.
    pub fn list(&self) -> Result<Vec<Installed>, RegistryError> {
        let entries = match std::fs::read_dir(&self.dir) {
            Ok(entries) => entries,
            Err(error) if error.kind() == std::io::ErrorKind::NotFound => return Ok(Vec::new()),
            Err(error) => return Err(io(&self.dir)(error)),
        };
        let mut names: Vec<String> = entries
            .filter_map(Result::ok)
            .filter_map(|entry| {
                let name = entry.file_name().into_string().ok()?;
                Some(name.strip_suffix(".wasm")?.to_owned())
            })
            .filter(|name| validate_name(name).is_ok())
            .collect();
        names.sort();
        names.iter().map(|name| self.entry(name)).collect()
    }

    /// Deletes an installed plugin and its hash; returns the file it deleted.
    pub fn remove(&self, name: &str) -> Result<PathBuf, RegistryError> {
        validate_name(name)?;
        let wasm = self.wasm_path(name);
        if !wasm.exists() {
            return Err(RegistryError::NotInstalled(name.to_owned()));
        }
        std::fs::remove_file(&wasm).map_err(io(&wasm))?;
        let hash = self.hash_path(name);
        match std::fs::remove_file(&hash) {
            Err(error) if error.kind() != std::io::ErrorKind::NotFound => Err(io(&hash)(error)),
            _ => Ok(wasm),
        }
    }

    /// The file of an installed plugin, if it still has its recorded hash. For naming the
    /// file only: to run the plugin, use [`Registry::load`].
    pub fn resolve(&self, name: &str) -> Result<PathBuf, RegistryError> {
        self.checked(name).map(|(entry, _)| entry.path)
    }

    /// What the daemon runs for an installed plugin: its bytes, read once and checked against
    /// the recorded hash. The returned source carries those bytes, so no later start reads the
    /// file again.
    pub fn load(&self, name: &str) -> Result<PluginSource, RegistryError> {
        let (entry, bytes) = self.checked(name)?;
        Ok(PluginSource::Installed {
            name: entry.name,
            path: entry.path,
            bytes: bytes.into(),
        })
    }

    /// The entry and the bytes that were hashed, if they have the recorded hash.
    fn checked(&self, name: &str) -> Result<(Installed, Vec<u8>), RegistryError> {
        validate_name(name)?;
        let (entry, bytes) = self.read_entry(name)?;
        if entry.intact {
            Ok((entry, bytes))
        } else {
            Err(RegistryError::Modified {
                path: entry.path,
                recorded: entry.sha256,
                actual: hex_sha256(&bytes),
            })
        }
    }

    fn entry(&self, name: &str) -> Result<Installed, RegistryError> {
        self.read_entry(name).map(|(entry, _)| entry)
    }

    /// Reads the file once; the entry's `intact` is about exactly the bytes returned.
    fn read_entry(&self, name: &str) -> Result<(Installed, Vec<u8>), RegistryError> {
        let path = self.wasm_path(name);
        if !path.exists() {
            return Err(RegistryError::NotInstalled(name.to_owned()));
        }
        let bytes = read_capped(&path)?;
        let hash_path = self.hash_path(name);
        let recorded = match std::fs::read_to_string(&hash_path) {
            Ok(text) => text
                .split_whitespace()
                .next()
                .unwrap_or_default()
                .to_owned(),
            Err(error) if error.kind() == std::io::ErrorKind::NotFound => String::new(),
            Err(error) => return Err(io(&hash_path)(error)),
        };
        let actual = hex_sha256(&bytes);
        let entry = Installed {
            name: name.to_owned(),
            path,
            size: bytes.len() as u64,
            intact: actual == recorded,
            sha256: recorded,
        };
        Ok((entry, bytes))
    }

    fn wasm_path(&self, name: &str) -> PathBuf {
        self.dir.join(format!("{name}.wasm"))
    }

    fn hash_path(&self, name: &str) -> PathBuf {
        self.dir.join(format!("{name}.sha256"))
    }
}

/// SPEC §7: 1–64 of `[A-Za-z0-9._-]`, no leading `-` (it would read as an option).
pub fn validate_name(name: &str) -> Result<(), RegistryError> {
    let charset = name
        .bytes()
        .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'.' | b'_' | b'-'));
    if name.is_empty() || name.len() > MAX_NAME_LEN || !charset || name.starts_with('-') {
        return Err(RegistryError::BadName(name.to_owned()));
    }
    Ok(())
}

/// The config snippet `plugin install` prints: disabled, with no capabilities at all.
pub fn config_snippet(name: &str) -> String {
    format!(
        "[[plugin]]\n\
         name = \"{name}\"\n\
         command = \"{name}\"\n\
         enabled = false\n\
         # No [plugin.sandbox] grants: it can read no file and open no connection until you\n\
         # add read_dirs or connect entries. Enable it once you have read what it asks for.\n"
    )
}

fn read_capped(path: &Path) -> Result<Vec<u8>, RegistryError> {
    let file = std::fs::File::open(path).map_err(io(path))?;
    let mut bytes = Vec::new();
    file.take(MAX_PLUGIN_BYTES + 1)
        .read_to_end(&mut bytes)
        .map_err(io(path))?;
    if bytes.len() as u64 > MAX_PLUGIN_BYTES {
        return Err(RegistryError::TooLarge {
            path: path.to_owned(),
        });
    }
    Ok(bytes)
}

fn hex_sha256(bytes: &[u8]) -> String {
    Sha256::digest(bytes)
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}

fn create_private_dir(dir: &Path) -> Result<(), RegistryError> {
    nightcrow_trust::ensure_private_dir(dir).map_err(|message| RegistryError::Untrusted {
        path: dir.to_owned(),
        message,
    })
}

fn write_atomically(path: &Path, bytes: &[u8]) -> Result<(), RegistryError> {
    crate::write_atomically(path, bytes).map_err(io(path))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_follow_the_spec() {
        for good in ["a", "recovery", "my.plugin_2-x", &"n".repeat(64)] {
            assert!(validate_name(good).is_ok(), "{good}");
        }
        for bad in ["", "-x", "a b", "a/b", "..\\x", "é", &"n".repeat(65)] {
            assert!(validate_name(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn the_snippet_is_disabled_and_grants_nothing() {
        let snippet = config_snippet("x");
        assert!(snippet.contains("enabled = false"));
        assert!(!snippet.contains("read_dirs ="));
        assert!(!snippet.contains("connect ="));
    }
}

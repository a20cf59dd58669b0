//! Files and folders nightcrow trusts: created readable by this user alone, and refused when
//! another user owns them or may write to them. Whoever can write the compilation cache, the
//! home folder or the config can run code as this user (a planted native plugin, native code
//! for wasmtime, a swapped socket), so the check comes before any of them is used; and the
//! daemon and its clients talk only to a socket peer that runs as this user.
//!
//! A crate of its own because both sides need it: the plugin host and the daemon for their
//! folders, and a client, which must not pull in the plugin runtime to check its daemon.

use std::fs::Metadata;
use std::path::Path;

/// Creates `dir` and any missing parents as mode 0700, and refuses it unless it is a real
/// directory (not a symlink) that this user owns and no one else may write to. One that
/// others may only read or enter (0755, as older versions and `mkdir` made it) is made 0700:
/// what is in it was never writable by them, so it can still be trusted. The message says
/// what is wrong and how to fix it.
pub fn ensure_private_dir(dir: &Path) -> Result<(), String> {
    let mut builder = std::fs::DirBuilder::new();
    builder.recursive(true);
    #[cfg(unix)]
    std::os::unix::fs::DirBuilderExt::mode(&mut builder, 0o700);
    builder
        .create(dir)
        .map_err(|error| format!("cannot create: {error}"))?;
    let meta = std::fs::symlink_metadata(dir).map_err(|e| format!("cannot inspect: {e}"))?;
    if !meta.is_dir() {
        return Err("is not a directory (symlinks are refused)".to_owned());
    }
    check_owner_and_mode(&meta, "it must be private (chmod 700 it, or remove it)")?;
    #[cfg(unix)]
    {
        use std::os::unix::fs::{MetadataExt, PermissionsExt};
        if meta.mode() & 0o077 != 0 {
            std::fs::set_permissions(dir, std::fs::Permissions::from_mode(0o700))
                .map_err(|e| format!("cannot make it private (mode 0700): {e}"))?;
        }
    }
    Ok(())
}

/// Refuses the file at `path` (links followed) unless this user owns it and neither its
/// group nor others may write to it.
pub fn check_trusted_file(path: &Path) -> Result<(), String> {
    let meta = std::fs::metadata(path).map_err(|e| format!("cannot inspect: {e}"))?;
    check_owner_and_mode(&meta, "others may write to it (chmod go-w it)")
}

/// Whether `uid` is this process's effective user (a socket peer's, a file owner's).
#[cfg(unix)]
pub fn is_this_user(uid: u32) -> bool {
    uid == this_user()
}

#[cfg(unix)]
fn this_user() -> u32 {
    // SAFETY: geteuid has no preconditions, touches no memory and cannot fail.
    unsafe { libc::geteuid() }
}

/// This user owns `meta`'s file and neither its group nor others may write to it; `why`
/// ends the message when they may.
#[cfg_attr(
    not(unix),
    expect(unused_variables, reason = "no owners or modes to check")
)]
fn check_owner_and_mode(meta: &Metadata, why: &str) -> Result<(), String> {
    #[cfg(unix)]
    {
        use std::os::unix::fs::MetadataExt;
        let me = this_user();
        if meta.uid() != me {
            return Err(format!(
                "is owned by uid {}, not by this user (uid {me}); only a path you own is trusted",
                meta.uid()
            ));
        }
        let mode = meta.mode() & 0o777;
        if mode & 0o022 != 0 {
            return Err(format!("has mode {mode:04o}; {why}"));
        }
    }
    Ok(())
}

#[cfg(all(test, unix))]
mod tests {
    use super::*;
    use std::os::unix::fs::PermissionsExt;

    #[test]
    fn a_dir_is_created_private_and_a_shared_one_is_refused() {
        let root = tempfile::tempdir().unwrap();
        let dir = root.path().join("a/b/cache");
        ensure_private_dir(&dir).unwrap();
        let mode = std::fs::metadata(&dir).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode, 0o700);
        ensure_private_dir(&dir).unwrap();

        std::fs::set_permissions(&dir, std::fs::Permissions::from_mode(0o755)).unwrap();
        ensure_private_dir(&dir).unwrap();
        let mode = std::fs::metadata(&dir).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode, 0o700, "only readable by others: made private");

        std::fs::set_permissions(&dir, std::fs::Permissions::from_mode(0o775)).unwrap();
        let error = ensure_private_dir(&dir).unwrap_err();
        assert!(
            error.contains("mode 0775") && error.contains("chmod 700"),
            "{error}"
        );

        let link = root.path().join("link");
        std::os::unix::fs::symlink(&dir, &link).unwrap();
        let error = ensure_private_dir(&link).unwrap_err();
        assert!(error.contains("not a directory"), "{error}");
    }

    #[test]
    fn a_file_others_may_write_is_refused() {
        let root = tempfile::tempdir().unwrap();
        let file = root.path().join("config.toml");
        std::fs::write(&file, "").unwrap();
        for (mode, trusted) in [(0o600, true), (0o644, true), (0o664, false), (0o646, false)] {
            std::fs::set_permissions(&file, std::fs::Permissions::from_mode(mode)).unwrap();
            let verdict = check_trusted_file(&file);
            assert_eq!(verdict.is_ok(), trusted, "{mode:o}: {verdict:?}");
            if let Err(error) = verdict {
                assert!(error.contains("chmod go-w"), "{error}");
            }
        }
        assert!(is_this_user(this_user()) && !is_this_user(this_user() + 1));
    }
}

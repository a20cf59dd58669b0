//! Where a repository's plugin runtime dir lives (SPEC §5.4); the hub creates it with the
//! plugin host's private-folder rule.

use std::path::{Path, PathBuf};

/// `base/<16 lowercase hex of FNV-1a-64 of hub_root's bytes>`: one dir per hub, named
/// without revealing the path and stable across daemon restarts (SPEC §5.4).
pub fn runtime_dir_for(base: &Path, hub_root: &Path) -> PathBuf {
    let hash = fnv1a_64(hub_root.as_os_str().as_encoded_bytes());
    base.join(format!("{hash:016x}"))
}

fn fnv1a_64(bytes: &[u8]) -> u64 {
    const OFFSET_BASIS: u64 = 0xcbf2_9ce4_8422_2325;
    const PRIME: u64 = 0x0000_0100_0000_01b3;
    bytes.iter().fold(OFFSET_BASIS, |hash, &byte| {
        (hash ^ u64::from(byte)).wrapping_mul(PRIME)
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fnv1a_64_matches_the_reference_vectors() {
        assert_eq!(fnv1a_64(b""), 0xcbf29ce484222325);
        assert_eq!(fnv1a_64(b"a"), 0xaf63dc4c8601ec8c);
        assert_eq!(fnv1a_64(b"foobar"), 0x85944171f73967e8);
    }

    #[test]
    fn the_dir_name_is_sixteen_lowercase_hex_digits_of_the_hub_path() {
        let dir = runtime_dir_for(Path::new("/run/user/1000/nightcrow"), Path::new("a"));
        assert_eq!(dir, Path::new("/run/user/1000/nightcrow/af63dc4c8601ec8c"));
        let other = runtime_dir_for(Path::new("/base"), Path::new("/srv/repo"));
        let name = other.file_name().unwrap().to_str().unwrap();
        assert_eq!(name.len(), 16);
        assert!(
            name.bytes()
                .all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b))
        );
    }
}

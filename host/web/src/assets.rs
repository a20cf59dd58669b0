//! The files the web client serves, embedded in the binary: the project's own page
//! (`host/web/page/`) and the pinned xterm.js files committed in `host/web/vendor/` (so a
//! build needs no Node.js; `vendor/refresh.sh` updates them from npm, and `vendor/PINS`
//! records what they are).

/// One embedded file.
pub struct Asset {
    pub name: &'static str,
    pub content_type: &'static str,
    pub body: &'static [u8],
    /// Served without a session (what the login page needs).
    pub public: bool,
}

const JS: &str = "text/javascript; charset=utf-8";
const CSS: &str = "text/css; charset=utf-8";
const SVG: &str = "image/svg+xml";

/// The login page; `<!--MESSAGE-->` is where a refusal is said.
pub const LOGIN_PAGE: &str = include_str!("../page/login.html");
/// The terminal page.
pub const APP_PAGE: &str = include_str!("../page/index.html");

/// Everything under `/assets/`.
pub const ASSETS: &[Asset] = &[
    Asset {
        name: "nightcrow.css",
        content_type: CSS,
        body: include_bytes!("../page/nightcrow.css"),
        public: true,
    },
    Asset {
        name: "favicon.svg",
        content_type: SVG,
        body: include_bytes!("../page/favicon.svg"),
        public: true,
    },
    Asset {
        name: "app.js",
        content_type: JS,
        body: include_bytes!("../page/app.js"),
        public: false,
    },
    Asset {
        name: "chip.js",
        content_type: JS,
        body: include_bytes!("../page/chip.js"),
        public: false,
    },
    Asset {
        name: "notice.js",
        content_type: JS,
        body: include_bytes!("../page/notice.js"),
        public: false,
    },
    Asset {
        name: "keys.js",
        content_type: JS,
        body: include_bytes!("../page/keys.js"),
        public: false,
    },
    Asset {
        name: "xterm.mjs",
        content_type: JS,
        body: include_bytes!("../vendor/xterm/xterm.mjs"),
        public: false,
    },
    Asset {
        name: "xterm.css",
        content_type: CSS,
        body: include_bytes!("../vendor/xterm/xterm.css"),
        public: false,
    },
    Asset {
        name: "addon-fit.mjs",
        content_type: JS,
        body: include_bytes!("../vendor/addon-fit/addon-fit.mjs"),
        public: false,
    },
];

/// The asset called `name`, if there is one.
pub fn find(name: &str) -> Option<&'static Asset> {
    ASSETS.iter().find(|asset| asset.name == name)
}

#[cfg(test)]
mod tests {
    use sha2::{Digest, Sha256};

    use super::*;

    /// The vendored files, by their name in `vendor/PINS`.
    const VENDORED: [(&str, &[u8]); 5] = [
        (
            "xterm/xterm.mjs",
            include_bytes!("../vendor/xterm/xterm.mjs"),
        ),
        (
            "xterm/xterm.css",
            include_bytes!("../vendor/xterm/xterm.css"),
        ),
        ("xterm/LICENSE", include_bytes!("../vendor/xterm/LICENSE")),
        (
            "addon-fit/addon-fit.mjs",
            include_bytes!("../vendor/addon-fit/addon-fit.mjs"),
        ),
        (
            "addon-fit/LICENSE",
            include_bytes!("../vendor/addon-fit/LICENSE"),
        ),
    ];

    fn hex(bytes: &[u8]) -> String {
        Sha256::digest(bytes)
            .iter()
            .map(|byte| format!("{byte:02x}"))
            .collect()
    }

    /// What the committed xterm.js files are is checked, not trusted: each file has the
    /// hash `vendor/PINS` gives, every package there has the version and tarball integrity
    /// of `package-lock.json` (which `npm install` verified the files came from, in
    /// `vendor/refresh.sh`), and every file served from the vendor folder is pinned.
    #[test]
    fn the_vendored_files_are_the_pinned_ones_of_the_lockfile() {
        let pins = include_str!("../vendor/PINS");
        let lock: serde_json::Value =
            serde_json::from_str(include_str!("../package-lock.json")).expect("the lockfile");
        let mut files = 0;
        let mut packages = 0;
        for line in pins.lines().filter(|line| !line.starts_with('#')) {
            match line.split(' ').collect::<Vec<_>>()[..] {
                ["package", name, version, integrity] => {
                    let locked = &lock["packages"][format!("node_modules/{name}")];
                    assert_eq!(locked["version"], version, "{name}");
                    assert_eq!(locked["integrity"], integrity, "{name}");
                    assert_eq!(
                        lock["packages"][""]["dependencies"][name], version,
                        "{name}"
                    );
                    packages += 1;
                }
                ["file", name, sha256] => {
                    let (_, body) = VENDORED
                        .iter()
                        .find(|(vendored, _)| *vendored == name)
                        .unwrap_or_else(|| panic!("{name} is pinned but not embedded"));
                    assert_eq!(hex(body), sha256, "{name} is not the pinned file");
                    files += 1;
                }
                _ => panic!("a PINS line of no known shape: {line}"),
            }
        }
        assert_eq!((packages, files), (2, VENDORED.len()));
        for name in ["xterm.mjs", "xterm.css", "addon-fit.mjs"] {
            let served = find(name).expect("served").body;
            assert!(
                VENDORED.iter().any(|(_, body)| *body == served),
                "{name} is served from outside the pinned files"
            );
        }
    }
}

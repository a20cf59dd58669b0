//! The files the web client serves, embedded in the binary: the project's own page
//! (`host/web/page/`) and the pinned xterm.js build that `build.rs` fetched from npm.

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
        name: "xterm.mjs",
        content_type: JS,
        body: include_bytes!("../node_modules/@xterm/xterm/lib/xterm.mjs"),
        public: false,
    },
    Asset {
        name: "xterm.css",
        content_type: CSS,
        body: include_bytes!("../node_modules/@xterm/xterm/css/xterm.css"),
        public: false,
    },
    Asset {
        name: "addon-fit.mjs",
        content_type: JS,
        body: include_bytes!("../node_modules/@xterm/addon-fit/lib/addon-fit.mjs"),
        public: false,
    },
];

/// The asset called `name`, if there is one.
pub fn find(name: &str) -> Option<&'static Asset> {
    ASSETS.iter().find(|asset| asset.name == name)
}

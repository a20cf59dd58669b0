//! Wire protocol v3 of nightcrow plugins: the messages, their encoding, and line framing.
//!
//! One JSON object per `\n`-terminated line (NDJSON). The host sends [`Event`]s to a
//! plugin's stdin and reads [`Command`]s from its stdout. Every message carries `"v": 3`;
//! the version is checked on every line, there is no handshake.
//!
//! **This crate grants nothing.** [`decode_command`] checks the shape and size of a line and
//! nothing else; whether a command may act is decided by `nightcrow-guard` alone. The crate
//! does no I/O of its own and has no wasmtime dependency, so plugins (built for
//! `wasm32-wasip2`) depend on it too. Its line readers work over any reader they are given
//! and never buffer more than their cap, however a peer misbehaves.
//!
//! ```
//! use nightcrow_protocol::{decode_command, Command, DecodeError};
//!
//! let line = r#"{"cmd":"log","v":3,"level":"info","message":"hello"}"#;
//! assert!(matches!(decode_command(line), Ok(Command::Log { .. })));
//!
//! let wrong = r#"{"cmd":"log","v":2,"level":"info","message":"hello"}"#;
//! assert!(matches!(decode_command(wrong), Err(DecodeError::VersionMismatch { .. })));
//! ```
#![forbid(unsafe_code)]

mod codec;
mod message;
mod reader;
mod token;

pub use codec::{
    DecodeError, EncodeError, decode_command, decode_event, encode_command, encode_event,
};
pub use message::{Command, Event, Generation, LogLevel};
#[cfg(feature = "tokio")]
pub use reader::AsyncLines;
pub use reader::{BlockingLines, LineItem, LineSplitter, READ_CHUNK_BYTES};
pub use token::{InvalidToken, TOKEN_HEX_LEN, Token};

/// The protocol version carried as `"v"` by every message.
pub const PROTOCOL_VERSION: u32 = 3;
/// Longest accepted line in bytes, excluding its terminator.
pub const MAX_LINE_BYTES: usize = 65_536;
/// Longest `send_input.data` in UTF-8 bytes.
pub const MAX_INPUT_BYTES: usize = 8_192;
/// Longest `pane_idle.screen` in UTF-8 bytes: the host sends the bottom rows that fit (a
/// prompt or a popup is drawn at the bottom). Screen text has no control characters but
/// `\n`, so even escaped it leaves the line far below [`MAX_LINE_BYTES`].
pub const MAX_SCREEN_BYTES: usize = 16_384;
/// `log.message` is truncated to this many bytes, on a char boundary.
pub const MAX_LOG_MESSAGE_BYTES: usize = 2_048;

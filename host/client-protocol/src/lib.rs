//! What nightcrow's clients and its daemon say to each other, and nothing that serves it:
//! the hub's client protocol (SPEC §8: [`ClientRequest`] in, [`HubMessage`] and output
//! frames out), the daemon's own requests and answers ([`daemon`]), the framing of both on
//! a byte stream ([`frame`]), the web page's own transport messages ([`web`]), and the one
//! reading of the hub's messages that decides what is worth a notification ([`notice`]).
//!
//! Clients (the terminal client, the benches) depend on this crate and not on the hub or
//! the daemon, so they do not build the plugin runtime; the hub and the daemon speak it.
#![forbid(unsafe_code)]

pub mod daemon;
pub mod frame;
mod hub;
pub mod notice;
pub mod web;

pub use hub::{
    CLIENT_PROTOCOL_VERSION, ClientRequest, Frame, HubMessage, MAX_MESSAGE_BYTES, PluginHealth,
    RecoveryReport, RecoveryState, output_frame, output_frame_id, parse_output_frame,
};
pub use notice::{Notice, NoticeEvent, Notices};

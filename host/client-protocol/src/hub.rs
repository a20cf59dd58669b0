//! The client protocol (SPEC §8): JSON control messages, tagged by `"type"`, and binary
//! output frames (`u32 LE pane id` + raw PTY bytes). The daemon puts these on a Unix socket
//! or a WebSocket as they are; the hub never sees a transport.

use bytes::Bytes;
use serde::{Deserialize, Serialize};

/// Version carried by `hello`; a client that does not know it should disconnect.
pub const CLIENT_PROTOCOL_VERSION: u32 = 1;

/// Largest message either transport accepts or sends (an output frame carries one PTY read,
/// far smaller); a longer one is refused before it is read into memory.
pub const MAX_MESSAGE_BYTES: usize = 1024 * 1024;

/// Client → hub. `pane` is the hub's pane id as clients see it (`created.pane`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case", deny_unknown_fields)]
pub enum ClientRequest {
    /// Open a pane: a bare shell, or `command` through the shell. A client pane is never
    /// relaunchable and no plugin owns it unless one is granted `watch_pane`.
    Create {
        #[serde(default)]
        title: Option<String>,
        #[serde(default)]
        command: Option<String>,
        #[serde(default)]
        rows: Option<u16>,
        #[serde(default)]
        cols: Option<u16>,
    },
    /// Typed by a person. `data` is a JSON string, written as its UTF-8 bytes.
    Input {
        pane: u64,
        data: String,
    },
    Resize {
        pane: u64,
        rows: u16,
        cols: u16,
    },
    Close {
        pane: u64,
    },
    /// End the pane's relaunch hold, if it has one.
    CancelRecovery {
        pane: u64,
    },
    /// Open every startup command that has no pane in the hub (neither running nor held).
    Start,
}

impl ClientRequest {
    /// Parses one control message; the error text is what the client is told.
    pub fn parse(text: &str) -> Result<ClientRequest, String> {
        serde_json::from_str(text).map_err(|error| format!("bad request: {error}"))
    }
}

/// A status report relayed to clients uninterpreted (SPEC §6.6).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct RecoveryReport {
    pub pane: u64,
    pub state: RecoveryState,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub detail: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub deadline_epoch: Option<i64>,
    pub attempt: u32,
}

impl RecoveryReport {
    /// Whether the report means recovery is under way (a client shows a marker and a chip;
    /// a journaled hold is kept).
    pub fn is_active(&self) -> bool {
        matches!(self.state, RecoveryState::Label(_))
    }

    /// The report sent wherever a hold ends (SPEC §6.4).
    pub fn cancelled(pane: u64) -> RecoveryReport {
        RecoveryReport {
            pane,
            state: RecoveryState::Cancelled,
            detail: None,
            deadline_epoch: None,
            attempt: 0,
        }
    }
}

/// A report's `state`: a string on the wire. Two values mean something to clients; every
/// other one is the plugin's own label, which they only show (SPEC §2.4).
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(from = "String", into = "String")]
pub enum RecoveryState {
    /// `idle`: the plugin settled the pane; no recovery is under way.
    Idle,
    /// `cancelled`: the hub ended the pane's relaunch hold; the pane stays, plainly exited.
    Cancelled,
    /// Recovery is under way, in the words of the plugin (`waiting_for_reset`, …).
    Label(String),
}

impl RecoveryState {
    pub fn as_str(&self) -> &str {
        match self {
            RecoveryState::Idle => "idle",
            RecoveryState::Cancelled => "cancelled",
            RecoveryState::Label(label) => label,
        }
    }
}

impl From<String> for RecoveryState {
    fn from(text: String) -> RecoveryState {
        match text.as_str() {
            "idle" => RecoveryState::Idle,
            "cancelled" => RecoveryState::Cancelled,
            _ => RecoveryState::Label(text),
        }
    }
}

impl From<&str> for RecoveryState {
    fn from(text: &str) -> RecoveryState {
        RecoveryState::from(text.to_owned())
    }
}

impl From<RecoveryState> for String {
    fn from(state: RecoveryState) -> String {
        match state {
            RecoveryState::Label(label) => label,
            known => known.as_str().to_owned(),
        }
    }
}

impl std::fmt::Display for RecoveryState {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// A plugin's health as the hub tells clients.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum PluginHealth {
    Running,
    /// It ended or could not start; the hub restarts it after a back-off.
    Failed,
    /// It failed too often; the hub stopped restarting it until a reload.
    GaveUp,
}

/// How a person reads it.
impl std::fmt::Display for PluginHealth {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            PluginHealth::Running => "running",
            PluginHealth::Failed => "failed",
            PluginHealth::GaveUp => "gave up",
        })
    }
}

/// Hub → client control messages.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum HubMessage {
    /// Always the first message of an attachment.
    Hello {
        version: u32,
    },
    /// The replay of an attachment is over: what follows is news. A client that tells a
    /// person about events (a notification) judges only what comes after this.
    Live,
    /// A pane exists (on attach: one per pane, in display order, each followed by its
    /// scrollback, then `exited` if its process has ended, then its latest `recovery`).
    /// `replaces`: a relaunch put this pane where that one was; the old one is gone.
    Created {
        pane: u64,
        title: Option<String>,
        rows: u16,
        cols: u16,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        replaces: Option<u64>,
    },
    /// The pane's process ended; `code` is `None` when a signal ended it. The pane stays,
    /// exited, with its screen and scrollback, until a client closes it (`closed` follows).
    /// `held`: its plugin may relaunch it (SPEC §6.2); its `recovery` reports follow, and
    /// a `recovery` with state `cancelled` ends the hold (the pane stays, plainly exited).
    Exited {
        pane: u64,
        code: Option<u32>,
        #[serde(default)]
        held: bool,
    },
    /// The pane is gone: a client closed it, or the hub let go of an old exited pane.
    Closed {
        pane: u64,
    },
    Resized {
        pane: u64,
        rows: u16,
        cols: u16,
    },
    /// The title the pane's program set (OSC 0 or 2: control characters removed, at most
    /// 128 characters), the last one wins; `null` when it set an empty one, so the pane's
    /// configured `title` (of `created`) shows again. On attach it follows the pane's
    /// scrollback; a relaunch keeps it until the new process sets its own.
    Title {
        pane: u64,
        title: Option<String>,
    },
    Recovery(RecoveryReport),
    Attention {
        pane: u64,
    },
    /// A plugin's health changed.
    Plugin {
        name: String,
        state: PluginHealth,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        detail: Option<String>,
    },
    /// A request was refused or malformed; the hub carries on.
    Error {
        message: String,
    },
}

impl HubMessage {
    /// The JSON text of the message, as it goes on the wire.
    pub fn to_json(&self) -> String {
        serde_json::to_string(self).expect("hub messages always serialise")
    }
}

/// One item of a client's stream, in order.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Frame {
    Message(HubMessage),
    /// Raw PTY bytes of one pane.
    Output {
        pane: u64,
        bytes: Bytes,
    },
}

/// The binary output frame: the pane id as `u32` little endian, then the bytes.
///
/// Pane ids are allocated from 1 upwards and never reused; one hub would need four billion
/// pane spawns to leave `u32`, so the id is truncated rather than the frame widened.
pub fn output_frame(pane: u64, bytes: &[u8]) -> Vec<u8> {
    let mut frame = Vec::with_capacity(4 + bytes.len());
    frame.extend_from_slice(&output_frame_id(pane));
    frame.extend_from_slice(bytes);
    frame
}

/// The first four bytes of the output frame of `pane`, for a transport that writes the
/// frame straight into its own buffer instead of building it first.
pub fn output_frame_id(pane: u64) -> [u8; 4] {
    (pane as u32).to_le_bytes()
}

/// The pane id and bytes of a binary output frame; `None` when it is too short to hold an
/// id.
pub fn parse_output_frame(frame: &[u8]) -> Option<(u64, &[u8])> {
    let (id, bytes) = frame.split_first_chunk::<4>()?;
    Some((u64::from(u32::from_le_bytes(*id)), bytes))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn recovery_and_attention_have_the_spec_shape() {
        let full = HubMessage::Recovery(RecoveryReport {
            pane: 3,
            state: "waiting_for_reset".into(),
            detail: Some("usage limit".to_owned()),
            deadline_epoch: Some(1_771_890_527),
            attempt: 2,
        });
        assert_eq!(
            full.to_json(),
            r#"{"type":"recovery","pane":3,"state":"waiting_for_reset","detail":"usage limit","deadline_epoch":1771890527,"attempt":2}"#
        );
        assert_eq!(
            HubMessage::Recovery(RecoveryReport::cancelled(4)).to_json(),
            r#"{"type":"recovery","pane":4,"state":"cancelled","attempt":0}"#
        );
        assert_eq!(
            HubMessage::Attention { pane: 5 }.to_json(),
            r#"{"type":"attention","pane":5}"#
        );
        assert_eq!(
            HubMessage::Title {
                pane: 2,
                title: Some("build".to_owned())
            }
            .to_json(),
            r#"{"type":"title","pane":2,"title":"build"}"#
        );
        assert_eq!(
            HubMessage::Title {
                pane: 2,
                title: None
            }
            .to_json(),
            r#"{"type":"title","pane":2,"title":null}"#
        );
        assert_eq!(
            HubMessage::Hello {
                version: CLIENT_PROTOCOL_VERSION
            }
            .to_json(),
            r#"{"type":"hello","version":1}"#
        );
    }

    #[test]
    fn states_are_typed_and_keep_their_wire_spelling() {
        let read = |json: &str| serde_json::from_str::<RecoveryReport>(json).unwrap().state;
        let report = |state: &str| format!(r#"{{"pane":1,"state":"{state}","attempt":0}}"#);
        assert_eq!(read(&report("idle")), RecoveryState::Idle);
        assert_eq!(read(&report("cancelled")), RecoveryState::Cancelled);
        let label = read(&report("waiting_for_reset"));
        assert_eq!(label, RecoveryState::Label("waiting_for_reset".to_owned()));
        for state in ["idle", "cancelled", "waiting_for_reset"] {
            let report: RecoveryReport = serde_json::from_str(&report(state)).unwrap();
            assert_eq!(
                serde_json::to_string(&report).unwrap(),
                format!(r#"{{"pane":1,"state":"{state}","attempt":0}}"#)
            );
            assert_eq!(report.is_active(), state == "waiting_for_reset", "{state}");
        }
        let plugin = HubMessage::Plugin {
            name: "recovery".to_owned(),
            state: PluginHealth::GaveUp,
            detail: None,
        };
        assert_eq!(
            plugin.to_json(),
            r#"{"type":"plugin","name":"recovery","state":"gave_up"}"#
        );
        assert_eq!(PluginHealth::GaveUp.to_string(), "gave up");
        let unknown = r#"{"type":"plugin","name":"p","state":"sleeping"}"#;
        assert!(serde_json::from_str::<HubMessage>(unknown).is_err());
    }

    #[test]
    fn requests_parse_and_bad_ones_say_why() {
        assert_eq!(
            ClientRequest::parse(r#"{"type":"input","pane":2,"data":"ls\r"}"#),
            Ok(ClientRequest::Input {
                pane: 2,
                data: "ls\r".to_owned()
            })
        );
        assert_eq!(
            ClientRequest::parse(r#"{"type":"start"}"#),
            Ok(ClientRequest::Start)
        );
        assert_eq!(
            ClientRequest::parse(r#"{"type":"create"}"#),
            Ok(ClientRequest::Create {
                title: None,
                command: None,
                rows: None,
                cols: None
            })
        );
        for bad in [
            "",
            "{",
            r#"{"type":"explode"}"#,
            r#"{"type":"close"}"#,
            r#"{"type":"close","pane":-1}"#,
            r#"{"type":"close","pane":1,"extra":true}"#,
        ] {
            let error = ClientRequest::parse(bad).unwrap_err();
            assert!(error.starts_with("bad request: "), "{bad:?}: {error}");
        }
    }

    #[test]
    fn output_frames_lead_with_the_pane_id_little_endian() {
        assert_eq!(output_frame(258, b"hi"), [2, 1, 0, 0, b'h', b'i']);
        assert_eq!(
            parse_output_frame(&output_frame(258, b"hi")),
            Some((258, &b"hi"[..]))
        );
        assert_eq!(parse_output_frame(&[1, 0, 0, 0]), Some((1, &[][..])));
        assert_eq!(parse_output_frame(&[1, 0, 0]), None);
    }
}

//! What the web page says on its WebSocket that is the transport's, not the hub's: it never
//! reaches the hub (SPEC §8; docs/web.md, flow control).

use serde::Deserialize;

/// A text message from the page that the socket keeps for itself.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case", deny_unknown_fields)]
pub enum PageTransportMessage {
    /// The running total of output bytes the page has drawn.
    Ack { bytes: u64 },
}

impl PageTransportMessage {
    /// The message, if `text` is one; anything else is for the hub.
    pub fn parse(text: &str) -> Option<PageTransportMessage> {
        serde_json::from_str(text).ok()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_a_well_formed_ack_is_the_transports() {
        assert_eq!(
            PageTransportMessage::parse(r#"{"type":"ack","bytes":4096}"#),
            Some(PageTransportMessage::Ack { bytes: 4096 })
        );
        for other in [
            r#"{"type":"input","pane":1,"data":"x"}"#,
            r#"{"type":"ack","bytes":-1}"#,
            r#"{"type":"ack","bytes":1,"pane":2}"#,
            "not json",
        ] {
            assert_eq!(PageTransportMessage::parse(other), None, "{other}");
        }
    }
}

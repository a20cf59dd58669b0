//! Pane tokens, the only name plugins have for a pane slot.

use std::fmt;

use serde::{Deserialize, Deserializer, Serialize, Serializer};

/// The name of a pane slot as plugins see it: 32 lowercase hex characters.
///
/// A token is minted by the host from 16 bytes of OS randomness and survives relaunches of
/// the slot. Holding a `Token` proves only that the string is well formed, never that it
/// names a pane or grants anything: the guard resolves and judges it.
#[derive(Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Token(String);

/// Length of a token in hex characters.
pub const TOKEN_HEX_LEN: usize = 32;

/// Why a string is not a [`Token`].
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("token must be {TOKEN_HEX_LEN} lowercase hex characters, got {len} bytes")]
pub struct InvalidToken {
    len: usize,
}

impl Token {
    /// Accepts exactly [`TOKEN_HEX_LEN`] characters of `[0-9a-f]`.
    pub fn parse(text: &str) -> Result<Token, InvalidToken> {
        let well_formed = text.len() == TOKEN_HEX_LEN
            && text
                .bytes()
                .all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b));
        if well_formed {
            Ok(Token(text.to_owned()))
        } else {
            Err(InvalidToken { len: text.len() })
        }
    }

    /// Hex-encodes 16 bytes; the caller supplies the randomness (the host uses the OS RNG).
    pub fn from_bytes(bytes: [u8; 16]) -> Token {
        use fmt::Write;
        let mut text = String::with_capacity(TOKEN_HEX_LEN);
        for byte in bytes {
            // Writing into a String cannot fail.
            let _ = write!(text, "{byte:02x}");
        }
        Token(text)
    }

    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl fmt::Display for Token {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl fmt::Debug for Token {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Token({})", self.0)
    }
}

impl Serialize for Token {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_str(&self.0)
    }
}

impl<'de> Deserialize<'de> for Token {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Token, D::Error> {
        let text = String::deserialize(deserializer)?;
        match Token::parse(&text) {
            Ok(_) => Ok(Token(text)),
            Err(invalid) => Err(serde::de::Error::custom(invalid)),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parse_accepts_only_lowercase_hex_of_exact_length() {
        let good = "0123456789abcdef0123456789abcdef";
        assert_eq!(Token::parse(good).unwrap().as_str(), good);
        for bad in [
            "",
            "0123456789abcdef0123456789abcde",
            "0123456789abcdef0123456789abcdef0",
            "0123456789ABCDEF0123456789abcdef",
            "0123456789abcdeg0123456789abcdef",
            "0123456789abcdef 123456789abcdef",
        ] {
            assert!(Token::parse(bad).is_err(), "{bad:?} accepted");
        }
    }

    #[test]
    fn from_bytes_round_trips_through_parse() {
        let token = Token::from_bytes([0xab; 16]);
        assert_eq!(token.as_str(), "ab".repeat(16));
        assert_eq!(Token::parse(token.as_str()).unwrap(), token);
    }
}

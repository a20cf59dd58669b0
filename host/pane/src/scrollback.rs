//! The bounded ring of a pane's latest output, replayed to a re-attaching client.

use std::collections::VecDeque;

/// The last `capacity` bytes a pane printed, for replay to a re-attaching client.
#[derive(Debug)]
pub(crate) struct Scrollback {
    bytes: VecDeque<u8>,
    capacity: usize,
}

impl Scrollback {
    pub(crate) fn new(capacity: usize) -> Scrollback {
        Scrollback {
            bytes: VecDeque::new(),
            capacity,
        }
    }

    pub(crate) fn push(&mut self, chunk: &[u8]) {
        let chunk = &chunk[chunk.len().saturating_sub(self.capacity)..];
        let overflow = (self.bytes.len() + chunk.len()).saturating_sub(self.capacity);
        self.bytes.drain(..overflow);
        self.bytes.extend(chunk);
    }

    pub(crate) fn to_vec(&self) -> Vec<u8> {
        let (front, back) = self.bytes.as_slices();
        [front, back].concat()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keeps_the_last_capacity_bytes() {
        let mut ring = Scrollback::new(4);
        ring.push(b"ab");
        assert_eq!(ring.to_vec(), b"ab");
        ring.push(b"cde");
        assert_eq!(ring.to_vec(), b"bcde");
        ring.push(b"0123456789");
        assert_eq!(ring.to_vec(), b"6789");
        ring.push(b"");
        assert_eq!(ring.to_vec(), b"6789");
    }
}

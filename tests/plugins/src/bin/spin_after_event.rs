//! Hostile: behaves until its first event, answers it, then spins forever.
use nightcrow_test_plugins::{Incoming, echo_reply, incoming, send, spin_forever};

fn main() {
    if let Some(Incoming::Event(event)) = incoming().next()
        && let Some(reply) = echo_reply(&event, 1)
    {
        send(&reply);
    }
    spin_forever();
}

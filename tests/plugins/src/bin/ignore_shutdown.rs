//! Hostile: echoes, but answers `shutdown` with a log and carries on; when stdin closes it
//! parks in a host call forever, so only a forced stop ends it.
use nightcrow_protocol::{Event, LogLevel};
use nightcrow_test_plugins::{Incoming, echo_stream, incoming, log, park_forever};

fn main() {
    let stream = incoming().filter(|incoming| {
        let shutdown = matches!(incoming, Incoming::Event(Event::Shutdown));
        if shutdown {
            log(LogLevel::Info, "ignore_shutdown: ignoring shutdown");
        }
        !shutdown
    });
    echo_stream(stream);
    park_forever();
}

//! Any line must decode to a command or a typed error, never panic; a decoded command must
//! re-encode to a line that decodes to the same command.
#![no_main]

use libfuzzer_sys::fuzz_target;
use nightcrow_protocol::{decode_command, decode_event, encode_command, encode_event};

fuzz_target!(|data: &[u8]| {
    let Ok(line) = std::str::from_utf8(data) else {
        return;
    };
    if let Ok(command) = decode_command(line) {
        let encoded = encode_command(&command).expect("a decoded command re-encodes");
        assert_eq!(decode_command(encoded.trim_end_matches('\n')), Ok(command));
    }
    if let Ok(event) = decode_event(line) {
        for piece in encode_event(&event).expect("a decoded event re-encodes").lines() {
            assert!(decode_event(piece).is_ok());
        }
    }
});

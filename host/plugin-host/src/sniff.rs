//! File sniffing: tells a wasm component from a core module (or neither) by the first
//! bytes, before anything is compiled.

/// Which layer of the wasm binary format a plugin file is.
pub(crate) enum WasmLayer {
    Module,
    Component,
}

/// The binary preamble: `\0asm`, a 16-bit version, a 16-bit layer (0 = core module,
/// 1 = component). Only the binary format: the engine is built without the text parser.
pub(crate) fn wasm_layer(bytes: &[u8]) -> Option<WasmLayer> {
    match bytes {
        [0, b'a', b's', b'm', _, _, 0, 0, ..] => Some(WasmLayer::Module),
        [0, b'a', b's', b'm', _, _, 1, 0, ..] => Some(WasmLayer::Component),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn layers_are_told_apart() {
        assert!(matches!(
            wasm_layer(b"\0asm\x01\0\0\0"),
            Some(WasmLayer::Module)
        ));
        assert!(matches!(
            wasm_layer(b"\0asm\x0d\0\x01\0"),
            Some(WasmLayer::Component)
        ));
        assert!(wasm_layer(b"(module)").is_none());
        assert!(wasm_layer(b"#!/bin/sh").is_none());
        assert!(wasm_layer(b"\0asm").is_none());
    }
}

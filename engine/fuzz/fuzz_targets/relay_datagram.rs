//! Arbitrary bytes as a datagram from `run`'s relay. Must never panic, and a datagram that
//! decodes re-encodes to one that decodes to the same message.
#![no_main]
use libfuzzer_sys::fuzz_target;
use proofscope_engine::run::channel::{decode, encode};

fuzz_target!(|data: &[u8]| {
    if let Some(msg) = decode(data) {
        let again = encode(&msg);
        assert_eq!(decode(&again).as_ref(), Some(&msg), "re-encoded datagram differs");
    }
});

//! Arbitrary bytes as a socket stream: split into frames, decode each. Must never panic, and a
//! decoded frame must re-encode to a frame that decodes to the same events.
#![no_main]
use libfuzzer_sys::fuzz_target;
use probe_protocol::*;

fuzz_target!(|data: &[u8]| {
    let _ = decode_frame(data);
    let mut sp = FrameSplitter::new();
    sp.extend(data);
    while let Ok(Some(body)) = sp.next_body() {
        if let Ok(frame) = decode_frame(body) {
            let again = encode_frame(frame.base_ns, &frame.events).expect("decoded events re-encode");
            let back = decode_frame(&again[4..]).expect("re-encoded frame decodes");
            assert_eq!(back.events, frame.events);
        }
    }
});

//! Arbitrary bytes after a valid recording header: the reader returns frames and typed errors,
//! never panics, and stops at a truncation.
#![no_main]
use libfuzzer_sys::fuzz_target;
use probe_protocol::*;

fuzz_target!(|data: &[u8]| {
    let mut file = RECORDING_MAGIC.to_vec();
    file.extend_from_slice(&RECORDING_VERSION.to_le_bytes());
    file.extend_from_slice(&[0, 0]);
    file.extend_from_slice(data);
    let _ = read_all(&file[..]);
    let _ = read_all(data);
});

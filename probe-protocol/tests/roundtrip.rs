mod common;
use probe_protocol::*;

fn body(frame: &[u8]) -> &[u8] {
    let len = u32::from_le_bytes(frame[..4].try_into().unwrap()) as usize;
    assert_eq!(
        len + 4,
        frame.len(),
        "length prefix covers the body exactly"
    );
    &frame[4..]
}

#[test]
fn every_kind_round_trips_alone_and_together() {
    let all = common::one_of_each();
    let kinds: std::collections::BTreeSet<_> = all.iter().map(Event::kind).collect();
    assert_eq!(
        kinds.len(),
        EventKind::ALL.len(),
        "the sample covers every kind"
    );
    for ev in &all {
        let frame = encode_frame(500, std::slice::from_ref(ev)).unwrap();
        let decoded = decode_frame(body(&frame)).unwrap();
        assert_eq!(decoded.events, vec![ev.clone()], "{:?}", ev.kind());
        assert_eq!(decoded.base_ns, 500);
    }
    let frame = encode_frame(0, &all).unwrap();
    let decoded = decode_frame(body(&frame)).unwrap();
    assert_eq!(decoded.events, all);
    assert_eq!(
        (decoded.major, decoded.minor),
        (PROTOCOL_MAJOR, PROTOCOL_MINOR)
    );
}

#[test]
fn builder_rolls_back_an_event_that_cannot_be_encoded() {
    let mut b = FrameBuilder::new(0);
    b.push(&Event::Heartbeat { ts: 5 }).unwrap();
    let len = b.body_len();
    assert!(b.push(&Event::Heartbeat { ts: u64::MAX }).is_err());
    assert_eq!(b.body_len(), len);
    b.push(&Event::Heartbeat { ts: 7 }).unwrap();
    let frame = b.finish().unwrap().to_vec();
    let d = decode_frame(body(&frame)).unwrap();
    assert_eq!(
        d.events,
        vec![Event::Heartbeat { ts: 5 }, Event::Heartbeat { ts: 7 }]
    );
}

/// A frame written by a future minor version: an unknown event kind, and a known kind with an
/// extra trailing field. Both must be skipped, not fatal.
#[test]
fn unknown_kinds_and_trailing_fields_are_skipped() {
    let mut body = vec![0xdd, 0, 0, 0, 6, 0x01, 0x05, 0x00];
    // [99, "future", {1: 2}]: unknown tag 99.
    body.extend_from_slice(&[0x93, 99, 0xa6]);
    body.extend_from_slice(b"future");
    body.extend_from_slice(&[0x81, 0x01, 0x02]);
    // [15, 10, "extra"]: heartbeat at +10 with one unknown trailing field.
    body.extend_from_slice(&[0x93, 15, 10, 0xa5]);
    body.extend_from_slice(b"extra");
    // [15, 1]
    body.extend_from_slice(&[0x92, 15, 1]);
    let f = decode_frame(&body).unwrap();
    assert_eq!(f.skipped_unknown, 1);
    assert_eq!(f.minor, 5);
    assert_eq!(
        f.events,
        vec![Event::Heartbeat { ts: 10 }, Event::Heartbeat { ts: 11 }]
    );
}

#[test]
fn another_major_version_is_a_clear_error_naming_both() {
    let body = [0xdd, 0, 0, 0, 3, 0x02, 0x00, 0x00];
    let err = decode_frame(&body).unwrap_err();
    assert_eq!(
        err,
        DecodeError::IncompatibleVersion {
            ours_major: PROTOCOL_MAJOR,
            ours_minor: PROTOCOL_MINOR,
            theirs_major: 2,
            theirs_minor: 0
        }
    );
    let msg = err.to_string();
    assert!(
        msg.contains(&protocol_version()) && msg.contains("2.0"),
        "{msg}"
    );
}

#[test]
fn splitter_reassembles_frames_from_arbitrary_chunks() {
    let all = common::one_of_each();
    let mut stream = Vec::new();
    for chunk in all.chunks(3) {
        stream.extend(encode_frame(0, chunk).unwrap());
    }
    for step in [1usize, 2, 7, 64, 4096] {
        let mut sp = FrameSplitter::new();
        let mut got = Vec::new();
        for piece in stream.chunks(step) {
            sp.extend(piece);
            while let Some(b) = sp.next_body().unwrap() {
                got.extend(decode_frame(b).unwrap().events);
            }
        }
        assert_eq!(got, all, "step {step}");
        assert_eq!(sp.pending(), 0);
        assert_eq!(sp.offset(), stream.len() as u64);
    }
}

#[test]
fn oversized_length_prefix_is_refused_before_allocating() {
    let mut sp = FrameSplitter::new();
    sp.extend(&(MAX_FRAME_LEN as u32 + 1).to_le_bytes());
    assert!(matches!(
        sp.next_body(),
        Err(DecodeError::FrameTooLarge { .. })
    ));
}

#[test]
fn decode_errors_name_the_offset() {
    // A span end whose timestamp delta is a string.
    let body = [0xdd, 0, 0, 0, 4, 0x01, 0x00, 0x00, 0x93, 7, 1, 0xa1, b'x'];
    let err = decode_frame(&body).unwrap_err();
    assert_eq!(
        err,
        DecodeError::WrongType {
            offset: 11,
            expected: "an integer",
            marker: 0xa1
        }
    );
    assert!(err.to_string().contains("byte 11"));
}

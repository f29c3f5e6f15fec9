//! Whatever the bytes, decoding returns a value or a typed error; it never panics. 10,000+
//! cases per property (PROPTEST_CASES raises it further).
mod common;
use probe_protocol::*;
use proptest::prelude::*;

fn cases() -> u32 {
    std::env::var("PROPTEST_CASES")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(10_000)
}

fn valid_stream() -> Vec<u8> {
    let all = common::one_of_each();
    let mut out = Vec::new();
    for c in all.chunks(4) {
        out.extend(encode_frame(123, c).unwrap());
    }
    out
}

/// Feeds bytes through every decoder: splitter + frame decoder, and the recording reader.
fn decode_everything(bytes: &[u8]) {
    let _ = decode_frame(bytes);
    let mut sp = FrameSplitter::new();
    sp.extend(bytes);
    while let Ok(Some(b)) = sp.next_body() {
        let _ = decode_frame(b);
    }
    let mut file = RECORDING_MAGIC.to_vec();
    file.extend_from_slice(&[1, 0, 0, 0]);
    file.extend_from_slice(bytes);
    if let Ok(rec) = read_all(&file[..]) {
        assert!(rec.frames.len() <= bytes.len() / 5 + 1);
    }
    let _ = read_all(bytes);
}

proptest! {
    #![proptest_config(ProptestConfig { cases: cases(), failure_persistence: None, .. ProptestConfig::default() })]

    #[test]
    fn random_bytes(bytes in proptest::collection::vec(any::<u8>(), 0..512)) {
        decode_everything(&bytes);
    }

    #[test]
    fn random_msgpack_like_bodies(
        head in proptest::collection::vec(prop_oneof![Just(0xddu8), Just(0), Just(1), Just(3)], 0..8),
        tail in proptest::collection::vec(any::<u8>(), 0..256),
    ) {
        // Bodies that start like a frame so the decoder gets past the header.
        let mut b = vec![0xdd, 0, 0, 0, 6, 1, 0, 0];
        b.extend(head);
        b.extend(tail);
        decode_everything(&b);
    }

    #[test]
    fn bit_flipped_valid_streams(flips in proptest::collection::vec((any::<prop::sample::Index>(), 0u8..8), 1..6)) {
        let mut s = valid_stream();
        for (i, bit) in flips {
            let at = i.index(s.len());
            s[at] ^= 1 << bit;
        }
        decode_everything(&s);
    }

    #[test]
    fn truncated_valid_streams(cut in any::<prop::sample::Index>()) {
        let s = valid_stream();
        let at = cut.index(s.len());
        decode_everything(&s[..at]);
        decode_everything(&s[at..]);
    }

    /// Random span edges and samples survive the round trip exactly, whatever the deltas.
    #[test]
    fn random_events_round_trip(evs in proptest::collection::vec(
        (0u64..(1u64 << 62), 1u64..(1u64 << 62), proptest::option::of(1u64..(1 << 62)), proptest::option::of(any::<u64>()), any::<u32>(), any::<u32>(), any::<bool>()),
        0..64), base in 0u64..(1 << 62))
    {
        let events: Vec<Event> = evs.into_iter().map(|(ts, span, parent, proof, name, thread, end)| {
            if end {
                Event::SpanEnd(SpanEnd { ts, span })
            } else {
                Event::SpanBegin(SpanBegin { ts, span, parent, proof, name, thread })
            }
        }).collect();
        let frame = encode_frame(base, &events).unwrap();
        let decoded = decode_frame(&frame[4..]).unwrap();
        prop_assert_eq!(decoded.events, events);
    }
}

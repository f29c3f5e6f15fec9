//! Golden bytes: these pin the wire encoding of every kind. A change here is a protocol change:
//! bump the version and update docs/PROTOCOL.md.
mod common;
use probe_protocol::*;

fn hex(b: &[u8]) -> String {
    b.iter()
        .map(|x| format!("{x:02x}"))
        .collect::<Vec<_>>()
        .join(" ")
}

/// Event bytes of `ev` alone in a frame with base 500 (the frame header is checked once).
fn event_bytes(ev: &Event) -> String {
    let frame = encode_frame(500, std::slice::from_ref(ev)).unwrap();
    // prefix(4) | dd + count 4 (3 header fields + 1 event) | major 1 | minor 7 | base cd 01 f4
    assert_eq!(
        &frame[4..14],
        &[0xdd, 0, 0, 0, 4, 0x01, 0x07, 0xcd, 0x01, 0xf4]
    );
    hex(&frame[14..])
}

#[test]
fn frame_header_layout() {
    let frame = encode_frame(500, &[Event::Heartbeat { ts: 510 }]).unwrap();
    assert_eq!(
        hex(&frame),
        // len=13 | array32 n=4 | major 1 | minor 7 | base 500 | [15, +10]
        "0d 00 00 00 dd 00 00 00 04 01 07 cd 01 f4 92 0f 0a"
    );
}

#[test]
fn golden_bytes_per_kind() {
    let expected: &[(&str, &str)] = &[
        ("hello", ""),
        ("name_def", "93 02 03 a9 6e 74 74 5f 6d 73 6d 5f 68"),
        ("thread_def", "94 03 01 a4 6d 61 69 6e cd 7a 69"),
        ("proof_begin", ""),
        // [6, span +101, parent 101-100=1, proof 7, name 3, thread 1, ts 1500-500=+1000]
        ("span_begin", "97 06 65 01 07 03 01 cd 03 e8"),
        // [7, span +101, ts +899500]
        ("span_end", "93 07 65 ce 00 0d b9 ac"),
        (
            "marker",
            "96 08 ce 00 0d b5 c4 04 02 64 a7 62 61 72 72 69 65 72",
        ),
        ("alloc_sample", ""),
        (
            "alloc",
            "96 0a ce 00 0f 40 b0 ce f8 8d 26 80 cd 2e e0 01 65",
        ),
        (
            "release",
            // Since 1.3, a trailing stack id (2) when the block has one.
            "97 0b ce 00 1e 82 8c ce 00 a0 00 00 ce 0a ba 95 00 03 c0 02",
        ),
        ("gpu_sample", ""),
        ("gpu_span", "97 0d ce 00 1e 84 80 cd 0d ac 00 01 05 65"),
        ("dropped", "93 0e ce 00 21 8f cc 82 06 0a 07 09"),
        ("heartbeat", "92 0f ce 00 23 16 6c"),
        (
            "history_gap",
            "95 10 ce 00 23 16 6c ce 00 0f 42 40 00 ce 00 1e 84 7f",
        ),
        ("live_start", "92 11 ce 00 23 16 6d"),
        ("proof_end", ""),
        ("goodbye", "93 12 ce 00 2f 4b 6c a6 73 69 67 6e 61 6c"),
        // Since 1.3: [20, id 2, ["drop_in_place<T> (a.rs:1)", "main"]].
        (
            "stack_def",
            "93 14 02 92 b9 64 72 6f 70 5f 69 6e 5f 70 6c 61 63 65 3c 54 3e 20 28 61 2e 72 73 3a 31 29 a4 6d 61 69 6e",
        ),
        // Since 1.2, every field absolute: [19, ts 3_200_000, thread 1, cpu, runq, slices].
        (
            "thread_sched",
            "96 13 ce 00 30 d4 00 01 ce 59 68 2f 00 ce 01 31 2d 00 cd 01 2c",
        ),
        // Since 1.5, every field absolute: [21, ts 3_300_000, thread 1, stream 2 (stderr),
        // offset 1234, bytes 56].
        ("output_write", "96 15 ce 00 32 5a a0 01 02 cd 04 d2 38"),
        // Since 1.6, every field absolute: [22, ts 3_400_000, device 1, context true,
        // used 3 GiB].
        ("gpu_process", "95 16 ce 00 33 e1 40 01 c3 ce c0 00 00 00"),
        // Since 1.7, every field absolute: [23, ts 3_500_000, thread 1, minor 262_144, major 3,
        // user 20 ms, system 480 ms, syscall name 2, argument 1 GiB].
        (
            "thread_kernel",
            "99 17 ce 00 35 67 e0 01 ce 00 04 00 00 03 ce 01 31 2d 00 ce 1c 9c 38 00 02 ce 40 00 00 00",
        ),
        // Since 1.7, every field absolute: [24, ts 3_600_000, thread 1, stack 2].
        ("stack_sample", "94 18 ce 00 36 ee 80 01 02"),
        (
            "subscribe",
            "93 20 c3 b0 70 72 6f 6f 66 73 63 6f 70 65 20 30 2e 31 2e 30",
        ),
    ];
    let all = common::one_of_each();
    for ev in &all {
        let name = ev.kind().name();
        let want = expected.iter().find(|(n, _)| *n == name).unwrap().1;
        let got = event_bytes(ev);
        if want.is_empty() {
            // Map-bodied kinds: pinned by their own test below.
            continue;
        }
        assert_eq!(got, want, "golden bytes of {name}");
    }
}

/// Map-bodied kinds: [tag, (dt,) map] where the map keys are the field names.
#[test]
fn golden_bytes_of_map_kinds() {
    let all = common::one_of_each();
    let get = |k: EventKind| all.iter().find(|e| e.kind() == k).unwrap();
    let pb = event_bytes(get(EventKind::ProofBegin));
    assert_eq!(
        pb,
        "93 04 cd 01 f4 87 a5 70 72 6f 6f 66 07 a4 73 70 61 6e 64 a7 63 69 72 63 75 69 74 a6 73 68 61 32 35 36 ab 63 6f 6e 73 74 72 61 69 6e 74 73 cd 64 f0 a8 63 69 72 63 75 69 74 73 02 a7 62 61 63 6b 65 6e 64 a3 63 70 75 ad 73 79 6e 74 68 65 74 69 63 5f 73 72 73 c2"
    );
    let pe = event_bytes(get(EventKind::ProofEnd));
    assert_eq!(
        pe,
        "93 05 ce 00 2d c4 cc 84 a5 70 72 6f 6f 66 07 a2 6f 6b c3 ac 76 65 72 69 66 69 63 61 74 69 6f 6e a5 76 61 6c 69 64 a5 65 72 72 6f 72 c0"
    );
    let hello = event_bytes(get(EventKind::Hello));
    // 24 keys since 1.4 (cpu_model and os appended after command_line in 1.1, instance and
    // stack_threshold after os in 1.4).
    assert!(
        hello.starts_with("92 01 de 00 18 ae 70 72 6f 74 6f 63 6f 6c 5f 6d 61 6a 6f 72 01"),
        "{hello}"
    );
    assert!(
        hello.contains("92 a6 70 72 6f 76 65 72 a5 73 65 72 76 65 a9 63 70 75 5f 6d 6f 64 65 6c"),
        "command_line then cpu_model: {hello}"
    );
    let s = event_bytes(get(EventKind::AllocSample));
    assert_eq!(
        s,
        "99 09 ce 00 0f 40 4c cf 00 00 00 01 40 00 00 00 cf 00 00 00 01 80 00 00 00 ce 00 01 e2 40 ce 00 01 d4 c0 cf 00 00 00 14 00 00 00 00 cf 00 00 00 12 c0 00 00 00 cf 00 00 00 01 c0 00 00 00"
    );
    let g = event_bytes(get(EventKind::GpuSample));
    assert_eq!(
        g,
        "9e 0c ce 00 20 09 2c 00 61 28 cf 00 00 00 14 00 00 00 00 cf 00 00 00 23 40 00 00 00 ce 00 07 d0 00 ce 00 96 b4 3f 3d cd 07 bc cd 0c 81 c0 c0"
    );
}

/// Span edges must stay compact: the budget is 12 bytes per edge on a realistic stream.
#[test]
fn span_edges_are_compact() {
    let mut events = Vec::new();
    let mut ts = 1_000_000u64;
    for i in 0..1000u64 {
        let span = 10_000 + i;
        events.push(Event::SpanBegin(SpanBegin {
            ts,
            span,
            parent: Some(10_000),
            proof: Some(3),
            name: (i % 7) as u32,
            thread: 2,
        }));
        ts += 2_500;
        events.push(Event::SpanEnd(SpanEnd { ts, span }));
        ts += 700;
    }
    let frame = encode_frame(1_000_000, &events).unwrap();
    let per_edge = (frame.len() - 15) as f64 / events.len() as f64;
    assert!(per_edge <= 12.0, "{per_edge} bytes per span edge");
}

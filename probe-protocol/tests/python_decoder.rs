//! The spec must be enough to decode without Rust: tools/psrec.py (written from
//! docs/PROTOCOL.md) decodes a recording holding every kind to the same values.
//! Skipped, with a note, where python3 or its msgpack package is missing.
mod common;
use probe_protocol::*;
use std::process::Command;

#[test]
fn python_decoder_from_the_spec_agrees() {
    let ok = Command::new("python3")
        .args(["-c", "import msgpack"])
        .status()
        .map(|s| s.success())
        .unwrap_or(false);
    if !ok {
        eprintln!("SKIPPED: python3 with msgpack not available (pip install msgpack)");
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("all.psrec");
    let mut w = RecordingWriter::new(std::fs::File::create(&path).unwrap()).unwrap();
    for chunk in common::one_of_each().chunks(4) {
        w.write_frame(&encode_frame(500, chunk).unwrap()).unwrap();
    }
    w.flush().unwrap();
    drop(w);
    let script = concat!(env!("CARGO_MANIFEST_DIR"), "/../tools/psrec.py");
    let out = Command::new("python3")
        .arg(script)
        .arg(&path)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let text = String::from_utf8(out.stdout).unwrap();
    let expect = [
        "span_begin {'span': 101, 'parent': 100, 'proof': 7, 'name': 3, 'thread': 1, 'ts': 1500}",
        "span_end {'span': 101, 'ts': 900000}",
        "marker {'ts': 899000, 'name': 4, 'thread': 2, 'span': 100, 'text': 'barrier'}",
        "release {'ts': 2000000, 'bytes': 10485760, 'inside_ns': 180000000, 'thread': 3, 'span': None, 'stack': 2}",
        "stack_def {'id': 2, 'frames': ['drop_in_place<T> (a.rs:1)', 'main']}",
        "gpu_span {'start': 2000500, 'end': 2004000, 'device': 0, 'stream': 1, 'name': 5, 'span': 101}",
        "dropped {'ts': 2200000, 'counts': {'span_begin': 10, 'span_end': 9}}",
        "live_start {'ts': 2300001}",
        "goodbye {'ts': 3100000, 'reason': 'signal'}",
        "output_write {'ts': 3300000, 'thread': 1, 'stream': 2, 'offset': 1234, 'bytes': 56}",
    ];
    for line in expect {
        assert!(text.contains(line), "missing {line:?} in:\n{text}");
    }
    let n_kinds = EventKind::ALL.len();
    let summary = text.lines().find(|l| l.starts_with("events:")).unwrap();
    assert_eq!(summary.matches("=1").count(), n_kinds, "{summary}");
}

fn python_ok() -> bool {
    let ok = Command::new("python3")
        .args(["-c", "import msgpack"])
        .status()
        .map(|s| s.success())
        .unwrap_or(false);
    if !ok {
        eprintln!("SKIPPED: python3 with msgpack not available (pip install msgpack)");
    }
    ok
}

/// Like the viewer, the spec's decoder skips a frame that does not decode and says so, and it
/// never stops with a Python traceback, whatever the bytes (mutated recordings).
#[test]
fn python_decoder_skips_bad_frames_and_never_crashes() {
    if !python_ok() {
        return;
    }
    let script = concat!(env!("CARGO_MANIFEST_DIR"), "/../tools/psrec.py");
    let help = Command::new("python3")
        .arg(script)
        .arg("--help")
        .output()
        .unwrap();
    assert!(help.status.success());
    let dir = tempfile::tempdir().unwrap();
    let mut w = RecordingWriter::new(Vec::new()).unwrap();
    for chunk in common::one_of_each().chunks(3) {
        w.write_frame(&encode_frame(500, chunk).unwrap()).unwrap();
    }
    let good = w.into_inner();
    // A frame whose body is garbage, between good frames.
    let second = 12 + 4 + u32::from_le_bytes(good[12..16].try_into().unwrap()) as usize;
    let mut one_bad = good.clone();
    one_bad[second + 4 + 1] ^= 0xff;
    let path = dir.path().join("one-bad.psrec");
    std::fs::write(&path, &one_bad).unwrap();
    let out = Command::new("python3")
        .arg(script)
        .arg(&path)
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{err}");
    assert!(
        err.contains(&format!("frame at byte {second} skipped")),
        "{err}"
    );
    assert!(String::from_utf8_lossy(&out.stdout).contains("bad frames: 1"));
    // Mutations: flipped bytes and cuts, from a fixed seed.
    let mut seed = 0x9e37_79b9_7f4a_7c15u64;
    let mut rnd = move || {
        seed ^= seed << 13;
        seed ^= seed >> 7;
        seed ^= seed << 17;
        seed
    };
    for i in 0..120 {
        let mut m = good.clone();
        for _ in 0..1 + rnd() % 4 {
            let at = 12 + (rnd() as usize) % (m.len() - 12);
            m[at] = rnd() as u8;
        }
        if i % 3 == 0 {
            m.truncate(12 + (rnd() as usize) % (m.len() - 12));
        }
        let p = dir.path().join(format!("m{i}.psrec"));
        std::fs::write(&p, &m).unwrap();
        let out = Command::new("python3")
            .arg(script)
            .arg(&p)
            .output()
            .unwrap();
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(!err.contains("Traceback"), "mutation {i}:\n{err}");
    }
}

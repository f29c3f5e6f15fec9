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
        "release {'ts': 2000000, 'bytes': 10485760, 'inside_ns': 180000000, 'thread': 3, 'span': None}",
        "gpu_span {'start': 2000500, 'end': 2004000, 'device': 0, 'stream': 1, 'name': 5, 'span': 101}",
        "dropped {'ts': 2200000, 'counts': {'span_begin': 10, 'span_end': 9}}",
        "live_start {'ts': 2300001}",
        "goodbye {'ts': 3100000, 'reason': 'signal'}",
    ];
    for line in expect {
        assert!(text.contains(line), "missing {line:?} in:\n{text}");
    }
    let n_kinds = EventKind::ALL.len();
    let summary = text.lines().find(|l| l.starts_with("events:")).unwrap();
    assert_eq!(summary.matches("=1").count(), n_kinds, "{summary}");
}

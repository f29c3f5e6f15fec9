//! `prover serve` with batches that overlap (the next synthesised beside the current one's
//! device phases), recorded and read back: the report shows the overlap, keeps the device phases
//! in batch order, counts every release once, and says how each batch was admitted; with
//! `--sequential` nothing overlaps.
// The built-in prover (`proofscope prover …`): the `demo` feature.
#![cfg(feature = "demo")]

mod common;

use common::{BIN, cache};

use serde_json::Value;
use std::path::Path;
use std::process::Command;

/// Serves four batches into a recording and returns its JSON report's session.
fn served(dir: &Path, name: &str, extra: &[&str]) -> Value {
    let rec = dir.join(format!("{name}.psrec"));
    let out = Command::new(BIN)
        .args([
            "prover",
            "serve",
            "--circuit",
            "squaring",
            "--log-size",
            "16",
        ])
        .args(["--circuits", "2", "--proofs", "4", "--socket", "none"])
        .args(["--dealloc", "async", "--srs", "synthetic"])
        .arg("--record")
        .arg(&rec)
        .arg("--cache")
        .arg(cache())
        .args(extra)
        .output()
        .unwrap();
    let log = String::from_utf8_lossy(&out.stderr).into_owned();
    assert!(out.status.success(), "{log}");
    assert!(log.contains("throughput: "), "{log}");
    assert_eq!(log.matches("proofs per minute").count(), 5, "{log}");
    let report = Command::new(BIN)
        .args(["replay", "--headless", "--format", "json"])
        .arg(&rec)
        .output()
        .unwrap();
    assert!(report.status.success());
    let v: Value = serde_json::from_slice(&report.stdout).unwrap();
    v["sessions"][0].clone()
}

fn phase<'a>(p: &'a Value, name: &str) -> &'a Value {
    p["phases"]
        .as_array()
        .unwrap()
        .iter()
        .find(|ph| ph["name"] == name)
        .unwrap_or_else(|| panic!("no {name} in {p}"))
}

/// Absolute start and end of a proof's phase.
fn at(p: &Value, name: &str) -> (u64, u64) {
    let ph = phase(p, name);
    let start = p["start_ns"].as_u64().unwrap() + ph["start_offset_ns"].as_u64().unwrap();
    (start, start + ph["duration_ns"].as_u64().unwrap())
}

/// Releases the proof's report counts, in all four places.
fn counted(p: &Value) -> u64 {
    [
        "in_outer_outside_phases",
        "in_phases",
        "elsewhere_during",
        "after_outer",
    ]
    .iter()
    .map(|g| p["releases"][g]["count"].as_u64().unwrap())
    .sum()
}

#[test]
fn overlapping_batches_are_reported_as_such_and_sequential_ones_are_not() {
    let dir = tempfile::tempdir().unwrap();
    let s = served(dir.path(), "overlap", &[]);
    let proofs = s["proofs"].as_array().unwrap();
    assert_eq!(proofs.len(), 4);
    let t = &s["throughput"];
    assert_eq!(t["proofs"], 4, "{t}");
    assert_eq!(t["most_in_flight"], 2, "{t}");
    assert!(t["overlapping"].as_u64().unwrap() >= 2, "{t}");
    assert!(t["per_minute"].as_f64().unwrap() > 0.0, "{t}");
    for (i, p) in proofs.iter().enumerate() {
        assert!(p["complete"].as_bool().unwrap(), "{p}");
        let notes = p["notes"].as_array().unwrap();
        let check = notes
            .iter()
            .find(|n| n[0] == "memory_check")
            .unwrap_or_else(|| panic!("proof {i} has no memory check: {p}"));
        let text = check[1].as_str().unwrap();
        if i == 0 {
            assert!(text.contains("started alone"), "{text}");
        } else {
            assert!(
                text.contains("synthesised beside the previous batch")
                    && text.contains("of proving vectors needed")
                    && text.contains("available"),
                "{text}"
            );
        }
        // Waiting for the devices is a phase, not unaccounted time.
        phase(p, "wait_devices");
    }
    // The devices are taken in batch order: a batch's device phases begin after the previous
    // batch's end.
    for w in proofs.windows(2) {
        let (_, prev_end) = at(&w[0], "tail_msm");
        let (next_start, _) = at(&w[1], "ntt_msm_h");
        assert!(next_start >= prev_end, "{} < {}", next_start, prev_end);
        // And the next batch was synthesised while the previous one was still in flight.
        let prev_outer_end =
            w[0]["start_ns"].as_u64().unwrap() + w[0]["duration_ns"].as_u64().unwrap();
        assert!(w[1]["start_ns"].as_u64().unwrap() < prev_outer_end);
    }
    // Every release is counted once at most, however the windows overlap.
    let per_proof: u64 = proofs.iter().map(counted).sum();
    assert!(per_proof > 0);
    assert!(per_proof <= s["releases"]["count"].as_u64().unwrap());

    let s = served(dir.path(), "sequential", &["--sequential"]);
    let t = &s["throughput"];
    assert_eq!(t["overlapping"], 0, "{t}");
    assert_eq!(t["most_in_flight"], 1, "{t}");
    for p in s["proofs"].as_array().unwrap() {
        assert!(
            p["phases"]
                .as_array()
                .unwrap()
                .iter()
                .all(|ph| ph["name"] != "wait_devices"),
            "{p}"
        );
        assert!(p["notes"].as_array().unwrap().is_empty(), "{p}");
    }
}

/// With fewer proofs than workers, the worker that reaches the limit first must not stop the
/// one about to prove the last batch.
#[test]
fn one_proof_is_proved_with_two_workers() {
    let out = Command::new(BIN)
        .args([
            "prover",
            "serve",
            "--circuit",
            "squaring",
            "--log-size",
            "10",
        ])
        .args(["--circuits", "2", "--proofs", "1", "--socket", "none"])
        .arg("--cache")
        .arg(cache())
        .output()
        .unwrap();
    let log = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{log}");
    assert!(log.contains("proof 1: 2 × squaring 2^10"), "{log}");
    assert!(log.contains("stopping: done: 1 proofs"), "{log}");
}

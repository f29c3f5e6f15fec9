//! `proofscope import` on the hand-written curio cuzk log (recordings/logs/): every partition's
//! phases, the wrapper's gap with its reconstructed cause, the malformed line named; `replay`
//! and `diff` given the log directly; the refusals.
mod common;

use common::BIN;

use std::path::PathBuf;
use std::process::{Command, Output};

fn log() -> PathBuf {
    common::recording("logs/cuzk-c2-3-partitions.log")
}

fn run(args: &[&std::ffi::OsStr]) -> Output {
    Command::new(BIN).args(args).output().unwrap()
}

fn json_report(file: &std::path::Path) -> serde_json::Value {
    let o = run(&[
        "replay".as_ref(),
        file.as_os_str(),
        "--headless".as_ref(),
        "--format".as_ref(),
        "json".as_ref(),
    ]);
    assert!(o.status.success(), "{o:?}");
    serde_json::from_slice(&o.stdout).unwrap()
}

/// Checks the report of the imported log, however it was imported.
fn check(v: &serde_json::Value) {
    let warnings: Vec<&str> = v["warnings"]
        .as_array()
        .unwrap()
        .iter()
        .map(|w| w.as_str().unwrap())
        .collect();
    assert!(
        warnings
            .iter()
            .any(|w| w.contains("cuzk-c2-3-partitions.log:51") && w.contains("1449x0")),
        "the malformed line is named: {warnings:?}"
    );
    assert!(
        warnings.iter().any(|w| w.contains("reconstructed")),
        "the report says which times are reconstructed: {warnings:?}"
    );
    let s = &v["sessions"][0];
    assert_eq!(s["clock"], "reconstructed from log timers (ms)");
    let proofs = s["proofs"].as_array().unwrap();
    assert_eq!(proofs.len(), 3, "one proof per partition");
    for (i, p) in proofs.iter().enumerate() {
        assert!(
            p["circuit"]
                .as_str()
                .unwrap()
                .contains(&format!("partition {i}")),
            "{}",
            p["circuit"]
        );
        let phases: Vec<(String, String)> = p["phases"]
            .as_array()
            .unwrap()
            .iter()
            .map(|ph| {
                (
                    ph["name"].as_str().unwrap().to_owned(),
                    ph["thread"].as_str().unwrap().to_owned(),
                )
            })
            .collect();
        for (name, thread) in [
            ("split_vectors", "caller"),
            ("prep_msm", "prep_msm"),
            ("b_g2_msm", "prep_msm"),
            ("epilogue", "caller"),
        ] {
            assert!(
                phases.contains(&(name.into(), thread.into())),
                "proof {i}: {name} on {thread} in {phases:?}"
            );
        }
        for gpu in ["gpu-0", "gpu-1"] {
            for name in ["ntt_msm_h", "batch_add", "tail_msm"] {
                assert!(
                    phases.contains(&(name.into(), gpu.into())),
                    "proof {i}: {name} on {gpu} in {phases:?}"
                );
            }
        }
    }
    // Partitions 0 and 1 freed synchronously: the wrapper's 10 s is flagged, with its cause.
    for p in &proofs[..2] {
        let flagged: Vec<&serde_json::Value> = p["gaps"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|g| g["flagged"] == true)
            .collect();
        assert_eq!(flagged.len(), 1, "{flagged:?}");
        let g = flagged[0];
        let secs = g["duration_ns"].as_u64().unwrap() as f64 / 1e9;
        assert!((10.0..10.5).contains(&secs), "{secs}");
        assert_eq!(g["place"], "after_last");
        assert_eq!(g["diagnosis"]["kind"], "synchronous_release");
        let sentence = g["diagnosis"]["sentence"].as_str().unwrap();
        assert!(sentence.contains("pre_destructor_ms"), "{sentence}");
        assert!(sentence.contains("destructors"), "{sentence}");
    }
    // Partition 2 moved its drops to a detached thread: nothing flagged.
    assert!(
        proofs[2]["gaps"]
            .as_array()
            .unwrap()
            .iter()
            .all(|g| g["flagged"] == false),
        "{}",
        proofs[2]["gaps"]
    );
}

#[test]
fn the_cuzk_log_imports_into_a_recording_with_each_partition_and_the_wrappers_gap() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("imported.psrec");
    let o = run(&[
        "import".as_ref(),
        log().as_os_str(),
        "-o".as_ref(),
        out.as_os_str(),
    ]);
    assert!(o.status.success(), "{o:?}");
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(
        err.contains("cuzk-c2-3-partitions.log:51"),
        "the malformed line on stderr: {err}"
    );
    assert!(err.contains("imported 3 proofs"), "{err}");
    assert!(err.contains("6 unknown skipped"), "{err}");
    check(&json_report(&out));

    // The text report, as pasted into an issue, flags the gap with the cause.
    let o = run(&["replay".as_ref(), out.as_os_str(), "--headless".as_ref()]);
    let text = String::from_utf8_lossy(&o.stdout);
    assert!(
        text.contains("! gap in prove: 10.2 s after the last child"),
        "{text}"
    );

    // An existing output is kept unless --force.
    let o = run(&[
        "import".as_ref(),
        log().as_os_str(),
        "-o".as_ref(),
        out.as_os_str(),
    ]);
    assert_eq!(o.status.code(), Some(2), "{o:?}");
    assert!(String::from_utf8_lossy(&o.stderr).contains("--force"));
}

#[test]
fn replay_and_diff_take_the_log_directly() {
    check(&json_report(&log()));
    let o = run(&[
        "diff".as_ref(),
        log().as_os_str(),
        log().as_os_str(),
        "--fail-on-regression".as_ref(),
        "1".as_ref(),
    ]);
    assert!(o.status.success(), "{o:?}");
}

#[test]
fn a_file_in_no_known_format_is_refused_with_what_was_expected() {
    let dir = tempfile::tempdir().unwrap();
    let junk = dir.path().join("junk.log");
    std::fs::write(&junk, "hello\nworld\nCUZK_TIMING: prep_msm_ms=fast\n").unwrap();
    let out = dir.path().join("never.psrec");
    let o = run(&[
        "import".as_ref(),
        junk.as_os_str(),
        "-o".as_ref(),
        out.as_os_str(),
    ]);
    assert_eq!(o.status.code(), Some(1), "{o:?}");
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(err.contains("known format"), "{err}");
    assert!(
        err.contains("junk.log:3"),
        "the malformed line is named: {err}"
    );
    assert!(!out.exists(), "nothing written");
    let o = run(&["replay".as_ref(), junk.as_os_str(), "--headless".as_ref()]);
    assert_eq!(o.status.code(), Some(1), "{o:?}");
}

/// Two GPU workers, each proving a partition in a call of its own, print their calls' lines
/// interleaved (recordings/logs/cuzk-c2-interleaved.log: partitions 0 and 1 at once, then 2
/// and 3): one proof per partition the log's `TIMELINE` names — before, every line of a key
/// the open call already had "started another call", and the 4 partitions read as 16 proofs.
#[test]
fn interleaved_workers_give_one_proof_per_partition() {
    let v = json_report(&common::recording("logs/cuzk-c2-interleaved.log"));
    let warnings = v["warnings"].to_string();
    assert!(!warnings.contains("ends without a line"), "{warnings}");
    assert!(!warnings.contains("came after every"), "{warnings}");
    let proofs = v["sessions"][0]["proofs"].as_array().unwrap();
    let circuits: Vec<&str> = proofs
        .iter()
        .map(|p| p["circuit"].as_str().unwrap())
        .collect();
    assert_eq!(circuits.len(), 4, "{circuits:?}");
    for (i, c) in circuits.iter().enumerate() {
        assert!(c.contains(&format!("partition {i}")), "{circuits:?}");
    }
    for p in proofs {
        let names: Vec<&str> = p["phases"]
            .as_array()
            .unwrap()
            .iter()
            .map(|ph| ph["name"].as_str().unwrap())
            .collect();
        // Each call has each of its phases once.
        for phase in [
            "split_vectors",
            "prep_msm",
            "ntt_msm_h",
            "batch_add",
            "tail_msm",
            "b_g2_msm",
        ] {
            assert_eq!(
                names.iter().filter(|n| **n == phase).count(),
                1,
                "{phase} in {names:?}"
            );
        }
        // Each call's wrapper timer (`prover time: 13.1s` … `13.17s`) is its span.
        let secs = p["duration_ns"].as_f64().unwrap() / 1e9;
        assert!((13.09..13.18).contains(&secs), "{secs} s");
    }
    // Each worker's `CUZK_NTT_H` steps inside its own call's `ntt_msm_h`: one a call.
    let log = common::recording("logs/cuzk-c2-interleaved.log");
    let o = run(&[
        "replay".as_ref(),
        log.as_os_str(),
        "--headless".as_ref(),
        "--format".as_ref(),
        "chrome".as_ref(),
    ]);
    let trace = String::from_utf8_lossy(&o.stdout);
    assert_eq!(trace.matches("\"name\":\"ntt_kernels\"").count(), 4);
}

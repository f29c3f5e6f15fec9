//! The real captures of supraseal's C2 (recordings/supraseal/, from an H200): each stderr log
//! imports into one proof per `prover time` line with its GPU worker's phases and no malformed
//! warnings, and the upstream log joined to the preload's recording of the same run places each
//! call's in-call frees inside its wrapper.

mod common;

use common::BIN;
use std::path::{Path, PathBuf};
use std::process::Command;

fn capture(name: &str) -> PathBuf {
    common::recording("supraseal").join(name)
}

fn json(args: &[&std::ffi::OsStr]) -> serde_json::Value {
    let o = Command::new(BIN)
        .arg("replay")
        .args(args)
        .args(["--headless", "--format", "json"])
        .output()
        .unwrap();
    assert!(o.status.success(), "{o:?}");
    serde_json::from_slice(&o.stdout).unwrap()
}

/// The calls the log itself says it made: bellperson's wrapper line, one per call.
fn calls_in(log: &Path) -> usize {
    std::fs::read_to_string(log)
        .unwrap()
        .lines()
        .filter(|l| l.contains("] prover time: "))
        .count()
}

fn proofs(v: &serde_json::Value) -> Vec<&serde_json::Value> {
    v["sessions"]
        .as_array()
        .unwrap()
        .iter()
        .flat_map(|s| s["proofs"].as_array().unwrap())
        .collect()
}

/// The (phase, thread) pairs of a proof.
fn phases(p: &serde_json::Value) -> Vec<(String, String)> {
    p["phases"]
        .as_array()
        .unwrap()
        .iter()
        .map(|ph| {
            (
                ph["name"].as_str().unwrap().to_owned(),
                ph["thread"].as_str().unwrap().to_owned(),
            )
        })
        .collect()
}

#[test]
fn every_capture_imports_one_proof_per_call_with_its_workers_phases_and_no_malformed_line() {
    let logs = [
        "upstream-k22x4.stderr.log",
        "fork-k22x4.stderr.log",
        "fork-k22x4-4calls.stderr.log",
        "fork-k22x10-4calls.stderr.log",
    ];
    for name in logs {
        let log = capture(name);
        let v = json(&[log.as_os_str()]);
        let warnings = v["warnings"].to_string();
        assert!(warnings.contains(" 0 malformed"), "{name}: {warnings}");
        let got = proofs(&v);
        assert_eq!(got.len(), calls_in(&log), "{name}: one proof per call");
        for p in got {
            assert_eq!(p["complete"], true, "{name}: {p}");
            let ph = phases(p);
            if name.starts_with("fork") {
                // The fork's timers: the GPU worker's steps on its lane, the CPU's on prep_msm.
                for step in ["ntt_msm_h", "batch_add", "tail_msm"] {
                    assert!(
                        ph.contains(&(step.into(), "gpu-0".into())),
                        "{name} proof {}: {step} on gpu-0 in {ph:?}",
                        p["id"]
                    );
                }
                for step in ["prep_msm", "b_g2_msm"] {
                    assert!(
                        ph.contains(&(step.into(), "prep_msm".into())),
                        "{name} proof {}: {step} in {ph:?}",
                        p["id"]
                    );
                }
                // Every call had async_dealloc_ms: nothing is a synchronous release.
                assert!(
                    !p.to_string().contains("synchronous_release"),
                    "{name} proof {}: {p}",
                    p["id"]
                );
            } else {
                assert_eq!(ph.len(), 1, "upstream prints no inner timers: {ph:?}");
            }
        }
    }
}

#[test]
fn the_upstream_log_joined_to_its_recording_puts_each_calls_frees_inside_its_wrapper() {
    let rec = capture("upstream-k22x4.psrec");
    let log = capture("upstream-k22x4.stderr.log");
    let v = json(&[rec.as_os_str(), "--log".as_ref(), log.as_os_str()]);
    let got = proofs(&v);
    assert_eq!(got.len(), calls_in(&log));
    for p in got {
        let r = &p["releases"];
        let inside = r["in_phases"]["count"].as_u64().unwrap()
            + r["in_outer_outside_phases"]["count"].as_u64().unwrap();
        assert_eq!(inside, 16, "proof {}: {r}", p["id"]);
        let bytes = r["in_phases"]["bytes"].as_u64().unwrap()
            + r["in_outer_outside_phases"]["bytes"].as_u64().unwrap();
        assert_eq!((bytes + 50_000) / 100_000, 3185, "318.5 MB inside: {r}");
        assert!(
            r["in_phases"]["threads"].to_string().contains("\"main\""),
            "{r}"
        );
        // The caller's own 16 × 134.2 MB after the timer are outside the proof.
        assert_eq!(r["after_outer"]["count"], 16, "{r}");
    }
}

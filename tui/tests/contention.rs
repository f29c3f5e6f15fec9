//! Scheduling evidence on a real prover (`probe/examples/contended_prover.rs`): a CPU-bound
//! stretch no phase covers is runnable (running, or waiting when this host is busy) alone, and
//! "waiting for a CPU" beside a CPU hog pinned to the same core (started here, bounded in time); a stretch blocked on a lock is "blocked",
//! naming the span of the thread that held it.

use std::process::{Command, Stdio};

mod common;

use common::BIN;
use common::Running;

/// The flagged gaps of 2 proofs of the contended prover: (kind, sched evidence, sentence).
fn flagged_gaps(hog: bool) -> Vec<(String, serde_json::Value, String)> {
    let exe = common::example("contended_prover");
    // The prover pins its proving thread to the first CPU it may use; the hog does the same.
    let _hog = hog.then(|| {
        Running(
            Command::new(&exe)
                .args(["hog", "60"])
                .stdout(Stdio::null())
                .spawn()
                .unwrap(),
        )
    });
    let dir = tempfile::tempdir().unwrap();
    let sock = dir.path().join("contended.sock");
    let _prover = common::serve_example("contended_prover", &["--proofs", "3"], &sock);
    let out = Command::new(BIN)
        .arg("attach")
        .arg(&sock)
        .args([
            "--headless",
            "--proofs",
            "2",
            "--duration",
            "60",
            "--format",
            "json",
        ])
        .output()
        .unwrap();
    assert!(out.status.success(), "{out:?}");
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let mut gaps = Vec::new();
    for p in v["sessions"][0]["proofs"].as_array().unwrap() {
        if p["complete"] != true {
            continue;
        }
        for g in p["gaps"].as_array().unwrap() {
            if g["flagged"] == true {
                let d = &g["diagnosis"];
                gaps.push((
                    d["kind"].as_str().unwrap().to_owned(),
                    d["sched"].clone(),
                    d["sentence"].as_str().unwrap().to_owned(),
                ));
            }
        }
    }
    assert!(gaps.len() >= 4, "two flagged gaps a proof: {gaps:?}");
    gaps
}

#[test]
fn gaps_say_whether_the_thread_ran_waited_for_a_cpu_or_was_blocked() {
    // Alone, the CPU-bound stretch is runnable throughout: on a CPU, or waiting for one when
    // something else on this host (a parallel build) wants the same CPU — and the kind says
    // which.
    let alone = flagged_gaps(false);
    let runnable: Vec<_> = alone
        .iter()
        .filter(|g| g.0 == "running_uninstrumented" || g.0 == "waiting_for_cpu")
        .collect();
    assert!(!runnable.is_empty(), "{alone:?}");
    for g in runnable {
        let n = |k: &str| g.1[k].as_u64().unwrap();
        let (cpu, runq, w) = (n("cpu_ns"), n("runq_ns"), n("window_ns"));
        assert!(
            (cpu + runq) * 10 >= w * 8,
            "runnable {cpu}+{runq} of {w} ns: {g:?}"
        );
        let waiting = runq * 5 >= w;
        assert_eq!(g.0 == "waiting_for_cpu", waiting, "{g:?}");
    }
    for g in alone.iter().filter(|g| g.0 == "blocked") {
        assert!(
            g.2.contains("it resumed as hold_lock on holder ended"),
            "{g:?}"
        );
    }
    assert!(alone.iter().any(|g| g.0 == "blocked"), "{alone:?}");

    // Beside the hog, the CPU-bound stretch waits for the CPU about half the time.
    let crowded = flagged_gaps(true);
    let waiting: Vec<_> = crowded
        .iter()
        .filter(|g| g.0 == "waiting_for_cpu")
        .collect();
    assert!(!waiting.is_empty(), "{crowded:?}");
    for g in waiting {
        let runq = g.1["runq_ns"].as_u64().unwrap();
        assert!(runq > 50_000_000, "run-queue time {runq} ns: {g:?}");
        assert!(g.2.contains("runnable but waiting for a CPU"), "{g:?}");
    }
    assert!(crowded.iter().any(|g| g.0 == "blocked"), "{crowded:?}");
    assert!(crowded.iter().all(|g| g.0 != "no_evidence"), "{crowded:?}");
}

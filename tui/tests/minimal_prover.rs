//! The probe as any Rust prover embeds it: `probe/examples/minimal_prover.rs` depends on
//! `proofscope-probe` alone; `proofscope attach --headless --proofs 3` against it reports its
//! phases, and with `--dealloc sync` flags the tail gap and diagnoses the release.
//! `probe/examples/tracing_prover.rs` speaks only `tracing`, through the probe's layer.

use std::process::Command;

mod common;

use common::BIN;

/// One example at a time: the ghost's share of a proof is what the test reads, and a second
/// prover paging in its vectors on the same 2 cores would dilute it.
static ONE_AT_A_TIME: std::sync::Mutex<()> = std::sync::Mutex::new(());

/// Runs the minimal prover with `dealloc` and returns the headless report of 3 proofs. The
/// sync ghost (1.6 GB freed) takes 39 ms on an idle build machine, under the default 50 ms
/// floor: the sync side is judged with a 10 ms floor, the async side with the default.
fn report(dealloc: &str) -> String {
    let rule: &[&str] = if dealloc == "sync" {
        &["--gap-min-ms", "10"]
    } else {
        &[]
    };
    report_with(
        "minimal_prover",
        &["--proofs", "6", "--vectors", "6", "--dealloc", dealloc],
        rule,
    )
}

/// Runs example `name` with `args` and returns the headless report of 3 proofs.
fn report_of(name: &str, args: &[&str]) -> String {
    report_with(name, args, &[])
}

/// [`report_of`] with extra options for the viewer (`rule`: a gap rule).
fn report_with(name: &str, args: &[&str], rule: &[&str]) -> String {
    let _one = ONE_AT_A_TIME.lock().unwrap_or_else(|p| p.into_inner());
    let dir = tempfile::tempdir().unwrap();
    let sock = dir.path().join("example.sock");
    let _prover = common::serve_example(name, args, &sock);
    let out = Command::new(BIN)
        .arg("attach")
        .arg(&sock)
        .args(["--headless", "--proofs", "3", "--duration", "120"])
        .args(rule)
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout).into_owned();
    assert!(
        out.status.success(),
        "{text}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    text
}

#[test]
fn a_prover_with_only_the_probe_shows_its_phases_and_its_ghost() {
    let sync = report("sync");
    assert!(sync.contains("prover:   minimal-prover"), "{sync}");
    // Who freed it, from the releases' call stacks: the drop and the line that ran it.
    let example = include_str!("../../probe/examples/minimal_prover.rs");
    let line = 1 + example
        .lines()
        .position(|l| l.contains("drop(vectors); // inside the proof"))
        .expect("the synchronous drop");
    let who = format!("freed by `drop_in_place<Vec<Vec<u8>>>` ← `main` (minimal_prover.rs:{line})");
    for n in 1..=3 {
        let p = common::proof(&sync, n);
        for phase in ["synthesis", "commit", "open"] {
            assert!(
                p.contains(&format!("    {phase} ")),
                "proof {n} lacks {phase}:\n{p}"
            );
        }
        assert!(
            p.contains("! gap in prove:"),
            "proof {n} has no flagged gap:\n{p}"
        );
        assert!(
            p.contains(&format!("{who} in 6 large releases"))
                && p.contains("on the proving thread main")
                && p.contains("synchronous release"),
            "proof {n}'s gap is not diagnosed as the release:\n{p}"
        );
    }

    let async_ = report("async");
    for n in 1..=3 {
        let p = common::proof(&async_, n);
        assert!(p.contains("    synthesis "), "{p}");
        assert!(
            !p.contains("! gap"),
            "async release flagged a gap in proof {n}:\n{p}"
        );
    }
}

#[test]
fn a_prover_that_speaks_only_tracing_shows_its_phases() {
    let r = report_of("tracing_prover", &["--proofs", "6"]);
    assert!(r.contains("prover:   tracing-prover"), "{r}");
    for n in 1..=3 {
        let p = common::proof(&r, n);
        assert!(
            p.contains("toy-tracing"),
            "proof {n} lacks its circuit:\n{p}"
        );
        for phase in ["synthesis", "commit", "open"] {
            assert!(
                p.contains(&format!("    {phase} ")),
                "proof {n} lacks {phase}:\n{p}"
            );
        }
    }
}

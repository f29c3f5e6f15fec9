//! The probe as any prover embeds it: `probe/examples/minimal_prover.rs` depends on
//! `proofscope-probe` alone; `proofscope attach --headless --proofs 3` against it reports its
//! phases, and with `--dealloc sync` flags the tail gap and diagnoses the release.

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

const BIN: &str = env!("CARGO_BIN_EXE_proofscope");

/// The example's binary: `cargo test --workspace` builds it beside this package's binaries;
/// when it is missing (this package's tests alone), it is built now.
fn example() -> PathBuf {
    let dir = Path::new(BIN).parent().unwrap().to_owned();
    let exe = dir.join("examples").join("minimal_prover");
    if !exe.exists() {
        let status = Command::new(env!("CARGO"))
            .args([
                "build",
                "-p",
                "proofscope-probe",
                "--example",
                "minimal_prover",
            ])
            .env("CARGO_TARGET_DIR", dir.parent().unwrap())
            .status()
            .expect("running cargo");
        assert!(status.success(), "building the minimal_prover example");
    }
    exe
}

struct Running(Child);

impl Drop for Running {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// Runs the example with `dealloc` and returns the headless report of 3 proofs.
fn report(dealloc: &str) -> String {
    let dir = tempfile::tempdir().unwrap();
    let sock = dir.path().join("minimal.sock");
    let _prover = Running(
        Command::new(example())
            .args(["--proofs", "6", "--vectors", "6", "--dealloc", dealloc])
            .env("PROOFSCOPE_SOCKET", &sock)
            .env("PROOFSCOPE_GPU_SAMPLE_MS", "0")
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap(),
    );
    let deadline = Instant::now() + Duration::from_secs(30);
    while !sock.exists() {
        assert!(Instant::now() < deadline, "the example opened no socket");
        std::thread::sleep(Duration::from_millis(20));
    }
    let out = Command::new(BIN)
        .arg("attach")
        .arg(&sock)
        .args(["--headless", "--proofs", "3", "--duration", "120"])
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

/// The lines of the report about completed proof `n` (its header to the next proof).
fn proof(report: &str, n: u32) -> String {
    let head = format!("proof #{n}:");
    report
        .lines()
        .skip_while(|l| !l.starts_with(&head))
        .take_while(|l| l.starts_with(&head) || !l.starts_with("proof #"))
        .collect::<Vec<_>>()
        .join("\n")
}

#[test]
fn a_prover_with_only_the_probe_shows_its_phases_and_its_ghost() {
    let sync = report("sync");
    assert!(sync.contains("prover:   minimal-prover"), "{sync}");
    for n in 1..=3 {
        let p = proof(&sync, n);
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
            p.contains("freed in 6 large releases")
                && p.contains("on the proving thread main")
                && p.contains("synchronous release"),
            "proof {n}'s gap is not diagnosed as the release:\n{p}"
        );
    }

    let async_ = report("async");
    for n in 1..=3 {
        let p = proof(&async_, n);
        assert!(p.contains("    synthesis "), "{p}");
        assert!(
            !p.contains("! gap"),
            "async release flagged a gap in proof {n}:\n{p}"
        );
    }
}

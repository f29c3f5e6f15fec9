//! The `prover` binary: artefacts another verifier can check, and clear errors.
mod support;

use bellperson::groth16::{Proof, VerifyingKey, prepare_verifying_key, verify_proof};
use blstrs::{Bls12, Scalar};
use ff::PrimeField;
use std::process::Command;
use support::cache;

const BIN: &str = env!("CARGO_BIN_EXE_prover");

#[test]
fn prove_out_writes_what_bellperson_reads_and_verifies() {
    let dir = tempfile::tempdir().unwrap();
    let out = Command::new(BIN)
        .args([
            "prove",
            "--circuit",
            "squaring",
            "--log-size",
            "10",
            "--circuits",
            "2",
            "--out",
        ])
        .arg(dir.path())
        .arg("--cache")
        .arg(cache())
        .env("PROOFSCOPE_SOCKET", "none")
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let table = String::from_utf8_lossy(&out.stdout);
    for phase in [
        "synthesis",
        "prep_msm",
        "ntt_msm_h",
        "batch_add",
        "tail_msm",
        "b_g2_msm",
        "epilogue",
        "prove",
    ] {
        assert!(table.contains(phase), "phase table lacks {phase}:\n{table}");
    }
    assert!(table.contains("verification: valid"), "{table}");
    let vk = VerifyingKey::<Bls12>::read(std::fs::File::open(dir.path().join("vk.bin")).unwrap())
        .unwrap();
    let pvk = prepare_verifying_key(&vk);
    for i in 0..2 {
        let proof = Proof::<Bls12>::read(
            std::fs::File::open(dir.path().join(format!("proof-{i}.bin"))).unwrap(),
        )
        .unwrap();
        let bytes = std::fs::read(dir.path().join(format!("inputs-{i}.bin"))).unwrap();
        let inputs: Vec<Scalar> = bytes
            .chunks_exact(32)
            .map(|c| Scalar::from_repr_vartime(c.try_into().unwrap()).unwrap())
            .collect();
        assert_eq!(inputs.len(), 1);
        assert!(verify_proof(&pvk, &proof, &inputs).unwrap(), "proof {i}");
        let mut wrong = inputs.clone();
        wrong[0] += Scalar::from(1u64);
        assert!(!verify_proof(&pvk, &proof, &wrong).unwrap());
    }
}

/// `--g2-tail device` moves `b_g2_msm` from the prep thread to the device thread, after
/// `tail_msm`, and the proofs still verify; the table says where it ran.
#[test]
fn the_g2_tail_runs_where_it_is_asked_to() {
    // `auto` (the default) is `prep` on the CPU backend, `device` on a GPU one.
    for (place, thread) in [
        ("prep", "(prep thread"),
        ("device", "(compute-0 thread)"),
        ("auto", "(prep thread"),
    ] {
        let out = Command::new(BIN)
            .args(["prove", "--circuit", "squaring", "--log-size", "10"])
            .args(["--backend", "cpu", "--g2-tail", place, "--cache"])
            .arg(cache())
            .env("PROOFSCOPE_SOCKET", "none")
            .output()
            .unwrap();
        let table = String::from_utf8_lossy(&out.stdout);
        assert!(
            out.status.success(),
            "{table}{}",
            String::from_utf8_lossy(&out.stderr)
        );
        let line = table
            .lines()
            .find(|l| l.starts_with("b_g2_msm"))
            .unwrap_or_else(|| panic!("no b_g2_msm line:\n{table}"));
        assert!(line.contains(thread), "{place}: {line}");
        assert!(table.contains("verification: valid"), "{table}");
        // On the device thread it follows tail_msm.
        let order: Vec<&str> = table.lines().filter_map(|l| l.split(' ').next()).collect();
        let at = |p: &str| order.iter().position(|x| *x == p).unwrap();
        assert_eq!(
            at("b_g2_msm") > at("tail_msm"),
            place == "device",
            "{table}"
        );
    }
}

fn fails_with(args: &[&str], needle: &str) {
    let out = Command::new(BIN)
        .args(args)
        .env("PROOFSCOPE_SOCKET", "none")
        .output()
        .unwrap();
    assert!(!out.status.success(), "{args:?} succeeded");
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains(needle),
        "{args:?}: expected {needle:?} in:\n{err}"
    );
}

#[test]
fn bad_arguments_are_clear_errors() {
    fails_with(&["prove", "--circuit", "md5"], "invalid value 'md5'");
    fails_with(
        &["prove", "--circuit", "sha256", "--log-size", "12"],
        "impossible size 2^12 for the sha256 circuit",
    );
    fails_with(
        &["prove", "--circuit", "squaring", "--log-size", "40"],
        "impossible size 2^40",
    );
    fails_with(&["prove", "--circuits", "0"], "--circuits");
    let dir = tempfile::tempdir().unwrap();
    let blocker = dir.path().join("file");
    std::fs::write(&blocker, b"x").unwrap();
    fails_with(
        &[
            "params",
            "--circuit",
            "squaring",
            "--log-size",
            "8",
            "--cache",
            blocker.to_str().unwrap(),
        ],
        "set PROOFSCOPE_CACHE or XDG_CACHE_HOME",
    );
    fails_with(
        &["kernels", "--arch", "90"],
        "expected sm_ and the compute capability",
    );
    // SAFETY: only tries to load the library through cudarc's own candidate names.
    if !unsafe { cudarc::nvrtc::sys::is_culib_present() } {
        let cache = dir.path().join("cache");
        fails_with(
            &["kernels", "--cache", cache.to_str().unwrap()],
            "NVRTC (libnvrtc) not found",
        );
        assert!(!cache.exists(), "nothing is written when nothing compiles");
    }
    if prover_core::gpu::library_present("libcuda.so.1").is_err() {
        fails_with(
            &[
                "prove",
                "--backend",
                "gpu",
                "--circuit",
                "squaring",
                "--log-size",
                "8",
            ],
            "--backend gpu: the GPU backend cannot start: libcuda.so.1 not found",
        );
    }
}

/// `prover bench --probe-overhead` with `extra`, on the smallest squaring circuit (synthetic
/// SRS, CPU backend, one circuit), its socket in a directory of its own; its stdout, once it
/// succeeded.
fn bench_probe_overhead(extra: &[&str]) -> String {
    let dir = tempfile::tempdir().unwrap();
    let out = Command::new(BIN)
        .args([
            "bench",
            "--probe-overhead",
            "--circuit",
            "squaring",
            "--log-size",
            "10",
        ])
        .args(["--circuits", "1", "--srs", "synthetic", "--backend", "cpu"])
        .args(extra)
        .env("PROOFSCOPE_SOCKET", dir.path().join("bench-{pid}.sock"))
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout).into_owned();
    assert!(
        out.status.success(),
        "{text}{}",
        String::from_utf8_lossy(&out.stderr)
    );
    text
}

/// `bench --probe-overhead` (one pair, the smallest circuit): the hot path's calibrated cost,
/// and an `accounted:` line per probe-on proof whose parts add up and whose shares are of the
/// proof's CPU and wall time.
#[test]
fn probe_overhead_accounts_for_the_probes_cost() {
    let text = bench_probe_overhead(&["--runs", "1"]);
    assert!(text.contains("hot path (this machine"), "{text}");
    let lines: Vec<&str> = text
        .lines()
        .filter(|l| l.starts_with("accounted: "))
        .collect();
    // The warm-up pair and the measured one.
    assert_eq!(lines.len(), 2, "{text}");
    for l in &lines {
        // The per-thread breakdown after the threads' total (`name ms/runs, …; ms/runs`), then
        // the figures.
        let (head, rest) = l.split_once(" (").unwrap();
        let (threads, rest) = rest.split_once("; ms/runs) + ").unwrap();
        let parts: Vec<(&str, f64, u64)> = threads
            .split(", ")
            .map(|t| {
                let (name, cost) = t.rsplit_once(' ').unwrap();
                let (ms, runs) = cost.split_once('/').unwrap();
                (name, ms.parse().unwrap(), runs.parse().unwrap())
            })
            .collect();
        let by_thread: f64 = parts.iter().map(|p| p.1).sum();
        let collector = parts.iter().find(|p| p.0 == "probe-collector");
        assert!(
            collector.is_some_and(|c| c.2 > 0),
            "the collector ran during the proof: {l}"
        );
        let l = &format!("{head} + {rest}");
        let nums: Vec<f64> = l
            .split(|c: char| !(c.is_ascii_digit() || c == '.'))
            .filter_map(|w| w.parse().ok())
            .collect();
        // threads ms, span events, block events, hot-path ms, total ms, % cpu, cpu s, % wall, wall s, pair
        assert_eq!(nums.len(), 10, "{l}");
        let (threads, hot, total) = (nums[0], nums[3], nums[4]);
        assert!(
            (by_thread - threads).abs() <= 0.05,
            "the threads add up: {l}"
        );
        assert!(
            (threads + hot - total).abs() <= 0.016,
            "the parts add up: {l}"
        );
        assert!(nums[1] > 0.0, "the proof's spans were counted: {l}");
        let (cpu_pct, cpu_s, wall_pct, wall_s) = (nums[5], nums[6], nums[7], nums[8]);
        assert!(cpu_s > 0.0 && wall_s > 0.0, "{l}");
        // The line's figures are rounded (ms to 0.01, s to 0.001): a share recomputed from
        // them agrees to within that rounding, relative for a short proof.
        let close = |share: f64, printed: f64| (share - printed).abs() <= 0.01 + printed * 0.06;
        assert!(close(total / 1e3 / cpu_s * 100.0, cpu_pct), "{l}");
        assert!(close(total / 1e3 / wall_s * 100.0, wall_pct), "{l}");
    }
    assert!(text.contains("accounted (median of 1 pairs)"), "{text}");
}

/// `bench --probe-overhead --instructions`: both sides counted under callgrind, the probe's
/// side more (it does strictly more), and not wildly more.
#[test]
fn probe_overhead_counts_instructions_under_callgrind() {
    if Command::new("valgrind").arg("--version").output().is_err() {
        assert!(
            std::env::var_os("CI").is_none(),
            "CI installs valgrind (.ci/run)"
        );
        println!("SKIPPED: no valgrind");
        return;
    }
    let text = bench_probe_overhead(&["--instructions"]);
    let line = text
        .lines()
        .find(|l| l.starts_with("instructions (callgrind"))
        .unwrap_or_else(|| panic!("{text}"));
    let count = |side: &str| -> u64 {
        let at = line.find(side).unwrap() + side.len();
        line[at..]
            .split(|c: char| !c.is_ascii_digit())
            .find(|w| !w.is_empty())
            .unwrap()
            .parse()
            .unwrap()
    };
    let (off, on) = (count("off "), count("on "));
    assert!(off > 1_000_000, "{line}");
    assert!(on > off && (on as f64) < off as f64 * 1.2, "{line}");
}

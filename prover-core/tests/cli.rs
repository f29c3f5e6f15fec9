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

//! A program that bounds its own address space (`RLIMIT_AS` at what it uses + 64 MiB, set
//! first thing in `main`) and then allocates 50 MiB keeps every allocation under the preload
//! and under `proofscope run`: the probe, whose threads would reserve about 200 MiB (glibc's
//! 64 MiB arena per thread), starts no session and says why (the unit test of the probe's
//! `headroom` holds the wording; here the session may also have started before `main` bounded
//! itself, the probe's threads then inside what `main` measured). With room to spare (1 GiB)
//! the session starts as usual. Before, 8 of the 400 `malloc`s failed under `run` (and 35–351 at
//! 150 KiB blocks). The program is tests/programs/address_space.c.

mod common;

use common::BIN;
use common::cpp::{c_program, library};
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

fn build(dir: &Path) -> Option<PathBuf> {
    c_program(dir, "address_space", &[])
}

fn all_fitted(what: &str, out: &Output) {
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success() && stdout.contains("0 of 400 allocations failed"),
        "{what}: {out:?}"
    );
}

/// The program under the preload, its session on a socket of its own from the first instant.
fn preloaded(exe: &Path, socket: &Path, headroom_mib: &str) -> Output {
    Command::new(exe)
        .arg(headroom_mib)
        .env("LD_PRELOAD", library("libproofscope_preload.so"))
        .env("PROOFSCOPE_SOCKET", socket)
        .env("PROOFSCOPE_PRELOAD_DELAY_MS", "0")
        .output()
        .unwrap()
}

#[test]
fn a_program_that_bounds_its_address_space_keeps_it_under_the_preload() {
    let dir = tempfile::tempdir().unwrap();
    let Some(exe) = build(dir.path()) else {
        return;
    };
    let alone = Command::new(&exe).arg("64").output().unwrap();
    all_fitted("alone", &alone);
    for run in 0..3 {
        let socket = dir.path().join(format!("p{run}.sock"));
        let out = preloaded(&exe, &socket, "64");
        all_fitted("under the preload", &out);
    }
    let roomy = preloaded(&exe, &dir.path().join("roomy.sock"), "1024");
    all_fitted("under the preload, 1 GiB of room", &roomy);
    let stderr = String::from_utf8_lossy(&roomy.stderr);
    assert!(!stderr.contains("no session"), "room enough: {stderr}");
}

#[test]
fn a_program_that_bounds_its_address_space_keeps_it_under_run() {
    let dir = tempfile::tempdir().unwrap();
    let Some(exe) = build(dir.path()) else {
        return;
    };
    for run in 0..3 {
        let out = Command::new(BIN)
            .args(["run", "--headless", "--preload"])
            .arg(library("libproofscope_preload.so"))
            .arg("--")
            .arg(&exe)
            .arg("64")
            .output()
            .unwrap();
        all_fitted(&format!("under run, run {run}"), &out);
    }
}

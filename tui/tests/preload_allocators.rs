//! The allocator probe beside another allocator (jemalloc), preloaded in either order, and
//! under `proofscope run` (which puts the probe first): a program that trusts
//! `malloc_usable_size` runs as it does alone. Before, `LD_PRELOAD=libjemalloc.so.2 proofscope
//! run -- ./p` and every `preload:jemalloc` order crashed (SIGSEGV): jemalloc's
//! `malloc_usable_size` was asked about glibc's blocks, which the probe's `malloc` hands out.
//! The probe now answers it for its blocks, as glibc does, byte for byte. The program is
//! tests/programs/usable_size.c.

mod common;

use common::BIN;
use common::cpp::{c_program, library};
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

fn build(dir: &Path) -> Option<PathBuf> {
    c_program(dir, "usable_size", &["-ldl"])
}

/// Debian's jemalloc, where it is installed (CI installs it: .ci/run).
fn jemalloc() -> Option<PathBuf> {
    let found = [
        "/usr/lib/x86_64-linux-gnu",
        "/usr/lib/aarch64-linux-gnu",
        "/usr/lib",
    ]
    .iter()
    .map(|d| Path::new(d).join("libjemalloc.so.2"))
    .find(|p| p.exists());
    if found.is_none() {
        assert!(
            std::env::var_os("CI").is_none(),
            "CI without jemalloc (apt-get install libjemalloc2)"
        );
        println!("SKIPPED: libjemalloc.so.2 is not installed (apt-get install libjemalloc2)");
    }
    found
}

fn check(what: &str, out: &Output) {
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success() && stdout.contains("every usable size right"),
        "{what}: {out:?}"
    );
}

#[test]
fn malloc_usable_size_is_glibcs_answer_under_the_preload() {
    let dir = tempfile::tempdir().unwrap();
    let Some(exe) = build(dir.path()) else {
        return;
    };
    let out = Command::new(&exe)
        .arg("glibc")
        .env("LD_PRELOAD", library("libproofscope_preload.so"))
        .env("PROOFSCOPE_SOCKET", "none")
        .output()
        .unwrap();
    check("the preload alone, against glibc's own answer", &out);
}

#[test]
fn another_allocator_preloaded_in_either_order_or_under_run_does_not_crash() {
    let dir = tempfile::tempdir().unwrap();
    let (Some(exe), Some(je)) = (build(dir.path()), jemalloc()) else {
        return;
    };
    let ours = library("libproofscope_preload.so");
    for (what, pre) in [
        (
            "preload:jemalloc",
            format!("{}:{}", ours.display(), je.display()),
        ),
        (
            "jemalloc:preload",
            format!("{}:{}", je.display(), ours.display()),
        ),
    ] {
        let out = Command::new(&exe)
            .env("LD_PRELOAD", pre)
            .env("PROOFSCOPE_SOCKET", "none")
            .output()
            .unwrap();
        check(what, &out);
    }
    let out = Command::new(BIN)
        .args(["run", "--headless", "--preload"])
        .arg(&ours)
        .arg("--")
        .arg(&exe)
        .env("LD_PRELOAD", &je)
        .output()
        .unwrap();
    check("LD_PRELOAD=jemalloc proofscope run", &out);
}

//! A program whose signal handler allocates, under the allocator probe (`LD_PRELOAD`), 20
//! runs in a row: it never deadlocks, the handler re-entering a hook passes straight to glibc,
//! and the program's signals never run on the probe's threads (they did: blocked in the
//! program's only thread, its handler still ran 64–71 times a run, on the collector — and once
//! the collector was inside `malloc`, the handler's `malloc` deadlocked on the arena lock).
//! The program is tests/programs/signal_alloc.c.

mod common;

use common::cpp::{c_program, library};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// Runs of the program in a row.
const RUNS: usize = 20;
/// A run takes well under a second here; past this it is deadlocked.
const DEADLOCK: Duration = Duration::from_secs(60);

/// Builds the program; `None` without a compiler.
fn build(dir: &Path) -> Option<PathBuf> {
    c_program(dir, "signal_alloc", &[])
}

/// One run under the preload, its session on a socket of its own from the first instant;
/// what it printed, or a deadlock.
fn run_once(exe: &Path, socket: &Path) -> Result<String, String> {
    let mut c = Command::new(exe);
    c.env("LD_PRELOAD", library("libproofscope_preload.so"))
        .env("PROOFSCOPE_SOCKET", socket)
        .env("PROOFSCOPE_PRELOAD_DELAY_MS", "0");
    finished(c)
}

/// Runs `c` to its end: what it printed, or why not (a failure, or a deadlock).
fn finished(mut c: Command) -> Result<String, String> {
    let mut child = c
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .map_err(|e| e.to_string())?;
    let t0 = Instant::now();
    loop {
        if let Some(status) = child.try_wait().map_err(|e| e.to_string())? {
            let out = child.wait_with_output().map_err(|e| e.to_string())?;
            let text = String::from_utf8_lossy(&out.stdout).into_owned();
            if !status.success() {
                return Err(format!(
                    "{status}: {text}{}",
                    String::from_utf8_lossy(&out.stderr)
                ));
            }
            return Ok(text);
        }
        if t0.elapsed() > DEADLOCK {
            let _ = child.kill();
            let _ = child.wait();
            return Err(format!("deadlocked: still running after {DEADLOCK:?}"));
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// `(handled while open, handled while blocked, threads)` from the program's last line.
fn counts(out: &str) -> (u64, u64, u64) {
    let nums: Vec<u64> = out
        .split(|c: char| !c.is_ascii_digit())
        .filter_map(|w| w.parse().ok())
        .collect();
    assert_eq!(
        nums.len(),
        4,
        "done N: A …open, B …blocked, T threads: {out}"
    );
    (nums[1], nums[2], nums[3])
}

#[test]
fn a_program_allocating_in_its_signal_handler_runs_20_times_in_a_row_under_the_preload() {
    let dir = tempfile::tempdir().unwrap();
    let Some(exe) = build(dir.path()) else {
        return;
    };
    for run in 0..RUNS {
        let socket = dir.path().join(format!("run-{run}.sock"));
        let out = run_once(&exe, &socket).unwrap_or_else(|e| panic!("run {run}: {e}"));
        let (open, blocked, threads) = counts(&out);
        assert!(open > 0, "run {run}: the handler ran while open: {out}");
        assert_eq!(
            blocked, 0,
            "run {run}: blocked in the program's thread, its handler ran on the probe's: {out}"
        );
        assert!(
            threads > 1,
            "run {run}: the probe's threads were there (the preload's session ran): {out}"
        );
    }
}

/// A program forking from its timer's signal handler while another thread allocates, with the
/// async-signal-safe `_Fork`, under `proofscope run`: 5 runs of 200 forks all finish — the
/// child, in which no fork handler ran, exits; the probe in the parent goes on. (With glibc's
/// `fork` the same program deadlocks without any observer: docs/RELIABILITY.md.)
#[test]
fn a_program_forking_from_its_signal_handler_runs_5_times_in_a_row_under_run() {
    let dir = tempfile::tempdir().unwrap();
    let Some(exe) = c_program(dir.path(), "fork_in_handler", &["-pthread"]) else {
        return;
    };
    for run in 0..5 {
        let mut c = Command::new(common::BIN);
        c.args(["run", "--headless", "--preload"])
            .arg(library("libproofscope_preload.so"))
            .arg("--")
            .arg(&exe)
            .args(["_Fork", "200"]);
        let out = finished(c).unwrap_or_else(|e| panic!("run {run}: {e}"));
        // At least 200: a signal or two more may land while the main thread sees the 200th.
        let forks: u32 = out
            .split("forked ")
            .nth(1)
            .and_then(|r| r.split(' ').next()?.parse().ok())
            .unwrap_or_else(|| panic!("run {run}: {out}"));
        assert!(forks >= 200, "run {run}: {out}");
    }
}

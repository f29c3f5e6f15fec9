//! Any ghost, not only a free (issue 44): the C2-shaped prover of examples/cpp-c2, plain
//! (the preload only) and linked (its own probe too), under `proofscope run`, each call ending
//! with one other kind of ghost on the calling thread after every timer, uninstrumented, while
//! its vectors go to a detached thread (`--dealloc async`: the fix for the free). Every flagged
//! tail of `prove` is diagnosed by its own kind, covering at least [`MIN_COVER`] of the gap:
//!
//! | `--ghost` | what the call does last | diagnosis |
//! |---|---|---|
//! | `first-touch` | writes a fresh 1 GiB mapping, a byte a page | `page_faults`, its stack sampled in `ghost_first_touch` where the kernel lets the probe sample kernel time |
//! | `mlock` | pins a fresh 1 GiB mapping (the kernel faults it in) | `page_faults` |
//! | `cpu` | spins 300 ms in `ghost_cpu_loop` | `running_uninstrumented` (`waiting_for_cpu` when the machine is loaded), its stack sampled in `ghost_cpu_loop` |
//! | `lock` | waits 300 ms for a mutex another thread holds | `blocked`, in `futex` |
//! | `munmap` | unmaps 3 GiB it touched during synthesis | `synchronous_release`, by `ghost_munmap` |
//!
//! The dealloc thread's frees that overlap the gap are never its verdict (before, a first
//! touch of 2 GB read "600.0 MB freed by `start_thread` … (3% of the gap)"). A loaded machine
//! stretches the first touch and the pinning with waits for a CPU (63 % of the gap with four
//! busy loops beside): they are the kernel work's, as waits between frees are a release's,
//! and the verdict stays. Without a ghost, nothing of `prove` is flagged.

mod common;

use common::BIN;
use common::cpp::{ONE_AT_A_TIME, build, library};
use common::load::Load;
use serde_json::Value;
use std::path::Path;
use std::process::{Command, Stdio};

const CALLS: usize = 3;
/// The least share of a flagged tail its diagnosis covers (the 80 %). Measured on the
/// build VM (2026-12-06, 2 vCPUs, nothing else running): 0.96–1.00 for every ghost.
const MIN_COVER: f64 = 0.80;

/// One ghost: its flag, its mapping's size, and the diagnosis its tail must have.
struct Ghost {
    name: &'static str,
    mib: u32,
    /// The kinds its tail may be diagnosed as (the first on an idle machine).
    kinds: &'static [&'static str],
    /// The share of the gap the diagnosis explains, from its JSON and the gap's length.
    covered: fn(&Value, f64) -> f64,
    /// The function its stack samples must name (where the kernel lets the probe sample).
    in_function: Option<&'static str>,
}

/// The thread's time on a CPU or waiting for one, of its time around the gap (the scheduling
/// evidence's window): the thread's work and its stretch.
fn runnable(d: &Value, _gap: f64) -> f64 {
    let s = &d["sched"];
    (s["cpu_ns"].as_f64().unwrap() + s["runq_ns"].as_f64().unwrap())
        / s["window_ns"].as_f64().unwrap()
}

/// Time blocked in `futex` inside the gap.
fn in_futex(d: &Value, gap: f64) -> f64 {
    d["kernel"]["blocked_in"]
        .as_array()
        .into_iter()
        .flatten()
        .filter(|b| b["call"] == "futex")
        .map(|b| b["ns"].as_f64().unwrap())
        .sum::<f64>()
        / gap
}

/// The frees on the gap's thread and its waits for a CPU.
fn own_frees(d: &Value, gap: f64) -> f64 {
    let r = &d["releases"];
    (r["on_proving_thread_ns"].as_f64().unwrap() + r["cpu_wait_ns"].as_f64().unwrap()) / gap
}

const GHOSTS: [Ghost; 5] = [
    Ghost {
        name: "first-touch",
        mib: 1024,
        kinds: &["page_faults"],
        covered: runnable,
        in_function: Some("ghost_first_touch"),
    },
    Ghost {
        name: "mlock",
        mib: 1024,
        kinds: &["page_faults"],
        covered: runnable,
        in_function: None,
    },
    Ghost {
        name: "cpu",
        mib: 1024,
        kinds: &["running_uninstrumented", "waiting_for_cpu"],
        covered: runnable,
        in_function: Some("ghost_cpu_loop"),
    },
    Ghost {
        name: "lock",
        mib: 1024,
        kinds: &["blocked"],
        covered: in_futex,
        in_function: None,
    },
    // A munmap of 1 GiB takes ~27 ms here: 3 GiB for a tail well over the 10 ms floor.
    Ghost {
        name: "munmap",
        mib: 3072,
        kinds: &["synchronous_release"],
        covered: own_frees,
        in_function: None,
    },
];

/// The gap rule for the ghosts' tails: 0.1 % of the span and 10 ms. The munmap's 80–90 ms
/// tail is 2.5–6 % of a call whose synthesis touches the 3 GiB first, 1.3–3.4 s here — but
/// under 1 % once, when the VM's host had not yet backed the fresh memory and that synthesis
/// took about 12 s (a first touch is 8–12× slower then): at 1 % that tail went unflagged.
const GHOST_RULE: [&str; 4] = ["--gap-fraction", "0.001", "--gap-min-ms", "10"];

/// Whether the report says the kernel refused stack sampling (a container's seccomp profile,
/// `perf_event_paranoid` 3).
fn stacks_refused(s: &Value) -> bool {
    s["report_warnings"]
        .to_string()
        .contains("stack sampling off")
}

/// Runs `exe` under `run` with `--ghost ghost` (and `rule`; `tag` tells its report from
/// another run's); the prover's session from the JSON report, with the report's warnings
/// (`report_warnings`).
fn session(dir: &Path, exe: &Path, (ghost, tag): (&str, &str), mib: u32, rule: &[&str]) -> Value {
    let name = exe.file_name().unwrap().to_string_lossy();
    let report = dir.join(format!("{name}-{ghost}{tag}.json").replace(' ', "-"));
    let mut c = Command::new(BIN);
    c.arg("run")
        .arg("--preload")
        .arg(library("libproofscope_preload.so"))
        .args(["--headless", "--format", "json"])
        .args(rule);
    let out = c
        .arg("-o")
        .arg(&report)
        .arg("--")
        .arg(exe)
        .args(["--proofs", &CALLS.to_string(), "--mib", "8"])
        .args(["--dealloc", "async", "--ghost", ghost])
        .args(["--ghost-mib", &mib.to_string()])
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{name} --ghost {ghost}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let v: Value = serde_json::from_str(&std::fs::read_to_string(&report).unwrap()).unwrap();
    let mut s = v["sessions"].as_array().unwrap().last().unwrap().clone();
    s["report_warnings"] = v["warnings"].clone();
    s
}

/// The flagged gaps of `prove` (the outer span), of every proof; with `tail_only`, only those
/// after its last child (where the ghost is).
fn flagged(s: &Value, tail_only: bool) -> Vec<Value> {
    s["proofs"]
        .as_array()
        .unwrap()
        .iter()
        .flat_map(|p| p["gaps"].as_array().unwrap().clone())
        .filter(|g| g["flagged"] == true && g["span"] == "prove")
        .filter(|g| !tail_only || g["place"] == "after_last")
        .collect()
}

/// mlock of 1 GiB needs CAP_IPC_LOCK or a locked-memory limit of 1 GiB.
fn may_pin_a_gigabyte() -> bool {
    let mut r = libc::rlimit {
        rlim_cur: 0,
        rlim_max: 0,
    };
    // SAFETY: `r` is a valid rlimit for the call to fill.
    let ok = unsafe { libc::getrlimit(libc::RLIMIT_MEMLOCK, &mut r) } == 0;
    // SAFETY: no preconditions.
    let root = unsafe { libc::geteuid() } == 0;
    root || (ok && r.rlim_cur >= 1 << 30)
}

/// Every ghost of `GHOSTS` named in `which` (all when empty), under `exe`: each tail
/// diagnosed by its kind, covering at least [`MIN_COVER`].
fn check(dir: &Path, exe: &Path, which: &[&str], load: &str) {
    for g in GHOSTS
        .iter()
        .filter(|g| which.is_empty() || which.contains(&g.name))
    {
        if g.name == "mlock" && !may_pin_a_gigabyte() {
            eprintln!("skipping --ghost mlock: RLIMIT_MEMLOCK below 1 GiB and not root");
            continue;
        }
        let what = format!("{} --ghost {}{load}", exe.display(), g.name);
        let s = session(dir, exe, (g.name, load), g.mib, &GHOST_RULE);
        let tails = flagged(&s, true);
        assert!(tails.len() >= CALLS - 1, "{what}: {tails:#?}");
        for t in &tails {
            let d = &t["diagnosis"];
            assert!(
                g.kinds.iter().any(|k| d["kind"] == *k),
                "{what}: not {:?}: {t:#}",
                g.kinds
            );
            let covered = (g.covered)(d, t["duration_ns"].as_f64().unwrap());
            assert!(
                (MIN_COVER..=1.01).contains(&covered),
                "{what}: covers {covered:.2} of the gap: {t:#}"
            );
        }
        if let (Some(f), false) = (g.in_function, stacks_refused(&s)) {
            for t in &tails {
                let samples = &t["diagnosis"]["samples"];
                let top = &samples["top"][0];
                let (named, n) = (top[0].to_string(), top[1].as_f64().unwrap_or(0.0));
                let total = samples["total"].as_f64().unwrap_or(0.0);
                // A first touch is mostly kernel time: sampled there only where the kernel
                // lets the probe count it (perf_event_paranoid <= 1, CAP_PERFMON).
                if total < 5.0 && g.name == "first-touch" {
                    eprintln!("{what}: {total} samples (user space only?): not judged");
                    continue;
                }
                assert!(
                    named.contains(f) && n >= 0.8 * total && total >= 5.0,
                    "{what}: sampled in {named} {n} of {total} times: {t:#}"
                );
            }
        }
        if g.name == "munmap" {
            for t in &tails {
                let by = t["diagnosis"]["releases"]["freed_by"].to_string();
                assert!(by.contains("ghost_munmap"), "{what}: freed by {by}");
            }
        }
    }
}

#[test]
fn each_ghost_is_diagnosed_by_its_own_kind() {
    let _one = ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
    let dir = tempfile::tempdir().unwrap();
    let (Some(plain), Some(linked)) = (build(dir.path(), false), build(dir.path(), true)) else {
        return;
    };
    for exe in [&plain, &linked] {
        check(dir.path(), exe, &[], "");
        let what = format!("{} without a ghost", exe.display());
        let tails = flagged(&session(dir.path(), exe, ("none", ""), 1024, &[]), false);
        assert!(tails.is_empty(), "{what}: {tails:#?}");
    }
    // Four busy threads on the two cores and a gigabyte filled and freed over and over: the
    // kernel's work keeps its verdict, stretched by the waits.
    let _load = Load::start(4);
    check(
        dir.path(),
        &plain,
        &["first-touch", "mlock", "lock"],
        " under load",
    );
}

//! Verdicts under load: the C2-shaped prover of examples/cpp-c2, plain (the preload only) and
//! linked (its own probe too), under `proofscope run`, 20 calls each, (a) with the 2 cores
//! oversubscribed four times by busy threads of the same priority and its memory under
//! pressure, and (b) with the viewer's side starved on purpose: the relay process (and, once,
//! the viewer itself) stopped for 250 ms of every 300 ms while the prover runs. Every proof's
//! release — the 604 MB its call frees on `main` as it returns — is placed in the outer span
//! outside the phases, on `main`, within 1 % of what the program freed; every flagged tail is
//! diagnosed by it, covering 80–100 % of the gap (`MIN_COVER`). Under `--dealloc async` no
//! proof is flagged.
//!
//! Before log lines were stamped where the prover wrote them, (b) scattered the same free
//! into different places per proof ("after the outer span: 20 releases" in one, "inside
//! phases: 12 releases, 335.6 MB" in another, "inside phases: none" in four).

mod common;

use common::BIN;
use common::cpp::{ONE_AT_A_TIME, build, library};
use common::load::Load;
use serde_json::Value;
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

const CALLS: usize = 20;
/// What a call frees as it returns: a, b, c and aux of 4 circuits and the call's two split
/// vectors, 32 MiB each (c2.cpp's defaults).
const FREED_PER_CALL: f64 = (18u64 * (32 << 20)) as f64;
/// The least share of a flagged tail its diagnosis covers: the time inside the frees on the
/// proving thread, and its waits for a CPU in the gap outside them (its scheduler counters,
/// read by the collector and by the thread itself as its large frees return and as it writes
/// its log) — the 80 %. Measured with this test's load (2026-12-06, build VM): plain
/// 199 flagged tails, 0.86–1.00; linked 99, 0.99–1.00. With the collector's samples alone a
/// wait that ended after its last sample of the program was in none: 0.74–0.79 in 4 of ~400.
/// The frees alone covered 59–100 %. The time the diagnosis finds the proving thread blocked in
/// a named call (its kernel evidence) counts as covered too: in a CI-like run one tail of the
/// starved-relay runs was 0.79 from frees and waits, plus 4.5 ms in `futex` (0.95).
const MIN_COVER: f64 = 0.80;

/// Stops `pid` for 250 ms of every 300 ms until dropped (and lets it go then).
struct Starve {
    stop: Arc<AtomicBool>,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl Starve {
    fn start(pid: i32) -> Starve {
        let stop = Arc::new(AtomicBool::new(false));
        let s = stop.clone();
        let thread = std::thread::Builder::new()
            .name("starve".into())
            .spawn(move || {
                while !s.load(Ordering::Relaxed) {
                    // SAFETY: signalling a process this test started.
                    unsafe { libc::kill(pid, libc::SIGSTOP) };
                    std::thread::sleep(Duration::from_millis(250));
                    // SAFETY: as above.
                    unsafe { libc::kill(pid, libc::SIGCONT) };
                    std::thread::sleep(Duration::from_millis(50));
                }
            })
            .unwrap();
        Starve {
            stop,
            thread: Some(thread),
        }
    }
}

impl Drop for Starve {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

/// The relay `proofscope run` started (its child running `__relay`).
fn relay_of(run: u32) -> i32 {
    for _ in 0..500 {
        for e in std::fs::read_dir("/proc").unwrap().flatten() {
            let Ok(pid) = e.file_name().to_string_lossy().parse::<i32>() else {
                continue;
            };
            let stat = std::fs::read_to_string(e.path().join("stat")).unwrap_or_default();
            let ppid = stat
                .rsplit(')')
                .next()
                .and_then(|r| r.split_whitespace().nth(1))
                .and_then(|p| p.parse::<u32>().ok());
            let cmd = std::fs::read(e.path().join("cmdline")).unwrap_or_default();
            if ppid == Some(run) && cmd.windows(7).any(|w| w == b"__relay") {
                return pid;
            }
        }
        std::thread::sleep(Duration::from_millis(10));
    }
    panic!("no relay under run {run}");
}

#[derive(Clone, Copy, Debug)]
enum Starved {
    Nothing,
    Relay,
    Viewer,
}

/// The gap rule: the sync side at a 10 ms floor (its free takes 25–100 ms here, around the
/// default 50 ms floor); the async side keeps the default, stricter for "nothing flagged" (at
/// 10 ms, a loaded machine flags the steps inside `ntt_msm_h` too, which is not this test's
/// subject).
fn start_run(report: &Path, exe: &Path, dealloc: &str) -> Child {
    let floor: &[&str] = if dealloc == "sync" {
        &["--gap-min-ms", "10"]
    } else {
        &[]
    };
    Command::new(BIN)
        .arg("run")
        .arg("--preload")
        .arg(library("libproofscope_preload.so"))
        .args(["--headless", "--format", "json"])
        .args(floor)
        .arg("-o")
        .arg(report)
        .arg("--")
        .arg(exe)
        .args(["--proofs", &CALLS.to_string(), "--dealloc", dealloc])
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap()
}

/// Runs `exe` under `run` with `starved` stopped on and off; the prover's session.
fn session(dir: &Path, exe: &Path, dealloc: &str, starved: Starved, what: &str) -> Value {
    let report = dir.join(format!("{what}.json"));
    let run = start_run(&report, exe, dealloc);
    let _starve = match starved {
        Starved::Nothing => None,
        Starved::Relay => Some(Starve::start(relay_of(run.id()))),
        Starved::Viewer => Some(Starve::start(run.id() as i32)),
    };
    let out = run.wait_with_output().unwrap();
    drop(_starve);
    assert!(
        out.status.success(),
        "{what}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let v: Value = serde_json::from_str(&std::fs::read_to_string(&report).unwrap()).unwrap();
    // The prover's session: the last (a linked prover's preload may have started a session of
    // its own before the program's probe took over, with no proofs).
    let sessions = v["sessions"].as_array().unwrap();
    let s = sessions
        .last()
        .unwrap_or_else(|| panic!("{what}: no session: {v}"));
    for other in &sessions[..sessions.len() - 1] {
        assert_eq!(other["proofs"], serde_json::json!([]), "{what}: {v}");
    }
    s.clone()
}

/// Every proof's release outside the phases on main, its size right; every flagged tail
/// diagnosed by it.
fn check_sync(s: &Value, what: &str) {
    let proofs = s["proofs"].as_array().unwrap();
    assert_eq!(proofs.len(), CALLS, "{what}: one proof per call");
    let mut flagged = 0;
    for p in proofs {
        let id = &p["id"];
        let r = &p["releases"];
        let outside = &r["in_outer_outside_phases"];
        let bytes = outside["bytes"].as_u64().unwrap() as f64;
        assert!(
            (bytes - FREED_PER_CALL).abs() / FREED_PER_CALL < 0.01,
            "{what} proof {id}: {bytes} B outside the phases, the call freed {FREED_PER_CALL}: {r}\nphases: {}\nnotes: {}",
            p["phases"],
            p["notes"]
        );
        assert_eq!(
            outside["threads"].to_string(),
            format!("[[\"main\",{}]]", outside["count"]),
            "{what} proof {id}: on main: {r}"
        );
        for k in ["in_phases", "elsewhere_during", "after_outer"] {
            assert_eq!(r[k]["bytes"], 0, "{what} proof {id}: nothing {k}: {r}");
        }
        for g in p["gaps"].as_array().unwrap() {
            if g["flagged"] != true || g["span"] != "prove" {
                continue;
            }
            let d = &g["diagnosis"];
            assert_eq!(d["kind"], "synchronous_release", "{what} proof {id}: {g}");
            let r = &d["releases"];
            let duration = g["duration_ns"].as_f64().unwrap();
            let releases = (r["on_proving_thread_ns"].as_f64().unwrap()
                + r["cpu_wait_ns"].as_f64().unwrap())
                / duration;
            assert!(
                releases <= 1.0,
                "{what} proof {id}: {releases:.2} of the gap: {g}"
            );
            // The time the diagnosis finds the thread blocked in a named call explains the gap
            // too (the kernel evidence): with the relay stopped, a tail held 4.5 ms in `futex`
            // beside 21 ms of frees (0.79 from the frees and CPU waits alone).
            let blocked: f64 = d["kernel"]["blocked_in"]
                .as_array()
                .into_iter()
                .flatten()
                .filter_map(|b| b["ns"].as_f64())
                .sum();
            let covered = (releases + blocked / duration).min(1.0);
            assert!(
                (MIN_COVER..=1.0).contains(&covered),
                "{what} proof {id}: the releases cover {covered:.2} of the gap: {g}"
            );
            flagged += 1;
        }
    }
    assert!(
        flagged >= CALLS / 2,
        "{what}: {flagged} of {CALLS} tails flagged"
    );
}

/// No proof's own span flagged: the vectors go on a thread of their own. (A phase's inside
/// can be: with the cores this loaded, `ntt_msm_h`'s logged steps leave 50 ms of it uncovered
/// now and then, and the detached thread's frees that overlap it are offered as its evidence —
/// evidence from another thread, which issue 44 is about; not this test's subject.)
fn check_async(s: &Value, what: &str) {
    for p in s["proofs"].as_array().unwrap() {
        let flagged: Vec<&Value> = p["gaps"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|g| g["flagged"] == true && g["span"] == "prove")
            .collect();
        assert!(flagged.is_empty(), "{what} proof {}: {flagged:?}", p["id"]);
    }
}

#[test]
fn verdicts_hold_with_the_cores_oversubscribed_and_the_viewer_starved() {
    let _one = ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
    let dir = tempfile::tempdir().unwrap();
    let (Some(plain), Some(linked)) = (build(dir.path(), false), build(dir.path(), true)) else {
        return;
    };
    {
        // Eight busy threads on two cores, and a gigabyte filled and freed over and over.
        let _load = Load::start(8);
        for (exe, name) in [(&plain, "plain"), (&linked, "linked")] {
            let what = format!("{name} under load");
            check_sync(
                &session(dir.path(), exe, "sync", Starved::Nothing, &what),
                &what,
            );
        }
        let what = "plain async under load";
        check_async(
            &session(dir.path(), &plain, "async", Starved::Nothing, what),
            what,
        );
    }
    for (exe, name, starved) in [
        (&plain, "plain, relay stopped", Starved::Relay),
        (&linked, "linked, relay stopped", Starved::Relay),
        (&plain, "plain, viewer stopped", Starved::Viewer),
    ] {
        check_sync(&session(dir.path(), exe, "sync", starved, name), name);
    }
}

//! `proofscope run -- CMD`: an unmodified prover (the plain build of examples/cpp-c2, which
//! prints supraseal HEAD's and bellperson's log lines) watched through the allocator probe and
//! its own log in one session — headless and in a real terminal; a wrapper script's prover;
//! exit statuses and failures to start passed on; output passed through byte for byte; a
//! stopped viewer never stalling the prover.

mod common;

use common::cpp::{ONE_AT_A_TIME, build, library};
use common::tmux::{self, Tmux};
use common::{BIN, Running};
use serde_json::Value;
use std::ffi::OsStr;
use std::path::Path;
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

/// `proofscope run` with the workspace's allocator probe and `args` before `--`.
fn run_cmd(args: &[&OsStr], cmd: &[&OsStr]) -> Command {
    let mut c = Command::new(BIN);
    c.arg("run")
        .arg("--preload")
        .arg(library("libproofscope_preload.so"))
        .args(args)
        .arg("--")
        .args(cmd);
    c
}

fn output(args: &[&OsStr], cmd: &[&OsStr]) -> Output {
    run_cmd(args, cmd).stdin(Stdio::null()).output().unwrap()
}

/// The prover's arguments: 4 calls of 4 circuits of 96 MiB vectors (1.8 GB freed a call,
/// ~100 ms here: a flagged tail in sync mode), two GPU workers.
/// The viewer's gap rule for a run: the 1.8 GB ghost takes 40–100 ms of free depending on the
/// machine, around the default 50 ms floor, so the sync side is judged with a 10 ms floor; the
/// async side keeps the default, stricter for "nothing flagged".
fn sync_rule(dealloc: &str) -> &'static [&'static str] {
    if dealloc == "sync" {
        &["--gap-min-ms", "10"]
    } else {
        &[]
    }
}

fn c2_args(dealloc: &str) -> Vec<String> {
    ["--proofs", "4", "--mib", "96", "--dealloc", dealloc]
        .map(String::from)
        .to_vec()
}

/// Runs the C++ prover under `run --headless --format json`; the report and run's output.
fn headless_c2(dir: &Path, exe: &Path, dealloc: &str, wrapped: bool) -> (Value, Output) {
    let report = dir.join(format!("{dealloc}.json"));
    let args = c2_args(dealloc).join(" ");
    let cmd: Vec<String> = if wrapped {
        // A wrapper script, as operators start provers: the prover is the shell's child.
        vec![
            "sh".into(),
            "-c".into(),
            format!("date; '{}' {args}; date", exe.display()),
        ]
    } else {
        std::iter::once(exe.display().to_string())
            .chain(c2_args(dealloc))
            .collect()
    };
    headless_json(&report, sync_rule(dealloc), &cmd)
}

/// `run --headless --format json -o REPORT RULE… -- CMD…`, which must succeed; the report and
/// run's output.
fn headless_json(report: &Path, rule: &[&str], cmd: &[String]) -> (Value, Output) {
    let cmd: Vec<&OsStr> = cmd.iter().map(OsStr::new).collect();
    let mut opts: Vec<&OsStr> = vec![
        "--headless".as_ref(),
        "--format".as_ref(),
        "json".as_ref(),
        "-o".as_ref(),
        report.as_os_str(),
    ];
    opts.extend(rule.iter().map(OsStr::new));
    let out = output(&opts, &cmd);
    assert!(out.status.success(), "{out:?}");
    let text = std::fs::read_to_string(report).unwrap();
    (serde_json::from_str(&text).unwrap(), out)
}

/// The session of the prover itself (the last: a wrapper's shell comes first).
fn prover_session(v: &Value) -> &Value {
    let s = v["sessions"].as_array().unwrap();
    s.iter()
        .rev()
        .find(|s| s["prover"].as_str().unwrap().starts_with("c2-plain"))
        .unwrap_or_else(|| panic!("no c2-plain session: {v}"))
}

fn phases_of(p: &Value) -> Vec<(String, String)> {
    p["phases"]
        .as_array()
        .unwrap()
        .iter()
        .map(|ph| {
            (
                ph["name"].as_str().unwrap().to_owned(),
                ph["thread"].as_str().unwrap().to_owned(),
            )
        })
        .collect()
}

/// Sync mode: one proof per call with the log's phases on both GPU workers; the tail gap
/// flagged in at least half of them, diagnosed as the release on `main` with the
/// destructor's stack.
fn check_sync(v: &Value, out: &Output) {
    let s = prover_session(v);
    let proofs = s["proofs"].as_array().unwrap();
    assert_eq!(proofs.len(), 4, "one proof per call: {s}");
    let mut flagged = 0;
    for p in proofs {
        let ph = phases_of(p);
        for (step, lane) in [
            ("synthesis", "main"),
            ("split_vectors", "main"),
            ("prep_msm", "prep_msm"),
            ("ntt_msm_h", "gpu-0"),
            ("ntt_msm_h", "gpu-1"),
        ] {
            assert!(
                ph.contains(&(step.into(), lane.into())),
                "proof {}: {step} on {lane} in {ph:?}",
                p["id"]
            );
        }
        for g in p["gaps"].as_array().unwrap() {
            // The proof's own gaps: at the 10 ms floor a loaded machine can also flag one
            // inside a GPU worker's phase (13 ms after `ntt_msm_h`'s last child, once in CI),
            // which is no tail and not this test's subject.
            if g["flagged"] != true || g["span"] != "prove" {
                continue;
            }
            let d = &g["diagnosis"];
            assert_eq!(g["place"], "after_last", "{g}");
            assert_eq!(d["kind"], "synchronous_release", "{g}");
            let sentence = d["sentence"].as_str().unwrap();
            assert!(
                sentence.contains("on the proving thread main"),
                "{sentence}"
            );
            assert!(
                sentence.contains("`Assignment::~Assignment()` (c2.cpp:"),
                "the destructor's stack: {sentence}"
            );
            // Most of the destructors' 1.2 GB (4 circuits × 3 vectors × 96 MiB): on a loaded
            // machine the first frees can come before the last timer's write is stamped
            // (10 of the 12 in the gap, once in CI), and so inside the last phase.
            let tail = 12u64 * (96 << 20);
            assert!(
                d["releases"]["bytes"].as_u64().unwrap() >= tail * 3 / 4,
                "{d}"
            );
            flagged += 1;
        }
    }
    assert!(flagged >= 2, "{flagged} of 4 tails flagged: {s}");
    // The prover's own output passed through: its stdout lines on run's stdout, its log
    // lines on run's stderr.
    let stdout = String::from_utf8_lossy(&out.stdout);
    for n in 1..=4 {
        assert!(
            stdout.contains(&format!("proof {n}: 4 circuits")),
            "{stdout}"
        );
    }
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("CUZK_TIMING: gpu_tid=1"), "{stderr}");
}

#[test]
fn the_unmodified_cpp_prover_under_run_shows_its_ghost_in_sync_mode_only() {
    let _one = ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
    let dir = tempfile::tempdir().unwrap();
    let Some(exe) = build(dir.path(), false) else {
        return;
    };
    let (sync, out) = headless_c2(dir.path(), &exe, "sync", false);
    check_sync(&sync, &out);

    // Async: nothing flagged; the vectors freed on their own thread, after the proof.
    let (v, _) = headless_c2(dir.path(), &exe, "async", false);
    let s = prover_session(&v);
    let proofs = s["proofs"].as_array().unwrap();
    assert_eq!(proofs.len(), 4, "{s}");
    for p in proofs {
        assert!(
            !p["gaps"]
                .as_array()
                .unwrap()
                .iter()
                .any(|g| g["flagged"] == true),
            "async flagged a gap: {p}"
        );
    }
    // A detached thread a call: `dealloc`, `dealloc#2`, …
    let by_thread = s["releases"]["by_thread"].to_string();
    assert!(by_thread.contains("[\"dealloc"), "{by_thread}");
    assert!(
        !by_thread.contains("[\"main\""),
        "nothing on main: {by_thread}"
    );
    // None of it inside a proof: a call's vectors go while the next call runs, on their own
    // thread.
    for p in proofs {
        let r = &p["releases"];
        assert_eq!(r["in_outer_outside_phases"]["count"], 0, "{r}");
        assert!(
            !r["in_phases"]["threads"].to_string().contains("\"main\""),
            "{r}"
        );
    }
    let freed = s["releases"]["bytes"].as_u64().unwrap();
    assert!(freed >= 6 << 30, "4 calls' vectors freed: {freed} B");
}

/// Bytes released in each proof of `session`, wherever the proof placed them.
fn released_per_proof(session: &Value) -> Vec<u64> {
    session["proofs"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| {
            ["in_outer_outside_phases", "in_phases", "elsewhere_during"]
                .iter()
                .map(|k| p["releases"][k]["bytes"].as_u64().unwrap())
                .sum()
        })
        .collect()
}

/// A prover that links the probe, run under the preload (`run` preloads it): one session, and
/// each block once. Its vectors' blocks are reported by its own allocator
/// (`proofscope::allocator`) and seen by the preload in the same `free`; they counted twice
/// ("1.2 GB freed … 40 large releases … 199 % of the gap" for a call that freed 604 MB). Now
/// every proof's releases are within 1 % of the plain build's under the same run.
#[test]
fn a_linked_prover_under_run_counts_each_release_once() {
    let _one = ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
    let dir = tempfile::tempdir().unwrap();
    let (Some(plain), Some(linked)) = (build(dir.path(), false), build(dir.path(), true)) else {
        return;
    };
    let args = ["--proofs", "2", "--mib", "16", "--dealloc", "sync"];
    let session = |exe: &Path, name: &str| {
        let cmd: Vec<String> = std::iter::once(exe.display().to_string())
            .chain(args.iter().map(|a| a.to_string()))
            .collect();
        let (v, _) = headless_json(&dir.path().join(format!("{name}.json")), &[], &cmd);
        // The process's session: the last (a linked prover's preload may have started one of
        // its own before the program's probe took over, with no proofs).
        let sessions = v["sessions"].as_array().unwrap();
        for other in &sessions[..sessions.len() - 1] {
            assert_eq!(other["proofs"], serde_json::json!([]), "{v}");
        }
        sessions.last().unwrap().clone()
    };
    // What a call frees: the plain build's releases over the whole session (every one is
    // the preload's, once), per call — not per proof, where the log's join places them.
    let plain = session(&plain, "plain");
    let freed = plain["releases"]["bytes"].as_u64().unwrap() / 2;
    let linked = released_per_proof(&session(&linked, "linked"));
    assert_eq!(linked.len(), 2, "{linked:?}");
    assert!(
        freed >= 256 << 20,
        "a call frees its 4 × 4 16 MiB vectors: {freed} B"
    );
    for (n, bytes) in linked.iter().enumerate() {
        let off = (*bytes as f64 - freed as f64).abs() / freed as f64;
        assert!(
            off < 0.01,
            "linked proof {n}: {bytes} B released against {freed} B the plain build freed"
        );
    }
}

/// A prover whose probe can never answer is told apart from one that is slow: a static binary
/// (no loader, so no LD_PRELOAD) becomes a log-only session at once, with the reason. (A
/// loaded machine's slow probe is waited for as long as the prover runs: run_under_load.rs.)
/// Before, any probe silent for 3 s made the session "its log alone", reason unknown — on a
/// loaded machine, 1 run in 5, for a prover that was fine.
#[test]
fn a_static_prover_is_a_log_only_session_that_says_why() {
    let dir = tempfile::tempdir().unwrap();
    let src = dir.path().join("static.c");
    std::fs::write(
        &src,
        "#include <stdio.h>\n#include <unistd.h>\nint main(void) { usleep(6000000); fprintf(stderr, \"[2026-12-06T04:00:00.000Z INFO  bellperson::groth16::prover::supraseal] prover time: 0.5s\\n\"); return 0; }\n",
    )
    .unwrap();
    let exe = dir.path().join("static");
    let mut c = Command::new("c++");
    c.args(["-x", "c", "-static", "-O2"])
        .arg(&src)
        .arg("-o")
        .arg(&exe);
    let Some(exe) = common::cpp::compiled(c, exe) else {
        return;
    };
    let out = output(&["--headless".as_ref()], &[exe.as_os_str()]);
    assert!(out.status.success(), "{out:?}");
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        text.contains("is a static binary: no dynamic loader, so no LD_PRELOAD"),
        "{text}"
    );
    assert!(text.contains("this session is its log alone"), "{text}");
}

#[test]
fn a_prover_started_by_a_wrapper_script_is_followed() {
    let _one = ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
    let dir = tempfile::tempdir().unwrap();
    let Some(exe) = build(dir.path(), false) else {
        return;
    };
    let (v, out) = headless_c2(dir.path(), &exe, "sync", true);
    check_sync(&v, &out);
    assert!(
        v["warnings"].to_string().contains("started by the prover"),
        "{}",
        v["warnings"]
    );
}

/// A wrapper that starts its prover in the background and exits at once, the prover's output
/// sent elsewhere (a daemonising script): `run` follows the prover to its end — its session
/// has every proof its own probe reported — and ends after it. Before, `run` ended with the
/// wrapper, 1.1 s in, while the prover went on, none of its proofs reported.
#[test]
fn a_prover_left_running_by_its_wrapper_is_followed_to_its_end() {
    let _one = ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
    let dir = tempfile::tempdir().unwrap();
    let Some(exe) = build(dir.path(), true) else {
        return;
    };
    let report = dir.path().join("daemon.json");
    let done = dir.path().join("prover.done");
    let script = format!(
        "('{}' --proofs 4 --mib 96 --dealloc sync; touch '{}') >/dev/null 2>&1 & exit 0",
        exe.display(),
        done.display()
    );
    let (v, _) = headless_json(&report, &[], &["sh".into(), "-c".into(), script]);
    assert!(done.exists(), "run ended before the prover did");
    let proofs: usize = v["sessions"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s["proofs"].as_array().unwrap().len())
        .sum();
    assert_eq!(proofs, 4, "{v}");
}

/// `exec prover` at the end of a wrapper that ran something long enough to be followed first
/// (`sleep 0.8`): the prover keeps the shell's pid, and is followed all the same (it was not:
/// the run had followed that pid once, and the log's proofs went to `sleep`'s session).
#[test]
fn a_wrapper_that_execs_its_prover_is_followed_to_it() {
    let _one = ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
    let dir = tempfile::tempdir().unwrap();
    let Some(exe) = build(dir.path(), false) else {
        return;
    };
    let report = dir.path().join("exec.json");
    let script = format!(
        "sleep 0.8; exec '{}' --proofs 4 --mib 96 --dealloc sync",
        exe.display()
    );
    let (v, _) = headless_json(&report, &[], &["sh".into(), "-c".into(), script]);
    let s = prover_session(&v);
    assert_eq!(s["proofs"].as_array().unwrap().len(), 4, "{s}");
    let sleep_proofs: usize = v["sessions"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|s| s["prover"] == "sleep")
        .map(|s| s["proofs"].as_array().unwrap().len())
        .sum();
    assert_eq!(sleep_proofs, 0, "no proof is sleep's: {v}");
    assert!(
        v["warnings"].to_string().contains("exec'd another program"),
        "{}",
        v["warnings"]
    );
}

#[test]
fn run_in_a_terminal_shows_the_logs_phases_and_the_diagnosis() {
    if !tmux::available() {
        return;
    }
    let _one = ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
    let dir = tempfile::tempdir().unwrap();
    let Some(exe) = build(dir.path(), false) else {
        return;
    };
    let marker = dir.path().join("exited");
    let log = dir.path().join("prover.log");
    let script = format!(
        "{BIN} run --preload {pre} --log {log} {rule} -- {exe} {args}; echo $? > {m}; sleep 60",
        pre = library("libproofscope_preload.so").display(),
        log = log.display(),
        exe = exe.display(),
        args = c2_args("sync").join(" "),
        rule = sync_rule("sync").join(" "),
        m = marker.display()
    );
    let term = Tmux::start("run", 120, 36, &script);
    let phases = ["synthesis", "split_vectors", "ntt_msm_h", "tail_msm"];
    let screen = term.wait(90, |s| {
        s.contains("exited with status 0") && phases.iter().all(|p| s.contains(p))
    });
    assert!(
        phases.iter().all(|p| screen.contains(p)) && screen.contains("exited with status 0"),
        "{screen}"
    );
    assert!(
        screen.contains(" · !"),
        "a flagged proof in the list:\n{screen}"
    );
    // The gaps tab of the proof shown: the diagnosis.
    // The timeline's footer names the release too, so the wait is for the
    // diagnosis's own words: a screen taken before the key took effect
    // would otherwise pass the wait (CI, stop 35).
    term.key("Tab");
    let gaps = term.wait(10, |s| panel_text(s).contains("on the proving thread"));
    let panel = panel_text(&gaps);
    assert!(panel.contains("on the proving thread"), "{gaps}");
    assert!(panel.contains("Assignment::~Assignment()"), "{gaps}");
    term.key("q");
    let deadline = Instant::now() + Duration::from_secs(15);
    while !marker.exists() && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(100));
    }
    drop(term);
    assert_eq!(std::fs::read_to_string(&marker).unwrap().trim(), "0");
    let printed = std::fs::read_to_string(&log).unwrap();
    assert!(printed.contains("prover time: "), "{printed}");
}

/// The right-hand panel's text as one line: where it wraps depends on the figures.
fn panel_text(screen: &str) -> String {
    screen
        .lines()
        .filter_map(|l| l.split_once('│').map(|(_, r)| r))
        .collect::<Vec<_>>()
        .join(" ")
}

/// `run`'s own files never clash: a `--log` that is the recording or the report is refused
/// (status 2) before anything starts. Both exited 0 before: the log's bytes landed inside the
/// recording (its header lost), or the report replaced the log.
#[test]
fn a_log_that_is_the_recording_or_the_report_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let x = dir.path().join("x.psrec");
    let y = dir.path().join("y.txt");
    for (args, said) in [
        (
            [
                "--record",
                x.to_str().unwrap(),
                "--log",
                x.to_str().unwrap(),
            ],
            "--log and --record name the same file",
        ),
        (
            ["-o", y.to_str().unwrap(), "--log", y.to_str().unwrap()],
            "--log and --output name the same file",
        ),
    ] {
        let mut a: Vec<&OsStr> = vec!["--headless".as_ref()];
        a.extend(args.iter().map(OsStr::new));
        let o = output(&a, &["true".as_ref()]);
        assert_eq!(o.status.code(), Some(2), "{o:?}");
        assert!(String::from_utf8_lossy(&o.stderr).contains(said), "{o:?}");
        assert!(!x.exists() && !y.exists(), "nothing written");
    }
}

/// A run that stops its prover as asked is done: `--proofs 1` exits 0 (it exited 143, the
/// SIGTERM it sent); a prover that ignores SIGTERM is killed 3 s later and the run exits 137
/// and says so (it exited 1, silently).
#[test]
fn a_prover_stopped_as_asked_is_done_and_one_that_ignores_sigterm_is_killed_and_said() {
    let _one = ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
    let dir = tempfile::tempdir().unwrap();
    let Some(exe) = build(dir.path(), false) else {
        return;
    };
    let o = output(
        &["--headless".as_ref(), "--proofs".as_ref(), "1".as_ref()],
        &[
            exe.as_os_str(),
            "--proofs".as_ref(),
            "50".as_ref(),
            "--mib".as_ref(),
            "8".as_ref(),
        ],
    );
    assert_eq!(o.status.code(), Some(0), "done after one proof: {o:?}");

    let o = output(
        &["--headless".as_ref(), "--duration".as_ref(), "1".as_ref()],
        &[
            "sh".as_ref(),
            "-c".as_ref(),
            "trap '' TERM; sleep 20".as_ref(),
        ],
    );
    assert_eq!(o.status.code(), Some(137), "{o:?}");
    assert!(
        String::from_utf8_lossy(&o.stdout).contains("ignored SIGTERM for 3 s"),
        "{o:?}"
    );
}

#[test]
fn exit_statuses_and_failures_to_start_are_passed_on() {
    let dir = tempfile::tempdir().unwrap();
    let report = dir.path().join("r");
    let headless: [&OsStr; 4] = [
        "--headless".as_ref(),
        "--force".as_ref(),
        "-o".as_ref(),
        report.as_os_str(),
    ];

    let o = output(
        &headless,
        &["sh".as_ref(), "-c".as_ref(), "exit 7".as_ref()],
    );
    assert_eq!(o.status.code(), Some(7), "{o:?}");

    let missing = dir.path().join("no-such-prover");
    let o = output(&headless, &[missing.as_os_str()]);
    assert_eq!(o.status.code(), Some(127), "{o:?}");
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(
        err.contains("no-such-prover") && err.contains("No such file"),
        "{err}"
    );

    let plain = dir.path().join("not-executable");
    std::fs::write(&plain, "#!/bin/sh\necho hi\n").unwrap();
    let o = output(&headless, &[plain.as_os_str()]);
    assert_eq!(o.status.code(), Some(126), "{o:?}");
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(
        err.contains("not-executable") && err.contains("ermission denied"),
        "{err}"
    );
}

#[test]
fn a_prover_killed_by_sigkill_ends_the_session_and_the_recording_is_whole() {
    let dir = tempfile::tempdir().unwrap();
    let rec = dir.path().join("killed.psrec");
    let report = dir.path().join("report.txt");
    // Big enough blocks for the preload to report, then killed mid-run.
    let script = "echo started; head -c 8000000 /dev/zero | sort > /dev/null; kill -9 $$";
    let o = output(
        &[
            "--headless".as_ref(),
            "--record".as_ref(),
            rec.as_os_str(),
            "-o".as_ref(),
            report.as_os_str(),
        ],
        &["sh".as_ref(), "-c".as_ref(), script.as_ref()],
    );
    assert_eq!(o.status.code(), Some(137), "128 + SIGKILL: {o:?}");
    assert!(String::from_utf8_lossy(&o.stdout).contains("started"));
    let text = std::fs::read_to_string(&report).unwrap();
    assert!(text.contains("== session 1 =="), "{text}");
    // The recording replays to its end: every frame decodes.
    let r = Command::new(BIN)
        .args(["replay", "--headless", "--format", "json"])
        .arg(&rec)
        .output()
        .unwrap();
    assert!(r.status.success(), "{r:?}");
    let v: Value = serde_json::from_slice(&r.stdout).unwrap();
    assert_eq!(v["bad_frames"], 0, "{v}");
    assert!(!v["sessions"].as_array().unwrap().is_empty(), "{v}");
}

/// 50 MB in one line, then binary garbage (NULs, invalid UTF-8, carriage returns, no final
/// newline): what the prover wrote is what run's stdout carries, byte for byte.
#[test]
fn output_passes_through_byte_for_byte() {
    let dir = tempfile::tempdir().unwrap();
    let input = dir.path().join("input.bin");
    let mut bytes = vec![b'x'; 50 << 20];
    bytes.push(b'\n');
    let mut state = 0x2545_f491_4f6c_dd1du64;
    for _ in 0..(1 << 20) {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        bytes.push(state as u8);
    }
    bytes.extend_from_slice(b"\r\n\0\xff\xfe CUZK_TIMING: prep_msm_ms=\xff");
    std::fs::write(&input, &bytes).unwrap();
    let report = dir.path().join("report.txt");
    let o = output(
        &["--headless".as_ref(), "-o".as_ref(), report.as_os_str()],
        &["cat".as_ref(), input.as_os_str()],
    );
    assert!(o.status.success(), "{:?}", o.status);
    assert!(
        o.stdout == bytes,
        "stdout differs: {} of {} bytes",
        o.stdout.len(),
        bytes.len()
    );
    assert!(
        std::fs::read_to_string(&report)
            .unwrap()
            .contains("== session")
    );
}

#[test]
fn a_prover_that_closes_its_stderr_runs_on() {
    let dir = tempfile::tempdir().unwrap();
    let report = dir.path().join("report.txt");
    let o = output(
        &["--headless".as_ref(), "-o".as_ref(), report.as_os_str()],
        &[
            "sh".as_ref(),
            "-c".as_ref(),
            "echo before >&2; exec 2>&-; echo one; sleep 0.3; echo two".as_ref(),
        ],
    );
    assert!(o.status.success(), "{o:?}");
    assert_eq!(String::from_utf8_lossy(&o.stdout), "one\ntwo\n");
    assert!(String::from_utf8_lossy(&o.stderr).contains("before"));
}

/// The viewer stopped (SIGSTOP) for 3 s while the prover prints a line every 10 ms: the
/// prover's lines keep their pace (the relay never waits for the viewer), all of them arrive,
/// and run exits as the prover did once the viewer goes on.
#[test]
fn a_stopped_viewer_never_stalls_the_prover() {
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("prover.log");
    let report = dir.path().join("report.txt");
    let script = "i=0; while [ $i -lt 400 ]; do date +%s%N; i=$((i+1)); sleep 0.01; done";
    let mut viewer = Running(
        run_cmd(
            &[
                "--headless".as_ref(),
                "--log".as_ref(),
                log.as_os_str(),
                "-o".as_ref(),
                report.as_os_str(),
            ],
            &["sh".as_ref(), "-c".as_ref(), script.as_ref()],
        )
        .stdin(Stdio::null())
        .spawn()
        .unwrap(),
    );
    std::thread::sleep(Duration::from_millis(500));
    let pid = viewer.0.id() as i32;
    // SAFETY: signalling our own child.
    unsafe { libc::kill(pid, libc::SIGSTOP) };
    std::thread::sleep(Duration::from_secs(3));
    // SAFETY: as above.
    unsafe { libc::kill(pid, libc::SIGCONT) };
    let status = viewer.0.wait().unwrap();
    assert!(status.success(), "{status:?}");
    let stamps: Vec<u64> = std::fs::read_to_string(&log)
        .unwrap()
        .lines()
        .filter_map(|l| l.trim().parse().ok())
        .collect();
    assert_eq!(stamps.len(), 400, "every line passed through");
    let worst = stamps.windows(2).map(|w| w[1] - w[0]).max().unwrap();
    // A line every ~10 ms plus a fork of `date`; a stall would be the 3 s stop.
    assert!(
        worst < 1_500_000_000,
        "the prover stalled {} ms while the viewer was stopped",
        worst / 1_000_000
    );
}

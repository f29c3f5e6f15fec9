//! Crafted input shapes replay in time linear in their size, and a headless replay stops on
//! SIGTERM: many sessions (each a Hello and one proof) at `--max-mib 32`, timed at N and 4N —
//! a quadratic eviction (it was: `Vec::remove(0)` and whole scans per eviction) takes 16× as
//! long, a linear one 4×.

use probe_protocol::{
    Event, FrameBuilder, Hello, ProofBegin, ProofEnd, RecordingWriter, SpanBegin, SpanEnd,
};
use std::path::Path;
use std::process::Command;
use std::time::{Duration, Instant};

mod common;

use common::BIN;

/// `n` sessions of one proof each.
fn sessions(path: &Path, n: u64) {
    let mut w = RecordingWriter::new(std::io::BufWriter::new(
        std::fs::File::create(path).unwrap(),
    ))
    .unwrap();
    let mut b = FrameBuilder::new(0);
    for i in 0..n {
        let evs = [
            Event::Hello(Box::new(Hello {
                protocol_major: 1,
                pid: i as u32 + 1,
                session_start_unix_ns: i,
                prover_name: "many".into(),
                ..Default::default()
            })),
            Event::ProofBegin(Box::new(ProofBegin {
                ts: 10,
                proof: 1,
                span: 1,
                ..Default::default()
            })),
            Event::SpanBegin(SpanBegin {
                ts: 10,
                span: 1,
                parent: None,
                proof: Some(1),
                name: 1,
                thread: 1,
            }),
            Event::SpanEnd(SpanEnd { ts: 20, span: 1 }),
            Event::ProofEnd(Box::new(ProofEnd {
                ts: 21,
                proof: 1,
                ok: true,
                ..Default::default()
            })),
        ];
        for e in &evs {
            b.push(e).unwrap();
        }
        if b.body_len() > 48 << 10 {
            w.write_frame(b.finish().unwrap()).unwrap();
            b = FrameBuilder::new(0);
        }
    }
    w.write_frame(b.finish().unwrap()).unwrap();
}

fn replay_secs(path: &Path) -> f64 {
    let t = Instant::now();
    let out = Command::new(BIN)
        .arg("replay")
        .arg(path)
        .args([
            "--headless",
            "--max-mib",
            "32",
            "--format",
            "json",
            "-o",
            "/dev/null",
        ])
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    t.elapsed().as_secs_f64()
}

#[test]
fn many_sessions_replay_in_linear_time() {
    let dir = tempfile::tempdir().unwrap();
    let (small, large) = (dir.path().join("30k.psrec"), dir.path().join("120k.psrec"));
    sessions(&small, 30_000);
    sessions(&large, 120_000);
    // The smaller first and last: a loaded machine slows both alike.
    let a = replay_secs(&small);
    let b = replay_secs(&large);
    let a2 = replay_secs(&small);
    let a = a.min(a2);
    eprintln!("30k sessions: {a:.2} s, 120k: {b:.2} s, ratio {:.1}", b / a);
    assert!(
        b / a < 8.0,
        "30k sessions {a:.2} s, 120k {b:.2} s: not linear"
    );
}

/// SIGTERM stops a headless replay within half a second (between two slices of the file),
/// with a report that says it was interrupted and a non-zero exit.
#[test]
fn sigterm_stops_a_headless_replay_and_says_so() {
    let dir = tempfile::tempdir().unwrap();
    let rec = dir.path().join("long.psrec");
    common::busy_session(&rec, 60_000, None);
    let mut child = Command::new(BIN)
        .arg("replay")
        .arg(&rec)
        .args(["--headless", "--max-mib", "32"])
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    // In the opening pass (the proof index) or the replay itself: both stop.
    std::thread::sleep(Duration::from_millis(400));
    assert!(
        child.try_wait().unwrap().is_none(),
        "the replay ended within 0.4 s: make the recording longer"
    );
    // SAFETY: signalling our own child.
    unsafe { libc::kill(child.id() as i32, libc::SIGTERM) };
    let t = Instant::now();
    let out = child.wait_with_output().unwrap();
    let took = t.elapsed();
    let err = String::from_utf8_lossy(&out.stderr);
    let report = String::from_utf8_lossy(&out.stdout);
    eprintln!("stopped {took:?} after SIGTERM");
    assert!(took < Duration::from_millis(500), "{took:?}");
    assert_eq!(out.status.code(), Some(1), "{err}");
    assert!(err.contains("interrupted by SIGTERM"), "{err}");
    assert!(report.contains("interrupted by SIGTERM"), "{report}");
}

/// `replay /dev/zero`: a "log" of one line that never ends costs a line's worth of memory,
/// and SIGTERM stops it with an error that says so.
#[test]
fn an_endless_line_costs_bounded_memory_and_stops_on_sigterm() {
    let child = Command::new(BIN)
        .args(["replay", "/dev/zero", "--headless", "--max-mib", "32"])
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    std::thread::sleep(Duration::from_millis(1500));
    let rss_kib: u64 = std::fs::read_to_string(format!("/proc/{}/status", child.id()))
        .unwrap()
        .lines()
        .find_map(|l| l.strip_prefix("VmRSS:"))
        .and_then(|v| v.split_whitespace().next()?.parse().ok())
        .unwrap();
    assert!(rss_kib < 64 << 10, "{rss_kib} KiB resident");
    // SAFETY: signalling our own child.
    unsafe { libc::kill(child.id() as i32, libc::SIGTERM) };
    let t = Instant::now();
    let out = child.wait_with_output().unwrap();
    assert!(
        t.elapsed() < Duration::from_millis(500),
        "{:?}",
        t.elapsed()
    );
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{err}");
    assert!(err.contains("interrupted by SIGTERM"), "{err}");
}

//! The probe's byte budgets bound what it really holds: the flight recorder
//! (`PROOFSCOPE_HISTORY_BYTES`) and a stalled viewer's queue (`PROOFSCOPE_SUBSCRIBER_BYTES`),
//! read as the process's RSS. Each measurement runs in a child process (this test binary,
//! re-run in "child mode"), so the RSS is the probe's and nothing else's.

use probe_protocol::{Event, Subscribe, encode_frame};
use proofscope_probe::{Probe, ProbeConfig, SessionInfo, SocketChoice, span};
use std::io::Write;
use std::process::Command;
use std::time::{Duration, Instant};

const CHILD: &str = "PROOFSCOPE_TEST_CHILD";

fn rss() -> u64 {
    let s = std::fs::read_to_string("/proc/self/statm").unwrap();
    let pages: u64 = s.split_whitespace().nth(1).unwrap().parse().unwrap();
    pages * 4096
}

/// Child: a probe with these budgets emits small frames for a few seconds (the worst case
/// for per-frame overhead: a few events every collector cycle), optionally with a viewer that
/// subscribes and never reads; prints the RSS it grew by.
fn child(history: usize, subscriber: usize, stalled_viewer: bool) {
    let dir = tempfile::tempdir().unwrap();
    let sock = dir.path().join("m.sock");
    let before = rss();
    let p = Probe::start(
        ProbeConfig::new("mem", "0")
            .socket(SocketChoice::At(sock.clone()))
            .gpu_sample(None)
            .history_bytes(history)
            .subscriber_bytes(subscriber)
            .flush_interval(Duration::from_micros(200)),
        SessionInfo::default(),
    )
    .unwrap();
    let _viewer = stalled_viewer.then(|| {
        let mut s = std::os::unix::net::UnixStream::connect(&sock).unwrap();
        let sub = Event::Subscribe(Subscribe {
            history: true,
            client: "stalled".into(),
        });
        s.write_all(&encode_frame(0, &[sub]).unwrap()).unwrap();
        s
    });
    let t = Instant::now();
    let mut peak = 0;
    while t.elapsed() < Duration::from_secs(4) {
        for _ in 0..4 {
            let _s = span!("tick");
        }
        std::thread::sleep(Duration::from_micros(150));
        peak = peak.max(rss());
    }
    println!("GREW {}", peak.saturating_sub(before));
    p.shutdown("done");
}

/// Runs the child and returns how much its RSS grew.
fn grew(history: usize, subscriber: usize, stalled_viewer: bool) -> u64 {
    let out = Command::new(std::env::current_exe().unwrap())
        .args(["--exact", "child_mode", "--nocapture", "--include-ignored"])
        .env(CHILD, format!("{history} {subscriber} {stalled_viewer}"))
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    text.lines()
        .find_map(|l| l.strip_prefix("GREW "))
        .and_then(|v| v.trim().parse().ok())
        .unwrap_or_else(|| {
            panic!(
                "child said: {text}\n{}",
                String::from_utf8_lossy(&out.stderr)
            )
        })
}

/// The child's entry point (does nothing unless run as the child).
#[test]
#[ignore = "run by the tests below in a child process"]
fn child_mode() {
    let Ok(args) = std::env::var(CHILD) else {
        return;
    };
    let v: Vec<&str> = args.split(' ').collect();
    child(v[0].parse().unwrap(), v[1].parse().unwrap(), v[2] == "true");
}

const MIB: u64 = 1 << 20;

/// A probe's budgets: history, subscriber queue, and whether a viewer subscribes and never reads.
#[derive(Clone, Copy)]
struct Budgets {
    history: usize,
    subscriber: usize,
    stalled_viewer: bool,
}

/// Checks that a probe with `budgets` grows by at most `bound(fixed)`, where `fixed` is the
/// growth of the probe `fixed` describes (a history too small to matter: what the probe holds
/// besides it — rings, threads, buffers). Both are peaks of RSS, so a collector starved of CPU
/// for a moment (it then drains a fuller ring into a larger frame) raises either side by a few
/// hundred KiB: CI once read the fixed footprint at 6,016 KiB and a 256 KiB history at
/// 6,984 KiB, where a quiet or busy build machine reads ~6,200 and ~6,500 every time. A bound
/// missed once is measured again, both sides back to back: a budget really overrun misses twice.
fn grows_within(fixed: Budgets, budgets: Budgets, bound: impl Fn(u64) -> u64) {
    let run = |b: Budgets| grew(b.history, b.subscriber, b.stalled_viewer);
    let mut misses = Vec::new();
    for _ in 0..2 {
        let base = run(fixed);
        let g = run(budgets);
        if g <= bound(base) {
            return;
        }
        misses.push(format!(
            "grew {} KiB, over {} KiB (fixed {} KiB)",
            g >> 10,
            bound(base) >> 10,
            base >> 10
        ));
    }
    panic!(
        "history budget {} KiB, queue budget {} KiB{}: {}",
        budgets.history >> 10,
        budgets.subscriber >> 10,
        if budgets.stalled_viewer {
            ", a stalled viewer"
        } else {
            ""
        },
        misses.join("; measured again: ")
    );
}

#[test]
fn the_flight_recorder_holds_what_its_budget_says() {
    let budgets = |history| Budgets {
        history,
        subscriber: 16 << 20,
        stalled_viewer: false,
    };
    for history in [256 << 10, 1 << 20, 4 << 20] {
        grows_within(budgets(16 << 10), budgets(history), |fixed| {
            fixed + history as u64 * 5 / 4 + MIB / 2
        });
    }
}

#[test]
fn a_stalled_viewer_costs_at_most_its_queue_budget() {
    let queue = 2 << 20;
    let fixed = Budgets {
        history: 16 << 10,
        subscriber: 64 << 10,
        stalled_viewer: false,
    };
    let stalled = Budgets {
        subscriber: queue,
        stalled_viewer: true,
        ..fixed
    };
    // The queue, plus what the kernel's socket buffer took before it filled.
    grows_within(fixed, stalled, |fixed| {
        fixed + queue as u64 * 5 / 4 + 2 * MIB
    });
}

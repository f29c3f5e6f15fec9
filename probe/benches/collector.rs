//! Collector benchmarks (custom harness; prints a table):
//! 1. throughput: the highest paced event rate delivered to one reading subscriber with zero
//!    drops (target ≥ 5 M events/s);
//! 2. a subscriber that never reads: the emitting thread's throughput against a run with no
//!    subscriber (target: within 1 %), and the drops reported for it.
use probe_protocol::{Event, EventKind, FrameSplitter, Subscribe, decode_into, encode_frame};
use proofscope_probe::span;
use proofscope_probe::{Probe, ProbeConfig, SessionInfo, SocketChoice};
use std::io::{Read, Write};
use std::os::unix::net::UnixStream;
use std::path::Path;
use std::time::{Duration, Instant};

fn subscribe(path: &Path) -> UnixStream {
    let mut s = UnixStream::connect(path).expect("connect");
    let f = encode_frame(
        0,
        &[Event::Subscribe(Subscribe {
            history: false,
            client: "bench".into(),
        })],
    )
    .unwrap();
    s.write_all(&f).unwrap();
    s
}

/// Reads until Goodbye; returns (span edges received, span edges reported dropped).
fn drain(mut s: UnixStream) -> (u64, u64) {
    let mut sp = FrameSplitter::new();
    let mut buf = vec![0u8; 1 << 20];
    let mut evs = Vec::new();
    let (mut got, mut dropped) = (0u64, 0u64);
    loop {
        let n = match s.read(&mut buf) {
            Ok(0) | Err(_) => return (got, dropped),
            Ok(n) => n,
        };
        sp.extend(&buf[..n]);
        while let Ok(Some(body)) = sp.next_body() {
            evs.clear();
            decode_into(body, &mut evs).unwrap();
            for e in &evs {
                match e {
                    Event::SpanBegin(_) | Event::SpanEnd(_) => got += 1,
                    Event::Dropped(d) => {
                        dropped += d
                            .counts
                            .iter()
                            .filter(|(k, _)| matches!(k, EventKind::SpanBegin | EventKind::SpanEnd))
                            .map(|(_, n)| n)
                            .sum::<u64>()
                    }
                    Event::Goodbye { .. } => return (got, dropped),
                    _ => {}
                }
            }
        }
    }
}

fn start(sock: &Path) -> Probe {
    Probe::start(
        ProbeConfig::new("bench", "0")
            .socket(SocketChoice::At(sock.to_owned()))
            .gpu_sample(None)
            .ring_events(1 << 16)
            .flush_interval(Duration::from_millis(1)),
        SessionInfo::default(),
    )
    .expect("probe")
}

/// Emits `rate` events/s (span edges) for `secs`, paced in 1 ms slices.
fn paced(rate: u64, secs: f64) -> u64 {
    let per_ms = rate / 1000 / 2; // spans per millisecond
    let t0 = Instant::now();
    let mut spans = 0u64;
    let mut slice = 0u64;
    while t0.elapsed().as_secs_f64() < secs {
        for _ in 0..per_ms {
            let _s = span!("paced");
        }
        spans += per_ms;
        slice += 1;
        let next = t0 + Duration::from_millis(slice);
        while Instant::now() < next {
            std::hint::spin_loop();
        }
    }
    spans * 2
}

fn throughput(dir: &Path) {
    println!("collector → one subscriber, paced for 2 s:");
    println!(
        "{:>14} {:>14} {:>12} {:>10}",
        "target ev/s", "delivered ev/s", "dropped", "result"
    );
    for rate in [2_000_000u64, 5_000_000, 8_000_000, 12_000_000] {
        let sock = dir.join(format!("t{rate}.sock"));
        let p = start(&sock);
        let s = subscribe(&sock);
        let reader = std::thread::Builder::new()
            .name("bench-reader".into())
            .spawn(move || drain(s))
            .unwrap();
        std::thread::sleep(Duration::from_millis(50));
        let t = Instant::now();
        let emitted = paced(rate, 2.0);
        p.shutdown("bench");
        let (got, dropped) = reader.join().unwrap();
        let secs = t.elapsed().as_secs_f64();
        println!(
            "{:>14} {:>14.0} {:>12} {:>10}",
            rate,
            got as f64 / secs,
            dropped,
            if dropped == 0 && got == emitted {
                "no drops"
            } else {
                "DROPS"
            }
        );
    }
}

/// About a microsecond of arithmetic, like a small piece of prover work.
#[inline(never)]
fn work_unit(seed: u64) -> u64 {
    let mut x = seed | 1;
    for _ in 0..300 {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
    }
    x
}

/// Work units per second of one thread that opens a span around every unit.
fn instrumented_work(n: u64) -> f64 {
    let t = Instant::now();
    let mut acc = 0u64;
    for i in 0..n {
        let _s = span!("unit");
        acc = acc.wrapping_add(work_unit(i));
    }
    std::hint::black_box(acc);
    n as f64 / t.elapsed().as_secs_f64()
}

fn stalled(dir: &Path) {
    const N: u64 = 2_000_000;
    let mut with = Vec::new();
    let mut without = Vec::new();
    let mut reports = Vec::new();
    for round in 0..7 {
        for stalled in [false, true] {
            let sock = dir.join(format!("s{round}{stalled}.sock"));
            let p = start(&sock);
            // A subscriber that connects and then never reads a byte while the work runs.
            let sub = stalled.then(|| subscribe(&sock));
            std::thread::sleep(Duration::from_millis(30));
            let r = instrumented_work(N);
            if stalled {
                with.push(r)
            } else {
                without.push(r)
            }
            // Read only now, so the goodbye (with the drop counts) is received.
            let reader = sub.map(|s| {
                std::thread::Builder::new()
                    .name("late-reader".into())
                    .spawn(move || drain(s))
                    .unwrap()
            });
            p.shutdown("bench");
            if let Some(r) = reader {
                reports.push(r.join().unwrap());
            }
        }
    }
    let med = |v: &mut Vec<f64>| {
        v.sort_by(|a, b| a.partial_cmp(b).unwrap());
        v[v.len() / 2]
    };
    let (a, b) = (med(&mut without), med(&mut with));
    println!("\none thread, a span around each ~1 µs work unit, {N} units, median of 7:");
    println!("  no subscriber:            {:.3} M units/s", a / 1e6);
    println!(
        "  never-reading subscriber: {:.3} M units/s ({:+.2} %)",
        b / 1e6,
        (b / a - 1.0) * 100.0
    );
    let (got, dropped) = reports[reports.len() / 2];
    println!(
        "  the stalled subscriber received {got} span edges and was told of {dropped} dropped ones: {} of {} emitted",
        got + dropped,
        2 * N
    );
}

fn main() {
    // `cargo bench` passes --bench; accept and ignore criterion-style flags.
    let dir = tempfile::tempdir().unwrap();
    throughput(dir.path());
    stalled(dir.path());
}

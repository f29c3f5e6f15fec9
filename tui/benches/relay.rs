//! What `proofscope run` costs a prover that logs a lot: its output passes through the relay
//! (and the allocator probe is preloaded into it), the viewer parses every line.
//!
//! The child is this bench binary itself (`relay child …`), writing log lines that carry the
//! wall-clock time they were written. Three measures, each direct (the child's pipe read by
//! the bench) and under `run --headless` (the relay's output read by the bench), alternated
//! A B B A and repeated:
//! - throughput: 100 MB of lines (~100 bytes each, written through a 64 KiB buffer, as a
//!   logger with a buffered sink would) — lines per second reaching the reader between its
//!   first line and its last, and the child's own wall time from its first write to its last;
//! - latency: 20,000 lines, one every 200 µs, each written and flushed alone — the time from
//!   the write to the bench reading it, p50 and p99;
//! - with `--stop SECS`: the viewer stopped (SIGSTOP) for SECS while the child writes a line
//!   a millisecond; the longest pause between two of the child's writes.
//!
//! `cargo bench -p proofscope --bench relay [-- --rounds N] [-- --stop 30]`
use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

const FLOOD_BYTES: u64 = 100_000_000;
const PACED_LINES: usize = 20_000;
const PACED_EVERY: Duration = Duration::from_micros(200);

fn now_ns() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos() as u64)
}

/// A log line as the C2 prover prints them, stamped with `ns`; `i` varies the kind.
fn line(out: &mut impl Write, ns: u64, i: u64) {
    let _ = match i % 4 {
        0 => writeln!(
            out,
            "{ns} CUZK_NTT_H: d_b_alloc=0ms ntt_kernels=65ms coset_intt_sync=3ms msm_init=0ms msm_invoke=54ms"
        ),
        1 => writeln!(
            out,
            "{ns} CUZK_TIMING: gpu_tid=0 batch_add_ms=178 pad=xxxxxxxxxxxxxxxxxxxxxxxx"
        ),
        2 => writeln!(
            out,
            "{ns} [2026-12-02T15:00:02.824Z INFO  storage_proofs_core::compound_proof] ok"
        ),
        _ => writeln!(
            out,
            "{ns} an unrelated line of a busy daemon, skipped by the importer......."
        ),
    };
}

/// The child: `flood BYTES` or `paced LINES EVERY_US`.
fn child(args: &[String]) {
    let stdout = std::io::stdout();
    match args.first().map(String::as_str) {
        Some("flood") => {
            let bytes: u64 = args[1].parse().expect("bytes");
            let start = Instant::now();
            let mut w = std::io::BufWriter::with_capacity(64 << 10, stdout.lock());
            let mut written = 0u64;
            let mut i = 0u64;
            let mut buf = Vec::with_capacity(128);
            while written < bytes {
                buf.clear();
                line(&mut buf, now_ns(), i);
                written += buf.len() as u64;
                let _ = w.write_all(&buf);
                i += 1;
            }
            let _ = w.flush();
            eprintln!("child_wall_ns={}", start.elapsed().as_nanos());
        }
        Some("paced") => {
            let n: u64 = args[1].parse().expect("lines");
            let every = Duration::from_micros(args[2].parse().expect("µs"));
            let mut out = stdout.lock();
            let start = Instant::now();
            for i in 0..n {
                let due = start + every * i as u32;
                if let Some(d) = due.checked_duration_since(Instant::now()) {
                    std::thread::sleep(d);
                }
                line(&mut out, now_ns(), i);
                let _ = out.flush();
            }
        }
        _ => panic!("relay child flood|paced"),
    }
}

/// The allocator probe, built for this bench (`cargo bench` does not build cdylibs of other
/// packages) into a target directory of its own.
fn preload(bin: &Path) -> PathBuf {
    let target = bin.parent().and_then(Path::parent).expect("target dir");
    let dir = target.join("capi");
    let status = Command::new(env!("CARGO"))
        .args(["build", "--release", "-p", "proofscope-preload"])
        .env("CARGO_TARGET_DIR", &dir)
        .status()
        .expect("running cargo");
    assert!(status.success(), "building the preload library");
    dir.join("release/libproofscope_preload.so")
}

#[derive(Clone, Copy, Debug, PartialEq)]
enum Way {
    Direct,
    Run,
}

struct Setup {
    me: PathBuf,
    bin: PathBuf,
    preload: PathBuf,
    /// The headless report of the latest run.
    report: PathBuf,
}

impl Setup {
    fn spawn(&self, way: Way, child_args: &[&str]) -> Child {
        let mut c = match way {
            Way::Direct => Command::new(&self.me),
            Way::Run => {
                let mut c = Command::new(&self.bin);
                c.args(["run", "--headless", "-o"])
                    .arg(&self.report)
                    .arg("--preload")
                    .arg(&self.preload)
                    .arg("--")
                    .arg(&self.me);
                c
            }
        };
        c.arg("child")
            .args(child_args)
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("spawn")
    }
}

struct Flood {
    lines_per_s: f64,
    child_wall_s: f64,
    /// Lines the viewer did not read (it parses each; the output passed through whole).
    unread: u64,
    lines: u64,
}

/// The viewer's count of lines it did not read, from the report of the latest run.
fn unread(s: &Setup) -> u64 {
    std::fs::read_to_string(&s.report)
        .unwrap_or_default()
        .lines()
        .find_map(|l| {
            let (n, _) = l.split_once(" of the prover's lines were not read")?;
            n.rsplit(' ').next()?.parse().ok()
        })
        .unwrap_or(0)
}

fn flood(s: &Setup, way: Way) -> Flood {
    let mut c = s.spawn(way, &["flood", &FLOOD_BYTES.to_string()]);
    let mut out = BufReader::with_capacity(1 << 20, c.stdout.take().expect("stdout"));
    let mut lines = 0u64;
    let mut buf = Vec::with_capacity(256);
    let (mut first, mut last) = (None, Instant::now());
    loop {
        buf.clear();
        match out.read_until(b'\n', &mut buf) {
            Ok(0) | Err(_) => break,
            Ok(_) => {
                lines += 1;
                last = Instant::now();
                first.get_or_insert(last);
            }
        }
    }
    let secs = first.map_or(f64::NAN, |f| (last - f).as_secs_f64());
    let err = std::io::read_to_string(c.stderr.take().expect("stderr")).unwrap_or_default();
    let _ = c.wait();
    let wall = err
        .lines()
        .find_map(|l| l.strip_prefix("child_wall_ns=")?.trim().parse::<f64>().ok())
        .expect("the child's wall time");
    Flood {
        lines_per_s: lines as f64 / secs,
        child_wall_s: wall / 1e9,
        unread: if way == Way::Run { unread(s) } else { 0 },
        lines,
    }
}

/// Each line's delay from its write to this reader, ns, sorted; and the longest pause
/// between two of the child's writes.
fn paced(
    s: &Setup,
    way: Way,
    n: usize,
    every: Duration,
    stop: Option<Duration>,
) -> (Vec<u64>, u64) {
    let mut c = s.spawn(
        way,
        &["paced", &n.to_string(), &every.as_micros().to_string()],
    );
    let stopper = stop.map(|d| {
        let pid = c.id() as i32;
        std::thread::Builder::new()
            .name("stopper".into())
            .spawn(move || {
                std::thread::sleep(Duration::from_secs(2));
                // SAFETY: signalling our own child (the viewer; the relay and the prover go on).
                unsafe { libc::kill(pid, libc::SIGSTOP) };
                std::thread::sleep(d);
                // SAFETY: as above.
                unsafe { libc::kill(pid, libc::SIGCONT) };
            })
            .expect("a thread")
    });
    let out = BufReader::new(c.stdout.take().expect("stdout"));
    let mut delays = Vec::with_capacity(n);
    let mut worst_pause = 0u64;
    let mut last_sent = None;
    for l in out.lines() {
        let Ok(l) = l else { break };
        let got = now_ns();
        let Some(sent) = l.split(' ').next().and_then(|t| t.parse::<u64>().ok()) else {
            continue;
        };
        delays.push(got.saturating_sub(sent));
        if let Some(p) = last_sent {
            worst_pause = worst_pause.max(sent.saturating_sub(p));
        }
        last_sent = Some(sent);
    }
    if let Some(t) = stopper {
        let _ = t.join();
    }
    let _ = c.wait();
    assert_eq!(delays.len(), n, "{way:?}: every line arrives");
    delays.sort_unstable();
    (delays, worst_pause)
}

fn pct(sorted: &[u64], p: f64) -> u64 {
    sorted[((sorted.len() - 1) as f64 * p).round() as usize]
}

fn median(mut v: Vec<f64>) -> (f64, f64, f64) {
    v.sort_by(f64::total_cmp);
    (v[v.len() / 2], v[0], v[v.len() - 1])
}

fn show(name: &str, unit: &str, v: Vec<f64>) {
    let (m, lo, hi) = median(v);
    println!("  {name:<34} median {m:>12.3} {unit}  (min {lo:.3}, max {hi:.3})");
}

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    if args.first().map(String::as_str) == Some("child") {
        child(&args[1..]);
        return;
    }
    let flag = |name: &str| {
        args.iter()
            .position(|a| a == name)
            .and_then(|i| args.get(i + 1)?.parse::<u64>().ok())
    };
    let rounds = flag("--rounds").unwrap_or(3) as usize;
    let bin = PathBuf::from(env!("CARGO_BIN_EXE_proofscope"));
    let dir = tempfile::tempdir().expect("a directory for the reports");
    let setup = Setup {
        me: std::env::current_exe().expect("this bench"),
        preload: preload(&bin),
        bin,
        report: dir.path().join("report.txt"),
    };
    println!("relay: {rounds} rounds of A B B A (A direct, B under run)");
    let mut tput: [Vec<f64>; 2] = Default::default();
    let mut wall: [Vec<f64>; 2] = Default::default();
    let mut p50: [Vec<f64>; 2] = Default::default();
    let mut p99: [Vec<f64>; 2] = Default::default();
    let mut unread_share = Vec::new();
    for _ in 0..rounds {
        for way in [Way::Direct, Way::Run, Way::Run, Way::Direct] {
            let k = (way == Way::Run) as usize;
            let f = flood(&setup, way);
            tput[k].push(f.lines_per_s / 1e6);
            if way == Way::Run {
                unread_share.push(f.unread as f64 / f.lines as f64 * 100.0);
            }
            wall[k].push(f.child_wall_s * 1e3);
            let (d, _) = paced(&setup, way, PACED_LINES, PACED_EVERY, None);
            p50[k].push(pct(&d, 0.5) as f64 / 1e3);
            p99[k].push(pct(&d, 0.99) as f64 / 1e3);
        }
    }
    for (k, label) in ["direct", "under run"].iter().enumerate() {
        println!("{label}:");
        show("100 MB of lines: lines/s read", "M/s", tput[k].clone());
        show("the child's wall time for them", "ms", wall[k].clone());
        show("latency per line p50", "µs", p50[k].clone());
        show("latency per line p99", "µs", p99[k].clone());
    }
    show("flood lines the viewer did not parse", "%", unread_share);
    if let Some(stop) = flag("--stop") {
        let n = (stop as usize + 10) * 1000;
        let (d, pause) = paced(
            &setup,
            Way::Run,
            n,
            Duration::from_millis(1),
            Some(Duration::from_secs(stop)),
        );
        println!(
            "viewer stopped {stop} s: {n} lines all passed through, longest pause between the child's writes {:.1} ms, latency p99 {:.1} ms",
            pause as f64 / 1e6,
            pct(&d, 0.99) as f64 / 1e6
        );
    }
}

//! What `proofscope export` costs with N provers attached (32 by default): N `minimal_prover`
//! processes (the probe's example: 2 × 1 MiB vectors per proof, a proof every ~20 ms) watched
//! by the release exporter; once each has 100 proofs counted (every histogram populated): the
//! exporter's CPU while it only watches (10 s, no scrapes), then 200 scrapes of `/metrics`
//! while the provers keep proving. Reported: the time to encode (the exporter's own
//! `proofscope_exporter_scrape_duration_seconds`) and the round trip seen by the client
//! (median, 95th percentile, max), the body size, the exporter's CPU (its utime + stime from
//! /proc, per second watching and per scrape) and its resident memory.
//!
//! `cargo bench -p proofscope --bench export [-- --provers N] [-- --capture]` (`--capture`:
//! with the black box on, every proof judged, its frames kept)
use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

const SCRAPES: usize = 200;
const WATCH: Duration = Duration::from_secs(10);

/// A process's CPU time so far (user + system), from /proc/PID/stat.
fn cpu_seconds(pid: u32) -> f64 {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default();
    // Fields after the command name's closing parenthesis; utime and stime are the 12th and
    // 13th of them, in clock ticks (100 a second on Linux).
    let after = stat.rsplit(')').next().unwrap_or("");
    let f: Vec<&str> = after.split_whitespace().collect();
    let ticks = |i: usize| f.get(i).and_then(|v| v.parse::<f64>().ok()).unwrap_or(0.0);
    (ticks(11) + ticks(12)) / 100.0
}

/// A process's resident memory in MiB, from /proc/PID/status.
fn rss_mib(pid: u32) -> f64 {
    std::fs::read_to_string(format!("/proc/{pid}/status"))
        .unwrap_or_default()
        .lines()
        .find_map(|l| l.strip_prefix("VmRSS:"))
        .and_then(|v| v.split_whitespace().next()?.parse::<f64>().ok())
        .map_or(0.0, |kib| kib / 1024.0)
}

struct Running(Child);

impl Drop for Running {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

fn minimal_prover(bin: &Path) -> PathBuf {
    let target = bin.parent().and_then(Path::parent).expect("target dir");
    let status = Command::new(env!("CARGO"))
        .args([
            "build",
            "--release",
            "-p",
            "proofscope-probe",
            "--example",
            "minimal_prover",
        ])
        .env("CARGO_TARGET_DIR", target)
        .status()
        .expect("running cargo");
    assert!(status.success(), "building minimal_prover");
    target.join("release/examples/minimal_prover")
}

fn get(addr: &str) -> String {
    let mut s = TcpStream::connect(addr).expect("connect");
    write!(s, "GET /metrics HTTP/1.0\r\n\r\n").expect("request");
    let mut out = String::new();
    s.read_to_string(&mut out).expect("response");
    out.split_once("\r\n\r\n")
        .map(|(_, b)| b.to_owned())
        .unwrap_or_default()
}

/// The value of the first sample of `name` (with or without labels).
fn sample(body: &str, name: &str) -> f64 {
    body.lines()
        .find_map(|l| {
            let rest = l.strip_prefix(name)?;
            let value = match rest.strip_prefix('{') {
                Some(labelled) => labelled.rsplit_once('}')?.1,
                None => rest,
            };
            value.trim().parse().ok()
        })
        .unwrap_or(f64::NAN)
}

/// Proofs counted per worker (every result of it summed).
fn counted(body: &str) -> Vec<f64> {
    let mut by: std::collections::BTreeMap<&str, f64> = Default::default();
    for l in body
        .lines()
        .filter(|l| l.starts_with("proofscope_proofs_total{"))
    {
        let worker = l
            .split("worker=\"")
            .nth(1)
            .and_then(|r| r.split('"').next());
        let n: Option<f64> = l.rsplit(' ').next().and_then(|v| v.parse().ok());
        if let (Some(w), Some(n)) = (worker, n) {
            *by.entry(w).or_default() += n;
        }
    }
    by.into_values().collect()
}

fn percentile(v: &mut [f64], p: f64) -> f64 {
    v.sort_by(f64::total_cmp);
    v[((v.len() - 1) as f64 * p).round() as usize]
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let provers: usize = args
        .iter()
        .position(|a| a == "--provers")
        .and_then(|i| args.get(i + 1)?.parse().ok())
        .unwrap_or(32);
    let capture = args.iter().any(|a| a == "--capture");
    let bin = PathBuf::from(env!("CARGO_BIN_EXE_proofscope"));
    let prover = minimal_prover(&bin);
    let dir = tempfile::tempdir().expect("tempdir");
    let sockets = dir.path().join("proofscope");
    std::fs::create_dir_all(&sockets).expect("socket dir");
    let captures = dir.path().join("captures");
    let mut exp = Command::new(&bin);
    exp.args(["export", "--listen", "127.0.0.1:0", "--scan", "0.5"])
        .arg("--socket-dir")
        .arg(&sockets);
    if capture {
        // Every sync proof's frees are timed inside its span: a low floor makes them anomalies.
        exp.arg("--capture-dir").arg(&captures).args([
            "--capture-unaccounted-min-ms",
            "0.01",
            "--capture-unaccounted-pct",
            "1",
        ]);
    }
    let mut exp = exp
        .stderr(Stdio::piped())
        .spawn()
        .expect("starting the exporter");
    let mut line = String::new();
    let mut err = BufReader::new(exp.stderr.take().expect("stderr"));
    err.read_line(&mut line).expect("the exporter's address");
    // The rest (capture lines) is read and dropped, so that a full pipe never blocks it.
    std::thread::Builder::new()
        .name("exporter-stderr".into())
        .spawn(move || std::io::copy(&mut err, &mut std::io::sink()))
        .expect("a thread");
    let pid = exp.id();
    let _exp = Running(exp);
    let addr = line
        .split("http://")
        .nth(1)
        .and_then(|r| r.split('/').next())
        .expect("an address")
        .to_owned();
    let _provers: Vec<Running> = (0..provers)
        .map(|i| {
            Running(
                Command::new(&prover)
                    .args([
                        "--proofs",
                        "1000000",
                        "--mib",
                        "1",
                        "--vectors",
                        "2",
                        "--pause-ms",
                        "20",
                        "--dealloc",
                    ])
                    .arg(if i % 2 == 0 { "sync" } else { "async" })
                    .env("XDG_RUNTIME_DIR", dir.path())
                    .env_remove("PROOFSCOPE_SOCKET")
                    .stdout(Stdio::null())
                    .stderr(Stdio::null())
                    .spawn()
                    .expect("starting a prover"),
            )
        })
        .collect();
    let deadline = Instant::now() + Duration::from_secs(180);
    loop {
        let c = counted(&get(&addr));
        if c.len() == provers && c.iter().all(|&n| n >= 100.0) {
            break;
        }
        assert!(Instant::now() < deadline, "provers not all counted: {c:?}");
        std::thread::sleep(Duration::from_millis(200));
    }
    let (cpu0, t0) = (cpu_seconds(pid), Instant::now());
    std::thread::sleep(WATCH);
    let watching = (cpu_seconds(pid) - cpu0) / t0.elapsed().as_secs_f64();
    let rss_watching = rss_mib(pid);
    let cpu1 = cpu_seconds(pid);
    let t1 = Instant::now();
    let mut wall = Vec::with_capacity(SCRAPES);
    let mut encode = Vec::with_capacity(SCRAPES);
    let mut size = 0;
    for _ in 0..SCRAPES {
        let t = Instant::now();
        let body = get(&addr);
        wall.push(t.elapsed().as_secs_f64() * 1e3);
        // The exporter reports the previous scrape's encode time.
        encode.push(sample(&body, "proofscope_exporter_scrape_duration_seconds") * 1e3);
        size = body.len();
        std::thread::sleep(Duration::from_millis(10));
    }
    let scraping = cpu_seconds(pid) - cpu1;
    // Per scrape: what the scrapes added to what watching costs over the same time.
    let per_scrape = (scraping - watching * t1.elapsed().as_secs_f64()) / SCRAPES as f64;
    encode.remove(0);
    let body = get(&addr);
    let series = body
        .lines()
        .filter(|l| !l.starts_with('#') && !l.is_empty())
        .count();
    println!(
        "proofscope export, {provers} provers attached{}, {SCRAPES} scrapes ({series} samples, {:.0} KiB per scrape)",
        if capture { ", black box on" } else { "" },
        size as f64 / 1024.0
    );
    println!(
        "  exporter CPU:        {:.1} % of a core watching ({} s, no scrapes); {:.2} ms CPU per scrape",
        watching * 100.0,
        WATCH.as_secs(),
        per_scrape * 1e3
    );
    println!(
        "  exporter RSS:        {rss_watching:.1} MiB watching, {:.1} MiB after the scrapes",
        rss_mib(pid)
    );
    if capture {
        let n = std::fs::read_dir(&captures).map_or(0, |d| d.count());
        println!("  captures in the directory: {n}");
    }
    println!(
        "  encode (server):     median {:.2} ms, p95 {:.2} ms, max {:.2} ms",
        percentile(&mut encode, 0.5),
        percentile(&mut encode, 0.95),
        percentile(&mut encode, 1.0)
    );
    println!(
        "  round trip (client): median {:.2} ms, p95 {:.2} ms, max {:.2} ms",
        percentile(&mut wall, 0.5),
        percentile(&mut wall, 0.95),
        percentile(&mut wall, 1.0)
    );
    println!("  proofs counted: {:?}", counted(&body));
}

//! What a scrape of `proofscope export` costs with 8 provers attached: 8 `minimal_prover`
//! processes (the probe's example: 2 × 1 MiB vectors per proof, a proof every ~20 ms) watched
//! by the release exporter; once each has 100 proofs counted (every histogram populated), 200
//! scrapes of `/metrics` while the provers keep proving. Reported: the time to encode (the
//! exporter's own `proofscope_exporter_scrape_duration_seconds`) and the round trip seen by
//! the client, median and 95th percentile, and the body size.
//!
//! `cargo bench -p proofscope --bench export`
use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

const PROVERS: usize = 8;
const SCRAPES: usize = 200;

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

fn sample(body: &str, name: &str) -> f64 {
    body.lines()
        .find_map(|l| l.strip_prefix(name)?.trim().parse().ok())
        .unwrap_or(f64::NAN)
}

fn counted(body: &str) -> Vec<f64> {
    body.lines()
        .filter(|l| l.starts_with("proofscope_proofs_total{"))
        .filter_map(|l| l.rsplit(' ').next()?.parse().ok())
        .collect()
}

fn percentile(v: &mut [f64], p: f64) -> f64 {
    v.sort_by(f64::total_cmp);
    v[((v.len() - 1) as f64 * p).round() as usize]
}

fn main() {
    let bin = PathBuf::from(env!("CARGO_BIN_EXE_proofscope"));
    let prover = minimal_prover(&bin);
    let dir = tempfile::tempdir().expect("tempdir");
    let sockets = dir.path().join("proofscope");
    std::fs::create_dir_all(&sockets).expect("socket dir");
    let mut exp = Command::new(&bin)
        .args(["export", "--listen", "127.0.0.1:0", "--scan", "0.5"])
        .arg("--socket-dir")
        .arg(&sockets)
        .stderr(Stdio::piped())
        .spawn()
        .expect("starting the exporter");
    let mut line = String::new();
    BufReader::new(exp.stderr.take().expect("stderr"))
        .read_line(&mut line)
        .expect("the exporter's address");
    let _exp = Running(exp);
    let addr = line
        .split("http://")
        .nth(1)
        .and_then(|r| r.split('/').next())
        .expect("an address")
        .to_owned();
    let _provers: Vec<Running> = (0..PROVERS)
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
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        let c = counted(&get(&addr));
        if c.len() == PROVERS && c.iter().all(|&n| n >= 100.0) {
            break;
        }
        assert!(Instant::now() < deadline, "provers not all counted: {c:?}");
        std::thread::sleep(Duration::from_millis(200));
    }
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
    encode.remove(0);
    let body = get(&addr);
    let series = body
        .lines()
        .filter(|l| !l.starts_with('#') && !l.is_empty())
        .count();
    println!(
        "proofscope export, {PROVERS} provers attached, {SCRAPES} scrapes ({series} samples, {:.0} KiB per scrape)",
        size as f64 / 1024.0
    );
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

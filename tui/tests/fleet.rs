//! `proofscope export` against a real Prometheus (Debian's `prometheus`; `.ci/run` installs
//! it): two provers (`--dealloc sync` and `async`), a restart of the sync one, and a recorded
//! H200 session served as a GPU prover would serve it, scraped every second; then Prometheus's HTTP API must agree with what the provers printed, the Grafana
//! dashboard's and the alert rules' queries must run, and the exporter's memory must not grow
//! with the number of proofs.

mod common;

use common::{BIN, Running};

use common::example;
use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("..")
}

/// The exporter on a free port, watching `dir`; returns it and its address.
fn exporter(dir: &Path, extra: &[&str]) -> (Running, String) {
    let mut child = Command::new(BIN)
        .args(["export", "--listen", "127.0.0.1:0", "--scan", "0.3"])
        .arg("--socket-dir")
        .arg(dir)
        .args(extra)
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .expect("starting proofscope export");
    let mut err = BufReader::new(child.stderr.take().unwrap());
    let mut line = String::new();
    err.read_line(&mut line).unwrap();
    // The rest of its stderr goes to the test's, so that a full pipe never blocks it.
    std::thread::Builder::new()
        .name("exporter-stderr".into())
        .spawn(move || {
            for l in err.lines().map_while(Result::ok) {
                eprintln!("exporter: {l}");
            }
        })
        .unwrap();
    let addr = line
        .split("http://")
        .nth(1)
        .and_then(|r| r.split('/').next())
        .unwrap_or_else(|| panic!("no address in {line:?}"))
        .to_owned();
    (Running(child), addr)
}

/// `GET path` over HTTP/1.0; the body.
fn get(addr: &str, path: &str) -> String {
    let (_, body) = get_with(addr, path, "");
    String::from_utf8(body).unwrap()
}

/// `GET path` with extra header lines (each ending in \r\n); the head and the raw body.
fn get_with(addr: &str, path: &str, headers: &str) -> (String, Vec<u8>) {
    let mut s = TcpStream::connect(addr).unwrap_or_else(|e| panic!("connect {addr}: {e}"));
    s.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
    write!(s, "GET {path} HTTP/1.0\r\nHost: {addr}\r\n{headers}\r\n").unwrap();
    let mut out = Vec::new();
    s.read_to_end(&mut out).unwrap();
    let split = out
        .windows(4)
        .position(|w| w == b"\r\n\r\n")
        .unwrap_or(out.len());
    let head = String::from_utf8_lossy(&out[..split]).into_owned();
    assert!(head.contains(" 200 "), "GET {path}: {head}");
    (head, out.get(split + 4..).unwrap_or_default().to_vec())
}

/// `promtool check metrics` on `text`: its exit status and what it said.
fn promtool_check(text: &[u8]) -> (i32, String) {
    let mut child = Command::new("promtool")
        .args(["check", "metrics"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("promtool (Debian's prometheus package has it)");
    child.stdin.take().unwrap().write_all(text).unwrap();
    let out = child.wait_with_output().unwrap();
    let said =
        String::from_utf8_lossy(&out.stdout).into_owned() + &String::from_utf8_lossy(&out.stderr);
    (out.status.code().unwrap_or(-1), said)
}

fn urlencode(s: &str) -> String {
    s.bytes()
        .map(|b| match b {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'_' | b'.' | b'~' => {
                (b as char).to_string()
            }
            _ => format!("%{b:02X}"),
        })
        .collect()
}

/// An instant query through Prometheus's HTTP API: the result vector.
fn query(prom: &str, q: &str) -> Vec<serde_json::Value> {
    let body = get(prom, &format!("/api/v1/query?query={}", urlencode(q)));
    let v: serde_json::Value = serde_json::from_str(&body).unwrap();
    assert_eq!(v["status"], "success", "{q}: {body}");
    v["data"]["result"].as_array().cloned().unwrap_or_default()
}

/// `metric{label=...}` values of a query, by the value of `label`.
fn by(prom: &str, q: &str, label: &str) -> Vec<(String, f64)> {
    query(prom, q)
        .iter()
        .map(|r| {
            (
                r["metric"][label].as_str().unwrap_or("").to_owned(),
                r["value"][1].as_str().unwrap().parse::<f64>().unwrap(),
            )
        })
        .collect()
}

fn value_for(v: &[(String, f64)], key: &str) -> Option<f64> {
    v.iter().find(|(k, _)| k == key).map(|(_, x)| *x)
}

/// A prover in `dir`'s socket directory: its pid and the proofs it printed, once it exits.
fn prove(dir: &Path, args: &[&str]) -> (u32, usize) {
    let out = Command::new(example("minimal_prover"))
        .args(args)
        .env("XDG_RUNTIME_DIR", dir)
        .env_remove("PROOFSCOPE_SOCKET")
        .env_remove("PROOFSCOPE_OFF")
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .expect("starting minimal_prover");
    let pid = out.id();
    let o = out.wait_with_output().unwrap();
    assert!(o.status.success(), "minimal_prover {args:?} failed");
    let done = String::from_utf8_lossy(&o.stdout)
        .lines()
        .filter(|l| l.ends_with(" done"))
        .count();
    (pid, done)
}

fn prometheus_available() -> bool {
    let found = Command::new("prometheus")
        .arg("--version")
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|s| s.success());
    if !found {
        // CI installs Prometheus (.ci/run): there a missing one is a failure, not a skip.
        assert!(
            std::env::var_os("CI").is_none(),
            "CI without prometheus (apt-get install prometheus)"
        );
        println!("SKIPPED: prometheus is not installed (apt-get install prometheus)");
    }
    found
}

fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

/// Prometheus scraping `target` every second, with the alert rules of deploy/.
fn prometheus(dir: &Path, target: &str) -> (Running, String) {
    let rules = root().join("deploy/prometheus/proofscope-alerts.yml");
    let config = dir.join("prometheus.yml");
    std::fs::write(
        &config,
        format!(
            "global:\n  scrape_interval: 1s\n  evaluation_interval: 1s\nrule_files:\n  - {}\n\
             scrape_configs:\n  - job_name: proofscope\n    static_configs:\n      - targets: ['{target}']\n",
            rules.display()
        ),
    )
    .unwrap();
    let addr = format!("127.0.0.1:{}", free_port());
    let child = Command::new("prometheus")
        .arg(format!("--config.file={}", config.display()))
        .arg(format!(
            "--storage.tsdb.path={}",
            dir.join("tsdb").display()
        ))
        .arg(format!("--web.listen-address={addr}"))
        .stdout(Stdio::null())
        .stderr(std::fs::File::create(dir.join("prometheus.log")).unwrap())
        .spawn()
        .expect("starting prometheus");
    let p = Running(child);
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        if let Ok(mut s) = TcpStream::connect(&addr) {
            let _ = write!(s, "GET /-/ready HTTP/1.0\r\n\r\n");
            let mut r = String::new();
            let _ = s.read_to_string(&mut r);
            if r.contains(" 200 ") {
                break;
            }
        }
        assert!(
            Instant::now() < deadline,
            "prometheus did not become ready: {}",
            std::fs::read_to_string(dir.join("prometheus.log")).unwrap_or_default()
        );
        std::thread::sleep(Duration::from_millis(200));
    }
    (p, addr)
}

/// Polls until `f` holds or `secs` pass; the last value seen on failure.
fn eventually<T: std::fmt::Debug>(secs: u64, mut f: impl FnMut() -> (bool, T)) -> T {
    let deadline = Instant::now() + Duration::from_secs(secs);
    loop {
        let (ok, v) = f();
        if ok {
            return v;
        }
        assert!(Instant::now() < deadline, "not reached in {secs} s: {v:?}");
        std::thread::sleep(Duration::from_millis(500));
    }
}

/// Every PromQL expression of the dashboard, its variable `$prover` meaning every prover.
fn dashboard_queries() -> Vec<String> {
    let text =
        std::fs::read_to_string(root().join("deploy/grafana/proofscope-fleet.json")).unwrap();
    let d: serde_json::Value = serde_json::from_str(&text).unwrap();
    let mut out = Vec::new();
    for p in d["panels"].as_array().unwrap() {
        for t in p["targets"].as_array().unwrap() {
            out.push(t["expr"].as_str().unwrap().replace("$prover", ".*"));
        }
    }
    assert!(out.len() >= 10, "{out:?}");
    out
}

#[test]
fn prometheus_scrapes_the_fleet_and_every_dashboard_and_alert_query_runs() {
    if !prometheus_available() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let sockets = dir.path().join("proofscope");
    std::fs::create_dir_all(&sockets).unwrap();
    // A GPU prover too: the H200 recording served as a prover would, for the GPU panels.
    serve_recording(
        sockets.join("prover-572.sock"),
        common::recording("h200-gpu-sha256.psrec"),
    );
    let (_exporter, addr) = exporter(&sockets, &["--gap-min-ms", "5"]);
    let (_prom, prom) = prometheus(dir.path(), &addr);
    // Prometheus applies its targets a few seconds after it starts: the provers start once
    // it has scraped the exporter, so that it sees their counters grow.
    eventually(30, || {
        let up = by(&prom, r#"up{job="proofscope"}"#, "job");
        (value_for(&up, "proofscope") == Some(1.0), up)
    });

    // Two provers at once, then the sync one again under a new pid.
    let common = [
        "--proofs",
        "12",
        "--mib",
        "32",
        "--vectors",
        "4",
        "--pause-ms",
        "200",
    ];
    let sockets2 = dir.path().to_owned();
    let sync = std::thread::Builder::new()
        .name("sync-provers".into())
        .spawn(move || {
            let a = prove(&sockets2, &[&common[..], &["--dealloc", "sync"]].concat());
            let b = prove(&sockets2, &[&common[..], &["--dealloc", "sync"]].concat());
            (a, b)
        })
        .unwrap();
    let async_ = prove(dir.path(), &[&common[..], &["--dealloc", "async"]].concat());
    let (sync1, sync2) = sync.join().unwrap();
    assert_ne!(sync1.0, sync2.0);
    let printed = [sync1, sync2, async_];

    // Proof counts as the provers printed them, the restarted one under its new pid.
    let counts = eventually(60, || {
        let c = by(&prom, "sum by (pid) (proofscope_proofs_total)", "pid");
        let ok = printed
            .iter()
            .all(|(pid, n)| value_for(&c, &pid.to_string()) == Some(*n as f64));
        (ok, c)
    });
    println!("proofs by pid: {counts:?} (printed {printed:?})");

    let pid = |i: usize| printed[i].0.to_string();
    let unaccounted = by(
        &prom,
        "sum by (pid) (proofscope_proof_unaccounted_seconds_sum)",
        "pid",
    );
    let (u_sync, u_async) = (
        value_for(&unaccounted, &pid(0)).unwrap(),
        value_for(&unaccounted, &pid(2)).unwrap(),
    );
    assert!(u_sync > u_async, "unaccounted: {unaccounted:?}");
    let inside = by(
        &prom,
        r#"sum by (pid) (proofscope_release_inside_free_seconds_total{place="in_outer_outside_phases"})"#,
        "pid",
    );
    assert!(
        value_for(&inside, &pid(0)).unwrap() > 0.0 && value_for(&inside, &pid(1)).unwrap() > 0.0,
        "{inside:?}"
    );
    assert_eq!(value_for(&inside, &pid(2)), Some(0.0), "{inside:?}");
    println!("unaccounted s: {unaccounted:?}; inside free in the outer span: {inside:?}");

    // The dashboard: every query returns data (the GPU panels' from the recorded H200).
    for q in dashboard_queries() {
        assert!(
            !query(&prom, &q).is_empty(),
            "no data for the dashboard query {q}"
        );
    }

    // The alert rules: loaded and evaluated without error; the ghost's two fire their
    // expressions for the sync prover and not for the async one.
    let rules = eventually(20, || {
        let body = get(&prom, "/api/v1/rules");
        let v: serde_json::Value = serde_json::from_str(&body).unwrap();
        let rules: Vec<serde_json::Value> = v["data"]["groups"]
            .as_array()
            .into_iter()
            .flatten()
            .flat_map(|g| g["rules"].as_array().cloned().unwrap_or_default())
            .collect();
        let ok = rules.len() == 6
            && rules.iter().all(|r| {
                r["health"] == "ok" && r["lastEvaluation"].as_str() != Some("0001-01-01T00:00:00Z")
            });
        (ok, rules)
    });
    for r in &rules {
        let name = r["name"].as_str().unwrap();
        let firing = by(&prom, r["query"].as_str().unwrap(), "pid");
        if name == "ProofscopeSynchronousRelease" {
            assert!(value_for(&firing, &pid(0)).is_some(), "{name}: {firing:?}");
            assert!(value_for(&firing, &pid(2)).is_none(), "{name}: {firing:?}");
        }
        // A share with no absolute floor yet (#27): on a loaded machine the async prover's
        // small proofs reach 5 % too (5.3 % once); the sync one's stays several times higher.
        if name == "ProofscopeUnaccountedTimeHigh" {
            let sync = value_for(&firing, &pid(0));
            assert!(sync.is_some(), "{name}: {firing:?}");
            if let (Some(s), Some(a)) = (sync, value_for(&firing, &pid(2))) {
                assert!(a * 2.0 < s, "{name}: async {a} against sync {s}");
            }
        }
    }

    // The exporter's own series.
    let m = get(&addr, "/metrics");
    assert!(m.contains("proofscope_exporter_build_info{version="), "{m}");
    assert!(m.contains("process_resident_memory_bytes "), "{m}");
    assert!(m.contains("process_cpu_seconds_total "), "{m}");
    exposition_is_negotiated(&addr, &m);
}

/// Prometheus asked for OpenMetrics above and parsed it (its targets are up); anything else
/// gets the text format 0.0.4, which promtool reads clean; gzip when accepted.
fn exposition_is_negotiated(addr: &str, text: &str) {
    assert!(!text.contains("# EOF"), "0.0.4 text has no # EOF");
    let (rc, said) = promtool_check(text.as_bytes());
    assert_eq!(rc, 0, "promtool check metrics on the text format:\n{said}");
    let (head, om) = get_with(
        addr,
        "/metrics",
        "Accept: application/openmetrics-text;version=1.0.0,text/plain;version=0.0.4;q=0.5\r\n",
    );
    assert!(head.contains("application/openmetrics-text"), "{head}");
    let om = String::from_utf8(om).unwrap();
    assert!(
        om.trim_end().ends_with("# EOF"),
        "OpenMetrics ends with # EOF"
    );
    assert!(om.contains("# TYPE proofscope_exporter_build info"), "{om}");
    let (head, z) = get_with(addr, "/metrics", "Accept-Encoding: gzip\r\n");
    assert!(head.contains("Content-Encoding: gzip"), "{head}");
    let mut unzipped = String::new();
    flate2::read::GzDecoder::new(&z[..])
        .read_to_string(&mut unzipped)
        .unwrap();
    assert!(unzipped.contains("# TYPE proofscope_exporter_scrapes_total counter"));
    assert!(
        z.len() * 2 < unzipped.len(),
        "{} → {}",
        unzipped.len(),
        z.len()
    );
}

/// VmRSS of `pid`, bytes.
fn rss(pid: u32) -> u64 {
    let s = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap();
    s.lines()
        .find_map(|l| l.strip_prefix("VmRSS:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse::<u64>().ok())
        .unwrap()
        * 1024
}

/// The sum of `proofscope_proofs_total` in the exporter's own exposition.
fn proofs_exported(addr: &str) -> f64 {
    proofs_in(&get(addr, "/metrics"))
}

fn proofs_in(metrics: &str) -> f64 {
    metrics
        .lines()
        .filter(|l| l.starts_with("proofscope_proofs_total{"))
        .filter_map(|l| l.rsplit(' ').next()?.parse::<f64>().ok())
        .sum()
}

#[test]
fn the_exporter_keeps_aggregates_not_events() {
    let dir = tempfile::tempdir().unwrap();
    let sockets = dir.path().join("proofscope");
    std::fs::create_dir_all(&sockets).unwrap();
    let (exp, addr) = exporter(&sockets, &[]);
    // A fast prover: 1 MiB per proof, a millisecond between proofs (the first run slower, so
    // that the exporter, scanning every 0.3 s, attaches while its socket is there).
    let fast = ["--mib", "1", "--vectors", "1", "--dealloc", "sync"];
    let (_, n) = prove(
        dir.path(),
        &[&fast[..], &["--proofs", "100", "--pause-ms", "10"]].concat(),
    );
    eventually(30, || {
        let e = proofs_exported(&addr);
        (e == n as f64, e)
    });
    let after_100 = rss(exp.0.id());
    let (_, m) = prove(
        dir.path(),
        &[&fast[..], &["--proofs", "10000", "--pause-ms", "1"]].concat(),
    );
    eventually(120, || {
        let e = proofs_exported(&addr);
        (e == (n + m) as f64, e)
    });
    let after_10k = rss(exp.0.id());
    assert!(
        get(&addr, "/metrics").contains("proofscope_exporter_proofs_missed_total 0"),
        "every proof counted, none missed"
    );
    println!(
        "exporter RSS: {:.1} MiB after 100 proofs, {:.1} MiB after 10,100",
        after_100 as f64 / 1048576.0,
        after_10k as f64 / 1048576.0
    );
    assert!(
        after_10k <= 2 * after_100,
        "{after_10k} B after 10,100 proofs against {after_100} B after 100"
    );
}

/// Serves the frames of a recording to every client that subscribes, as a prover would.
fn serve_recording(sock: PathBuf, rec: PathBuf) {
    let listener = std::os::unix::net::UnixListener::bind(&sock).unwrap();
    std::thread::Builder::new()
        .name("recorded-prover".into())
        .spawn(move || {
            for conn in listener.incoming() {
                let Ok(mut s) = conn else { continue };
                // A liveness check connects and closes; a subscriber sends its Subscribe.
                s.set_read_timeout(Some(Duration::from_millis(500)))
                    .unwrap();
                let mut len = [0u8; 4];
                if s.read_exact(&mut len).is_err() {
                    continue;
                }
                let mut r =
                    probe_protocol::RecordingReader::new(std::fs::File::open(&rec).unwrap())
                        .unwrap();
                while let Ok(Some(f)) = r.next_raw() {
                    if s.write_all(f.bytes()).is_err() {
                        break;
                    }
                }
            }
        })
        .unwrap();
}

#[test]
fn a_recorded_gpu_session_fills_the_gpu_metrics() {
    let dir = tempfile::tempdir().unwrap();
    let sockets = dir.path().join("proofscope");
    std::fs::create_dir_all(&sockets).unwrap();
    // Named as a prover's socket is (`<prover>-<pid>.sock`), so discovery finds it.
    serve_recording(
        sockets.join("prover-572.sock"),
        common::recording("h200-gpu-sha256.psrec"),
    );
    let (_exp, addr) = exporter(&sockets, &[]);
    let m = eventually(20, || {
        let m = get(&addr, "/metrics");
        (
            proofs_in(&m) == 3.0 && m.contains("proofscope_gpu_energy"),
            m,
        )
    });
    let line = |name: &str| {
        m.lines()
            .find(|l| l.starts_with(name))
            .unwrap_or_else(|| panic!("no {name} in\n{m}"))
            .to_owned()
    };
    // Every result has its series (at 0 but one): the three proofs are valid.
    assert!(
        m.lines().any(|l| l.starts_with("proofscope_proofs_total{")
            && l.contains(r#"result="valid""#)
            && l.ends_with(" 3")),
        "{m}"
    );
    for gauge in [
        "proofscope_gpu_utilization_ratio{",
        "proofscope_gpu_memory_used_bytes{",
        "proofscope_gpu_power_watts{",
        "proofscope_gpu_energy_joules_total{",
    ] {
        let l = line(gauge);
        assert!(l.contains(r#"gpu="0""#), "{l}");
        let v: f64 = l.rsplit(' ').next().unwrap().parse().unwrap();
        assert!(v > 0.0 || gauge.contains("utilization"), "{l}");
    }
    // Phases of the GPU backend, timed per proof.
    assert!(
        m.contains(r#"phase="ntt_msm_h""#) && m.contains(r#"phase="tail_msm""#),
        "{m}"
    );
}

/// Every counter of a prover is scraped at 0 before it counts (`increase()` takes a series'
/// first sample as its baseline: a series born at 3 would hide 3 proofs).
#[test]
fn counters_are_scraped_at_zero_before_their_first_count() {
    let dir = tempfile::tempdir().unwrap();
    let sockets = dir.path().join("proofscope");
    std::fs::create_dir_all(&sockets).unwrap();
    serve_recording(
        sockets.join("prover-573.sock"),
        common::recording("h200-gpu-sha256.psrec"),
    );
    let (_exp, addr) = exporter(&sockets, &[]);
    let counts = |m: &str, prefix: &str| -> Vec<f64> {
        m.lines()
            .filter(|l| l.starts_with(prefix))
            .filter_map(|l| l.rsplit(' ').next()?.parse().ok())
            .collect()
    };
    let first = eventually(20, || {
        let m = get(&addr, "/metrics");
        (m.contains("proofscope_proofs_total{"), m)
    });
    for prefix in [
        "proofscope_proofs_total{",
        "proofscope_proof_duration_seconds_count{",
        "proofscope_phase_duration_seconds_count{",
        "proofscope_gaps_flagged_total{",
        "proofscope_releases_total{",
    ] {
        let v = counts(&first, prefix);
        assert!(!v.is_empty(), "no {prefix} in the first scrape:\n{first}");
        assert!(
            v.iter().all(|c| *c == 0.0),
            "{prefix} born at {v:?}:\n{first}"
        );
    }
    // Every result is there from the start, so that rate(…{result="failed"}) can rise.
    assert_eq!(
        counts(&first, "proofscope_proofs_total{").len(),
        5,
        "{first}"
    );
    eventually(20, || {
        let m = get(&addr, "/metrics");
        (proofs_in(&m) == 3.0, proofs_in(&m))
    });
}

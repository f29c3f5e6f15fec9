//! `proofscope export` against a real Prometheus (Debian's `prometheus`; `.ci/run` installs
//! it): two workers (`--dealloc sync` and `async`), a restart of the sync one, and recorded
//! H200 sessions served as a prover would serve them — the same recording on two exporters of
//! two "hosts", so that equal pids and equal worker names meet — scraped every second; then
//! Prometheus's HTTP API must agree with what the provers printed, the Grafana dashboard's and
//! the rules' queries must run, the alerts must fire for whom they should and carry who it is,
//! a killed prover must be reported gone without ghost alerts, and the exporter's memory must
//! not grow with the number of proofs. `promtool test rules` runs the rules' unit tests.

mod common;

use common::{BIN, Running, replay_json};

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
    exporter_by(Command::new(BIN), dir, extra)
}

/// The exporter started by `cmd` (the binary, or a shell that execs it).
fn exporter_by(mut cmd: Command, dir: &Path, extra: &[&str]) -> (Running, String) {
    cmd.args(["export", "--listen", "127.0.0.1:0", "--scan", "0.3"])
        .arg("--socket-dir")
        .arg(dir)
        .args(extra);
    started(cmd)
}

/// The exporter with only `args` (its listening address among them), watching `dir`.
fn exporter_with(dir: &Path, args: &[&str]) -> (Running, String) {
    let mut cmd = Command::new(BIN);
    cmd.arg("export").args(args).arg("--socket-dir").arg(dir);
    started(cmd)
}

/// Starts the exporter `cmd` makes; it and the address it serves on (its first line).
fn started(mut cmd: Command) -> (Running, String) {
    let mut child = cmd
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

/// A prover in `dir`'s socket directory, started.
fn spawn_prover(dir: &Path, instance: &str, args: &[&str]) -> std::process::Child {
    Command::new(example("minimal_prover"))
        .args(args)
        .env("XDG_RUNTIME_DIR", dir)
        .env("PROOFSCOPE_INSTANCE", instance)
        .env_remove("PROOFSCOPE_SOCKET")
        .env_remove("PROOFSCOPE_OFF")
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("starting minimal_prover")
}

/// A prover in `dir`'s socket directory: its pid and the proofs it printed, once it exits.
/// `instance`: its worker name (`PROOFSCOPE_INSTANCE`; empty: named by its command line).
fn prove(dir: &Path, instance: &str, args: &[&str]) -> (u32, usize) {
    let out = Command::new(example("minimal_prover"))
        .args(args)
        .env("XDG_RUNTIME_DIR", dir)
        .env("PROOFSCOPE_INSTANCE", instance)
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
    tool("prometheus", "--version", "prometheus")
}

fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

/// Prometheus scraping `target` every second, with the alert rules of deploy/.
/// The rule files as shipped, with every alert's `for:` shortened to 3 s (a test cannot wait
/// 10 minutes; the durations themselves are unit-tested by `promtool test rules`).
fn rule_files(dir: &Path) -> Vec<PathBuf> {
    ["proofscope-rules.yml", "proofscope-alerts.yml"]
        .iter()
        .map(|name| {
            let text =
                std::fs::read_to_string(root().join("deploy/prometheus").join(name)).unwrap();
            let short: String = text
                .lines()
                .map(|l| match l.trim_start().strip_prefix("for: ") {
                    Some(_) => format!("{}for: 3s\n", &l[..l.len() - l.trim_start().len()]),
                    None => format!("{l}\n"),
                })
                .collect();
            let path = dir.join(name);
            std::fs::write(&path, short).unwrap();
            path
        })
        .collect()
}

/// Prometheus scraping `targets` every second under the job `c2-fleet` (not `proofscope`: the
/// rules must not depend on a job's name), with the rules loaded.
fn prometheus(dir: &Path, targets: &[&str]) -> (Running, String) {
    let config = dir.join("prometheus.yml");
    let rules: String = rule_files(dir)
        .iter()
        .map(|r| format!("  - {}\n", r.display()))
        .collect();
    let targets = targets
        .iter()
        .map(|t| format!("'{t}'"))
        .collect::<Vec<_>>()
        .join(", ");
    std::fs::write(
        &config,
        format!(
            "global:\n  scrape_interval: 1s\n  evaluation_interval: 1s\nrule_files:\n{rules}\
             scrape_configs:\n  - job_name: c2-fleet\n    static_configs:\n      - targets: [{targets}]\n"
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

/// Every PromQL expression of the dashboard, its variables meaning every host and worker.
fn dashboard_queries() -> Vec<String> {
    let text =
        std::fs::read_to_string(root().join("deploy/grafana/proofscope-fleet.json")).unwrap();
    let d: serde_json::Value = serde_json::from_str(&text).unwrap();
    let mut out = Vec::new();
    for p in d["panels"].as_array().unwrap() {
        for t in p["targets"].as_array().unwrap() {
            let q = t["expr"].as_str().unwrap();
            out.push(q.replace("$host", ".*").replace("$worker", ".*"));
        }
    }
    assert!(out.len() >= 10, "{out:?}");
    out
}

/// The recording rules and alerts the rule files define.
fn rules_in_files() -> usize {
    ["proofscope-rules.yml", "proofscope-alerts.yml"]
        .iter()
        .map(|name| {
            std::fs::read_to_string(root().join("deploy/prometheus").join(name))
                .unwrap()
                .lines()
                .filter(|l| {
                    let l = l.trim_start();
                    l.starts_with("- record:") || l.starts_with("- alert:")
                })
                .count()
        })
        .sum()
}

/// The alerts Prometheus has firing now: (name, labels).
fn firing(prom: &str) -> Vec<(String, serde_json::Value)> {
    let body = get(prom, "/api/v1/alerts");
    let v: serde_json::Value = serde_json::from_str(&body).unwrap();
    v["data"]["alerts"]
        .as_array()
        .into_iter()
        .flatten()
        .filter(|a| a["state"] == "firing")
        .map(|a| {
            (
                a["labels"]["alertname"].as_str().unwrap_or("").to_owned(),
                a["labels"].clone(),
            )
        })
        .collect()
}

/// Whether `name` fires for `worker` on `host`.
fn fires(alerts: &[(String, serde_json::Value)], name: &str, host: &str, worker: &str) -> bool {
    alerts
        .iter()
        .any(|(n, l)| n == name && l["host"] == host && l["worker"] == worker)
}

/// The worker name the exporter gives a recorded session (identity.rs: the prover name and
/// a hash of its command line), read from the exporter's exposition.
fn recorded_worker(addr: &str, pid: u32) -> String {
    eventually(20, || {
        let m = get(addr, "/metrics");
        let w = m
            .lines()
            .find(|l| {
                l.starts_with("proofscope_prover_info{") && l.contains(&format!("pid=\"{pid}\""))
            })
            .and_then(|l| l.split("worker=\"").nth(1)?.split('"').next())
            .map(str::to_owned);
        (w.is_some(), w.unwrap_or_default())
    })
}

/// The pid in a recording's Hello.
fn recorded_pid(rec: &Path) -> u32 {
    let mut r = probe_protocol::RecordingReader::new(std::fs::File::open(rec).unwrap()).unwrap();
    while let Ok(Some(f)) = r.next_frame() {
        for ev in f.events {
            if let probe_protocol::Event::Hello(h) = ev {
                return h.pid;
            }
        }
    }
    panic!("no Hello in {}", rec.display())
}

#[test]
fn prometheus_scrapes_the_fleet_and_every_dashboard_and_alert_query_runs() {
    if !prometheus_available() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    // Two "hosts": an exporter each, with a socket directory each.
    let (dir_a, dir_b) = (dir.path().join("a"), dir.path().join("b"));
    let (sockets_a, sockets_b) = (dir_a.join("proofscope"), dir_b.join("proofscope"));
    std::fs::create_dir_all(&sockets_a).unwrap();
    std::fs::create_dir_all(&sockets_b).unwrap();
    // The ghost recorded on the H200, sync on both hosts (the same pid, the same command
    // line: the same worker name) and async on host a; a GPU session for the GPU panels.
    let ghost = common::recording("h200-ghost-sync.psrec");
    let ghost_pid = recorded_pid(&ghost);
    common::serve_recording_running(
        sockets_a.join(format!("prover-{ghost_pid}.sock")),
        ghost.clone(),
    );
    common::serve_recording_running(sockets_b.join(format!("prover-{ghost_pid}.sock")), ghost);
    let calm = common::recording("h200-ghost-async.psrec");
    let calm_pid = recorded_pid(&calm);
    common::serve_recording_running(sockets_a.join(format!("prover-{calm_pid}.sock")), calm);
    common::serve_recording_running(
        sockets_a.join("prover-572.sock"),
        common::recording("h200-gpu-sha256.psrec"),
    );
    let (_exporter_a, addr) = exporter(&sockets_a, &["--gap-min-ms", "5", "--host", "a"]);
    let (_exporter_b, addr_b) = exporter(&sockets_b, &["--gap-min-ms", "5", "--host", "b"]);
    let (_prom, prom) = prometheus(dir.path(), &[&addr, &addr_b]);
    // Prometheus applies its targets a few seconds after it starts: the provers start once
    // it has scraped the exporters, so that it sees their counters grow.
    eventually(30, || {
        let up = by(&prom, r#"up{job="c2-fleet"}"#, "instance");
        (up.len() == 2 && up.iter().all(|(_, v)| *v == 1.0), up)
    });

    // Two workers at once, the sync one restarted (a new pid, the same worker).
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
    let dir2 = dir_a.clone();
    let sync = std::thread::Builder::new()
        .name("sync-provers".into())
        .spawn(move || {
            let a = prove(
                &dir2,
                "sync",
                &[&common[..], &["--dealloc", "sync"]].concat(),
            );
            let b = prove(
                &dir2,
                "sync",
                &[&common[..], &["--dealloc", "sync"]].concat(),
            );
            (a, b)
        })
        .unwrap();
    let async_ = prove(
        &dir_a,
        "async",
        &[&common[..], &["--dealloc", "async"]].concat(),
    );
    let (sync1, sync2) = sync.join().unwrap();
    assert_ne!(sync1.0, sync2.0);

    // Proof counts as the provers printed them: the restarted worker's two runs in one series
    // that never reset.
    let q = r#"sum by (worker) (proofscope_proofs_total{host="a",worker=~"sync|async"})"#;
    let counts = eventually(60, || {
        let c = by(&prom, q, "worker");
        let ok = value_for(&c, "sync") == Some((sync1.1 + sync2.1) as f64)
            && value_for(&c, "async") == Some(async_.1 as f64);
        (ok, c)
    });
    println!("proofs by worker: {counts:?} (printed {sync1:?} {sync2:?} {async_:?})");
    let resets = by(
        &prom,
        r#"sum by (worker) (resets(proofscope_proofs_total{worker="sync"}[10m]))"#,
        "worker",
    );
    assert_eq!(value_for(&resets, "sync"), Some(0.0), "{resets:?}");
    let info = by(&prom, r#"proofscope_prover_info{worker="sync"}"#, "pid");
    assert_eq!(info.len(), 1, "one process is the worker now: {info:?}");
    assert_eq!(info[0].0, sync2.0.to_string(), "{info:?}");

    let unaccounted = by(
        &prom,
        r#"sum by (worker) (proofscope_proof_unaccounted_seconds_sum{host="a"})"#,
        "worker",
    );
    assert!(
        value_for(&unaccounted, "sync").unwrap() > value_for(&unaccounted, "async").unwrap(),
        "unaccounted: {unaccounted:?}"
    );
    let inside = by(
        &prom,
        r#"sum by (worker) (proofscope_release_inside_free_seconds_total{host="a",place="in_outer_outside_phases"})"#,
        "worker",
    );
    assert!(value_for(&inside, "sync").unwrap() > 0.0, "{inside:?}");
    assert_eq!(value_for(&inside, "async"), Some(0.0), "{inside:?}");

    // Equal pids on two hosts: two workers of one name, apart in every series.
    let ghost_worker = recorded_worker(&addr, ghost_pid);
    assert_eq!(recorded_worker(&addr_b, ghost_pid), ghost_worker);
    let hosts = by(
        &prom,
        &format!(r#"sum by (host) (proofscope_proofs_total{{worker="{ghost_worker}"}})"#),
        "host",
    );
    assert_eq!(hosts.len(), 2, "{hosts:?}");
    assert_eq!(value_for(&hosts, "a"), value_for(&hosts, "b"), "{hosts:?}");

    // The dashboard: every query returns data (the GPU panels' from the recorded H200), but
    // dcgm-exporter's joins (no dcgm-exporter here: gpu_test.yml unit-tests them) and the black
    // box's captures (off here: `an_anomalous_proof_is_captured…` scrapes them).
    let elsewhere = |q: &String| q.contains("dcgm") || q.contains("proofscope_captures_total");
    for q in dashboard_queries().into_iter().filter(|q| !elsewhere(q)) {
        assert!(
            !query(&prom, &q).is_empty(),
            "no data for the dashboard query {q}"
        );
    }

    // The rules: loaded and evaluated without error.
    eventually(20, || {
        let body = get(&prom, "/api/v1/rules");
        let v: serde_json::Value = serde_json::from_str(&body).unwrap();
        let rules: Vec<serde_json::Value> = v["data"]["groups"]
            .as_array()
            .into_iter()
            .flatten()
            .flat_map(|g| g["rules"].as_array().cloned().unwrap_or_default())
            .collect();
        let ok = rules.len() == rules_in_files()
            && rules.iter().all(|r| {
                r["health"] == "ok" && r["lastEvaluation"].as_str() != Some("0001-01-01T00:00:00Z")
            });
        (ok, rules)
    });
    // The ghost's alerts fire for the recorded sync session on both hosts, each with its
    // host, instance and job, and not for the async one.
    let (calm_worker, hosts) = (recorded_worker(&addr, calm_pid), ["a", "b"]);
    let alerts = eventually(60, || {
        let a = firing(&prom);
        let ok = [
            "ProofscopeSynchronousRelease",
            "ProofscopeUnaccountedTimeHigh",
        ]
        .iter()
        .all(|n| hosts.iter().all(|h| fires(&a, n, h, &ghost_worker)));
        (ok, a)
    });
    for (name, labels) in &alerts {
        assert!(
            labels["job"] == "c2-fleet" && labels["instance"].is_string(),
            "{name}: {labels}"
        );
        assert!(labels["worker"] != calm_worker.as_str(), "{name}: {labels}");
    }
    let instances: std::collections::HashSet<_> = alerts
        .iter()
        .filter(|(_, l)| l["worker"] == ghost_worker.as_str())
        .map(|(_, l)| (l["host"].to_string(), l["instance"].to_string()))
        .collect();
    assert_eq!(instances.len(), 2, "{alerts:?}");
    println!("firing: {alerts:?}");

    // The exporter's own series.
    let m = get(&addr, "/metrics");
    assert!(
        m.contains(r#"proofscope_exporter_build_info{host="a",version="#),
        "{m}"
    );
    assert!(
        m.contains(r#"process_resident_memory_bytes{host="a"} "#),
        "{m}"
    );
    assert!(m.contains(r#"process_cpu_seconds_total{host="a"} "#), "{m}");
    exposition_is_negotiated(&addr, &m);
}

/// A SIGKILLed prover: `ProofscopeProverLost` fires for it, its gauges go at once, and its
/// alerts about proofs (firing while it lived) stop; a live prover's go on. A prover that
/// ends as planned (its goodbye said) is `stopped`, and raises nothing: a clean stop used to
/// raise ProverUnreachable like a crash. One started four times under one name (a new pid
/// each time) raises ProofscopeProverRestarting.
#[test]
fn a_killed_prover_is_reported_gone_without_ghost_alerts() {
    if !prometheus_available() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let sockets = dir.path().join("proofscope");
    std::fs::create_dir_all(&sockets).unwrap();
    let (_exporter, addr) = exporter(&sockets, &["--gap-min-ms", "5", "--host", "h"]);
    let (_prom, prom) = prometheus(dir.path(), &[&addr]);
    let args = [
        "--proofs",
        "100000",
        "--mib",
        "32",
        "--vectors",
        "4",
        "--pause-ms",
        "200",
        "--dealloc",
        "sync",
    ];
    let doomed = Running(spawn_prover(dir.path(), "doomed", &args));
    let _alive = Running(spawn_prover(dir.path(), "alive", &args));
    eventually(90, || {
        let a = firing(&prom);
        let ok = ["doomed", "alive"]
            .iter()
            .all(|w| fires(&a, "ProofscopeSynchronousRelease", "h", w));
        (ok, a)
    });
    let (_, done) = prove(dir.path(), "planned", &["--proofs", "2"]);
    assert_eq!(done, 2);
    let mut doomed = doomed;
    doomed.0.kill().unwrap();
    let _ = doomed.0.wait();
    for _ in 0..4 {
        prove(
            dir.path(),
            "looping",
            &["--proofs", "3", "--pause-ms", "300"],
        );
    }
    let gone = eventually(60, || {
        let a = firing(&prom);
        let ok = fires(&a, "ProofscopeProverLost", "h", "doomed")
            && fires(&a, "ProofscopeProverRestarting", "h", "looping");
        (ok, a)
    });
    for worker in ["planned", "alive", "looping"] {
        assert!(
            !fires(&gone, "ProofscopeProverLost", "h", worker),
            "{worker}: {gone:?}"
        );
    }
    assert!(
        !fires(&gone, "ProofscopeSynchronousRelease", "h", "doomed"),
        "a ghost alert of the dead prover: {gone:?}"
    );
    assert!(
        fires(&gone, "ProofscopeSynchronousRelease", "h", "alive"),
        "{gone:?}"
    );
    assert!(
        !fires(&gone, "ProofscopeProverRestarting", "h", "planned"),
        "{gone:?}"
    );
    // Its gauges are gone from the exposition; its counters and `up` at 0 stay.
    let m = get(&addr, "/metrics");
    let of = |prefix: &str| {
        m.lines()
            .filter(|l| l.starts_with(prefix) && l.contains(r#"worker="doomed""#))
            .count()
    };
    assert_eq!(of("proofscope_heap_live_bytes{"), 0, "{m}");
    assert_eq!(of("proofscope_rss_bytes{"), 0, "{m}");
    assert!(of("proofscope_proofs_total{") > 0, "{m}");
    assert!(
        m.contains(r#"proofscope_prover_up{host="h",worker="doomed"} 0"#),
        "{m}"
    );
    for (worker, state) in [
        ("doomed", "lost"),
        ("planned", "stopped"),
        ("alive", "running"),
    ] {
        assert!(
            m.contains(&format!(
                r#"proofscope_prover_state{{host="h",worker="{worker}",state="{state}"}} 1"#
            )),
            "{worker} {state}: {m}"
        );
    }
    assert!(
        m.contains(r#"proofscope_worker_restarts_total{host="h",worker="looping"} 3"#),
        "{m}"
    );
}

/// The rules' unit tests (deploy/prometheus/tests/): thresholds, floors and `for:` as shipped.
#[test]
fn promtool_test_rules_passes() {
    if !prometheus_available() {
        return;
    }
    let out = Command::new("promtool")
        .args(["test", "rules"])
        .args(
            std::fs::read_dir(root().join("deploy/prometheus/tests"))
                .unwrap()
                .map(|e| e.unwrap().path())
                .filter(|p| p.extension().is_some_and(|x| x == "yml")),
        )
        .output()
        .expect("promtool");
    assert!(
        out.status.success(),
        "promtool test rules:\n{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
}

/// `--forget-after` keeps a gone worker's series longer than any alert waits (`for:`), so the
/// alert on a dead prover can fire before its series go (#27: 5 min against 300 s never fired).
#[test]
fn series_outlive_the_longest_alert_wait() {
    let text =
        std::fs::read_to_string(root().join("deploy/prometheus/proofscope-alerts.yml")).unwrap();
    let longest = text
        .lines()
        .filter_map(|l| l.trim().strip_prefix("for: "))
        .map(|d| {
            let (n, unit) = d.split_at(d.len() - 1);
            let n: u64 = n.parse().unwrap_or_else(|_| panic!("for: {d}"));
            match unit {
                "s" => n,
                "m" => n * 60,
                "h" => n * 3600,
                _ => panic!("for: {d}"),
            }
        })
        .max()
        .unwrap();
    let forget: u64 = proofscope::cli::FORGET_AFTER_DEFAULT.parse().unwrap();
    // Prometheus needs a few evaluations past `for:` to fire, and a scrape to see the 0.
    assert!(
        forget >= longest + 120,
        "--forget-after {forget} s against a `for:` of {longest} s"
    );
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
    // Header names are case-insensitive (hyper writes them in lower case).
    assert!(
        head.to_ascii_lowercase().contains("content-encoding: gzip"),
        "{head}"
    );
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
        "fast",
        &[&fast[..], &["--proofs", "100", "--pause-ms", "10"]].concat(),
    );
    eventually(30, || {
        let e = proofs_exported(&addr);
        (e == n as f64, e)
    });
    let after_100 = rss(exp.0.id());
    let (_, m) = prove(
        dir.path(),
        "fast",
        &[&fast[..], &["--proofs", "10000", "--pause-ms", "1"]].concat(),
    );
    eventually(120, || {
        let m2 = get(&addr, "/metrics");
        let e = proofs_in(&m2);
        // On a failure, what was lost where: the exporter's missed count, the probe's drops.
        let losses: Vec<String> = m2
            .lines()
            .filter(|l| {
                l.starts_with("proofscope_exporter_proofs_missed")
                    || (l.starts_with("proofscope_dropped_events_total") && !l.ends_with(" 0"))
            })
            .map(str::to_owned)
            .collect();
        (e == (n + m) as f64, (e, losses))
    });
    let after_10k = rss(exp.0.id());
    assert!(
        get(&addr, "/metrics").lines().any(|l| l
            .starts_with("proofscope_exporter_proofs_missed_total{")
            && l.ends_with(" 0")),
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

/// A collector cycle sends its slow events (every proof's `ProofBegin` and `ProofEnd`) before
/// its ring records (the outer spans' edges): a fast prover on a loaded machine puts many
/// proofs in one cycle, and the exporter must count every one though their edges come last
/// (with room for 16 proofs it missed 4 of 10,100 in a loaded CI-like run).
#[test]
fn proofs_whose_edges_come_after_a_whole_cycle_of_proofs_are_all_counted() {
    use probe_protocol::{Event, Hello, ProofBegin, ProofEnd, SpanBegin, SpanEnd};
    const PROOFS: u64 = 48;
    let dir = tempfile::tempdir().unwrap();
    let sockets = dir.path().join("proofscope");
    std::fs::create_dir_all(&sockets).unwrap();
    let mut events = vec![
        Event::Hello(Box::new(Hello {
            protocol_major: 1,
            prover_name: "burst".into(),
            pid: 9,
            ..Default::default()
        })),
        Event::NameDef {
            id: 1,
            name: "prove".into(),
        },
        Event::ThreadDef {
            id: 1,
            name: "main".into(),
            os_tid: 9,
        },
    ];
    // One cycle: every proof's slow events, then every outer span's edges (1 ms proofs).
    let at = |i: u64| 1_000_000 + i * 1_000_000;
    for i in 1..=PROOFS {
        events.push(Event::ProofBegin(Box::new(ProofBegin {
            ts: at(i),
            proof: i,
            span: i,
            circuit: "sha256".into(),
            constraints: 1 << 10,
            circuits: 1,
            backend: "cpu".into(),
            synthetic_srs: false,
        })));
        events.push(Event::ProofEnd(Box::new(ProofEnd {
            ts: at(i) + 900_000,
            proof: i,
            ok: true,
            verification: probe_protocol::Verification::Valid,
            error: None,
        })));
    }
    for i in 1..=PROOFS {
        events.push(Event::SpanBegin(SpanBegin {
            ts: at(i),
            span: i,
            parent: None,
            proof: Some(i),
            name: 1,
            thread: 1,
        }));
        events.push(Event::SpanEnd(SpanEnd {
            ts: at(i) + 800_000,
            span: i,
        }));
    }
    let rec = dir.path().join("burst.psrec");
    let mut w = probe_protocol::RecordingWriter::new(std::fs::File::create(&rec).unwrap()).unwrap();
    w.write_frame(&probe_protocol::encode_frame(0, &events).unwrap())
        .unwrap();
    w.flush().unwrap();
    common::serve_recording_running(sockets.join("burst-9.sock"), rec);
    let (_exp, addr) = exporter(&sockets, &[]);
    let (counted, missed) = eventually(20, || {
        let m = get(&addr, "/metrics");
        let missed: f64 = m
            .lines()
            .filter(|l| l.starts_with("proofscope_exporter_proofs_missed_total{"))
            .filter_map(|l| l.rsplit(' ').next()?.parse::<f64>().ok())
            .sum();
        let counted = proofs_in(&m);
        (counted + missed >= PROOFS as f64 - 1.0, (counted, missed))
    });
    // The last proof settles once SETTLE_NS of session time passes, which a quiet recording
    // never reaches: every one before it is counted, none missed.
    assert_eq!((counted, missed), (PROOFS as f64 - 1.0, 0.0));
}

#[test]
fn a_recorded_gpu_session_fills_the_gpu_metrics() {
    let dir = tempfile::tempdir().unwrap();
    let sockets = dir.path().join("proofscope");
    std::fs::create_dir_all(&sockets).unwrap();
    // Named as a prover's socket is (`<prover>-<pid>.sock`), so discovery finds it.
    common::serve_recording(
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
    common::serve_recording(
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

/// A prover that names a circuit per proof (1,000 names): the exporter keeps the first
/// `--max-label-values` and counts the rest as `other`.
#[test]
fn circuit_names_are_capped() {
    let dir = tempfile::tempdir().unwrap();
    let sockets = dir.path().join("proofscope");
    std::fs::create_dir_all(&sockets).unwrap();
    let rec = dir.path().join("sectors.psrec");
    common::busy_session_of(&rec, 1000, None, |i| format!("sector-{i}"));
    common::serve_recording(sockets.join("busy-1.sock"), rec);
    let (_exp, addr) = exporter(&sockets, &["--max-label-values", "10"]);
    // The last proof settles only once its session moves on or ends, and the served
    // recording goes quiet after it: 999 are counted.
    eventually(60, || {
        let n = proofs_exported(&addr);
        (n == 999.0, n)
    });
    let m = get(&addr, "/metrics");
    let circuits: std::collections::HashSet<&str> = m
        .lines()
        .filter(|l| l.starts_with("proofscope_proofs_total{"))
        .filter_map(|l| l.split("circuit=\"").nth(1)?.split('"').next())
        .collect();
    assert!(
        circuits.len() <= 11,
        "{} values: {circuits:?}",
        circuits.len()
    );
    assert!(
        circuits.contains("other") && circuits.contains("sector-0"),
        "{circuits:?}"
    );
    let capped: Vec<&str> = m
        .lines()
        .filter(|l| l.starts_with("proofscope_exporter_labels_capped_total{"))
        .collect();
    assert!(
        capped
            .iter()
            .any(|l| l.contains(r#"label="circuit""#) && l.ends_with(" 989")),
        "999 proofs, 10 names kept: {capped:?}"
    );
}

/// The black box's captures in `dir`, sorted by name.
fn captures_in(dir: &Path) -> Vec<PathBuf> {
    let mut v: Vec<PathBuf> = std::fs::read_dir(dir)
        .map(|d| {
            d.filter_map(|e| Some(e.ok()?.path()))
                .filter(|p| {
                    let n = p.file_name().unwrap_or_default().to_string_lossy();
                    n.starts_with("capture-") && n.ends_with(".psrec")
                })
                .collect()
        })
        .unwrap_or_default();
    v.sort();
    v
}

/// Every proof of a JSON report, by id.
fn proofs_by_id(report: &serde_json::Value) -> std::collections::BTreeMap<u64, serde_json::Value> {
    report["sessions"]
        .as_array()
        .unwrap()
        .iter()
        .flat_map(|s| s["proofs"].as_array().unwrap().iter().cloned())
        .map(|p| (p["id"].as_u64().unwrap(), p))
        .collect()
}

/// What a diagnosis is made of, for one proof: its length, its unaccounted time, and its
/// flagged gaps (span, length, leading finding).
fn diagnosis_of(p: &serde_json::Value) -> (u64, u64, Vec<(String, u64, String)>) {
    let gaps = p["gaps"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|g| g["flagged"].as_bool() == Some(true))
        .map(|g| {
            (
                g["span"].as_str().unwrap().to_owned(),
                g["duration_ns"].as_u64().unwrap(),
                g["diagnosis"]["kind"].as_str().unwrap().to_owned(),
            )
        })
        .collect();
    (
        p["duration_ns"].as_u64().unwrap(),
        p["unaccounted_ns"].as_u64().unwrap(),
        gaps,
    )
}

/// A sync prover's proofs cross the capture rule (proofs 2–4 of the C++ CUDA prover have
/// 67.6–91.6 ms unaccounted): the capture of proof 2 holds proofs 1 to 3, replays with the
/// diagnosis the whole recording gives proof 2, and the proof-duration histogram's exemplar
/// names the file (OpenMetrics only; the 0.0.4 text carries none).
#[test]
fn an_anomalous_proof_is_captured_with_its_neighbours_and_named_by_an_exemplar() {
    let dir = tempfile::tempdir().unwrap();
    let sockets = dir.path().join("proofscope");
    std::fs::create_dir_all(&sockets).unwrap();
    let original = common::recording("cpp-cuda-sync.psrec");
    common::serve_recording(sockets.join("prover-4242.sock"), original.clone());
    let caps = dir.path().join("captures");
    let (_exp, addr) = exporter(
        &sockets,
        &[
            "--capture-dir",
            caps.to_str().unwrap(),
            "--capture-unaccounted-min-ms",
            "67",
        ],
    );
    let open_metrics = "Accept: application/openmetrics-text;version=1.0.0\r\n";
    // A bucket keeps one exemplar, its latest: the capture of the last anomalous proof that
    // fell into it.
    let (file, exemplar, exposition) = eventually(60, || {
        let (_, body) = get_with(&addr, "/metrics", open_metrics);
        let text = String::from_utf8(body).unwrap();
        let exemplar = text
            .lines()
            .find(|l| l.contains(" # {capture=\""))
            .map(str::to_owned);
        let named = exemplar.as_ref().and_then(|l| {
            let name = l.split("capture=\"").nth(1)?.split('"').next()?;
            Some(caps.join(name)).filter(|p| p.exists())
        });
        let file = captures_in(&caps)
            .into_iter()
            .find(|p| p.to_string_lossy().ends_with("-proof000002.psrec"));
        (named.is_some() && file.is_some(), (file, exemplar, text))
    });
    let (file, exemplar) = (file.unwrap(), exemplar.unwrap());
    assert!(
        exemplar.starts_with("proofscope_proof_duration_seconds_bucket{"),
        "{exemplar}"
    );
    // The exemplar's value is the duration of the proof its capture was kept for.
    let named = caps.join(
        exemplar
            .split("capture=\"")
            .nth(1)
            .and_then(|r| r.split('"').next())
            .unwrap(),
    );
    let value: f64 = exemplar.rsplit(' ').next().unwrap().parse().unwrap();
    let named_id: u64 = named
        .file_stem()
        .unwrap()
        .to_string_lossy()
        .rsplit("proof")
        .next()
        .unwrap()
        .parse()
        .unwrap();
    let in_capture = proofs_by_id(&replay_json(&named));
    let d = in_capture[&named_id]["duration_ns"].as_u64().unwrap() as f64 / 1e9;
    assert!(
        (d - value).abs() < 1e-6,
        "{exemplar}: proof {named_id} took {d} s"
    );
    assert!(
        exposition.contains("proofscope_captures_total{")
            && exposition
                .lines()
                .any(|l| l.contains("result=\"written\"") && !l.ends_with(" 0")),
        "{exposition}"
    );
    // The 0.0.4 text has no exemplars.
    let plain = get(&addr, "/metrics");
    assert!(!plain.contains(" # {"), "exemplar in the 0.0.4 text");
    // The recorded prover was running before this exporter started: its series began with its
    // session (OpenMetrics `_created`, right after each `_total`), hours before now; the
    // exporter's own counters began with it.
    let now_s = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_secs_f64();
    let created = |name: &str| -> Vec<f64> {
        exposition
            .lines()
            .filter(|l| l.starts_with(name))
            .filter_map(|l| l.rsplit(' ').next()?.parse().ok())
            .collect()
    };
    let proofs = created("proofscope_proofs_created{");
    assert!(
        !proofs.is_empty() && proofs.iter().all(|&t| t < now_s - 600.0 && t > 1.7e9),
        "{proofs:?}\n{exposition}"
    );
    let own = created("proofscope_exporter_scrapes_created");
    assert!(own.len() == 1 && (now_s - own[0]).abs() < 600.0, "{own:?}");
    assert!(!plain.contains("_created"), "_created in the 0.0.4 text");

    let whole = proofs_by_id(&replay_json(&original));
    let captured = proofs_by_id(&replay_json(&file));
    assert!(
        [1, 2, 3].iter().all(|id| captured.contains_key(id)),
        "the capture of proof 2 holds its neighbours: {:?}",
        captured.keys().collect::<Vec<_>>()
    );
    assert!(!captured.contains_key(&4), "and no more");
    let gaps = diagnosis_of(&captured[&2]);
    assert_eq!(gaps, diagnosis_of(&whole[&2]), "the same diagnosis");
    let gaps = gaps.2;
    assert!(
        gaps.iter().any(|g| g.2 == "synchronous_release"),
        "{gaps:?}"
    );
    // It says why it ends where it does.
    let text = Command::new(BIN)
        .arg("replay")
        .arg(&file)
        .arg("--headless")
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&text.stdout);
    assert!(
        text.contains("proofscope capture of proof 2: unaccounted"),
        "{text}"
    );
    // A capture the directory's rotation removed is named by no exemplar; its bucket's count
    // stays.
    std::fs::remove_file(&named).unwrap();
    let (_, body) = get_with(&addr, "/metrics", open_metrics);
    let after = String::from_utf8(body).unwrap();
    let name = named.file_name().unwrap().to_string_lossy().into_owned();
    assert!(
        !after.contains(&name),
        "an exemplar names the removed {name}"
    );
    let bucket = exemplar.split(" # ").next().unwrap();
    assert!(after.lines().any(|l| l == bucket), "{bucket} in {after}");
}

/// `attach --capture-dir` decides as the exporter does and, when it stops, writes the
/// captures still waiting for the proofs after theirs.
#[test]
fn attach_writes_its_captures_and_reports_them() {
    let dir = tempfile::tempdir().unwrap();
    let sock = dir.path().join("prover-77.sock");
    common::serve_recording(sock.clone(), common::recording("cpp-cuda-sync.psrec"));
    let caps = dir.path().join("captures");
    let out = Command::new(BIN)
        .arg("attach")
        .arg(&sock)
        .args(["--duration", "3", "--format", "json"])
        .arg("--capture-dir")
        .arg(&caps)
        .args(["--capture-unaccounted-min-ms", "67"])
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let names: Vec<String> = captures_in(&caps)
        .iter()
        .map(|p| p.file_name().unwrap().to_string_lossy().into_owned())
        .collect();
    for id in [2, 3, 4] {
        assert!(
            names
                .iter()
                .any(|n| n.ends_with(&format!("-proof{id:06}.psrec"))),
            "proof {id}: {names:?}"
        );
    }
    assert_eq!(names.len(), 3, "proof 1 is under the floor: {names:?}");
    let report: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let said = report.to_string();
    assert!(said.contains("captured proof 2"), "{said}");
}

/// A hundred anomalies and more: the capture directory never holds more than its byte
/// bound, what is left is the newest captures, each a whole recording.
#[test]
fn the_capture_directory_stays_within_its_bound_over_100_anomalies() {
    let dir = tempfile::tempdir().unwrap();
    let sockets = dir.path().join("proofscope");
    std::fs::create_dir_all(&sockets).unwrap();
    let rec = dir.path().join("ghosts.psrec");
    let proofs = 130;
    common::busy_session_of(&rec, proofs, Some(1), |_| "sha256".into());
    common::serve_recording(sockets.join("prover-9.sock"), rec);
    let caps = dir.path().join("captures");
    let bound: u64 = 256 << 10;
    let (_exp, addr) = exporter(
        &sockets,
        &[
            "--capture-dir",
            caps.to_str().unwrap(),
            "--capture-unaccounted-min-ms",
            "10",
            "--capture-max-mib",
            "0.25",
            "--capture-max-files",
            "1000",
        ],
    );
    let written = |m: &str| -> f64 {
        m.lines()
            .filter(|l| l.starts_with("proofscope_captures_total{") && l.contains("\"written\""))
            .filter_map(|l| l.rsplit(' ').next()?.parse::<f64>().ok())
            .sum()
    };
    let mut most = 0u64;
    let n = eventually(90, || {
        let bytes: u64 = captures_in(&caps)
            .iter()
            .filter_map(|p| std::fs::metadata(p).ok())
            .map(|m| m.len())
            .sum();
        most = most.max(bytes);
        assert!(bytes <= bound, "{bytes} bytes of captures over {bound}");
        let w = written(&get(&addr, "/metrics"));
        (w >= 100.0, w)
    });
    assert!(n >= 100.0, "{n}");
    assert!(
        most > bound / 2,
        "the bound was reached ({most} bytes at most)"
    );
    let left = captures_in(&caps);
    assert!(
        left.len() > 1 && (left.len() as f64) < n,
        "{} left",
        left.len()
    );
    let ids: Vec<u64> = left
        .iter()
        .map(|p| {
            let n = p.file_stem().unwrap().to_string_lossy().into_owned();
            n.rsplit("proof").next().unwrap().parse().unwrap()
        })
        .collect();
    let newest = *ids.iter().max().unwrap();
    assert!(
        ids.iter().all(|id| newest - id < ids.len() as u64 + 5),
        "the newest are kept: {ids:?}"
    );
    for p in &left {
        let r = probe_protocol::read_all(std::fs::File::open(p).unwrap()).unwrap();
        assert!(
            r.truncation.is_none() && !r.frames.is_empty(),
            "{}",
            p.display()
        );
    }
}

/// The scrape's status line, or why there was none (a connection refused or closed).
fn try_scrape(addr: &str) -> Result<String, String> {
    let mut s = TcpStream::connect(addr).map_err(|e| e.to_string())?;
    s.set_read_timeout(Some(Duration::from_secs(5)))
        .map_err(|e| e.to_string())?;
    write!(s, "GET /metrics HTTP/1.0\r\nHost: {addr}\r\n\r\n").map_err(|e| e.to_string())?;
    let mut out = Vec::new();
    s.read_to_end(&mut out).map_err(|e| e.to_string())?;
    let head = String::from_utf8_lossy(&out);
    head.lines()
        .next()
        .map(str::to_owned)
        .filter(|l| !l.is_empty())
        .ok_or_else(|| "closed without an answer".to_owned())
}

/// This test process may hold `n` sockets (the hard limit allowing).
fn allow_files(n: u64) -> u64 {
    let mut lim = libc::rlimit {
        rlim_cur: 0,
        rlim_max: 0,
    };
    // SAFETY: get/setrlimit on a struct we own.
    unsafe {
        libc::getrlimit(libc::RLIMIT_NOFILE, &mut lim);
        lim.rlim_cur = lim.rlim_max.min(n.max(lim.rlim_cur));
        libc::setrlimit(libc::RLIMIT_NOFILE, &lim);
    }
    lim.rlim_cur
}

/// 2,000 idle connections against an exporter limited to 1,024 files: it keeps answering
/// scrapes (idle ones are closed after the header deadline, new ones past the connection
/// bound at once), a 4 MB header is refused, a client that sends half a request is closed,
/// and it never exits — when stopped, not with status 0.
#[test]
fn the_exporter_keeps_serving_under_2000_idle_connections() {
    let held = allow_files(2_200);
    assert!(
        held >= 2_100,
        "this test needs 2,100 open files, the limit is {held}"
    );
    let dir = tempfile::tempdir().unwrap();
    let mut sh = Command::new("sh");
    sh.args(["-c", "ulimit -n 1024 && exec \"$0\" \"$@\"", BIN]);
    let (mut exp, addr) = exporter_by(sh, dir.path(), &[]);
    let idle: Vec<TcpStream> = (0..2_000)
        .filter_map(|_| TcpStream::connect(&addr).ok())
        .collect();
    // Every connection was taken (and closed at once past the bound): none was refused.
    assert_eq!(idle.len(), 2_000);
    let t = Instant::now();
    let answered = eventually(15, || {
        let r = try_scrape(&addr);
        (r.as_ref().is_ok_and(|l| l.contains(" 200 ")), r)
    });
    assert!(answered.unwrap().contains(" 200 "));
    let first = t.elapsed();
    assert!(
        first < Duration::from_secs(12),
        "first scrape after {first:?}"
    );
    // A 4 MB header: refused, and the exporter is still there.
    let mut big = TcpStream::connect(&addr).unwrap();
    big.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
    let _ = write!(big, "GET /metrics HTTP/1.1\r\nX-Big: ");
    let chunk = vec![b'a'; 64 << 10];
    let mut sent = 0;
    while sent < 4 << 20 && big.write_all(&chunk).is_ok() {
        sent += chunk.len();
    }
    let mut answer = Vec::new();
    let _ = big.read_to_end(&mut answer);
    let answer = String::from_utf8_lossy(&answer);
    assert!(
        sent < 4 << 20 || answer.is_empty() || answer.starts_with("HTTP/1.1 431"),
        "a 4 MB header was read ({sent} bytes sent): {answer}"
    );
    // Half a request: closed after the header deadline.
    let mut slow = TcpStream::connect(&addr).unwrap();
    slow.set_read_timeout(Some(Duration::from_secs(20)))
        .unwrap();
    write!(slow, "GET /metrics HTTP/1.1\r\nHost: x\r\n").unwrap();
    let t = Instant::now();
    let mut rest = Vec::new();
    let _ = slow.read_to_end(&mut rest);
    assert!(
        t.elapsed() < Duration::from_secs(15),
        "a half request held {:?}",
        t.elapsed()
    );
    assert!(try_scrape(&addr).is_ok_and(|l| l.contains(" 200 ")));
    assert!(exp.0.try_wait().unwrap().is_none(), "the exporter exited");
    drop(idle);
    exp.stop();
    let status = exp.0.wait().unwrap();
    assert!(!status.success(), "stopped, it says {status}");
}

/// 300 idle clients that reconnect as soon as they are closed, more than the 256 connections
/// served at once: every scrape is still answered, each new connection closing the one idle
/// longest (the newcomer used to be the one closed: 23 of 25 scrapes failed).
#[test]
fn idle_clients_that_reconnect_do_not_starve_scrapes() {
    use std::sync::Arc;
    use std::sync::atomic::{AtomicBool, Ordering};
    let held = allow_files(1_000);
    assert!(
        held >= 700,
        "this test needs 700 open files, the limit is {held}"
    );
    let dir = tempfile::tempdir().unwrap();
    let (mut exp, addr) = exporter(dir.path(), &[]);
    let stop = Arc::new(AtomicBool::new(false));
    let reconnected = Arc::new(std::sync::atomic::AtomicU64::new(0));
    let holder = {
        let (stop, addr, reconnected) = (stop.clone(), addr.clone(), reconnected.clone());
        std::thread::Builder::new()
            .name("idle-clients".into())
            .spawn(move || {
                let open = || {
                    let c = TcpStream::connect(&addr).ok()?;
                    c.set_nonblocking(true).ok()?;
                    Some(c)
                };
                let mut conns: Vec<Option<TcpStream>> = (0..300).map(|_| open()).collect();
                while !stop.load(Ordering::Relaxed) {
                    for c in conns.iter_mut() {
                        let mut b = [0u8; 1];
                        let closed = match c.as_mut().map(|s| s.read(&mut b)) {
                            Some(Ok(0)) | None => true,
                            Some(Err(e)) => e.kind() != std::io::ErrorKind::WouldBlock,
                            Some(Ok(_)) => false,
                        };
                        if closed {
                            *c = open();
                            reconnected.fetch_add(1, Ordering::Relaxed);
                        }
                    }
                    std::thread::sleep(Duration::from_millis(5));
                }
            })
            .unwrap()
    };
    std::thread::sleep(Duration::from_secs(1));
    let mut failed = Vec::new();
    for _ in 0..25 {
        match try_scrape(&addr) {
            Ok(l) if l.contains(" 200 ") => {}
            other => failed.push(other),
        }
        std::thread::sleep(Duration::from_millis(40));
    }
    stop.store(true, Ordering::Relaxed);
    holder.join().unwrap();
    assert!(
        reconnected.load(Ordering::Relaxed) > 0,
        "no idle client was ever closed: the bound was not reached"
    );
    assert!(
        failed.is_empty(),
        "{} of 25 scrapes failed: {failed:?}",
        failed.len()
    );
    exp.stop();
}

/// The status code of `GET path`.
fn status(addr: &str, path: &str) -> u16 {
    let mut s = TcpStream::connect(addr).unwrap_or_else(|e| panic!("connect {addr}: {e}"));
    s.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
    write!(s, "GET {path} HTTP/1.0\r\nHost: {addr}\r\n\r\n").unwrap();
    let mut out = String::new();
    let _ = s.read_to_string(&mut out);
    out.split_whitespace()
        .nth(1)
        .and_then(|c| c.parse().ok())
        .unwrap_or_else(|| panic!("GET {path}: {out:?}"))
}

/// What a supervisor and a deployment check ask of an exporter, as of node_exporter: alive
/// (`/-/healthy`), ready once it has looked for provers (`/-/ready`), the build it runs
/// (version, revision, compiler), and every counter present from the first scrape — the
/// capped-labels counter used to appear only at its first increment, so `increase()` missed
/// it. `--web.listen-address` is the option's name; `--listen` (the helper's) still works.
#[test]
fn health_readiness_build_and_counters_from_the_first_scrape() {
    let dir = tempfile::tempdir().unwrap();
    let (_by_alias, addr) = exporter(dir.path(), &[]);
    assert_eq!(get(&addr, "/-/healthy"), "Healthy\n");
    eventually(10, || {
        let s = status(&addr, "/-/ready");
        (s == 200, s)
    });
    let m = get(&addr, "/metrics");
    for line in [
        r#"proofscope_exporter_labels_capped_total{host="#,
        r#"label="circuit"} 0"#,
        r#"label="phase"} 0"#,
        r#"proofscope_exporter_worker_name_clashes_total{host="#,
    ] {
        assert!(m.contains(line), "{line} in {m}");
    }
    let build = m
        .lines()
        .find(|l| l.starts_with("proofscope_exporter_build_info{"))
        .unwrap_or_else(|| panic!("{m}"));
    for label in ["version=\"", "revision=\"", "rustc=\""] {
        assert!(build.contains(label), "{build}");
    }
    assert!(!build.contains("rustc=\"unknown\""), "{build}");

    let (_by_name, addr) = exporter_with(dir.path(), &["--web.listen-address", "127.0.0.1:0"]);
    assert_eq!(get(&addr, "/-/healthy"), "Healthy\n");
}

/// The shipped unit (deploy/systemd) is a unit systemd reads without complaint, and its
/// exposure as `systemd-analyze security` scores it stays at 3.0 or below (1.2 on
/// 2026-12-06, systemd 252; FLEET.md). The only complaint allowed is the one of a machine where
/// the binary is not installed where the unit says.
#[test]
fn the_systemd_unit_verifies_and_is_hardened() {
    let unit = root().join("deploy/systemd/proofscope-export.service");
    if !tool("systemd-analyze", "--version", "systemd") {
        return;
    }
    let verify = Command::new("systemd-analyze")
        .args(["verify", "--man=no"])
        .arg(&unit)
        .output()
        .unwrap();
    let said = String::from_utf8_lossy(&verify.stderr);
    for line in said.lines().filter(|l| !l.trim().is_empty()) {
        assert!(
            line.contains("/usr/local/bin/proofscope is not executable"),
            "systemd-analyze verify: {said}"
        );
    }
    let security = Command::new("systemd-analyze")
        .args(["security", "--offline=yes", "--threshold=30", "--no-pager"])
        .arg(&unit)
        .output()
        .unwrap();
    let out = String::from_utf8_lossy(&security.stdout);
    assert!(security.status.success(), "exposure over 3.0:\n{out}");
    assert!(out.contains("Overall exposure level"), "{out}");
}

/// The exporter on `port`, watching `dir` (a restart keeps its address, as a service's does).
fn exporter_on(dir: &Path, port: u16) -> (Running, String) {
    let listen = format!("127.0.0.1:{port}");
    let (exporter, addr) = exporter_with(
        dir,
        &[
            "--scan",
            "0.3",
            "--host",
            "h",
            "--web.listen-address",
            &listen,
        ],
    );
    assert_eq!(addr, listen);
    (exporter, addr)
}

/// An exporter restarted while a prover runs: the new one reads the prover's history and
/// reports its totals at once, never through a 0 that Prometheus takes for a reset — so
/// `increase()` over the restart is the proofs made, where it was their double (158 for ~33).
#[test]
fn an_exporter_restart_does_not_count_a_provers_past_again() {
    if !prometheus_available() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let sockets = dir.path().join("proofscope");
    std::fs::create_dir_all(&sockets).unwrap();
    let port = free_port();
    let (first, addr) = exporter_on(&sockets, port);
    let (_prom, prom) = prometheus(dir.path(), &[&addr]);
    let _steady = Running(spawn_prover(
        dir.path(),
        "steady",
        &["--proofs", "100000", "--pause-ms", "150"],
    ));
    let total = |q: &str| -> f64 {
        query(&prom, q)
            .iter()
            .filter_map(|r| r["value"][1].as_str()?.parse::<f64>().ok())
            .sum()
    };
    eventually(60, || {
        let n = total(r#"proofscope_proofs_total{worker="steady"}"#);
        (n >= 10.0, n)
    });
    let mut first = first;
    first.stop();
    std::thread::sleep(Duration::from_secs(3));
    let (_second, addr) = exporter_on(&sockets, port);
    // The new exporter's totals, scraped a few times.
    eventually(60, || {
        let m = get(&addr, "/metrics");
        let n = proofs_in(&m);
        (n >= 20.0, n)
    });
    std::thread::sleep(Duration::from_secs(3));
    let made = proofs_in(&get(&addr, "/metrics"));
    let counted = total(r#"sum(increase(proofscope_proofs_total{worker="steady"}[10m]))"#);
    assert!(
        (counted - made).abs() <= 3.0,
        "increase() over the restart: {counted} for {made} proofs made"
    );
}

/// Short-lived provers under `--max-workers 3`: every one is seen, and the series of at most
/// three workers stay — the oldest stopped are removed first, each counted — where every one
/// stayed for the 20 minutes of `--forget-after` (100 such provers grew a scrape from 1,830 to
/// 27,471 samples).
#[test]
fn max_workers_bounds_the_series_of_short_lived_provers() {
    let dir = tempfile::tempdir().unwrap();
    let sockets = dir.path().join("proofscope");
    std::fs::create_dir_all(&sockets).unwrap();
    let (_exp, addr) = exporter(&sockets, &["--max-workers", "3"]);
    let names: Vec<String> = (0..6).map(|i| format!("short-{i}")).collect();
    for name in &names {
        let (_, done) = prove(dir.path(), name, &["--proofs", "2", "--pause-ms", "300"]);
        assert_eq!(done, 2);
    }
    let m = eventually(20, || {
        let m = get(&addr, "/metrics");
        let evicted = m.lines().any(|l| {
            l.starts_with("proofscope_exporter_workers_evicted_total{") && l.ends_with(" 3")
        });
        (evicted, m)
    });
    let up: Vec<&str> = m
        .lines()
        .filter(|l| l.starts_with("proofscope_prover_up{"))
        .collect();
    assert_eq!(up.len(), 3, "{up:?}");
    for name in &names[3..] {
        assert!(
            up.iter().any(|l| l.contains(&format!("worker=\"{name}\""))),
            "the newest stay: {up:?}"
        );
    }
}

/// A prover that lives about a second, under an exporter that scans every 30 s: its socket's
/// creation wakes the scan (inotify), so it is seen and its proofs counted — a prover that
/// lived 2 s fell between 2 s scans.
#[test]
fn a_brief_prover_is_seen_between_scans() {
    let dir = tempfile::tempdir().unwrap();
    let sockets = dir.path().join("proofscope");
    std::fs::create_dir_all(&sockets).unwrap();
    let (_exp, addr) = exporter_with(
        &sockets,
        &["--scan", "30", "--web.listen-address", "127.0.0.1:0"],
    );
    // The first scan is done (nothing to see yet).
    eventually(10, || {
        let s = status(&addr, "/-/ready");
        (s == 200, s)
    });
    let (_, done) = prove(dir.path(), "brief", &["--proofs", "2", "--pause-ms", "300"]);
    assert_eq!(done, 2);
    eventually(20, || {
        let m = get(&addr, "/metrics");
        let n: f64 = m
            .lines()
            .filter(|l| l.starts_with("proofscope_proofs_total{") && l.contains("worker=\"brief\""))
            .filter_map(|l| l.rsplit(' ').next()?.parse::<f64>().ok())
            .sum();
        (n == 2.0, n)
    });
}

/// A wave of `n` provers in `dir`, each serving `rec` (without its goodbye: still running) to
/// whoever connects, until [`Wave::end`] removes their sockets and closes their connections.
struct Wave {
    sockets: Vec<PathBuf>,
    conns: std::sync::Arc<std::sync::Mutex<Vec<std::os::unix::net::UnixStream>>>,
    stop: std::sync::Arc<std::sync::atomic::AtomicBool>,
}

impl Wave {
    fn start(dir: &Path, wave: usize, n: usize, rec: &Path) -> Wave {
        use std::sync::atomic::Ordering;
        let conns = std::sync::Arc::new(std::sync::Mutex::new(Vec::new()));
        let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
        let mut sockets = Vec::new();
        for i in 0..n {
            let sock = dir.join(format!("wave{wave}x{i}-{}.sock", 200_000 + wave * 1000 + i));
            let listener = std::os::unix::net::UnixListener::bind(&sock).unwrap();
            listener.set_nonblocking(true).unwrap();
            sockets.push(sock);
            let (conns, stop, rec) = (conns.clone(), stop.clone(), rec.to_owned());
            std::thread::Builder::new()
                .name(format!("wave-prover-{i}"))
                .spawn(move || {
                    while !stop.load(Ordering::Relaxed) {
                        let Ok((s, _)) = listener.accept() else {
                            std::thread::sleep(Duration::from_millis(50));
                            continue;
                        };
                        s.set_nonblocking(false).unwrap();
                        conns.lock().unwrap().push(s.try_clone().unwrap());
                        let rec = rec.clone();
                        std::thread::Builder::new()
                            .name("wave-viewer".into())
                            .spawn(move || common::serve_one(s, &rec, false))
                            .unwrap();
                    }
                })
                .unwrap();
        }
        Wave {
            sockets,
            conns,
            stop,
        }
    }

    /// The provers go: sockets removed, connections closed.
    fn end(self) {
        self.stop.store(true, std::sync::atomic::Ordering::Relaxed);
        for s in &self.sockets {
            let _ = std::fs::remove_file(s);
        }
        for c in self.conns.lock().unwrap().drain(..) {
            let _ = c.shutdown(std::net::Shutdown::Both);
        }
    }
}

/// The value of the first sample of `name` in an exposition.
fn sample(metrics: &str, name: &str) -> Option<f64> {
    metrics.lines().find_map(|l| {
        let rest = l.strip_prefix(name)?;
        if !rest.starts_with([' ', '{']) {
            return None;
        }
        rest.rsplit(' ').next()?.parse().ok()
    })
}

fn threads(pid: u32) -> usize {
    std::fs::read_dir(format!("/proc/{pid}/task")).map_or(0, |d| d.count())
}

/// Three waves of 60 provers that come and go: each time they are gone the exporter's threads
/// are back to what it had before, and its memory to well under what it held while watching
/// them — no plateau. (Before: three waves of 300 left 452 threads 12 s after the provers had
/// gone — the gone ones' watchers stopped one after another — and 71–108 MiB of a 110 MiB peak
/// held by glibc's arenas with nothing to watch.)
#[test]
fn waves_of_provers_leave_no_threads_or_memory_behind() {
    let dir = tempfile::tempdir().unwrap();
    let sockets = dir.path().join("sockets");
    std::fs::create_dir(&sockets).unwrap();
    std::fs::set_permissions(
        &sockets,
        std::os::unix::fs::PermissionsExt::from_mode(0o700),
    )
    .unwrap();
    let (exp, addr) = exporter(&sockets, &["--forget-after", "1"]);
    let pid = exp.0.id();
    std::thread::sleep(Duration::from_secs(1));
    let (threads_before, rss_before) = (threads(pid), rss(pid));
    let rec = common::recording("cpu-sha256-async.psrec");
    for wave in 0..3 {
        let w = Wave::start(&sockets, wave, 60, &rec);
        eventually(60, || {
            let watched = sample(&get(&addr, "/metrics"), "proofscope_exporter_provers");
            (watched == Some(60.0), watched)
        });
        // Their proofs in: the models hold what they will hold.
        std::thread::sleep(Duration::from_secs(2));
        let peak = rss(pid);
        w.end();
        let after = eventually(60, || {
            let n = threads(pid);
            (n <= threads_before, n)
        });
        std::thread::sleep(Duration::from_secs(2));
        let held = rss(pid);
        eprintln!(
            "wave {wave}: {} MiB watching 60 provers, {} MiB once gone ({after} threads; before: {} MiB, {threads_before} threads)",
            peak >> 20,
            held >> 20,
            rss_before >> 20
        );
        assert!(
            held - rss_before.min(held) <= (peak - rss_before.min(peak)) * 6 / 10,
            "wave {wave}: {} MiB held once the provers were gone, of {} MiB while watching (before: {} MiB)",
            held >> 20,
            peak >> 20,
            rss_before >> 20
        );
    }
}

/// Whether `cmd` runs (asked `version_arg`): a skip here when not, a failure in CI, which
/// installs Debian's `package` (.ci/run).
fn tool(cmd: &str, version_arg: &str, package: &str) -> bool {
    let found = Command::new(cmd)
        .arg(version_arg)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|s| s.success());
    if !found {
        assert!(
            std::env::var_os("CI").is_none(),
            "CI without {cmd} (apt-get install {package})"
        );
        println!("SKIPPED: {cmd} is not installed (apt-get install {package})");
    }
    found
}

/// The exporter on a free port behind the web config `web`, watching `sockets`.
fn exporter_with_web_config(web: &Path, sockets: &Path) -> Command {
    let mut cmd = Command::new(BIN);
    cmd.args([
        "export",
        "--web.listen-address",
        "127.0.0.1:0",
        "--web.config.file",
    ])
    .arg(web)
    .arg("--socket-dir")
    .arg(sockets);
    cmd
}

/// `curl` with `args`: its status code (000 when no HTTP answer came) and body.
fn curl(args: &[&str]) -> (String, String) {
    let out = Command::new("curl")
        .args(["-s", "-m", "10", "-o", "-", "-w", "\n%{http_code}"])
        .args(args)
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout).into_owned();
    let (body, code) = text.rsplit_once('\n').unwrap_or(("", &text));
    (code.to_owned(), body.to_owned())
}

/// The exporter behind `--web.config.file` with a certificate openssl makes and one user:
/// curl gets the metrics over TLS with the user's password, a 401 without it or with another,
/// and nothing over plain HTTP; a web config with a mistake stops the exporter at start with
/// the reason.
#[test]
fn tls_and_basic_auth_from_the_exporter_toolkits_web_config() {
    if !tool("curl", "--version", "curl") || !tool("openssl", "version", "openssl") {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let (cert, key) = (dir.path().join("tls.crt"), dir.path().join("tls.key"));
    let made = Command::new("openssl")
        .args([
            "req",
            "-x509",
            "-newkey",
            "ec",
            "-pkeyopt",
            "ec_paramgen_curve:prime256v1",
        ])
        .args(["-nodes", "-days", "1", "-subj", "/CN=localhost"])
        .args(["-addext", "subjectAltName=IP:127.0.0.1"])
        .arg("-keyout")
        .arg(&key)
        .arg("-out")
        .arg(&cert)
        .output()
        .unwrap();
    assert!(made.status.success(), "openssl: {made:?}");
    let hash = bcrypt::hash("s3cret", 4).unwrap();
    let web = dir.path().join("web.yml");
    std::fs::write(
        &web,
        format!(
            "tls_server_config:\n  cert_file: tls.crt\n  key_file: tls.key\nbasic_auth_users:\n  prometheus: {hash}\n"
        ),
    )
    .unwrap();
    let sockets = dir.path().join("sockets");
    std::fs::create_dir(&sockets).unwrap();
    let mut child = exporter_with_web_config(&web, &sockets)
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut err = BufReader::new(child.stderr.take().unwrap());
    let _exp = Running(child);
    let mut line = String::new();
    err.read_line(&mut line).unwrap();
    assert!(line.contains("basic_auth=on"), "{line}");
    let url = line
        .split("address=")
        .nth(1)
        .and_then(|r| r.split_whitespace().next())
        .unwrap_or_else(|| panic!("no address in {line:?}"))
        .to_owned();
    assert!(url.starts_with("https://127.0.0.1:"), "{url}");
    let ca = cert.to_str().unwrap();
    let (code, body) = curl(&["--cacert", ca, "-u", "prometheus:s3cret", &url]);
    assert_eq!(code, "200", "{body}");
    assert!(body.contains("proofscope_exporter_provers"), "{body}");
    let healthy = url.replace("/metrics", "/-/healthy");
    let (code, _) = curl(&["--cacert", ca, "-u", "prometheus:s3cret", &healthy]);
    assert_eq!(code, "200");
    let (code, _) = curl(&["--cacert", ca, &url]);
    assert_eq!(code, "401", "no password");
    let (code, _) = curl(&["--cacert", ca, "-u", "prometheus:wrong", &url]);
    assert_eq!(code, "401", "a wrong password");
    let plain = url.replace("https://", "http://");
    let (code, _) = curl(&["-u", "prometheus:s3cret", &plain]);
    assert_ne!(code, "200", "plain HTTP is not served");

    std::fs::write(&web, "tls_server_config:\n  cert_file: tls.crt\n").unwrap();
    let out = exporter_with_web_config(&web, &sockets).output().unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success(), "{stderr}");
    assert!(
        stderr.contains("needs both cert_file and key_file"),
        "{stderr}"
    );
}

/// The dashboard provisions from a file as it imports: its data source is a variable (no
/// `__inputs`, which only an import fills in), every panel and query uses it, the proof
/// duration panel shows exemplars (the black box's captures), and the captures have a panel.
#[test]
fn the_dashboard_is_provisionable_with_exemplars_and_a_captures_panel() {
    let text =
        std::fs::read_to_string(root().join("deploy/grafana/proofscope-fleet.json")).unwrap();
    let d: serde_json::Value = serde_json::from_str(&text).unwrap();
    assert!(d.get("__inputs").is_none(), "an import-only input");
    assert!(!text.contains("DS_PROMETHEUS"));
    let vars = d["templating"]["list"].as_array().unwrap();
    assert!(
        vars.iter().any(|v| v["name"] == "datasource"
            && v["type"] == "datasource"
            && v["query"] == "prometheus"),
        "{vars:?}"
    );
    let panels = d["panels"].as_array().unwrap();
    for p in panels {
        assert_eq!(p["datasource"]["uid"], "${datasource}", "{}", p["title"]);
        for t in p["targets"].as_array().unwrap() {
            assert_eq!(t["datasource"]["uid"], "${datasource}", "{}", p["title"]);
        }
    }
    let durations = panels
        .iter()
        .find(|p| {
            p["targets"][0]["expr"]
                .as_str()
                .is_some_and(|e| e.contains("proofscope_proof_duration_seconds_bucket"))
        })
        .expect("a proof duration panel");
    assert!(
        durations["targets"]
            .as_array()
            .unwrap()
            .iter()
            .all(|t| t["exemplar"] == true),
        "exemplars on the proof duration panel"
    );
    assert!(
        panels.iter().any(
            |p| p["targets"].as_array().unwrap().iter().any(|t| t["expr"]
                .as_str()
                .is_some_and(|e| e.contains("proofscope_captures_total")))
        ),
        "a captures panel"
    );
}

//! The viewer as production breaks it: its prover killed, restarted under a new pid, or
//! refusing it; the viewer called with nonsense. Each ends in a clear message and a status.
// These run the built-in prover (`proofscope prover …`): the `demo` feature.
#![cfg(feature = "demo")]

mod common;

use common::{BIN, Running, cache};

use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

/// `proofscope prover serve` with `extra` arguments and environment `env`.
fn serve(extra: &[&str], env: &[(&str, &Path)]) -> Running {
    let mut c = Command::new(BIN);
    c.args([
        "prover",
        "serve",
        "--circuit",
        "squaring",
        "--log-size",
        "10",
        "--circuits",
        "2",
        "--pause-ms",
        "200",
    ])
    .args(extra)
    .arg("--cache")
    .arg(cache())
    .stdin(Stdio::null())
    .stdout(Stdio::null())
    .stderr(Stdio::null());
    for (k, v) in env {
        c.env(k, v);
    }
    Running(c.spawn().unwrap())
}

fn wait_for_socket(dir: &Path, not: Option<&Path>) -> PathBuf {
    let deadline = Instant::now() + Duration::from_secs(120);
    loop {
        if let Some(p) = std::fs::read_dir(dir).ok().and_then(|rd| {
            rd.flatten()
                .map(|e| e.path())
                .find(|p| p.extension().is_some_and(|x| x == "sock") && Some(p.as_path()) != not)
        }) {
            return p;
        }
        assert!(
            Instant::now() < deadline,
            "no prover socket in {}",
            dir.display()
        );
        std::thread::sleep(Duration::from_millis(50));
    }
}

fn text(o: &Output) -> String {
    format!(
        "status {:?}\nstdout:\n{}\nstderr:\n{}",
        o.status,
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    )
}

#[test]
fn a_killed_prover_ends_a_headless_attach_with_status_5_and_says_so() {
    let dir = tempfile::tempdir().unwrap();
    let sock = dir.path().join("k.sock");
    let mut p = serve(&["--socket", sock.to_str().unwrap()], &[]);
    let _ = wait_for_socket(dir.path(), None);
    let viewer = Command::new(BIN)
        .arg("attach")
        .arg(&sock)
        .arg("--headless")
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    std::thread::sleep(Duration::from_secs(2));
    p.0.kill().unwrap();
    let t = Instant::now();
    let out = viewer.wait_with_output().unwrap();
    assert!(
        t.elapsed() < Duration::from_secs(30),
        "the viewer waited {:?}",
        t.elapsed()
    );
    let all = text(&out);
    assert_eq!(out.status.code(), Some(5), "{all}");
    assert!(
        all.contains("the prover vanished without a goodbye"),
        "{all}"
    );
    assert!(
        all.contains("== session 1 =="),
        "the report is printed: {all}"
    );
}

#[test]
fn attached_by_discovery_the_viewer_follows_a_restarted_prover() {
    let dir = tempfile::tempdir().unwrap();
    let runtime = dir.path().join("run");
    std::fs::create_dir_all(&runtime).unwrap();
    let env = [("XDG_RUNTIME_DIR", runtime.as_path())];
    let socks = runtime.join("proofscope");
    let mut first = serve(&[], &env);
    let old = wait_for_socket_in(&socks, None);
    let viewer = Command::new(BIN)
        .args([
            "attach",
            "--headless",
            "--duration",
            "25",
            "--format",
            "json",
        ])
        .env("XDG_RUNTIME_DIR", &runtime)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    std::thread::sleep(Duration::from_secs(3));
    first.0.kill().unwrap(); // its socket file stays: stale
    first.0.wait().unwrap();
    let _second = serve(&[], &env);
    let new = wait_for_socket_in(&socks, Some(&old));
    assert_ne!(old, new);
    let out = viewer.wait_with_output().unwrap();
    let all = text(&out);
    let j: serde_json::Value = serde_json::from_slice(&out.stdout).expect(&all);
    let pids: Vec<u64> = j["sessions"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s["pid"].as_u64().unwrap())
        .collect();
    assert_eq!(pids.len(), 2, "both provers' sessions: {all}");
    assert_ne!(pids[0], pids[1]);
    let warnings = j["warnings"].to_string();
    assert!(
        warnings.contains("following the prover that replaced prover (pid"),
        "{warnings}"
    );
    // The second prover keeps running: the run ended on time, not as a vanished prover.
    assert_eq!(out.status.code(), Some(0), "{all}");
}

fn wait_for_socket_in(dir: &Path, not: Option<&Path>) -> PathBuf {
    let deadline = Instant::now() + Duration::from_secs(120);
    while !dir.exists() {
        assert!(Instant::now() < deadline);
        std::thread::sleep(Duration::from_millis(50));
    }
    let p = wait_for_socket(dir, not);
    // Alive, not a leftover.
    while std::os::unix::net::UnixStream::connect(&p).is_err() {
        assert!(Instant::now() < deadline, "{} never listened", p.display());
        std::thread::sleep(Duration::from_millis(50));
    }
    p
}

#[test]
fn a_viewer_refused_by_the_uid_check_is_told_why_and_stops() {
    // SAFETY: getuid has no preconditions.
    if unsafe { libc::getuid() } != 0 || Command::new("setpriv").arg("--version").output().is_err()
    {
        println!("SKIPPED: needs root and setpriv to run the prover as another user");
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let open = |p: &Path| {
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(p, std::fs::Permissions::from_mode(0o777)).unwrap();
    };
    open(dir.path());
    let cache = dir.path().join("cache");
    std::fs::create_dir(&cache).unwrap();
    open(&cache);
    let sock = dir.path().join("nobody.sock");
    let _prover = Running(
        Command::new("setpriv")
            .args(["--reuid=65534", "--regid=65534", "--clear-groups", BIN])
            .args([
                "prover",
                "serve",
                "--circuit",
                "squaring",
                "--log-size",
                "10",
                "--pause-ms",
                "200",
            ])
            .arg("--socket")
            .arg(&sock)
            .arg("--cache")
            .arg(&cache)
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap(),
    );
    let deadline = Instant::now() + Duration::from_secs(120);
    while std::os::unix::net::UnixStream::connect(&sock).is_err() {
        assert!(Instant::now() < deadline, "the prover never listened");
        std::thread::sleep(Duration::from_millis(50));
    }
    let t = Instant::now();
    let out = Command::new(BIN)
        .arg("attach")
        .arg(&sock)
        .args(["--headless", "--duration", "60"])
        .output()
        .unwrap();
    let all = text(&out);
    assert!(
        t.elapsed() < Duration::from_secs(20),
        "it kept retrying: {all}"
    );
    assert!(
        all.contains("the prover refused this viewer: refused: only uid 65534 may attach"),
        "{all}"
    );
}

/// Every option with a value it cannot take: status 2, a message, no panic.
#[test]
fn every_invalid_option_is_a_usage_error() {
    let dir = tempfile::tempdir().unwrap();
    let rec = dir.path().join("exists.psrec");
    std::fs::write(&rec, b"").unwrap();
    let nowhere = dir.path().join("none.sock");
    let n = nowhere.to_str().unwrap();
    let r = rec.to_str().unwrap();
    let cases: Vec<Vec<&str>> = vec![
        vec!["attach", n, "--headless", "--duration", "nan"],
        vec!["attach", n, "--headless", "--duration=-1"],
        vec!["attach", n, "--headless", "--duration", "1e20"],
        vec!["attach", n, "--headless", "--duration", "0"],
        vec!["attach", n, "--headless", "--proofs", "0"],
        vec!["attach", n, "--headless", "--proofs", "-3"],
        vec!["replay", r, "--headless", "--fail-on-gap", "nan"],
        vec!["replay", r, "--headless", "--fail-on-gap", "101"],
        vec!["replay", r, "--gap-fraction", "2"],
        vec!["replay", r, "--gap-fraction", "inf"],
        vec!["replay", r, "--gap-min-ms", "-1"],
        vec!["replay", r, "--max-proofs", "0"],
        vec!["replay", r, "--max-mib", "0"],
        vec!["replay", r, "--format", "xml"],
        vec!["replay", r, "--record", "x.psrec"],
        vec!["replay"],
        vec!["list", "--headless"],
        vec!["attach", n, "--record", r],
        vec!["attach", n, "--record", "same.psrec", "-o", "same.psrec"],
        vec!["attach", n, "--force"],
        vec!["prover", "serve", "--circuits", "0"],
        vec!["prover", "serve", "--pause-ms", "soon"],
        vec!["prover", "serve", "--record", r],
        vec!["prover", "params", "--dealloc", "sync"],
        vec!["prover", "bench", "--runs", "0"],
    ];
    for args in cases {
        let out = Command::new(BIN).args(&args).output().unwrap();
        let all = text(&out);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {all}");
        assert!(!all.contains("panicked"), "{args:?}: {all}");
        assert!(
            String::from_utf8_lossy(&out.stderr).contains("error"),
            "{args:?} says nothing: {all}"
        );
    }
}

/// A rejected frame is counted in `bad_frames` and named in `warnings`, the same one.
#[test]
fn a_corrupt_frame_is_counted_and_named() {
    let src = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../recordings/cpu-sha256-sync.psrec");
    let mut bytes = std::fs::read(&src).unwrap();
    // The second frame's body: its first byte after the array header, made a float marker.
    let first = u32::from_le_bytes(bytes[12..16].try_into().unwrap()) as usize;
    let second = 12 + 4 + first;
    bytes[second + 4 + 5] = 0xca;
    let dir = tempfile::tempdir().unwrap();
    let f = dir.path().join("one-bad.psrec");
    std::fs::write(&f, &bytes).unwrap();
    let out = Command::new(BIN)
        .arg("replay")
        .arg(&f)
        .args(["--headless", "--format", "json"])
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", text(&out));
    let j: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(j["bad_frames"], 1, "{}", j["warnings"]);
    let warnings = j["warnings"].as_array().unwrap();
    assert_eq!(
        warnings
            .iter()
            .filter(|w| w.as_str().unwrap().contains(&format!("byte {second}")))
            .count(),
        1,
        "{warnings:?}"
    );
}

/// A headless run that captured nothing says why and exits 1: no socket at the path, or a
/// demo prover that died before sending anything (the GPU backend on a machine without one).
#[test]
fn a_headless_run_that_captured_nothing_exits_1_with_the_reason() {
    let dir = tempfile::tempdir().unwrap();
    let nowhere = dir.path().join("none.sock");
    let o = Command::new(BIN)
        .arg("attach")
        .arg(&nowhere)
        .args(["--headless", "--duration", "1"])
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(1), "{err}");
    // A socket path that does not exist fails at once, saying so.
    assert!(
        err.contains("no prover socket at") && err.contains("none.sock"),
        "{err}"
    );

    let o = Command::new(BIN)
        .args(["demo", "--backend", "gpu", "--headless"])
        .env("XDG_RUNTIME_DIR", dir.path())
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&o.stderr);
    if o.status.success() {
        println!("SKIPPED the no-GPU half: this machine has a GPU");
        return;
    }
    assert_eq!(o.status.code(), Some(1), "{err}");
    assert!(
        err.contains("nothing captured: the demo prover exited")
            && err.contains("the GPU backend cannot start"),
        "the demo prover's own error line: {err}"
    );
}

/// Asking for help is never an error, however it is asked (`help --help` included), and the
/// recording decoder answers `--help` too.
#[test]
fn every_way_of_asking_for_help_answers() {
    for args in [
        vec!["--help"],
        vec!["help"],
        vec!["help", "--help"],
        vec!["help", "export"],
        vec!["export", "--help"],
    ] {
        let out = Command::new(BIN).args(&args).output().unwrap();
        assert_eq!(out.status.code(), Some(0), "{args:?}: {}", text(&out));
        assert!(
            String::from_utf8_lossy(&out.stdout).contains("Usage: proofscope"),
            "{args:?}: {}",
            text(&out)
        );
    }
    let psrec = Path::new(env!("CARGO_MANIFEST_DIR")).join("../tools/psrec.py");
    if let Ok(out) = Command::new("python3").arg(&psrec).arg("--help").output() {
        assert_eq!(
            out.status.code(),
            Some(0),
            "psrec.py --help: {}",
            text(&out)
        );
        assert!(String::from_utf8_lossy(&out.stdout).contains("usage: psrec.py"));
    }
}

/// A report never replaces the file it came from, however the two are spelt: the same name,
/// `./`, an absolute path, a symlink; before anything is read, with exit 2 and the input
/// whole.
#[test]
fn a_report_never_replaces_its_own_input() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let rec = d.join("a.psrec");
    std::fs::copy(common::recording("cpu-sha256-sync.psrec"), &rec).unwrap();
    let before = std::fs::read(&rec).unwrap();
    std::os::unix::fs::symlink("a.psrec", d.join("link.psrec")).unwrap();
    let log = d.join("c2.log");
    std::fs::copy(
        Path::new(env!("CARGO_MANIFEST_DIR")).join("../recordings/logs/cuzk-c2-3-partitions.log"),
        &log,
    )
    .unwrap();
    let abs = rec.to_str().unwrap().to_owned();
    let abs_x = d.join("x.psrec").to_str().unwrap().to_owned();
    let cases: Vec<Vec<&str>> = vec![
        vec![
            "replay",
            "a.psrec",
            "--headless",
            "--force",
            "-o",
            "a.psrec",
        ],
        vec![
            "replay",
            "a.psrec",
            "--headless",
            "--force",
            "-o",
            "./a.psrec",
        ],
        vec!["replay", "a.psrec", "--headless", "--force", "-o", &abs],
        vec![
            "replay",
            "./a.psrec",
            "--headless",
            "--force",
            "-o",
            "link.psrec",
        ],
        vec!["import", "c2.log", "-o", "./c2.log", "--force"],
        vec![
            "attach",
            "none.sock",
            "--record",
            "./x.psrec",
            "-o",
            "x.psrec",
        ],
        vec!["attach", "none.sock", "--record", "./x.psrec", "-o", &abs_x],
    ];
    for args in &cases {
        let out = Command::new(BIN)
            .current_dir(d)
            .args(args)
            .output()
            .unwrap();
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {err}");
        assert!(
            err.contains("replace") && err.contains("same file") || err.contains("both"),
            "{args:?}: {err}"
        );
    }
    assert_eq!(
        std::fs::read(&rec).unwrap(),
        before,
        "the recording is whole"
    );
    assert!(
        std::fs::metadata(&log).unwrap().len() > 0,
        "the log is whole"
    );
    assert!(!d.join("x.psrec").exists());
}

/// PROTOCOL.md §5: a recording cut short (no Goodbye) is reported as a session that ended
/// without one; a whole one gives its goodbye's reason.
#[test]
fn a_cut_recording_says_its_session_ended_without_a_goodbye() {
    let dir = tempfile::tempdir().unwrap();
    let whole = common::recording("cpu-sha256-sync.psrec");
    let bytes = std::fs::read(&whole).unwrap();
    let cut = dir.path().join("cut.psrec");
    std::fs::write(&cut, &bytes[..bytes.len() * 3 / 4]).unwrap();
    let text = |f: &Path| {
        let out = Command::new(BIN)
            .arg("replay")
            .arg(f)
            .arg("--headless")
            .output()
            .unwrap();
        String::from_utf8_lossy(&out.stdout).into_owned()
    };
    let t = text(&cut);
    assert!(t.contains("session ended without a goodbye"), "{t}");
    let t = text(&whole);
    assert!(
        t.contains("session ended: ") && !t.contains("without a goodbye"),
        "{t}"
    );
}

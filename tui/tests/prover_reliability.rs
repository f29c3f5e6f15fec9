//! The prover as production breaks it: killed without warning, signalled while it pauses,
//! its output pipe closed. Nothing recorded before the last second may be lost, a stop must
//! be prompt, and an observer going away must not kill it.
// These run the built-in prover (`proofscope prover …`): the `demo` feature.
#![cfg(feature = "demo")]

mod common;

use common::{BIN, cache, replay_json};

use std::io::{BufRead, BufReader};
use std::process::{Child, Command, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

/// `proofscope prover serve` on a small squaring circuit, stderr piped.
fn serve(args: &[&str]) -> Child {
    Command::new(BIN)
        .args([
            "prover",
            "serve",
            "--circuit",
            "squaring",
            "--log-size",
            "10",
            "--circuits",
            "2",
        ])
        .args(args)
        .arg("--cache")
        .arg(cache())
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap()
}

/// The child's stderr lines as they come, each with the instant it was read.
fn lines(child: &mut Child) -> mpsc::Receiver<(Instant, String)> {
    let err = child.stderr.take().unwrap();
    let (tx, rx) = mpsc::channel();
    std::thread::Builder::new()
        .name("stderr-reader".into())
        .spawn(move || {
            for l in BufReader::new(err).lines() {
                let Ok(l) = l else { break };
                if tx.send((Instant::now(), l)).is_err() {
                    break;
                }
            }
        })
        .unwrap();
    rx
}

fn wait_for(rx: &mpsc::Receiver<(Instant, String)>, secs: u64, what: impl Fn(&str) -> bool) {
    let deadline = Instant::now() + Duration::from_secs(secs);
    loop {
        let left = deadline.saturating_duration_since(Instant::now());
        match rx.recv_timeout(left) {
            Ok((_, l)) if what(&l) => return,
            Ok(_) => {}
            Err(e) => panic!("waited {secs} s for a line: {e}"),
        }
    }
}

#[test]
fn a_killed_prover_leaves_every_proof_completed_a_second_before_the_kill() {
    let dir = tempfile::tempdir().unwrap();
    let rec = dir.path().join("killed.psrec");
    let mut p = serve(&[
        "--record",
        rec.to_str().unwrap(),
        "--socket",
        dir.path().join("p.sock").to_str().unwrap(),
        "--pause-ms",
        "100",
    ]);
    let rx = lines(&mut p);
    // Proofs as the prover reported them: "proof N: …".
    let mut done: Vec<(Instant, u64)> = Vec::new();
    let deadline = Instant::now() + Duration::from_secs(180);
    while done.len() < 6 {
        let (at, l) = rx
            .recv_timeout(deadline.saturating_duration_since(Instant::now()))
            .expect("the prover stopped proving");
        if let Some(n) = l
            .strip_prefix("proof ")
            .and_then(|r| r.split(':').next())
            .and_then(|n| n.parse().ok())
        {
            done.push((at, n));
        }
    }
    std::thread::sleep(Duration::from_millis(1300));
    let killed = Instant::now();
    p.kill().unwrap(); // SIGKILL: no goodbye, no flush at exit
    p.wait().unwrap();
    let must: Vec<u64> = done
        .iter()
        .filter(|(at, _)| killed.duration_since(*at) > Duration::from_secs(1))
        .map(|(_, n)| *n)
        .collect();
    assert!(must.len() >= 6, "{done:?}");
    let report = replay_json(&rec);
    let recorded: Vec<u64> = report["sessions"][0]["proofs"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|p| p["complete"] == true)
        .map(|p| p["id"].as_u64().unwrap())
        .collect();
    for n in must {
        assert!(
            recorded.contains(&n),
            "proof {n} finished more than a second before the kill but is not in the recording ({recorded:?})"
        );
    }
}

#[test]
fn an_empty_recording_says_so() {
    let dir = tempfile::tempdir().unwrap();
    let f = dir.path().join("empty.psrec");
    std::fs::write(&f, b"").unwrap();
    let out = Command::new(BIN)
        .arg("replay")
        .arg(&f)
        .arg("--headless")
        .output()
        .unwrap();
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("empty recording (the writer stopped before its header)"),
        "{err}"
    );
}

#[test]
fn sigterm_during_a_pause_stops_the_prover_promptly() {
    // SIGHUP too (a closed terminal, a service manager): it killed the prover on the spot,
    // status 129, its socket left behind for a viewer to wait on.
    for (sig, name) in [(libc::SIGTERM, "SIGTERM"), (libc::SIGHUP, "SIGHUP")] {
        let dir = tempfile::tempdir().unwrap();
        let sock = dir.path().join("p.sock");
        let mut p = serve(&["--socket", sock.to_str().unwrap(), "--pause-ms", "60000"]);
        let rx = lines(&mut p);
        wait_for(&rx, 180, |l| l.starts_with("proof 1:"));
        std::thread::sleep(Duration::from_millis(200)); // inside the minute-long pause
        let sent = Instant::now();
        // SAFETY: signalling our own child.
        unsafe { libc::kill(p.id() as i32, sig) };
        let status = loop {
            if let Some(s) = p.try_wait().unwrap() {
                break s;
            }
            assert!(
                sent.elapsed() < Duration::from_secs(5),
                "{name} during --pause-ms did not stop the prover"
            );
            std::thread::sleep(Duration::from_millis(20));
        };
        assert!(status.success(), "{name}: {status:?}");
        let rest: Vec<String> = rx.try_iter().map(|(_, l)| l).collect();
        assert!(
            rest.iter()
                .any(|l| l.contains(&format!("stopping: {name}"))),
            "{rest:?}"
        );
        assert!(!sock.exists(), "{name}: the socket is gone");
    }
}

/// The last line counts the proofs that completed, those still running at the signal
/// included (it said "SIGTERM after 1 proofs" when 2 completed): the signal comes as proof 1
/// ends, while the overlapped batch 2 is already under way.
#[test]
fn sigterm_says_how_many_proofs_completed_in_the_end() {
    let dir = tempfile::tempdir().unwrap();
    let mut p = serve(&["--socket", dir.path().join("p.sock").to_str().unwrap()]);
    let rx = lines(&mut p);
    wait_for(&rx, 180, |l| l.starts_with("proof 1:"));
    // SAFETY: signalling our own child.
    unsafe { libc::kill(p.id() as i32, libc::SIGTERM) };
    let status = p.wait().unwrap();
    assert!(status.success(), "{status:?}");
    let rest: Vec<String> = rx.iter().map(|(_, l)| l).collect();
    let done = 1 + rest.iter().filter(|l| l.starts_with("proof ")).count();
    let last = rest
        .iter()
        .find(|l| l.starts_with("stopping: "))
        .unwrap_or_else(|| panic!("no stopping line: {rest:?}"));
    let want = format!(
        "stopping: SIGTERM after {done} proof{}",
        if done == 1 { "" } else { "s" }
    );
    assert_eq!(last, &want, "{rest:?}");
}

/// A second SIGTERM exits at once (status 128 + 15) and still removes the socket: left
/// behind, a viewer waited 10 s for a prover that was gone.
#[test]
fn a_second_sigterm_exits_at_once_and_removes_the_socket() {
    let dir = tempfile::tempdir().unwrap();
    let sock = dir.path().join("p.sock");
    let mut p = serve(&["--socket", sock.to_str().unwrap()]);
    let rx = lines(&mut p);
    // Proof 2 is under way when proof 1's line comes.
    wait_for(&rx, 180, |l| l.starts_with("proof 1:"));
    assert!(sock.exists());
    for _ in 0..2 {
        // SAFETY: signalling our own child.
        unsafe { libc::kill(p.id() as i32, libc::SIGTERM) };
        std::thread::sleep(Duration::from_millis(10));
    }
    let status = p.wait().unwrap();
    use std::os::unix::process::ExitStatusExt;
    assert_eq!(
        status.code(),
        Some(128 + libc::SIGTERM),
        "{status:?} {:?}",
        status.signal()
    );
    assert!(!sock.exists(), "the socket was left behind");
}

#[test]
fn a_closed_output_pipe_does_not_kill_the_prover() {
    let dir = tempfile::tempdir().unwrap();
    let mut p = serve(&[
        "--socket",
        dir.path().join("p.sock").to_str().unwrap(),
        "--proofs",
        "4",
    ]);
    // Read two lines, then close the pipe (`… 2>&1 | head -2`).
    let err = p.stderr.take().unwrap();
    let mut r = BufReader::new(err);
    let mut l = String::new();
    for _ in 0..2 {
        l.clear();
        r.read_line(&mut l).unwrap();
    }
    drop(r);
    let deadline = Instant::now() + Duration::from_secs(240);
    let status = loop {
        if let Some(s) = p.try_wait().unwrap() {
            break s;
        }
        assert!(Instant::now() < deadline, "the prover did not finish");
        std::thread::sleep(Duration::from_millis(50));
    };
    assert!(
        status.success(),
        "the prover died when its stderr went away: {status:?}"
    );
}

/// A recording that cannot be written to the end (the file size limit here, a full disk in
/// production) fails the run: the proofs are made, the error said once, status 1. It logged
/// "could not be flushed" 60 times and exited 0 with the file cut.
#[test]
fn a_recording_that_cannot_be_written_fails_the_run_and_says_so_once() {
    // The parameters are made (or found) before the file size is limited.
    let mut warm = serve(&["--socket", "none", "--proofs", "1"]);
    assert!(warm.wait().unwrap().success());
    let dir = tempfile::tempdir().unwrap();
    let rec = dir.path().join("cut.psrec");
    let script = format!(
        "trap '' XFSZ; ulimit -f 16; exec '{BIN}' prover serve --circuit squaring --log-size 10 --circuits 2 --proofs 4 --socket none --record '{}' --cache '{}'",
        rec.display(),
        cache().display()
    );
    let o = Command::new("sh").arg("-c").arg(&script).output().unwrap();
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(1), "{err}");
    assert!(err.contains("stopping: done: 4 proofs"), "{err}");
    assert!(err.contains("the recording failed"), "{err}");
    assert_eq!(
        err.matches("[proofscope probe] recording could not be flushed")
            .count(),
        1,
        "the probe says it once: {err}"
    );
}

//! A program that `exec`s under the allocator probe (`LD_PRELOAD`): its session ends with a
//! goodbye that says so, its socket goes, and the new program's session is on a socket of its
//! own — nothing stale is left (the shell's socket stayed behind when the issue was filed).

mod common;

use common::BIN;
use common::cpp::library;
use serde_json::Value;
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// The socket files in `dir` now.
fn sockets(dir: &Path) -> Vec<String> {
    let mut v: Vec<String> = std::fs::read_dir(dir)
        .map(|d| {
            d.filter_map(|e| e.ok()?.file_name().into_string().ok())
                .filter(|n| n.ends_with(".sock"))
                .collect()
        })
        .unwrap_or_default();
    v.sort();
    v
}

/// Waits until `dir` holds a socket whose name starts with `prefix`.
fn wait_for(dir: &Path, prefix: &str) -> String {
    let t0 = Instant::now();
    loop {
        if let Some(s) = sockets(dir).into_iter().find(|s| s.starts_with(prefix)) {
            return s;
        }
        assert!(
            t0.elapsed() < Duration::from_secs(20),
            "no {prefix}* socket in {dir:?}: {:?}",
            sockets(dir)
        );
        std::thread::sleep(Duration::from_millis(10));
    }
}

#[test]
fn a_program_that_execs_says_goodbye_and_leaves_no_socket_behind() {
    use std::io::{BufRead, Write};
    let runtime = tempfile::tempdir().unwrap();
    let dir = runtime.path().join("proofscope");
    let report = runtime.path().join("shell.json");
    // The shell serves, waits for a line (a builtin: no child program with a socket of its
    // own), then becomes `sleep`. The line is sent once the viewer is attached, so the exec
    // never races the attach on a loaded machine (a fixed 1.5 s did: the viewer found the
    // new program's socket first).
    let mut shell = Command::new("sh")
        .args(["-c", "read go; exec sleep 1"])
        .env("LD_PRELOAD", library("libproofscope_preload.so"))
        .env("XDG_RUNTIME_DIR", runtime.path())
        .env("PROOFSCOPE_PRELOAD_DELAY_MS", "0")
        .stdin(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let pid = shell.id();
    // `sh` is dash on Debian; the socket is named after the executable.
    let own = wait_for(&dir, "");
    assert!(own.ends_with(&format!("-{pid}.sock")), "{own}");
    assert!(!own.starts_with("sleep-"), "{own}");
    let viewer = Command::new(BIN)
        .arg("attach")
        .arg(dir.join(&own))
        .args(["--headless", "--format", "json", "-o"])
        .arg(&report)
        .env_remove("LD_PRELOAD")
        .spawn()
        .unwrap();
    // The probe says so on the shell's stderr when a viewer attaches.
    let mut err = std::io::BufReader::new(shell.stderr.take().unwrap());
    let mut said = String::new();
    while !said.contains("attached") {
        let mut line = String::new();
        let n = err.read_line(&mut line).unwrap();
        assert!(
            n > 0,
            "the shell's stderr ended before a viewer attached: {said}"
        );
        said.push_str(&line);
    }
    writeln!(shell.stdin.take().unwrap(), "go").unwrap();
    let viewer = viewer.wait_with_output().unwrap();
    // The viewer ended at the goodbye; the new program serves on a socket of its own.
    let new = wait_for(&dir, "sleep-");
    assert_eq!(new, format!("sleep-{pid}.sock"));
    let after_exec = sockets(&dir);
    assert_eq!(
        after_exec,
        vec![new],
        "the shell's socket ({own}) gone: {after_exec:?}"
    );
    assert!(viewer.status.success(), "{viewer:?}");
    let v: Value = serde_json::from_str(&std::fs::read_to_string(&report).unwrap()).unwrap();
    let goodbye = v["sessions"][0]["goodbye"].as_str().unwrap_or_default();
    assert!(
        goodbye.starts_with("exec ") && goodbye.ends_with("sleep"),
        "the goodbye says the shell exec'd: {goodbye:?}"
    );
    assert!(shell.wait().unwrap().success());
    assert_eq!(sockets(&dir), Vec::<String>::new(), "nothing left behind");
}

//! A daemon under the allocator probe (`LD_PRELOAD`): once running it closes every fd ≥ 3 —
//! by a `close` loop, `close_range` or `closefrom` — then opens its own files, writes 2,000
//! lines and reads them back, while a viewer is subscribed and the session is recorded. Its
//! output and its file are byte-identical to a run without the preload, every time, and the
//! probe's session goes on to its goodbye. Before the probe kept its fds out of the program's
//! way, 31 of 31 such runs broke (tokio aborting at exit, reads returning the probe's bytes,
//! lines lost). The program is tests/programs/daemon_fds.c.

mod common;

use common::cpp::{c_program, library};
use probe_protocol::{Event, Subscribe, encode_frame};
use std::io::{Read, Write};
use std::os::unix::net::UnixStream;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::time::{Duration, Instant};

/// Runs of each way of closing under the preload.
const RUNS: usize = 6;

fn build(dir: &Path) -> Option<PathBuf> {
    c_program(dir, "daemon_fds", &[])
}

/// A viewer on `socket` for as long as the session lasts: subscribed, reading every frame.
/// Returns the bytes it read.
fn subscriber(socket: PathBuf) -> std::thread::JoinHandle<usize> {
    std::thread::Builder::new()
        .name("test-viewer".into())
        .spawn(move || {
            let t0 = Instant::now();
            let mut s = loop {
                match UnixStream::connect(&socket) {
                    Ok(s) => break s,
                    Err(_) if t0.elapsed() < Duration::from_secs(10) => {
                        std::thread::sleep(Duration::from_millis(5))
                    }
                    Err(_) => return 0,
                }
            };
            let sub = Event::Subscribe(Subscribe {
                history: true,
                client: "preload_fds test".into(),
            });
            if s.write_all(&encode_frame(0, &[sub]).unwrap()).is_err() {
                return 0;
            }
            let _ = s.set_read_timeout(Some(Duration::from_secs(20)));
            let mut buf = vec![0u8; 1 << 16];
            let mut total = 0;
            while let Ok(n) = s.read(&mut buf) {
                if n == 0 {
                    break;
                }
                total += n;
            }
            total
        })
        .unwrap()
}

/// One run in a fresh folder: its output and the file it wrote. With `low_limit`, the soft
/// fd limit is 1,024 (a daemon's `close` loop then sweeps the very numbers the probe's fds
/// are moved to).
fn run(
    exe: &Path,
    mode: &str,
    dir: &Path,
    preload: bool,
    low_limit: bool,
) -> (Output, Vec<u8>, Option<PathBuf>) {
    std::fs::create_dir_all(dir).unwrap();
    let mut c = Command::new("sh");
    let limit = if low_limit { "ulimit -n 1024 && " } else { "" };
    c.arg("-c")
        .arg(format!("{limit}exec \"$0\" \"$@\""))
        .arg(exe)
        .arg(mode)
        .arg(dir);
    let mut rec = None;
    let mut viewer = None;
    if preload {
        let socket = dir.join("probe.sock");
        let r = dir.join("session.psrec");
        c.env("LD_PRELOAD", library("libproofscope_preload.so"))
            .env("PROOFSCOPE_SOCKET", &socket)
            .env("PROOFSCOPE_RECORD", &r)
            .env("PROOFSCOPE_PRELOAD_DELAY_MS", "0");
        rec = Some(r);
        viewer = Some(subscriber(socket));
    }
    let out = c.output().unwrap();
    if let Some(v) = viewer {
        let _ = v.join();
    }
    let written = std::fs::read(dir.join("out.txt")).unwrap_or_default();
    (out, written, rec)
}

#[test]
fn a_daemon_that_closes_every_fd_runs_as_without_the_preload() {
    let dir = tempfile::tempdir().unwrap();
    let Some(exe) = build(dir.path()) else {
        return;
    };
    let (reference, reference_file, _) = run(&exe, "loop", &dir.path().join("plain"), false, false);
    assert!(reference.status.success(), "{reference:?}");
    assert_eq!(
        reference_file.len(),
        2000 * 52,
        "the reference run wrote its lines"
    );
    for mode in ["loop", "range", "from"] {
        for n in 0..RUNS {
            let at = dir.path().join(format!("{mode}-{n}"));
            let low_limit = n % 2 == 1;
            let (out, file, rec) = run(&exe, mode, &at, true, low_limit);
            let what = format!(
                "{mode} run {n} (fd limit 1,024: {low_limit}): {}\nstderr: {}",
                out.status,
                String::from_utf8_lossy(&out.stderr)
            );
            assert_eq!(out.status.code(), Some(0), "{what}");
            assert_eq!(out.stdout, reference.stdout, "{what}");
            assert!(file == reference_file, "{what}: the file differs");
            let stderr = String::from_utf8_lossy(&out.stderr);
            assert!(
                stderr.lines().all(|l| l.starts_with("[proofscope probe]")),
                "{what}: nothing on stderr but the probe's own lines"
            );
            // The probe went on: its recording reads whole and ends with its goodbye.
            let r = probe_protocol::read_all(std::fs::File::open(rec.unwrap()).unwrap()).unwrap();
            assert!(r.errors.is_empty(), "{what}: {:?}", r.errors);
            let said_goodbye = r
                .frames
                .iter()
                .flat_map(|f| &f.events)
                .any(|e| matches!(e, Event::Goodbye { .. }));
            assert!(said_goodbye, "{what}: the session ended with its goodbye");
        }
    }
}

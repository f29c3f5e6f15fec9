//! `--max-mib` bounds the viewer's memory whatever it replays: hostile recordings of about
//! 20 MiB each, one per shape of `shapes.rs`, replay in at most the budget × 1.25 plus the
//! viewer's fixed footprint, read as the process's peak RSS.

use probe_protocol::{Event, FrameBuilder, RecordingWriter};
use std::path::{Path, PathBuf};
use std::process::Command;

mod common;
mod shapes;

use common::BIN;

const FILE_BYTES: usize = 20 << 20;
const BUDGET_MIB: u64 = 32;

/// Writes frames of events from `next` (called with a running counter) until the file holds
/// about `FILE_BYTES`.
fn craft(path: &Path, mut next: impl FnMut(u64) -> Vec<Event>) {
    let mut w = RecordingWriter::new(std::io::BufWriter::new(
        std::fs::File::create(path).unwrap(),
    ))
    .unwrap();
    let mut n = 0u64;
    while w.bytes_written() < FILE_BYTES as u64 {
        // About 48 KiB of events per frame.
        let mut b = FrameBuilder::new(n * 1000);
        while b.body_len() < 48 << 10 {
            for e in next(n) {
                b.push(&e).unwrap();
            }
            n += 1;
        }
        w.write_frame(b.finish().unwrap()).unwrap();
    }
}

/// Every shape of `shapes.rs`, crafted into a file of about `FILE_BYTES` each.
fn recordings(dir: &Path) -> Vec<(&'static str, PathBuf)> {
    shapes::shapes()
        .into_iter()
        .map(|(name, mut f)| {
            let p = dir.join(format!("{name}.psrec"));
            craft(&p, &mut f);
            (name, p)
        })
        .collect()
}

/// Peak RSS (bytes) and exit status of `proofscope replay FILE --headless` with `args`. The
/// child is reaped by `wait4` (which reports its peak RSS), not by `Child::wait`.
fn peak_rss(file: &Path, args: &[&str]) -> (u64, i32) {
    let mut c = Command::new(BIN);
    c.arg("replay")
        .arg(file)
        .args(["--headless", "-o", "/dev/null"])
        .args(args);
    peak_rss_of(c)
}

/// The headless report of replaying `file` at `--max-mib` [`BUDGET_MIB`].
fn report_within_budget(file: &Path) -> String {
    let out = Command::new(BIN)
        .arg("replay")
        .arg(file)
        .args(["--headless", "--max-mib", &BUDGET_MIB.to_string()])
        .output()
        .unwrap();
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// Peak RSS (bytes) and exit status of `c`, reaped by `wait4`.
#[allow(clippy::zombie_processes)]
fn peak_rss_of(mut c: Command) -> (u64, i32) {
    let child = c.stderr(std::process::Stdio::null()).spawn().unwrap();
    let mut status = 0;
    // SAFETY: an all-zero rusage is a valid value for wait4 to fill.
    let mut usage: libc::rusage = unsafe { std::mem::zeroed() };
    // SAFETY: waits for our own child; `status` and `usage` are valid for writes.
    let r = unsafe { libc::wait4(child.id() as i32, &mut status, 0, &mut usage) };
    assert_eq!(r, child.id() as i32);
    (usage.ru_maxrss as u64 * 1024, libc::WEXITSTATUS(status))
}

#[test]
fn max_mib_bounds_the_replay_of_hostile_recordings() {
    let dir = tempfile::tempdir().unwrap();
    let small =
        PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../recordings/cpu-sha256-sync.psrec");
    let (base, code) = peak_rss(&small, &["--max-mib", "1"]);
    assert_eq!(code, 0);
    let bound = base + BUDGET_MIB * (1 << 20) * 5 / 4;
    let mut seen = Vec::new();
    for (name, file) in recordings(dir.path()) {
        let size = std::fs::metadata(&file).unwrap().len();
        let (rss, code) = peak_rss(&file, &["--max-mib", &BUDGET_MIB.to_string()]);
        assert_eq!(code, 0, "{name}");
        seen.push(format!(
            "{name}: {} MiB file, peak {} MiB",
            size >> 20,
            rss >> 20
        ));
        assert!(
            rss <= bound,
            "{name}: peak RSS {} MiB over {} MiB (fixed footprint {} MiB + {BUDGET_MIB} MiB × 1.25)\n{}",
            rss >> 20,
            bound >> 20,
            base >> 20,
            seen.join("\n")
        );
    }
    println!("{}", seen.join("\n"));
}

/// The Chrome export is streamed: a 300k-event session converts within a bounded peak RSS,
/// and the trace is complete.
#[test]
fn the_chrome_export_of_a_300k_event_session_stays_small() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("busy.psrec");
    let events = common::busy_session(&file, 2900, None);
    assert!(events >= 300_000, "{events}");
    let out = dir.path().join("busy.json");
    let mut c = Command::new(BIN);
    c.arg("replay")
        .arg(&file)
        // Every proof kept (the default keeps 1,000).
        .args([
            "--headless",
            "--max-proofs",
            "5000",
            "--format",
            "chrome",
            "-o",
        ])
        .arg(&out);
    let (rss, code) = peak_rss_of(c);
    assert_eq!(code, 0);
    let size = std::fs::metadata(&out).unwrap().len();
    println!(
        "{events} events: chrome export peak RSS {} MiB, trace {} MiB",
        rss >> 20,
        size >> 20
    );
    // Checked as a stream: a child's peak RSS starts from this process's at spawn time (Linux
    // keeps the high-water mark across the spawn), so the test process stays small too.
    use std::io::BufRead;
    let well_formed: Result<serde::de::IgnoredAny, _> =
        serde_json::from_reader(std::io::BufReader::new(std::fs::File::open(&out).unwrap()));
    assert!(well_formed.is_ok(), "{well_formed:?}");
    let spans = std::io::BufReader::new(std::fs::File::open(&out).unwrap())
        .lines()
        .map_while(Result::ok)
        .filter(|l| l.contains(r#""cat":"span""#))
        .count();
    assert_eq!(spans, 2900 * 50, "every span in the trace");
    assert!(rss < 150 << 20, "peak RSS {} MiB", rss >> 20);
}

/// Logs with no line end in sight stay within a fixed bound, imported or replayed: a line is
/// read up to 64 KiB and the rest skipped (one 50 MB line cost 305 MiB in import when the
/// issue was filed; a 300 MB file without newlines 305 MiB at `--max-mib 64`).
#[test]
fn a_log_of_one_50_mb_line_or_no_newline_at_all_is_read_in_bounded_memory() {
    use std::io::Write;
    let dir = tempfile::tempdir().unwrap();
    let long = dir.path().join("long.log");
    // Written 1 MiB at a time: a child's peak RSS starts from this process's at spawn time.
    let chunk = vec![b'x'; 1 << 20];
    let mut f = std::fs::File::create(&long).unwrap();
    let line = "[2026-11-30T12:01:49Z INFO  bellperson::groth16::supraseal] prover time: 1.5s\n";
    f.write_all(line.as_bytes()).unwrap();
    for _ in 0..50 {
        f.write_all(&chunk).unwrap();
    }
    f.write_all(b"\n").unwrap();
    f.write_all(line.as_bytes()).unwrap();
    let endless = dir.path().join("endless.log");
    let mut f = std::fs::File::create(&endless).unwrap();
    for _ in 0..100 {
        f.write_all(&chunk).unwrap();
    }
    drop(f);
    let small =
        PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../recordings/cpu-sha256-sync.psrec");
    let (base, _) = peak_rss(&small, &["--max-mib", "1"]);
    let bound = base + (16 << 20);
    for (log, proofs) in [(&long, true), (&endless, false)] {
        let out = dir.path().join("out.psrec");
        let _ = std::fs::remove_file(&out);
        let mut import = Command::new(BIN);
        import.arg("import").arg(log).arg("-o").arg(&out);
        let (rss, code) = peak_rss_of(import);
        let name = log.file_name().unwrap().to_string_lossy();
        println!("{name}: import peak {} MiB (exit {code})", rss >> 20);
        assert!(rss <= bound, "{name}: import peak {} MiB", rss >> 20);
        // The log with proofs imports them; the one without any says so and fails.
        assert_eq!(code == 0, proofs, "{name}: import exit {code}");
        let (rss, code) = peak_rss(log, &["--max-mib", "32"]);
        println!("{name}: replay peak {} MiB (exit {code})", rss >> 20);
        assert!(rss <= bound, "{name}: replay peak {} MiB", rss >> 20);
        assert_eq!(code == 0, proofs, "{name}: replay exit {code}");
    }
}

/// A valid header and then 16 MiB of zeros: every four bytes a frame that does not decode.
/// The report says the first few word for word and counts the rest on one line, and the
/// replay stays within the budget (it was one warning line per frame: 4.19 M lines, a 437 MB
/// report, 3.35 GB of memory at `--max-mib 32`).
#[test]
fn a_file_of_zeros_after_its_header_gives_a_short_report_in_bounded_memory() {
    let dir = tempfile::tempdir().unwrap();
    let header: Vec<u8> = std::fs::read(
        PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../recordings/cpu-sha256-sync.psrec"),
    )
    .unwrap()[..16]
        .to_vec();
    let file = dir.path().join("zeros.psrec");
    let mut bytes = header;
    bytes.resize(bytes.len() + (16 << 20), 0);
    std::fs::write(&file, bytes).unwrap();
    let (rss, code) = peak_rss(&file, &["--max-mib", &BUDGET_MIB.to_string()]);
    assert_eq!(code, 0);
    assert!(rss < 256 << 20, "peak RSS {} MiB", rss >> 20);
    let report = report_within_budget(&file);
    assert!(
        report.len() < 16 << 10,
        "a report of {} bytes",
        report.len()
    );
    assert!(
        report.contains("more warnings like this: recording byte"),
        "{report}"
    );
}

/// A live "prover" that sends its `Hello` and then empty frames as fast as the socket takes
/// them: the viewer's connection thread used to queue one warning a frame for the reader
/// without bound (3.9 GB after 20 s at `--max-mib 32`); a run of frames that do not decode is
/// now said once per 65,536 after its first five, and the channel is bounded in bytes (8.5 MB
/// over 20 s, 77.8 M frames counted).
#[test]
fn a_live_peer_flooding_empty_frames_is_read_in_bounded_memory() {
    use std::io::{Read, Write};
    use std::os::unix::fs::PermissionsExt;
    let dir = tempfile::tempdir().unwrap();
    let sock = dir.path().join("prover-4242.sock");
    let rec = std::fs::read(
        PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../recordings/cpu-sha256-sync.psrec"),
    )
    .unwrap();
    // The recording's header (magic, version) and then its first frame: the Hello.
    let at = 12;
    let len = u32::from_le_bytes(rec[at..at + 4].try_into().unwrap()) as usize;
    let hello = rec[at..at + 4 + len].to_vec();
    let listener = std::os::unix::net::UnixListener::bind(&sock).unwrap();
    std::fs::set_permissions(&sock, std::fs::Permissions::from_mode(0o600)).unwrap();
    let peer = std::thread::Builder::new()
        .name("flooding-peer".into())
        .spawn(move || {
            let (mut c, _) = listener.accept().unwrap();
            let mut subscribe = [0u8; 256];
            let _ = c.read(&mut subscribe);
            c.write_all(&hello).unwrap();
            let zeros = vec![0u8; 1 << 20];
            let t0 = std::time::Instant::now();
            while t0.elapsed() < std::time::Duration::from_secs(10) {
                if c.write_all(&zeros).is_err() {
                    break;
                }
            }
        })
        .unwrap();
    let mut c = Command::new(BIN);
    c.arg("attach")
        .arg(&sock)
        .args(["--headless", "--duration", "6", "-o", "/dev/null"])
        .args(["--max-mib", &BUDGET_MIB.to_string()]);
    let (rss, code) = peak_rss_of(c);
    peer.join().unwrap();
    assert_eq!(code, 0);
    assert!(rss < 64 << 20, "peak RSS {} MiB", rss >> 20);
}

/// A log replayed whole at `--max-mib 32` keeps its latest calls, as a replayed recording
/// keeps its latest proofs: 1.2 M `prover time` lines (23 MB) took 1.74 GB and 5 s, every call
/// held, then placed, then made events; now 15 MB and 0.45 s, and the report says how many
/// calls were not kept.
#[test]
fn a_log_of_many_calls_is_replayed_within_the_budget() {
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("calls.log");
    std::fs::write(&log, "prover time: 0.25s\n".repeat(300_000)).unwrap();
    let (rss, code) = peak_rss(&log, &["--max-mib", &BUDGET_MIB.to_string()]);
    assert_eq!(code, 0);
    assert!(rss < 64 << 20, "peak RSS {} MiB", rss >> 20);
    let report = report_within_budget(&log);
    assert!(
        report.contains("calls were not kept: within --max-mib a replay keeps the latest"),
        "{report}"
    );
}

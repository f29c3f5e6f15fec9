#![allow(dead_code)]
use probe_protocol::{
    AllocSample, Event, FrameBuilder, Hello, ProofBegin, ProofEnd, RecordingWriter, SpanBegin,
    SpanEnd,
};
use proofscope::app::{App, RunOpts};
use std::path::{Path, PathBuf};
use std::process::Command;

pub fn recording(name: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../recordings")
        .join(name)
}

/// Every recording in `recordings/`, by file name, sorted.
pub fn all_recordings() -> Vec<String> {
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../recordings");
    let mut names: Vec<String> = std::fs::read_dir(&dir)
        .unwrap()
        .filter_map(|e| e.ok()?.file_name().into_string().ok())
        .filter(|n| n.ends_with(".psrec"))
        .collect();
    names.sort();
    assert!(names.len() >= 10, "{names:?}");
    names
}

pub fn opts() -> RunOpts {
    RunOpts::default()
}

/// A replay of `name`, fully ingested, labelled with a stable source name.
pub fn replayed(name: &str) -> App {
    // Relative to the package root (cargo runs every test there): a log's path is part of its
    // report (calls name their lines), and an absolute one would differ on every checkout.
    let path = Path::new("../recordings").join(name);
    let mut app = App::replay(path, &opts()).unwrap();
    app.relabel(&format!("recordings/{name}"));
    read_through(&mut app);
    app
}

/// Reads a replay to its end. One `wait` reads for a slice of time only (50 ms), and a loaded
/// machine reads less in it: a snapshot of h200-overlap once showed 2 of its 3 proofs.
pub fn read_through(app: &mut App) {
    while app.wait(std::time::Duration::ZERO) {}
}

/// An example of `proofscope-probe`: `cargo test --workspace` builds it beside this package's
/// binaries; when it is missing (this package's tests alone), it is built now — into a target
/// directory of its own, so that the rlib the test crates were linked against stays as it is.
pub fn example(name: &str) -> PathBuf {
    let bin = std::path::Path::new(env!("CARGO_BIN_EXE_proofscope"));
    let profile = bin.parent().unwrap();
    let exe = profile.join("examples").join(name);
    if exe.exists() {
        return exe;
    }
    let dir = profile.parent().unwrap().join("capi");
    let status = std::process::Command::new(env!("CARGO"))
        .args(["build", "-p", "proofscope-probe", "--example", name])
        .env("CARGO_TARGET_DIR", &dir)
        .status()
        .expect("running cargo");
    assert!(status.success(), "building the {name} example");
    dir.join("debug").join("examples").join(name)
}

/// A session of `proofs` proofs, each an outer span (10 ms, or 70 ms for every
/// `ghost_every`-th proof, whose last 60 ms are a release on the proving thread: a flagged
/// gap) with 49 phases on two threads, a large release and an allocator sample: 104 events a
/// proof.
pub fn busy_session(path: &Path, proofs: u64, ghost_every: Option<u64>) -> u64 {
    busy_session_of(path, proofs, ghost_every, |_| "busy".into())
}

/// [`busy_session`] with the circuit of proof `i` (from 0) named by `circuit`.
pub fn busy_session_of(
    path: &Path,
    proofs: u64,
    ghost_every: Option<u64>,
    circuit: impl Fn(u64) -> String,
) -> u64 {
    let mut w = RecordingWriter::new(std::io::BufWriter::new(
        std::fs::File::create(path).unwrap(),
    ))
    .unwrap();
    let mut events = 0u64;
    let mut b = FrameBuilder::new(0);
    b.push(&Event::Hello(Box::new(Hello {
        protocol_major: 1,
        pid: 1,
        prover_name: "busy".into(),
        ..Default::default()
    })))
    .unwrap();
    let names = [
        "prove",
        "synthesis",
        "prep_msm",
        "ntt_msm_h",
        "batch_add",
        "tail_msm",
        "b_g2_msm",
        "epilogue",
    ];
    for (i, name) in names.iter().enumerate() {
        b.push(&Event::NameDef {
            id: i as u32 + 1,
            name: (*name).into(),
        })
        .unwrap();
    }
    for (id, name) in [(1, "main"), (2, "worker")] {
        b.push(&Event::ThreadDef {
            id,
            name: name.into(),
            os_tid: u64::from(id),
        })
        .unwrap();
    }
    for i in 0..proofs {
        let t0 = i * 100_000_000;
        let ghost = ghost_every.is_some_and(|k| i % k == k - 1);
        let end = if ghost {
            t0 + 70_000_000
        } else {
            t0 + 9_900_000
        };
        let (p, outer) = (i + 1, i * 100 + 1);
        let mut v = vec![
            Event::ProofBegin(Box::new(ProofBegin {
                ts: t0,
                proof: p,
                span: outer,
                circuit: circuit(i),
                ..Default::default()
            })),
            Event::SpanBegin(SpanBegin {
                ts: t0,
                span: outer,
                parent: None,
                proof: Some(p),
                name: 1,
                thread: 1,
            }),
        ];
        for k in 0..49u64 {
            let s = outer + 1 + k;
            let a = t0 + 1000 + k * 150_000;
            v.push(Event::SpanBegin(SpanBegin {
                ts: a,
                span: s,
                parent: Some(outer),
                proof: Some(p),
                name: 2 + (k % 7) as u32,
                thread: 1 + (k % 2) as u32,
            }));
            v.push(Event::SpanEnd(SpanEnd {
                ts: a + 100_000,
                span: s,
            }));
        }
        v.push(Event::Release(probe_protocol::BlockEvent {
            ts: if ghost {
                t0 + 9_900_000
            } else {
                t0 + 9_000_000
            },
            bytes: 1 << 30,
            inside_ns: if ghost { 60_000_000 } else { 500_000 },
            thread: 1,
            span: Some(outer),
            stack: None,
        }));
        v.push(Event::AllocSample(AllocSample {
            ts: t0 + 9_600_000,
            live_bytes: 1 << 30,
            ..Default::default()
        }));
        v.push(Event::SpanEnd(SpanEnd {
            ts: end,
            span: outer,
        }));
        v.push(Event::ProofEnd(Box::new(ProofEnd {
            ts: end + 1,
            proof: p,
            ok: true,
            ..Default::default()
        })));
        for e in v {
            events += 1;
            b.push(&e).unwrap();
        }
        if b.body_len() > 48 << 10 {
            w.write_frame(b.finish().unwrap()).unwrap();
            b = FrameBuilder::new(t0);
        }
    }
    w.write_frame(b.finish().unwrap()).unwrap();
    events
}

/// The `proofscope` binary under test.
pub const BIN: &str = env!("CARGO_BIN_EXE_proofscope");

/// `proofscope replay FILE --format json`, parsed; the replay must succeed.
pub fn replay_json(file: &Path) -> serde_json::Value {
    let out = Command::new(BIN)
        .arg("replay")
        .arg(file)
        .args(["--format", "json"])
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "replay {}: {}",
        file.display(),
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).unwrap()
}

/// Parameters are cached across test runs here (the first run generates them).
pub fn cache() -> PathBuf {
    PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("proofscope-cache")
}

/// How long a stopped child has to exit after SIGTERM before it is killed.
const STOP_GRACE: std::time::Duration = std::time::Duration::from_secs(3);

/// A child process stopped and reaped when dropped, so a failing test leaves none behind:
/// SIGTERM first (a prover says goodbye and removes its socket), SIGKILL after
/// [`STOP_GRACE`].
#[derive(Debug)]
pub struct Running(pub std::process::Child);

impl Running {
    /// Stops the child as a drop does, now.
    pub fn stop(&mut self) {
        if self.0.try_wait().ok().flatten().is_some() {
            return;
        }
        // SAFETY: signalling our own child; failure (already gone) is harmless.
        unsafe { libc::kill(self.0.id() as i32, libc::SIGTERM) };
        let deadline = std::time::Instant::now() + STOP_GRACE;
        while std::time::Instant::now() < deadline {
            if self.0.try_wait().ok().flatten().is_some() {
                return;
            }
            std::thread::sleep(std::time::Duration::from_millis(20));
        }
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

impl Drop for Running {
    fn drop(&mut self) {
        self.stop();
    }
}

/// Starts example `name` with `args`, its probe serving on `sock` (no NVML sampling), and
/// waits up to 30 s for the socket.
pub fn serve_example(name: &str, args: &[&str], sock: &Path) -> Running {
    use std::process::{Command, Stdio};
    let child = Running(
        Command::new(example(name))
            .args(args)
            .env("PROOFSCOPE_SOCKET", sock)
            .env("PROOFSCOPE_GPU_SAMPLE_MS", "0")
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap(),
    );
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(30);
    while !sock.exists() {
        assert!(
            std::time::Instant::now() < deadline,
            "the {name} example opened no socket"
        );
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    child
}

/// The lines of the report about completed proof `n` (its header to the next proof).
pub fn proof(report: &str, n: u32) -> String {
    let head = format!("proof #{n}:");
    report
        .lines()
        .skip_while(|l| !l.starts_with(&head))
        .take_while(|l| l.starts_with(&head) || !l.starts_with("proof #"))
        .collect::<Vec<_>>()
        .join("\n")
}

/// The C++ example of examples/cpp-c2 and the C-facing libraries it links or preloads.
pub mod cpp {
    use super::BIN;
    use std::path::{Path, PathBuf};
    use std::process::Command;

    pub fn target() -> PathBuf {
        Path::new(BIN).parent().unwrap().to_owned()
    }

    /// A C-facing library of the workspace (`libproofscope_probe.a`, `libproofscope_preload.so`),
    /// built now by cargo into a target directory of its own: `cargo test` does not produce these
    /// files, and building them into the tests' own directory would replace the rlib the other
    /// test crates were linked against (its name carries no hash: the crate is also a cdylib).
    pub fn library(file: &str) -> PathBuf {
        // Both libraries in one build, once for the whole test binary: a build running beside
        // the other test's prover would slow its proofs and move the flag threshold.
        static DIR: std::sync::OnceLock<PathBuf> = std::sync::OnceLock::new();
        DIR.get_or_init(|| {
            // target/<profile> → target/capi
            let dir = target().parent().unwrap().join("capi");
            let st = Command::new(env!("CARGO"))
                .args([
                    "build",
                    "-p",
                    "proofscope-probe",
                    "-p",
                    "proofscope-preload",
                ])
                .env("CARGO_TARGET_DIR", &dir)
                .status()
                .unwrap();
            assert!(st.success(), "building the probe and preload libraries");
            dir.join("debug")
        })
        .join(file)
    }

    /// One prover at a time: the sync ghost's share of a proof is what the test reads, and a
    /// second prover paging in its vectors on the same 2 cores lengthens the proofs (and with
    /// them the 5 % flag threshold) past the release's time.
    pub static ONE_AT_A_TIME: std::sync::Mutex<()> = std::sync::Mutex::new(());

    /// Builds c2.cpp (with the probe when `linked`); `None` without a C++ compiler.
    pub fn build(dir: &Path, linked: bool) -> Option<PathBuf> {
        let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
        let out = dir.join(if linked { "c2-linked" } else { "c2-plain" });
        let mut c = Command::new("c++");
        c.args([
            "-std=c++17",
            "-O2",
            // Line tables: the release stacks name the destructor and its file:line.
            "-g",
            "-Wall",
            "-Wextra",
            "-Werror",
            "-pthread",
        ])
        .arg(root.join("examples/cpp-c2/c2.cpp"))
        .arg("-o")
        .arg(&out);
        if linked {
            c.arg("-DWITH_PROOFSCOPE")
                .arg("-I")
                .arg(root.join("probe/include"))
                .arg(library("libproofscope_probe.a"))
                .args([
                    "-ldl",
                    "-lgcc_s",
                    "-lutil",
                    "-lrt",
                    "-lpthread",
                    "-lm",
                    "-lc",
                ]);
        }
        compiled(c, out)
    }

    /// Builds the C program `tests/programs/NAME.c` into `dir` (warnings are errors), linked
    /// with `libs`; `None` without a compiler.
    pub fn c_program(dir: &Path, name: &str, libs: &[&str]) -> Option<PathBuf> {
        let src = Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("tests/programs")
            .join(format!("{name}.c"));
        let out = dir.join(name);
        let mut c = Command::new("c++");
        c.args(["-x", "c", "-O2", "-Wall", "-Wextra", "-Werror"])
            .arg(&src)
            .arg("-o")
            .arg(&out)
            .args(libs);
        compiled(c, out)
    }

    /// Runs the compiler command `c` that writes `out`; `None` without a compiler (CI
    /// installs one, .ci/run: there a missing one is a failure, not a skip).
    pub fn compiled(mut c: Command, out: PathBuf) -> Option<PathBuf> {
        match c.status() {
            Ok(s) => {
                assert!(s.success(), "c++ failed writing {}", out.display());
                Some(out)
            }
            Err(e) if std::env::var_os("CI").is_some() => panic!("CI without a C++ compiler: {e}"),
            Err(_) => {
                println!("SKIPPED: no C++ compiler (c++) installed");
                None
            }
        }
    }
}

/// A terminal for the dashboard: a tmux server of its own (killed when dropped), one window of
/// a given size running a shell command.
pub mod load {
    use std::sync::Arc;
    use std::sync::atomic::{AtomicBool, Ordering};

    /// Busy threads and a memory balloon until dropped.
    pub struct Load {
        stop: Arc<AtomicBool>,
        threads: Vec<std::thread::JoinHandle<()>>,
    }

    impl Load {
        /// `busy` spinning threads, and one that fills and frees 1 GiB over and over.
        pub fn start(busy: usize) -> Load {
            let stop = Arc::new(AtomicBool::new(false));
            let mut threads = Vec::new();
            for i in 0..busy {
                let stop = stop.clone();
                threads.push(
                    std::thread::Builder::new()
                        .name(format!("busy-{i}"))
                        .spawn(move || {
                            let mut x = 0u64;
                            while !stop.load(Ordering::Relaxed) {
                                x = std::hint::black_box(x.wrapping_mul(31).wrapping_add(7));
                            }
                        })
                        .unwrap(),
                );
            }
            let s = stop.clone();
            threads.push(
                std::thread::Builder::new()
                    .name("balloon".into())
                    .spawn(move || {
                        while !s.load(Ordering::Relaxed) {
                            let v = std::hint::black_box(vec![1u8; 1 << 30]);
                            drop(v);
                        }
                    })
                    .unwrap(),
            );
            Load { stop, threads }
        }
    }

    impl Drop for Load {
        fn drop(&mut self) {
            self.stop.store(true, Ordering::Relaxed);
            for t in self.threads.drain(..) {
                let _ = t.join();
            }
        }
    }
}

pub mod tmux {
    use std::process::{Command, Stdio};
    use std::time::{Duration, Instant};

    /// Whether tmux runs here; CI installs it (.ci/run), so there a missing one is a failure.
    pub fn available() -> bool {
        let ok = Command::new("tmux")
            .arg("-V")
            .stdout(Stdio::null())
            .status()
            .is_ok_and(|s| s.success());
        if !ok {
            assert!(
                std::env::var_os("CI").is_none(),
                "CI without tmux (apt-get install tmux)"
            );
            eprintln!("SKIPPED: tmux is not installed (apt-get install tmux)");
        }
        ok
    }

    #[derive(Debug)]
    pub struct Tmux {
        name: String,
    }

    impl Tmux {
        /// Starts `script` (a shell command line) in a `width`×`height` window; `tag` names
        /// the server beside this test process's id.
        pub fn start(tag: &str, width: u16, height: u16, script: &str) -> Tmux {
            let t = Tmux {
                name: format!("proofscope-{tag}-{}", std::process::id()),
            };
            let (w, h) = (width.to_string(), height.to_string());
            t.run(&[
                "new-session",
                "-d",
                "-s",
                &t.name,
                "-x",
                &w,
                "-y",
                &h,
                script,
            ]);
            t
        }

        fn run(&self, args: &[&str]) -> String {
            let out = Command::new("tmux")
                .args(["-L", &self.name])
                .args(args)
                .output()
                .unwrap();
            String::from_utf8_lossy(&out.stdout).into_owned()
        }

        /// The screen as text.
        pub fn screen(&self) -> String {
            self.run(&["capture-pane", "-p", "-t", &self.name])
        }

        /// The screen with its escape codes (colours, bold, reverse) as tmux keeps them.
        pub fn screen_with_escapes(&self) -> String {
            self.run(&["capture-pane", "-e", "-p", "-t", &self.name])
        }

        /// Resizes the window (the dashboard redraws at the new size).
        pub fn resize(&self, width: u16, height: u16) {
            let (w, h) = (width.to_string(), height.to_string());
            self.run(&["resize-window", "-t", &self.name, "-x", &w, "-y", &h]);
        }

        /// Sends one key (tmux's names: `q`, `Tab`, `Space`, `C-c`).
        pub fn key(&self, k: &str) {
            self.run(&["send-keys", "-t", &self.name, k]);
        }

        /// A tmux format variable of the window, e.g. `#{alternate_on}`.
        pub fn display(&self, what: &str) -> String {
            self.run(&["display", "-p", "-t", &self.name, what])
                .trim()
                .to_owned()
        }

        /// Waits up to `secs` for the screen to satisfy `f`; the last screen either way.
        pub fn wait(&self, secs: u64, f: impl Fn(&str) -> bool) -> String {
            let deadline = Instant::now() + Duration::from_secs(secs);
            loop {
                let s = self.screen();
                if f(&s) || Instant::now() > deadline {
                    return s;
                }
                std::thread::sleep(Duration::from_millis(100));
            }
        }
    }

    impl Drop for Tmux {
        fn drop(&mut self) {
            self.run(&["kill-server"]);
        }
    }
}

/// A fake prover's side of a viewer's connection on `listener`: accepted, the viewer's
/// Subscribe read, `Hello` (named `prover`) and `LiveStart` sent.
pub fn greet_viewer(
    listener: &std::os::unix::net::UnixListener,
    prover: &str,
) -> std::os::unix::net::UnixStream {
    use probe_protocol::{Event, Hello, encode_frame};
    use std::io::{Read, Write};
    let (mut s, _) = listener.accept().unwrap();
    let mut sub = [0u8; 256];
    let _ = s.read(&mut sub);
    let hello = Event::Hello(Box::new(Hello {
        protocol_major: 1,
        prover_name: prover.into(),
        pid: 7,
        ..Default::default()
    }));
    s.write_all(&encode_frame(0, &[hello, Event::LiveStart { ts: 0 }]).unwrap())
        .unwrap();
    s
}

/// Serves the frames of a recording to every client that subscribes, as a prover would.
pub fn serve_recording(sock: PathBuf, rec: PathBuf) {
    serve_recording_as(sock, rec, true);
}

/// [`serve_recording`] as a prover that is still running when its recording ends: its
/// Goodbye is held back, so a watcher keeps it up (the alerts gated on `up` can hold).
pub fn serve_recording_running(sock: PathBuf, rec: PathBuf) {
    serve_recording_as(sock, rec, false);
}

fn serve_recording_as(sock: PathBuf, rec: PathBuf, goodbye: bool) {
    let listener = std::os::unix::net::UnixListener::bind(&sock).unwrap();
    std::thread::Builder::new()
        .name("recorded-prover".into())
        .spawn(move || {
            for conn in listener.incoming() {
                let Ok(s) = conn else { continue };
                let rec = rec.clone();
                std::thread::Builder::new()
                    .name("recorded-viewer".into())
                    .spawn(move || serve_one(s, &rec, goodbye))
                    .unwrap();
            }
        })
        .unwrap();
}

/// One client of a recorded prover: the recording's frames, then an open, quiet connection
/// (a prover with nothing more to say) until the client leaves.
pub fn serve_one(mut s: std::os::unix::net::UnixStream, rec: &Path, goodbye: bool) {
    use std::io::{Read, Write};
    // A liveness check connects and closes; a subscriber sends its Subscribe.
    s.set_read_timeout(Some(std::time::Duration::from_millis(500)))
        .unwrap();
    let mut len = [0u8; 4];
    if s.read_exact(&mut len).is_err() {
        return;
    }
    let mut r = probe_protocol::RecordingReader::new(std::fs::File::open(rec).unwrap()).unwrap();
    let mut last_ts = 0;
    while let Ok(Some(f)) = r.next_raw() {
        let decoded = probe_protocol::decode_frame(&f.bytes()[4..]);
        if let Ok(d) = &decoded {
            last_ts = d
                .events
                .iter()
                .filter_map(Event::ts)
                .fold(last_ts, u64::max);
        }
        let frame = match decoded {
            Ok(d) if !goodbye && d.events.iter().any(|e| matches!(e, Event::Goodbye { .. })) => {
                let rest: Vec<Event> = d
                    .events
                    .into_iter()
                    .filter(|e| !matches!(e, Event::Goodbye { .. }))
                    .collect();
                if rest.is_empty() {
                    continue;
                }
                probe_protocol::encode_frame(d.base_ns, &rest).unwrap()
            }
            _ => f.bytes().to_vec(),
        };
        if s.write_all(&frame).is_err() {
            return;
        }
    }
    if !goodbye {
        // Still running: a heartbeat every 0.5 s moves its session time on, as a probe's does,
        // so that its last proof settles.
        loop {
            std::thread::sleep(std::time::Duration::from_millis(500));
            last_ts += 500_000_000;
            let beat =
                probe_protocol::encode_frame(last_ts, &[Event::Heartbeat { ts: last_ts }]).unwrap();
            if s.write_all(&beat).is_err() {
                return;
            }
        }
    }
    let _ = s.set_read_timeout(None);
    let _ = std::io::copy(&mut s, &mut std::io::sink());
}

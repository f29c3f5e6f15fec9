//! What `LD_PRELOAD=libproofscope_preload.so` adds to a program's allocations: a small
//! malloc+free pair (64 B, the bulk of any program's calls) and a large one (8 MiB: above the
//! large-block threshold, so timed and reported, and served by mmap/munmap) — and to its log
//! lines, each write to stderr stamped (protocol `OutputWrite`): a 64 B `write(2, …)` and an
//! unbuffered `fprintf` of a `CUZK_TIMING` line (stderr goes to /dev/null).
//!
//! The same binary runs as the measured child, with and without the library, alternating the
//! order each round (ABBA), so both sides see the same machine state; the figure is the median
//! of the per-round differences with a bootstrap 95% interval. Each child waits until the
//! library's own session has started (it starts after `SELF_START_DELAY`), so what is measured
//! is the steady state of a watched program.
//!
//! `cargo bench -p proofscope-preload --bench hooks [-- ROUNDS]`
use std::hint::black_box;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

const SMALL: usize = 64;
const LARGE: usize = 8 << 20;
const SMALL_PAIRS: u64 = 2_000_000;
const LARGE_PAIRS: u64 = 2_000;
/// Log lines written per batch: more than the probe's queue holds between two collector
/// cycles would be dropped (and counted), which costs less than a queued one.
const LINES: u64 = 4_000;
/// Timed batches per child; the child reports their median.
const BATCHES: usize = 9;

/// Median ns per malloc+free pair of `size` bytes over [`BATCHES`] batches of `pairs`.
fn measure(size: usize, pairs: u64) -> f64 {
    let mut per = Vec::with_capacity(BATCHES);
    for _ in 0..BATCHES {
        let t = Instant::now();
        for _ in 0..pairs {
            // SAFETY: malloc of a non-zero size; the block (or null) goes straight to free.
            unsafe {
                let p = libc::malloc(black_box(size));
                libc::free(black_box(p));
            }
        }
        per.push(t.elapsed().as_nanos() as f64 / pairs as f64);
    }
    median(&mut per)
}

fn median(v: &mut [f64]) -> f64 {
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}

/// Median ns per call of `call` over [`BATCHES`] batches of [`LINES`] calls, a pause between
/// batches for the collector to drain what was queued.
fn per_line(mut call: impl FnMut(u64)) -> f64 {
    let mut per = Vec::with_capacity(BATCHES);
    for _ in 0..BATCHES {
        std::thread::sleep(Duration::from_millis(120));
        let t = Instant::now();
        for i in 0..LINES {
            call(i);
        }
        per.push(t.elapsed().as_nanos() as f64 / LINES as f64);
    }
    median(&mut per)
}

/// The child: waits for the library's own session (when preloaded), then prints
/// `small large write fprintf` in ns per pair or per line.
fn child() {
    std::thread::sleep(Duration::from_millis(600));
    let small = measure(SMALL, SMALL_PAIRS);
    let large = measure(LARGE, LARGE_PAIRS);
    let line = [b'x'; 63].iter().chain(b"\n").copied().collect::<Vec<u8>>();
    let write = per_line(|_| {
        // SAFETY: writes a buffer we own to fd 2.
        unsafe { libc::write(2, line.as_ptr().cast(), line.len()) };
    });
    // SAFETY: a stdio stream on fd 2, unbuffered as stderr is; it lives until exit.
    let err = unsafe {
        let f = libc::fdopen(2, c"w".as_ptr());
        libc::setvbuf(f, std::ptr::null_mut(), libc::_IONBF, 0);
        f
    };
    let fprintf = per_line(|i| {
        // SAFETY: a valid stream and format with matching arguments.
        unsafe {
            libc::fprintf(
                err,
                c"CUZK_TIMING: gpu_tid=%d tail_msm_ms=%d\n".as_ptr(),
                (i % 2) as libc::c_int,
                black_box(i as libc::c_int),
            )
        };
    });
    println!("{small} {large} {write} {fprintf}");
}

/// `target/release/libproofscope_preload.so`, brought up to date first: `cargo bench` builds
/// the bench, not the cdylib it measures.
fn library() -> PathBuf {
    let exe = std::env::current_exe().expect("the bench's own path");
    let profile_dir = exe
        .parent()
        .and_then(Path::parent)
        .expect("target/<profile>");
    let st = Command::new(env!("CARGO"))
        .args(["build", "--release", "-p", "proofscope-preload"])
        .env("CARGO_TARGET_DIR", profile_dir.parent().expect("target/"))
        .status()
        .expect("running cargo");
    assert!(st.success(), "building proofscope-preload");
    profile_dir.join("libproofscope_preload.so")
}

type Figures = [f64; 4];

fn run(lib: Option<&Path>, sock: &Path) -> Figures {
    let mut c = Command::new(std::env::current_exe().expect("the bench's own path"));
    c.env("PROOFSCOPE_HOOKS_CHILD", "1")
        .env("PROOFSCOPE_SOCKET", sock)
        .env("PROOFSCOPE_GPU_SAMPLE_MS", "0")
        .stderr(std::process::Stdio::null());
    if let Some(lib) = lib {
        c.env("LD_PRELOAD", lib);
    }
    let out = c.output().expect("running the child");
    assert!(out.status.success(), "child failed: {out:?}");
    let text = String::from_utf8_lossy(&out.stdout);
    let v: Vec<f64> = text
        .split_whitespace()
        .filter_map(|x| x.parse::<f64>().ok())
        .collect();
    v.try_into()
        .unwrap_or_else(|_| panic!("child printed {text:?}"))
}

/// Median of `d` and a bootstrap 95% interval of the median (xorshift resampling: no
/// dependency for 2000 draws).
fn median_ci(d: &[f64]) -> (f64, f64, f64) {
    let mut seed = 0x9e37_79b9_7f4a_7c15u64;
    let mut next = move || {
        seed ^= seed << 13;
        seed ^= seed >> 7;
        seed ^= seed << 17;
        seed
    };
    let mut meds: Vec<f64> = (0..2000)
        .map(|_| {
            let mut s: Vec<f64> = (0..d.len())
                .map(|_| d[(next() % d.len() as u64) as usize])
                .collect();
            median(&mut s)
        })
        .collect();
    meds.sort_by(f64::total_cmp);
    let mut all = d.to_vec();
    (median(&mut all), meds[50], meds[1949])
}

fn main() {
    if std::env::var_os("PROOFSCOPE_HOOKS_CHILD").is_some() {
        child();
        return;
    }
    // `cargo bench` passes `--bench`; a bare number is the round count.
    let rounds: usize = std::env::args()
        .skip(1)
        .find_map(|a| a.parse().ok())
        .unwrap_or(20);
    let lib = library();
    let dir = std::env::temp_dir().join(format!("proofscope-hooks-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("a temp dir");
    let sock = dir.join("hooks.sock");
    let (mut plain, mut pre) = (Vec::new(), Vec::new());
    for r in 0..rounds {
        let order = if r % 2 == 0 {
            [false, true]
        } else {
            [true, false]
        };
        for preload in order {
            let m = run(preload.then_some(lib.as_path()), &sock);
            if preload { pre.push(m) } else { plain.push(m) }
        }
    }
    let _ = std::fs::remove_dir_all(&dir);
    println!(
        "LD_PRELOAD=libproofscope_preload.so, {rounds} ABBA rounds, ns per malloc+free pair or per line to stderr"
    );
    for (i, label) in ["64 B", "8 MiB", "write", "fprintf"].iter().enumerate() {
        let mut p: Vec<f64> = plain.iter().map(|m| m[i]).collect();
        let mut q: Vec<f64> = pre.iter().map(|m| m[i]).collect();
        let diffs: Vec<f64> = plain.iter().zip(&pre).map(|(a, b)| b[i] - a[i]).collect();
        let (d, lo, hi) = median_ci(&diffs);
        println!(
            "{label:>7}: glibc {:.1}, preloaded {:.1}, added {d:+.1} [{lo:+.1}, {hi:+.1}]",
            median(&mut p),
            median(&mut q)
        );
    }
}

//! The C ABI from C and C++: `include/proofscope.h` compiled with the system C compiler in a
//! program that calls every function, well and badly (tests/c/api_test.c), and
//! `include/proofscope.hpp` from C++17 (tests/c/hpp_test.cpp); both linked against
//! libproofscope_probe.a. The recordings they write say what they did. Skipped, with a note,
//! where no C/C++ compiler is installed.

use probe_protocol::{Event, read_all};
use std::path::{Path, PathBuf};
use std::process::Command;

/// `libproofscope_probe.a`, built now by cargo into a target directory of its own: `cargo
/// test` does not produce it, and building it into the tests' own directory would replace the
/// rlib the other test crates were linked against (no hash in its name: the crate is also a
/// cdylib). Built once per test process.
fn static_lib() -> PathBuf {
    static BUILT: std::sync::OnceLock<PathBuf> = std::sync::OnceLock::new();
    BUILT
        .get_or_init(|| {
            let exe = std::env::current_exe().unwrap();
            // target/<profile>/deps/<test> → target/capi
            let dir = exe.ancestors().nth(3).unwrap().join("capi");
            let st = Command::new(env!("CARGO"))
                .args(["build", "-p", "proofscope-probe"])
                .env("CARGO_TARGET_DIR", &dir)
                .status()
                .unwrap();
            assert!(st.success(), "building proofscope-probe");
            dir.join("debug").join("libproofscope_probe.a")
        })
        .clone()
}

/// Libraries a Rust static library needs (`--print native-static-libs`).
const NATIVE: &[&str] = &[
    "-ldl",
    "-lgcc_s",
    "-lutil",
    "-lrt",
    "-lpthread",
    "-lm",
    "-lc",
];

/// Compiles `source` with `compiler` and `flags` into `out`; false (and a note) when the
/// compiler is missing.
fn compile(compiler: &str, flags: &[&str], source: &str, out: &Path) -> bool {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR"));
    let lib = static_lib();
    assert!(lib.exists(), "{} was not built", lib.display());
    let st = Command::new(compiler)
        .args(flags)
        .arg("-I")
        .arg(dir.join("include"))
        .arg(dir.join("tests/c").join(source))
        .arg(&lib)
        .args(NATIVE)
        .arg("-o")
        .arg(out)
        .status();
    match st {
        Ok(s) => {
            assert!(s.success(), "{compiler} {source} failed");
            true
        }
        // CI installs the compilers (.ci/run): there a missing one is a failure, not a skip.
        Err(e) if std::env::var_os("CI").is_some() => panic!("CI without {compiler}: {e}"),
        Err(_) => {
            println!("SKIPPED: {compiler} is not installed");
            false
        }
    }
}

fn run(exe: &Path, dir: &Path, rec: &Path) -> Vec<Event> {
    let out = Command::new(exe)
        .arg(rec)
        .env("PROOFSCOPE_SOCKET", dir.join("c.sock"))
        .env("PROOFSCOPE_GPU_SAMPLE_MS", "0")
        .env("PROOFSCOPE_LARGE_BLOCK", "1M")
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}: {}{}",
        exe.display(),
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    let r = read_all(std::fs::File::open(rec).unwrap()).unwrap();
    assert!(r.errors.is_empty() && r.truncation.is_none());
    r.frames.into_iter().flat_map(|f| f.events).collect()
}

fn name_of(events: &[Event], id: u32) -> String {
    events
        .iter()
        .find_map(|e| match e {
            Event::NameDef { id: i, name } if *i == id => Some(name.clone()),
            _ => None,
        })
        .unwrap_or_default()
}

#[test]
fn every_c_function_does_what_the_header_says() {
    let dir = tempfile::tempdir().unwrap();
    let exe = dir.path().join("api_test");
    if !compile(
        "cc",
        &["-std=c99", "-Wall", "-Wextra", "-Werror"],
        "api_test.c",
        &exe,
    ) {
        return;
    }
    let events = run(&exe, dir.path(), &dir.path().join("c.psrec"));
    let spans: Vec<(String, u64, Option<u64>)> = events
        .iter()
        .filter_map(|e| match e {
            Event::SpanBegin(b) => Some((name_of(&events, b.name), b.span, b.parent)),
            _ => None,
        })
        .collect();
    let id = |n: &str| spans.iter().find(|s| s.0 == n).map(|s| s.1);
    assert_eq!(
        spans.iter().map(|s| s.0.as_str()).collect::<Vec<_>>(),
        ["prove", "phase", "child", "dynamic"],
        "{spans:?}"
    );
    assert_eq!(
        spans[1].2,
        id("prove"),
        "phase under the proof's outer span"
    );
    assert_eq!(spans[2].2, id("phase"), "child under the handle");
    assert_eq!(spans[3].2, id("phase"), "dynamic under the adopted span");
    let has = |f: &dyn Fn(&Event) -> bool| events.iter().any(f);
    assert!(has(
        &|e| matches!(e, Event::Marker(m) if m.text.as_deref() == Some("text"))
    ));
    assert!(has(
        &|e| matches!(e, Event::GpuSpan(g) if g.end - g.start == 1000 && g.stream == 1)
    ));
    assert!(has(
        &|e| matches!(e, Event::Alloc(b) if b.bytes == 8 << 20 && b.inside_ns == 1000)
    ));
    assert!(has(
        &|e| matches!(e, Event::Release(b) if b.bytes == 8 << 20 && b.span == id("phase"))
    ));
    assert!(has(
        &|e| matches!(e, Event::ProofEnd(p) if p.ok && p.verification == probe_protocol::Verification::Valid)
    ));
    assert!(has(
        &|e| matches!(e, Event::Goodbye { reason, .. } if reason == "done")
    ));
}

#[test]
fn the_cpp_header_nests_spans_across_threads_and_reports_vectors() {
    let dir = tempfile::tempdir().unwrap();
    let exe = dir.path().join("hpp_test");
    if !compile(
        "c++",
        &["-std=c++17", "-Wall", "-Wextra", "-Werror", "-pthread"],
        "hpp_test.cpp",
        &exe,
    ) {
        return;
    }
    let events = run(&exe, dir.path(), &dir.path().join("hpp.psrec"));
    let begin = |n: &str| {
        events.iter().find_map(|e| match e {
            Event::SpanBegin(b) if name_of(&events, b.name) == n => Some(*b),
            _ => None,
        })
    };
    let (prove, synth, prep, nested) = (
        begin("prove").unwrap(),
        begin("synthesis").unwrap(),
        begin("prep_msm").unwrap(),
        begin("nested").unwrap(),
    );
    assert_eq!(synth.parent, Some(prove.span));
    assert_eq!(prep.parent, Some(prove.span));
    assert_ne!(prep.thread, prove.thread, "prep_msm ran on the worker");
    assert_eq!(
        nested.parent,
        Some(prove.span),
        "nested under the adopted outer span"
    );
    let blocks: Vec<(bool, u64, Option<u64>)> = events
        .iter()
        .filter_map(|e| match e {
            Event::Alloc(b) => Some((false, b.bytes, b.span)),
            Event::Release(b) => Some((true, b.bytes, b.span)),
            _ => None,
        })
        .collect();
    let mib32 = 32 << 20;
    assert!(
        blocks.contains(&(false, mib32, Some(synth.span))),
        "{blocks:?}"
    );
    assert!(
        blocks.contains(&(true, mib32, Some(prove.span))),
        "{blocks:?}"
    );
}

/// `proofscope_cuda.hpp` against a stand-in CUDA runtime (tests/c/fake_cuda): CI has no GPU,
/// but the header's logic — anchoring, the resolver thread, the event pool, failures, flush —
/// is all host code. (The real runtime's recording is `recordings/cpp-cuda.psrec`.)
#[test]
fn the_cuda_header_reports_kernels_under_their_phase_without_waiting() {
    let dir = tempfile::tempdir().unwrap();
    let exe = dir.path().join("cuda_hpp_test");
    let fake = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/c/fake_cuda");
    let include = format!("-I{}", fake.display());
    if !compile(
        "c++",
        &[
            "-std=c++17",
            "-Wall",
            "-Wextra",
            "-Werror",
            "-pthread",
            &include,
        ],
        "cuda_hpp_test.cpp",
        &exe,
    ) {
        return;
    }
    let events = run(&exe, dir.path(), &dir.path().join("cuda.psrec"));
    let begin = |n: &str| {
        events
            .iter()
            .find_map(|e| match e {
                Event::SpanBegin(b) if name_of(&events, b.name) == n => Some(*b),
                _ => None,
            })
            .unwrap_or_else(|| panic!("no span {n}"))
    };
    let (ntt_phase, tail_phase) = (begin("ntt_msm_h"), begin("tail_msm"));
    let gpu: Vec<(String, u64, u64, u32, u32, Option<u64>)> = events
        .iter()
        .filter_map(|e| match e {
            Event::GpuSpan(g) => Some((
                name_of(&events, g.name),
                g.start,
                g.end,
                g.device,
                g.stream,
                g.span,
            )),
            _ => None,
        })
        .collect();
    let names: Vec<&str> = gpu.iter().map(|g| g.0.as_str()).collect();
    assert_eq!(
        names,
        ["ntt", "msm", "tail"],
        "the failed record lost 'lost' only"
    );
    let ms = |g: &(String, u64, u64, u32, u32, Option<u64>)| (g.2 - g.1) as f64 / 1e6;
    // Durations from the events, within the stand-in's scheduling slack.
    for (g, want) in gpu.iter().zip([40.0, 60.0, 30.0]) {
        assert!(
            (ms(g) - want).abs() < 8.0,
            "{} lasted {:.1} ms, not {want}",
            g.0,
            ms(g)
        );
        assert_eq!((g.3, g.4), (0, 3), "device 0, stream id 3");
    }
    // Back to back on the stream, after the phase that launched them began.
    assert!(gpu[1].1 >= gpu[0].2 && gpu[1].1 - gpu[0].2 < 2_000_000);
    assert!(gpu[0].1 + 2_000_000 >= ntt_phase.ts);
    assert_eq!(gpu[0].5, Some(ntt_phase.span));
    assert_eq!(gpu[1].5, Some(ntt_phase.span));
    assert_eq!(gpu[2].5, Some(tail_phase.span));
}

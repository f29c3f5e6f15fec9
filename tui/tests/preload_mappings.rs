//! The allocator probe (`LD_PRELOAD`) counts memory, not address space: a program that
//! reserves 64 GiB `PROT_NONE` (as CUDA's memory pool reserves 300 GB: supraseal's live bytes
//! read 318.8 GB beside an RSS of 4.9 GB), trims it, commits 64 MiB inside it and commits and
//! decommits 16 MiB more, besides mapping a file's 8 MiB and 48 MiB of anonymous memory and
//! allocating 32 MiB, shows the memory alone — as live bytes and as blocks — and live bytes
//! fall back when it is all gone. The program is tests/programs/reserve_map.c.

mod common;

use common::cpp::{c_program, library};
use probe_protocol::Event;
use std::path::Path;
use std::process::Command;

const MIB: u64 = 1 << 20;
const GIB: u64 = 1 << 30;

/// Sizes of the session's allocations and releases, and its allocator samples' live bytes.
fn blocks_and_live(rec: &Path) -> (Vec<u64>, Vec<u64>, Vec<u64>) {
    let r = probe_protocol::read_all(std::fs::File::open(rec).unwrap()).unwrap();
    assert!(r.errors.is_empty(), "{:?}", r.errors);
    let (mut allocs, mut releases, mut live) = (Vec::new(), Vec::new(), Vec::new());
    for f in &r.frames {
        for e in &f.events {
            match e {
                Event::Alloc(b) => allocs.push(b.bytes),
                Event::Release(b) => releases.push(b.bytes),
                Event::AllocSample(s) => live.push(s.live_bytes),
                _ => {}
            }
        }
    }
    (allocs, releases, live)
}

/// Builds tests/programs/NAME.c and runs it under the preload, its session recorded from the
/// first instant; the recording, or `None` without a compiler.
fn recorded_run(dir: &Path, name: &str, args: &[&std::ffi::OsStr]) -> Option<std::path::PathBuf> {
    let exe = c_program(dir, name, &[])?;
    let rec = dir.join("session.psrec");
    let out = Command::new(&exe)
        .args(args)
        .env("LD_PRELOAD", library("libproofscope_preload.so"))
        .env("PROOFSCOPE_SOCKET", "none")
        .env("PROOFSCOPE_RECORD", &rec)
        .env("PROOFSCOPE_PRELOAD_DELAY_MS", "0")
        .output()
        .unwrap();
    assert!(out.status.success(), "{out:?}");
    Some(rec)
}

#[test]
fn a_reservation_and_what_is_mapped_inside_it_are_not_memory() {
    let dir = tempfile::tempdir().unwrap();
    let scratch = dir.path().join("scratch");
    let Some(rec) = recorded_run(dir.path(), "reserve_map", &[scratch.as_os_str()]) else {
        return;
    };
    let (allocs, releases, live) = blocks_and_live(&rec);
    // The memory: the file's 8 MiB and the 48 MiB mapping exactly, the malloc block in a chunk
    // a page larger.
    let malloc_block = |b: &u64| (32 * MIB..33 * MIB).contains(b);
    for (what, blocks) in [("allocations", &allocs), ("releases", &releases)] {
        assert!(blocks.contains(&(8 * MIB)), "{what}: {blocks:?}");
        assert!(blocks.contains(&(48 * MIB)), "{what}: {blocks:?}");
        assert!(blocks.iter().any(malloc_block), "{what}: {blocks:?}");
        // Not the reservation, nor its trimmed end, nor what was committed and decommitted
        // inside it.
        assert!(
            blocks
                .iter()
                .all(|&b| b < GIB && b != 64 * MIB && b != 16 * MIB),
            "{what}: {blocks:?}"
        );
    }
    let peak = live.iter().copied().max().unwrap_or(0);
    assert!(
        (88 * MIB..GIB).contains(&peak),
        "live bytes peaked at {peak}: the memory (88 MiB), not the address space"
    );
    let last = *live.last().unwrap();
    assert!(last < 64 * MIB, "live bytes at the end: {last}");
}

/// `mremap` (tests/programs/remap.c): 64 MiB mapped, shrunk to 16 MiB, grown to 128 MiB,
/// moved whole to an address of the program's choosing, unmapped; a failed call too. The
/// blocks are what changed — 48 MiB released by the shrink, 112 MiB allocated by the growth,
/// nothing for the move or the failure — and live bytes come back down. Before, `mremap` was
/// not hooked: the growth was never seen and its unmapping released more than was counted.
#[test]
fn a_buffer_resized_with_mremap_counts_what_changed() {
    let dir = tempfile::tempdir().unwrap();
    let Some(rec) = recorded_run(dir.path(), "remap", &[]) else {
        return;
    };
    let (allocs, releases, live) = blocks_and_live(&rec);
    let big = |v: &[u64]| {
        v.iter()
            .copied()
            .filter(|&b| b >= MIB)
            .collect::<Vec<u64>>()
    };
    assert_eq!(big(&allocs), [64 * MIB, 112 * MIB], "allocations");
    assert_eq!(big(&releases), [48 * MIB, 128 * MIB], "releases");
    // Live bytes (the probe's own buffers included) rose by the 128 MiB and fell back.
    let peak = live.iter().copied().max().unwrap_or(0);
    let last = *live.last().unwrap();
    assert!(
        (120 * MIB..136 * MIB).contains(&peak.saturating_sub(last)),
        "live bytes peaked at {peak}, ended at {last}"
    );
}

//! The counting allocator as the global allocator: exact large-block events and live-byte
//! accounting.
mod common;

use common::*;
use probe_protocol::*;
use proofscope_probe::span;
use proofscope_probe::{self, CountingAllocator, Probe, ProbeConfig, SessionInfo, SocketChoice};
use std::time::Duration;

#[global_allocator]
static ALLOC: CountingAllocator = CountingAllocator;

const MIB: usize = 1 << 20;

/// A probe session at an 8 MiB threshold on a socket of its own, a viewer subscribed to it,
/// and what the viewer received up to `LiveStart`.
fn watched_session() -> (tempfile::TempDir, Probe, Client, Vec<Event>) {
    let dir = tempfile::tempdir().unwrap();
    let sock = dir.path().join("watched.sock");
    let cfg = ProbeConfig::new("alloc-test", "0")
        .socket(SocketChoice::At(sock.clone()))
        .gpu_sample(None)
        .large_block(8 * MIB as u64);
    let p = Probe::start(cfg, SessionInfo::default()).unwrap();
    let mut client = Client::connect(&sock, true);
    let events = client.read_until(|e| matches!(e, Event::LiveStart { .. }));
    (dir, p, client, events)
}

/// Every large block's event: (a release, its bytes, its span).
fn blocks_of(events: &[Event]) -> Vec<(bool, u64, Option<u64>)> {
    events
        .iter()
        .filter_map(|e| match e {
            Event::Alloc(b) => Some((false, b.bytes, b.span)),
            Event::Release(b) => Some((true, b.bytes, b.span)),
            _ => None,
        })
        .collect()
}

#[test]
fn three_10_mib_blocks_yield_exactly_their_alloc_and_release_events() {
    let _g = serial();
    // Threshold 8 MiB: nothing else this test does allocates that much.
    let (_dir, p, mut client, head) = watched_session();

    let worker = std::thread::Builder::new()
        .name("allocating-worker".into())
        .spawn(|| {
            // The first span joins the thread to the session (its ring stays allocated), so
            // the baseline is taken inside it.
            let _s = span!("alloc_phase");
            let before = proofscope_probe::thread_totals();
            let mut blocks: Vec<Vec<u8>> = Vec::new();
            for i in 0..3u8 {
                let mut v = vec![0u8; 10 * MIB];
                v[i as usize * 4096] = i; // touch a page
                blocks.push(v);
            }
            let mid = proofscope_probe::thread_totals();
            drop(blocks);
            let after = proofscope_probe::thread_totals();
            (before, mid, after)
        })
        .unwrap();
    let (before, mid, after) = worker.join().unwrap();
    std::thread::sleep(Duration::from_millis(30));
    p.shutdown("done");
    let mut events = head;
    events.extend(client.read_until_goodbye(None));

    // Live bytes went up by at least the three blocks and came back to the baseline.
    assert!(mid.live_bytes() >= before.live_bytes() + 30 * MIB as u64);
    assert_eq!(
        after.live_bytes(),
        before.live_bytes(),
        "live bytes back to baseline"
    );
    assert_eq!(after.allocs - before.allocs, after.frees - before.frees);

    let threads = threads(&events);
    let names = names(&events);
    let span_name: std::collections::HashMap<u64, String> = events
        .iter()
        .filter_map(|e| match e {
            Event::SpanBegin(b) => Some((b.span, names[&b.name].clone())),
            _ => None,
        })
        .collect();
    let allocs: Vec<BlockEvent> = events
        .iter()
        .filter_map(|e| {
            if let Event::Alloc(b) = e {
                Some(*b)
            } else {
                None
            }
        })
        .collect();
    let releases: Vec<BlockEvent> = events
        .iter()
        .filter_map(|e| {
            if let Event::Release(b) = e {
                Some(*b)
            } else {
                None
            }
        })
        .collect();
    assert_eq!(allocs.len(), 3, "{allocs:?}");
    assert_eq!(releases.len(), 3, "{releases:?}");
    for b in allocs.iter().chain(&releases) {
        assert_eq!(b.bytes, 10 * MIB as u64);
        assert_eq!(threads[&b.thread], "allocating-worker");
        assert_eq!(b.span.map(|s| span_name[&s].as_str()), Some("alloc_phase"));
        assert!(b.inside_ns < 5_000_000_000);
    }
    // Releases come after the allocations.
    let last_alloc = allocs.iter().map(|b| b.ts).max().unwrap();
    assert!(releases.iter().all(|r| r.ts >= last_alloc));
    // Samples carry live/peak/RSS.
    let sample = events
        .iter()
        .rev()
        .find_map(|e| {
            if let Event::AllocSample(s) = e {
                Some(*s)
            } else {
                None
            }
        })
        .unwrap();
    assert!(
        sample.peak_bytes >= 30 * MIB as u64,
        "peak {}",
        sample.peak_bytes
    );
    assert!(sample.rss_bytes > 0);
    assert!(sample.allocs >= sample.frees);
}

#[test]
fn alloc_zeroed_and_realloc_are_forwarded() {
    // A 256 MiB zeroed vector must not be touched by the allocator: it returns at once and
    // RSS does not grow by its size.
    let _g = serial();
    let rss0 = rss();
    let v: Vec<u8> = vec![0; 256 * MIB];
    let rss1 = rss();
    assert!(
        rss1 < rss0 + 64 * MIB as u64,
        "calloc pages were touched: {rss0} -> {rss1}"
    );
    assert_eq!(v[123_456], 0);
    let mut w: Vec<u64> = Vec::with_capacity(4);
    w.extend(0..1_000_000u64);
    assert_eq!(w[999_999], 999_999);
}

fn rss() -> u64 {
    let s = std::fs::read_to_string("/proc/self/statm").unwrap();
    s.split_whitespace().nth(1).unwrap().parse::<u64>().unwrap() * 4096
}

/// docs/PROTOCOL.md, `Alloc`/`Release`: the span is the one the thread is working in — its
/// innermost open span, or, while it runs work adopted from another thread's span (a pool
/// thread running a task for it, even one stolen while its own span is open), that span.
#[test]
fn an_allocation_carries_the_span_its_thread_works_in_adopted_ones_included() {
    let _g = serial();
    let (_dir, p, mut client, mut events) = watched_session();
    let other = span!("other_threads_phase");
    let handle = other.handle();
    let (own, adopted) = std::thread::Builder::new()
        .name("pool-worker".into())
        .spawn(move || {
            let own = span!("own_task");
            let mut v = std::hint::black_box(vec![1u8; 10 * MIB]); // inside its own span
            {
                // A task stolen while `own_task` is open, run on behalf of another span.
                let _a = handle.adopt();
                let w = std::hint::black_box(vec![2u8; 12 * MIB]);
                drop(w);
            }
            v[5] = 3;
            drop(v); // back in its own span
            (own.id(), handle.span)
        })
        .unwrap()
        .join()
        .unwrap();
    drop(other);
    std::thread::sleep(Duration::from_millis(30));
    p.shutdown("done");
    events.extend(client.read_until_goodbye(None));
    let blocks = blocks_of(&events);
    let ten = 10 * MIB as u64;
    let twelve = 12 * MIB as u64;
    assert!(blocks.contains(&(false, ten, Some(own))), "{blocks:?}");
    assert!(blocks.contains(&(true, ten, Some(own))), "{blocks:?}");
    assert!(
        blocks.contains(&(false, twelve, Some(adopted))),
        "{blocks:?}"
    );
    assert!(
        blocks.contains(&(true, twelve, Some(adopted))),
        "{blocks:?}"
    );
}

#[test]
fn the_probes_own_threads_report_no_blocks_of_their_own() {
    let _g = serial();
    let dir = tempfile::tempdir().unwrap();
    let sock = dir.path().join("own.sock");
    // Every block is "large": the collector's frames and the server's buffers would be
    // reported, were the probe's threads not its own.
    let cfg = ProbeConfig::new("observer-test", "0")
        .socket(SocketChoice::At(sock.clone()))
        .gpu_sample(None)
        .large_block(1);
    let p = Probe::start(cfg, SessionInfo::default()).unwrap();
    let mut client = Client::connect(&sock, true);
    let mut events = client.read_until(|e| matches!(e, Event::LiveStart { .. }));
    std::thread::Builder::new()
        .name("program-thread".into())
        .spawn(|| {
            let _s = span!("work");
            for _ in 0..50 {
                std::hint::black_box(vec![0u8; 4096]);
            }
        })
        .unwrap()
        .join()
        .unwrap();
    std::thread::sleep(Duration::from_millis(50));
    p.shutdown("done");
    events.extend(client.read_until_goodbye(None));
    let threads = threads(&events);
    let by: std::collections::BTreeSet<&str> = events
        .iter()
        .filter_map(|e| match e {
            Event::Alloc(b) | Event::Release(b) => threads.get(&b.thread).map(String::as_str),
            _ => None,
        })
        .collect();
    assert!(
        by.contains("program-thread"),
        "the program's blocks: {by:?}"
    );
    assert!(
        !by.iter().any(|t| t.starts_with("probe-")),
        "the probe's own threads reported blocks: {by:?}"
    );
}

/// A probe thread that has not run yet when the session stops (a loaded machine: the C API
/// test lost its last blocks so, 4 runs in 30 beside two busy loops) must not cost the program
/// its last blocks: while one is starting the collector leaves the queue alone, and the last
/// drain waits for it, briefly, then takes them whatever.
#[test]
fn the_last_blocks_are_kept_when_a_probe_thread_is_still_starting() {
    let _g = serial();
    let (_dir, p, mut client, mut events) = watched_session();
    let starting = proofscope_probe::StartingThread::hold();
    let v = vec![1u8; 10 * MIB];
    std::hint::black_box(&v);
    drop(v);
    p.shutdown("done");
    drop(starting);
    events.extend(client.read_until_goodbye(None));
    let blocks: Vec<(bool, u64)> = blocks_of(&events).iter().map(|b| (b.0, b.1)).collect();
    let ten = 10 * MIB as u64;
    assert!(
        blocks.contains(&(false, ten)) && blocks.contains(&(true, ten)),
        "the 10 MiB block's events: {blocks:?}"
    );
}

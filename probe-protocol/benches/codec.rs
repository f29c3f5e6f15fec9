//! Encode + decode cost per event and bytes per event on a realistic mix: mostly span edges
//! (as a prover emits them, several threads interleaved), some allocator and GPU samples, a few
//! releases and markers.
use criterion::{Criterion, Throughput, criterion_group, criterion_main};
use probe_protocol::*;
use std::hint::black_box;

/// The mix a collector batch carries: 4 threads' span edges, samples every ~40 events.
pub fn realistic_mix(n: usize) -> Vec<Event> {
    let mut out = Vec::with_capacity(n);
    let mut ts = 5_000_000_000u64;
    let mut next_span = 1_000u64;
    let mut open: Vec<Vec<u64>> = vec![Vec::new(); 4];
    let mut i = 0usize;
    while out.len() < n {
        i += 1;
        let thread = (i % 4) as u32;
        ts += 300 + (i as u64 * 7919) % 5_000;
        if i.is_multiple_of(40) {
            out.push(Event::AllocSample(AllocSample {
                ts,
                live_bytes: 3_000_000_000 + i as u64 * 4096,
                peak_bytes: 4_000_000_000,
                allocs: 1_000_000 + i as u64,
                frees: 990_000 + i as u64,
                alloc_bytes: 90_000_000_000 + i as u64 * 100,
                free_bytes: 87_000_000_000 + i as u64 * 90,
                rss_bytes: 3_500_000_000,
            }));
            continue;
        }
        if i.is_multiple_of(97) {
            out.push(Event::GpuSample(Box::new(GpuSample {
                ts,
                device: 0,
                util_pct: Some(93),
                mem_util_pct: Some(41),
                mem_used_bytes: Some(60_000_000_000),
                mem_total_bytes: Some(150_000_000_000),
                power_mw: Some(480_000),
                energy_mj: Some(10_000_000 + i as u64),
                temp_c: Some(55),
                sm_clock_mhz: Some(1980),
                mem_clock_mhz: Some(3201),
                pcie_rx_kbps: None,
                pcie_tx_kbps: None,
            })));
            continue;
        }
        if i.is_multiple_of(211) {
            out.push(Event::Release(BlockEvent {
                stack: None,
                ts,
                bytes: 4_170_000_000,
                inside_ns: 180_000_000,
                thread,
                span: Some(1_000),
            }));
            continue;
        }
        let stack = &mut open[thread as usize];
        if stack.len() < 3 && (!i.is_multiple_of(3) || stack.is_empty()) {
            next_span += 1;
            out.push(Event::SpanBegin(SpanBegin {
                ts,
                span: next_span,
                parent: stack.last().copied().or(Some(1_000)),
                proof: Some(12),
                name: (i % 9) as u32,
                thread,
            }));
            stack.push(next_span);
        } else if let Some(span) = stack.pop() {
            out.push(Event::SpanEnd(SpanEnd { ts, span }));
        }
    }
    out
}

fn codec(c: &mut Criterion) {
    let events = realistic_mix(4096);
    let frame = encode_frame(events[0].ts().unwrap_or(0), &events).unwrap();
    let edges: Vec<Event> = events
        .iter()
        .filter(|e| matches!(e, Event::SpanBegin(_) | Event::SpanEnd(_)))
        .cloned()
        .collect();
    let edge_frame = encode_frame(edges[0].ts().unwrap_or(0), &edges).unwrap();
    eprintln!(
        "wire size: {:.2} bytes/event on the mix ({} events, {} bytes); {:.2} bytes per span edge ({} edges)",
        frame.len() as f64 / events.len() as f64,
        events.len(),
        frame.len(),
        edge_frame.len() as f64 / edges.len() as f64,
        edges.len()
    );

    let mut g = c.benchmark_group("codec");
    g.throughput(Throughput::Elements(events.len() as u64));
    let mut builder = FrameBuilder::new(0);
    g.bench_function("encode", |b| {
        b.iter(|| {
            builder.reset(5_000_000_000);
            for e in &events {
                builder.push(black_box(e)).unwrap();
            }
            black_box(builder.finish().unwrap().len())
        })
    });
    let mut decoded = Vec::with_capacity(events.len());
    g.bench_function("decode", |b| {
        b.iter(|| {
            decoded.clear();
            decode_into(black_box(&frame[4..]), &mut decoded).unwrap();
            decoded.len()
        })
    });
    g.bench_function("encode+decode", |b| {
        b.iter(|| {
            builder.reset(5_000_000_000);
            for e in &events {
                builder.push(e).unwrap();
            }
            let f = builder.finish().unwrap();
            decoded.clear();
            decode_into(black_box(&f[4..]), &mut decoded).unwrap();
            decoded.len()
        })
    });
    g.finish();
}

criterion_group!(benches, codec);
criterion_main!(benches);

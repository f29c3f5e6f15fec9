//! The gap listing of one proof of N child spans (issue 47: 5k/10k/20k/40k/100k spans replayed
//! in 0.28/1.24/2.6/17.3/79 s, each gap's neighbours and diagnosis rescanning every span).
//! Children on the proving thread, 1 ms each with 2 ms between them: every gap is over 1 ms,
//! so every one is listed and diagnosed — the most work a listing can have per span. Another
//! thread's span covers the whole proof (what a diagnosis looks at for "other work"), and the
//! proving thread has scheduler samples every 10 ms. Linear means ×40 spans, ×40 the time.
//! `cargo bench -p proofscope --bench listing`.
use criterion::{BenchmarkId, Criterion, criterion_group, criterion_main};
use probe_protocol::{Event, Hello, ProofBegin, ProofEnd, SpanBegin, SpanEnd, ThreadSched};
use proofscope::analysis::{GapRule, gap_listing};
use proofscope::model::{Model, ProofId, Retention};
use std::hint::black_box;

const MS: u64 = 1_000_000;

/// The events of one proof of `n` children.
fn events(n: u64) -> Vec<Event> {
    let end = (n * 3 + 2) * MS;
    let mut ev = vec![
        Event::Hello(Box::new(Hello {
            protocol_major: 1,
            ..Hello::default()
        })),
        Event::NameDef {
            id: 1,
            name: "prove".into(),
        },
        Event::NameDef {
            id: 2,
            name: "step".into(),
        },
        Event::ThreadDef {
            id: 1,
            name: "main".into(),
            os_tid: 1,
        },
        Event::ThreadDef {
            id: 2,
            name: "worker".into(),
            os_tid: 2,
        },
        Event::ProofBegin(Box::new(ProofBegin {
            ts: 0,
            proof: 1,
            span: 1,
            ..ProofBegin::default()
        })),
    ];
    let begin = |ts, span, parent, thread, name| {
        Event::SpanBegin(SpanBegin {
            ts,
            span,
            parent,
            proof: Some(1),
            name,
            thread,
        })
    };
    ev.push(begin(0, 1, None, 1, 1));
    ev.push(begin(0, 2, None, 2, 2));
    for i in 0..n {
        let a = (i * 3 + 2) * MS;
        ev.push(begin(a, i + 3, Some(1), 1, 2));
        ev.push(Event::SpanEnd(SpanEnd {
            ts: a + MS,
            span: i + 3,
        }));
    }
    for t in (0..end).step_by(10 * MS as usize) {
        ev.push(Event::ThreadSched(ThreadSched {
            ts: t,
            thread: 1,
            cpu_ns: t / 2,
            runq_ns: t / 4,
            timeslices: t / MS,
        }));
    }
    ev.sort_by_key(|e| e.ts().unwrap_or(0));
    ev.push(Event::SpanEnd(SpanEnd { ts: end, span: 2 }));
    ev.push(Event::SpanEnd(SpanEnd { ts: end, span: 1 }));
    ev.push(Event::ProofEnd(Box::new(ProofEnd {
        ts: end,
        proof: 1,
        ok: true,
        ..ProofEnd::default()
    })));
    ev
}

/// A model holding one proof of `n` children.
fn model(n: u64) -> Model {
    let mut m = Model::new(Retention {
        max_proofs: 10,
        max_bytes: 4 << 30,
    });
    m.ingest_all(events(n));
    m
}

/// Writes the proof as a recording (`LISTING_WRITE=DIR`: `DIR/fanout-N.psrec`), for timing a
/// whole `proofscope replay` of it.
fn write_recording(dir: &str, n: u64) {
    let path = format!("{dir}/fanout-{n}.psrec");
    let file = std::fs::File::create(&path).expect("the recording");
    let mut w = probe_protocol::RecordingWriter::new(std::io::BufWriter::new(file)).unwrap();
    for chunk in events(n).chunks(4096) {
        let mut b = probe_protocol::FrameBuilder::new(0);
        for e in chunk {
            b.push(e).unwrap();
        }
        w.write_frame(b.finish().unwrap()).unwrap();
    }
    w.flush().unwrap();
}

fn listing(c: &mut Criterion) {
    let mut g = c.benchmark_group("gap_listing");
    g.sample_size(10);
    let sizes: Vec<u64> = std::env::var("LISTING_SIZES")
        .ok()
        .map(|v| v.split(',').filter_map(|x| x.parse().ok()).collect())
        .unwrap_or_else(|| vec![10_000, 400_000]);
    for n in sizes {
        if let Ok(dir) = std::env::var("LISTING_WRITE") {
            write_recording(&dir, n);
        }
        let m = model(n);
        let s = m.current().expect("a session");
        let p = s.proof(ProofId(1)).expect("the proof");
        let rule = GapRule::default();
        let (listed, summed, _) = gap_listing(s, p, &rule);
        eprintln!(
            "{n} spans: {} gaps listed, {} summed, {} spans in the proof",
            listed.len(),
            summed.count,
            p.spans().len()
        );
        g.bench_with_input(BenchmarkId::from_parameter(n), &n, |b, _| {
            b.iter(|| black_box(gap_listing(s, p, &rule).0.len()))
        });
    }
    g.finish();
}

criterion_group!(benches, listing);
criterion_main!(benches);

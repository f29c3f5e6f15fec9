//! Viewer costs on a synthetic but prover-shaped stream: 1,000 proofs of ~1,000 events each
//! (outer span, the seven phases, sub-spans on four threads, allocator samples, releases).
use criterion::{Criterion, Throughput, criterion_group, criterion_main};
use probe_protocol::*;
use proofscope::view::{Screen, Tab, ViewState};
use proofscope_engine::analysis::GapRule;
use proofscope_engine::model::{Model, Retention};
use ratatui::Terminal;
use ratatui::backend::TestBackend;
use std::hint::black_box;

const PHASES: [&str; 7] = [
    "synthesis",
    "prep_msm",
    "ntt_msm_h",
    "batch_add",
    "tail_msm",
    "b_g2_msm",
    "epilogue",
];

/// `proofs` proofs, about `per` events each.
fn stream(proofs: u64, per: usize) -> Vec<Event> {
    let mut ev = vec![Event::Hello(Box::new(Hello {
        prover_name: "bench".into(),
        backend: "cpu".into(),
        ..Hello::default()
    }))];
    let names = ["prove", "intt", "coset_ntt", "h_msm"]
        .iter()
        .chain(PHASES.iter());
    for (i, n) in names.enumerate() {
        ev.push(Event::NameDef {
            id: i as u32 + 1,
            name: (*n).into(),
        });
    }
    for t in 1..=4 {
        ev.push(Event::ThreadDef {
            id: t,
            name: format!("t{t}"),
            os_tid: t as u64,
        });
    }
    let mut ts = 0u64;
    let mut span = 1u64;
    for p in 1..=proofs {
        let outer = span;
        span += 1;
        ev.push(Event::ProofBegin(Box::new(ProofBegin {
            ts,
            proof: p,
            span: outer,
            circuit: "sha256".into(),
            constraints: 1 << 15,
            circuits: 2,
            backend: "cpu".into(),
            synthetic_srs: false,
        })));
        ev.push(Event::SpanBegin(SpanBegin {
            ts,
            span: outer,
            parent: None,
            proof: Some(p),
            name: 1,
            thread: 1,
        }));
        let subs_per_phase = (per.saturating_sub(40) / 7 / 2).max(1);
        let mut t = ts + 1000;
        for (k, _) in PHASES.iter().enumerate() {
            let ph = span;
            span += 1;
            ev.push(Event::SpanBegin(SpanBegin {
                ts: t,
                span: ph,
                parent: Some(outer),
                proof: Some(p),
                name: 5 + k as u32,
                thread: 1 + (k as u32 % 3),
            }));
            for j in 0..subs_per_phase {
                let s = span;
                span += 1;
                let thread = 1 + (j as u32 % 4);
                ev.push(Event::SpanBegin(SpanBegin {
                    ts: t + j as u64 * 100,
                    span: s,
                    parent: Some(ph),
                    proof: Some(p),
                    name: 2 + (j as u32 % 3),
                    thread,
                }));
                ev.push(Event::SpanEnd(SpanEnd {
                    ts: t + j as u64 * 100 + 80,
                    span: s,
                }));
            }
            t += subs_per_phase as u64 * 100 + 500;
            ev.push(Event::SpanEnd(SpanEnd { ts: t, span: ph }));
            ev.push(Event::AllocSample(AllocSample {
                ts: t,
                live_bytes: 1 << 30,
                peak_bytes: 2 << 30,
                rss_bytes: 3 << 30,
                ..AllocSample::default()
            }));
        }
        for r in 0..8 {
            ev.push(Event::Release(BlockEvent {
                ts: t + r * 10,
                bytes: 1 << 20,
                inside_ns: 5,
                thread: 1,
                span: Some(outer),
                stack: None,
            }));
        }
        t += 200;
        ev.push(Event::SpanEnd(SpanEnd { ts: t, span: outer }));
        ev.push(Event::ProofEnd(Box::new(ProofEnd {
            ts: t,
            proof: p,
            ok: true,
            verification: Verification::Valid,
            error: None,
        })));
        ts = t + 1000;
    }
    ev
}

fn model_of(events: &[Event]) -> Model {
    let mut m = Model::new(Retention {
        max_proofs: 100_000,
        max_bytes: usize::MAX,
    });
    m.ingest_all(events.iter().cloned());
    m
}

fn viewer(c: &mut Criterion) {
    let events = stream(1000, 1000);
    eprintln!("synthetic stream: {} events, 1,000 proofs", events.len());
    let mut g = c.benchmark_group("model");
    g.throughput(Throughput::Elements(events.len() as u64));
    g.sample_size(10);
    g.bench_function("ingest", |b| {
        b.iter(|| black_box(model_of(&events)).events())
    });
    g.finish();

    let model = model_of(&events);
    let mut g = c.benchmark_group("render 1,000 proofs / 1 M events");
    for tab in [Tab::Timeline, Tab::Gaps, Tab::Memory, Tab::Stats] {
        let vs = ViewState {
            tab,
            rule: GapRule::default(),
            ..ViewState::default()
        };
        let mut term = Terminal::new(TestBackend::new(160, 48)).unwrap();
        g.bench_function(format!("{} 160x48", tab.title()), |b| {
            b.iter(|| {
                term.draw(|f| {
                    f.render_widget(
                        &Screen {
                            model: &model,
                            state: &vs,
                            link: &proofscope_engine::source::LinkStatus::default(),
                        },
                        f.area(),
                    )
                })
                .unwrap();
            })
        });
    }
    g.finish();

    // Headless report of a recording of the same stream.
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("big.psrec");
    {
        let mut w = RecordingWriter::new(std::io::BufWriter::new(
            std::fs::File::create(&path).unwrap(),
        ))
        .unwrap();
        for chunk in events.chunks(4096) {
            w.write_frame(
                &encode_frame(chunk.iter().find_map(Event::ts).unwrap_or(0), chunk).unwrap(),
            )
            .unwrap();
        }
        w.flush().unwrap();
    }
    eprintln!(
        "recording: {} bytes",
        std::fs::metadata(&path).unwrap().len()
    );
    let mut g = c.benchmark_group("headless");
    g.sample_size(10);
    g.bench_function("text report of a 1 M-event recording", |b| {
        b.iter(|| {
            let opts = proofscope::app::RunOpts::default();
            let mut app = proofscope::app::App::replay(path.clone(), &opts).unwrap();
            proofscope::app::run_headless(&mut app, proofscope::app::Until::default());
            let r =
                proofscope_engine::report::build(app.model(), &GapRule::default(), "bench", vec![]);
            black_box(proofscope_engine::report::text(&r).len())
        })
    });
    g.finish();
}

criterion_group!(benches, viewer);
criterion_main!(benches);

//! The `tracing` layer: a program that speaks only `tracing` gets probe spans with the right
//! names, parents across threads, one probe span per entry, and proofs from the spans it
//! names, with their fields and outcome. One test: the layer is installed as the global
//! subscriber, which worker threads see.
mod common;

use common::names;
use probe_protocol::{Event, ProofBegin, ProofEnd, SpanBegin, read_all};
use proofscope_probe::{Probe, ProbeConfig, ProofscopeLayer, SessionInfo, SocketChoice};
use std::collections::HashMap;
use tracing::{info_span, instrument};
use tracing_subscriber::layer::SubscriberExt;

#[instrument]
fn commit(round: u32) -> u32 {
    round * 2
}

fn record(dir: &std::path::Path) -> Vec<Event> {
    let rec = dir.join("t.psrec");
    // A span created before the probe runs stays out of the recording, entered or not.
    let early = info_span!("before_start");
    let p = Probe::start(
        ProbeConfig::new("tracing-test", "0")
            .socket(SocketChoice::None)
            .gpu_sample(None)
            .record(Some(rec.clone())),
        SessionInfo::default(),
    )
    .unwrap();
    early.in_scope(|| ());

    // A proof named by the layer's configuration, its fields filling ProofBegin.
    let batch = info_span!(
        "prove_batch",
        circuit = "toy",
        constraints = 1000u64,
        circuits = 2u64,
        backend = %"cpu"
    );
    {
        let _b = batch.enter();
        let synth = info_span!("synthesis");
        let _s = synth.enter();
        std::thread::scope(|s| {
            for c in 0..2 {
                let synth = &synth;
                std::thread::Builder::new()
                    .name(format!("worker-{c}"))
                    .spawn_scoped(s, move || {
                        info_span!(parent: synth, "synthesize_circuit").in_scope(|| ());
                    })
                    .unwrap();
            }
        });
        drop(_s);
        commit(1);
        // Entered three times, like a future polled three times: three probe spans.
        let poll = info_span!("poll");
        for _ in 0..3 {
            poll.in_scope(|| ());
        }
    }
    drop(batch);

    // The default proof name `prove`, ending in failure through a recorded field.
    let failing = info_span!("prove", error = tracing::field::Empty);
    failing.in_scope(|| info_span!("msm").in_scope(|| ()));
    failing.record("error", "out of memory");
    drop(failing);

    p.shutdown("done");
    let r = read_all(std::fs::File::open(&rec).unwrap()).unwrap();
    assert!(r.errors.is_empty() && r.truncation.is_none());
    r.frames.into_iter().flat_map(|f| f.events).collect()
}

#[test]
fn tracing_spans_become_probe_spans_and_proofs() {
    let subscriber =
        tracing_subscriber::registry().with(ProofscopeLayer::new().proof_span_named("prove_batch"));
    tracing::subscriber::set_global_default(subscriber).unwrap();
    let dir = tempfile::tempdir().unwrap();
    let events = record(dir.path());

    let names = names(&events);
    let spans: Vec<&SpanBegin> = events
        .iter()
        .filter_map(|e| match e {
            Event::SpanBegin(b) => Some(b),
            _ => None,
        })
        .collect();
    let by_name = |n: &str| -> Vec<&SpanBegin> {
        spans
            .iter()
            .copied()
            .filter(|b| names.get(&b.name).map(String::as_str) == Some(n))
            .collect()
    };
    let one = |n: &str| -> &SpanBegin {
        let v = by_name(n);
        assert_eq!(v.len(), 1, "{n}: {v:?}");
        v[0]
    };
    assert!(by_name("before_start").is_empty());

    let proofs: Vec<&ProofBegin> = events
        .iter()
        .filter_map(|e| match e {
            Event::ProofBegin(p) => Some(p.as_ref()),
            _ => None,
        })
        .collect();
    assert_eq!(proofs.len(), 2, "{proofs:?}");
    let batch = one("prove_batch");
    assert_eq!(proofs[0].span, batch.span);
    assert_eq!(
        (
            proofs[0].circuit.as_str(),
            proofs[0].constraints,
            proofs[0].circuits,
            proofs[0].backend.as_str()
        ),
        ("toy", 1000, 2, "cpu")
    );
    assert_eq!(batch.proof, Some(proofs[0].proof));

    // Nesting on the thread, and across threads through tracing's explicit parent.
    let synth = one("synthesis");
    assert_eq!(synth.parent, Some(batch.span));
    let workers = by_name("synthesize_circuit");
    assert_eq!(workers.len(), 2);
    for w in &workers {
        assert_eq!(w.parent, Some(synth.span));
        assert_eq!(w.proof, Some(proofs[0].proof));
        assert_ne!(w.thread, batch.thread);
    }
    assert_eq!(one("commit").parent, Some(batch.span));
    let polls = by_name("poll");
    assert_eq!(polls.len(), 3);
    assert!(polls.iter().all(|p| p.parent == Some(batch.span)));

    // Every begin has its end.
    let ends = events
        .iter()
        .filter(|e| matches!(e, Event::SpanEnd(_)))
        .count();
    assert_eq!(ends, spans.len());

    let prove = one("prove");
    assert_eq!(prove.proof, Some(proofs[1].proof));
    assert_eq!(one("msm").parent, Some(prove.span));
    let outcomes: HashMap<u64, &ProofEnd> = events
        .iter()
        .filter_map(|e| match e {
            Event::ProofEnd(p) => Some((p.proof, p.as_ref())),
            _ => None,
        })
        .collect();
    assert!(outcomes[&proofs[0].proof].ok);
    let failed = outcomes[&proofs[1].proof];
    assert!(!failed.ok);
    assert_eq!(failed.error.as_deref(), Some("out of memory"));
}

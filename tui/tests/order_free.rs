//! The same evidence gives the same verdict, whatever order the frames' events arrive in
//! within what the protocol allows (docs/PROTOCOL.md §9): events are not in time order within
//! a frame; one thread's span events keep their order (its ring), and so do its blocks (their
//! queue), but threads interleave any way, and blocks may come before or after span events of
//! the same moment. A property test deals a recording's events back in such an order — the
//! definitions, proof edges and session bookkeeping stay where they were, every run of events
//! between two of them is re-interleaved at random by thread and queue — and the report is the
//! same, byte for byte.

mod common;

use probe_protocol::Event;
use proofscope_engine::analysis::GapRule;
use proofscope_engine::model::Model;
use proptest::prelude::*;

/// Events that stay where they are: what later events depend on, or what closes a stretch.
fn is_barrier(e: &Event) -> bool {
    matches!(
        e,
        Event::Hello(_)
            | Event::NameDef { .. }
            | Event::ThreadDef { .. }
            | Event::StackDef { .. }
            | Event::ProofBegin(_)
            | Event::ProofEnd(_)
            | Event::Dropped(_)
            | Event::HistoryGap(_)
            | Event::LiveStart { .. }
            | Event::Goodbye { .. }
    )
}

/// The queue an event travels through, whose order holds: a thread's ring (its span edges
/// and text-less markers), the block queue per thread, the slow queue (markers with a text,
/// GPU spans), and one per kind of sample.
fn queue(e: &Event) -> (u8, u64) {
    match e {
        Event::SpanBegin(s) => (0, u64::from(s.thread)),
        Event::SpanEnd(_) => (0, u64::MAX), // resolved by the caller: the span's thread
        Event::Marker(m) if m.text.is_none() => (0, u64::from(m.thread)),
        Event::Marker(_) | Event::GpuSpan(_) => (1, 0),
        Event::Alloc(b) | Event::Release(b) => (2, u64::from(b.thread)),
        Event::AllocSample(_) => (3, 0),
        Event::GpuSample(g) => (4, u64::from(g.device)),
        Event::ThreadSched(t) => (5, u64::from(t.thread)),
        Event::OutputWrite(w) => (6, u64::from(w.thread)),
        Event::ThreadKernel(k) => (8, u64::from(k.thread)),
        _ => (7, 0),
    }
}

/// `events` dealt again: every stretch between barriers re-interleaved by queue, at random
/// (`seed`), each queue's own order kept.
fn deal(events: Vec<Event>, seed: u64) -> Vec<Event> {
    let mut rng = seed | 1;
    let mut next = move || {
        rng ^= rng << 13;
        rng ^= rng >> 7;
        rng ^= rng << 17;
        rng
    };
    let mut span_thread = std::collections::HashMap::new();
    let mut out = Vec::with_capacity(events.len());
    let mut stretch: Vec<((u8, u64), Event)> = Vec::new();
    let mut flush = |stretch: &mut Vec<((u8, u64), Event)>, out: &mut Vec<Event>| {
        let mut queues: Vec<((u8, u64), std::collections::VecDeque<Event>)> = Vec::new();
        for (q, e) in stretch.drain(..) {
            match queues.iter_mut().find(|(k, _)| *k == q) {
                Some((_, v)) => v.push_back(e),
                None => queues.push((q, std::collections::VecDeque::from([e]))),
            }
        }
        while !queues.is_empty() {
            let i = (next() % queues.len() as u64) as usize;
            out.push(queues[i].1.pop_front().expect("queues are never empty"));
            if queues[i].1.is_empty() {
                queues.swap_remove(i);
            }
        }
    };
    for e in events {
        if is_barrier(&e) {
            flush(&mut stretch, &mut out);
            out.push(e);
            continue;
        }
        let q = match &e {
            Event::SpanBegin(s) => {
                span_thread.insert(s.span, s.thread);
                queue(&e)
            }
            Event::SpanEnd(s) => (
                0,
                span_thread.get(&s.span).map_or(u64::MAX, |t| u64::from(*t)),
            ),
            _ => queue(&e),
        };
        stretch.push((q, e));
    }
    flush(&mut stretch, &mut out);
    out
}

fn events_of(name: &str) -> Vec<Event> {
    let rec =
        probe_protocol::read_all(std::fs::File::open(common::recording(name)).unwrap()).unwrap();
    rec.frames.into_iter().flat_map(|f| f.events).collect()
}

fn report_of(events: Vec<Event>) -> String {
    let mut model = Model::new(Default::default());
    model.ingest_all(events);
    let r = proofscope_engine::report::build(&model, &GapRule::default(), "dealt", Vec::new());
    proofscope_engine::report::json(&r)
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(12))]

    #[test]
    fn the_cpp_c2_ghost_reports_the_same_in_any_allowed_order(seed in any::<u64>()) {
        let events = events_of("cpp-c2-sync.psrec");
        let want = report_of(events.clone());
        prop_assert_eq!(report_of(deal(events, seed)), want);
    }

    #[test]
    fn the_h200_ghost_reports_the_same_in_any_allowed_order(seed in any::<u64>()) {
        let events = events_of("h200-ghost-sync.psrec");
        let want = report_of(events.clone());
        prop_assert_eq!(report_of(deal(events, seed)), want);
    }
}

/// The dealing really moves events (else the property above holds for nothing), and the
/// report it compares holds proofs with diagnosed gaps.
#[test]
fn the_dealing_changes_the_order_and_the_report_says_something() {
    for name in ["cpp-c2-sync.psrec", "h200-ghost-sync.psrec"] {
        let events = events_of(name);
        let dealt = deal(events.clone(), 7);
        assert_eq!(dealt.len(), events.len());
        let moved = dealt.iter().zip(&events).filter(|(a, b)| a != b).count();
        assert!(
            moved > events.len() / 20,
            "{name}: {moved} of {} moved",
            events.len()
        );
        let r = report_of(events);
        assert!(r.contains("\"synchronous_release\""), "{name}: {r}");
    }
}

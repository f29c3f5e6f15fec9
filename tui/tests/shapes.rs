//! The hostile input shapes: one generator per shape, each called with a running counter
//! for the events of its next step. Shared by `tests/memory_bounds.rs` (replayed at
//! `--max-mib 32`, peak RSS bounded) and `benches/shapes.rs` (events per second), so both
//! measure the same inputs. (Cargo also builds it as a test crate of its own, with no test
//! and nothing calling it: hence the allowance.)
#![allow(dead_code)]

use probe_protocol::{
    AllocSample, Event, Hello, Marker, ProofBegin, ProofEnd, SpanBegin, SpanEnd, ThreadSched,
};

/// A shape: its name and its generator.
pub type Shape = (&'static str, Box<dyn FnMut(u64) -> Vec<Event>>);

pub fn hello(pid: u32, args: usize) -> Event {
    Event::Hello(Box::new(Hello {
        protocol_major: 1,
        pid,
        prover_name: "hostile".into(),
        command_line: (0..args)
            .map(|i| format!("--arg-{i}-{}", "x".repeat(900)))
            .collect(),
        ..Default::default()
    }))
}

/// Every shape.
pub fn shapes() -> Vec<Shape> {
    let mut out: Vec<Shape> = Vec::new();
    let mut add = |name: &'static str, f: Box<dyn FnMut(u64) -> Vec<Event>>| out.push((name, f));
    add(
        "loose spans",
        Box::new(|i| {
            let mut v = if i == 0 { vec![hello(1, 1)] } else { vec![] };
            v.push(Event::SpanBegin(SpanBegin {
                ts: i * 1000 + 1,
                span: i + 1,
                parent: None,
                proof: None,
                name: 1,
                thread: 1,
            }));
            v
        }),
    );
    add(
        "deep nesting",
        Box::new(|i| {
            // One chain of spans, each inside the previous one, none ended, in one proof.
            let mut v = if i == 0 {
                vec![
                    hello(1, 1),
                    Event::ProofBegin(Box::new(ProofBegin {
                        ts: 1,
                        proof: 1,
                        span: 1,
                        ..Default::default()
                    })),
                ]
            } else {
                vec![]
            };
            v.push(Event::SpanBegin(SpanBegin {
                ts: i * 1000 + 1,
                span: i + 1,
                parent: (i > 0).then_some(i),
                proof: Some(1),
                name: 1,
                thread: 1,
            }));
            v
        }),
    );
    add(
        "samples",
        Box::new(|i| {
            vec![Event::AllocSample(AllocSample {
                ts: i * 1000 + 1,
                live_bytes: i,
                ..Default::default()
            })]
        }),
    );
    add(
        "definitions",
        Box::new(|i| {
            vec![Event::NameDef {
                id: i as u32 + 1,
                name: format!("{i}-{}", "n".repeat(200)),
            }]
        }),
    );
    add("sessions", Box::new(|i| vec![hello(i as u32 + 1, 20)]));
    // The 120k sessions: each a small Hello and one proof.
    add(
        "sessions of one proof",
        Box::new(|i| {
            vec![
                Event::Hello(Box::new(Hello {
                    protocol_major: 1,
                    pid: i as u32 + 1,
                    session_start_unix_ns: i,
                    prover_name: "many".into(),
                    ..Default::default()
                })),
                Event::ProofBegin(Box::new(ProofBegin {
                    ts: 10,
                    proof: 1,
                    span: 1,
                    ..Default::default()
                })),
                Event::SpanBegin(SpanBegin {
                    ts: 10,
                    span: 1,
                    parent: None,
                    proof: Some(1),
                    name: 1,
                    thread: 1,
                }),
                Event::SpanEnd(SpanEnd { ts: 20, span: 1 }),
                Event::ProofEnd(Box::new(ProofEnd {
                    ts: 21,
                    proof: 1,
                    ok: true,
                    ..Default::default()
                })),
            ]
        }),
    );
    add(
        "proofs",
        Box::new(|i| {
            let (p, s) = (i + 1, i * 10 + 1);
            vec![
                Event::ProofBegin(Box::new(ProofBegin {
                    ts: i * 1000 + 1,
                    proof: p,
                    span: s,
                    circuit: "c".repeat(100),
                    ..Default::default()
                })),
                Event::SpanBegin(SpanBegin {
                    ts: i * 1000 + 1,
                    span: s,
                    parent: None,
                    proof: Some(p),
                    name: 1,
                    thread: 1,
                }),
                Event::SpanEnd(SpanEnd {
                    ts: i * 1000 + 900,
                    span: s,
                }),
                Event::ProofEnd(Box::new(ProofEnd {
                    ts: i * 1000 + 901,
                    proof: p,
                    ok: true,
                    ..Default::default()
                })),
            ]
        }),
    );
    add(
        "marker texts",
        Box::new(|i| {
            vec![Event::Marker(Box::new(Marker {
                ts: i * 1000 + 1,
                name: 1,
                thread: 1,
                span: None,
                text: Some("t".repeat(3000)),
            }))]
        }),
    );
    out
}

/// One proof of `n` child spans on the proving thread, 1 ms each with 2 ms between them — every
/// gap over 1 ms, so every one is listed and diagnosed — another thread's span across the whole
/// proof (what a diagnosis looks at for "other work"), and scheduler samples of the proving
/// thread every 10 ms. Used by `tests/linear_time.rs` and `benches/listing.rs`.
pub fn fan_out(n: u64) -> Vec<Event> {
    const MS: u64 = 1_000_000;
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

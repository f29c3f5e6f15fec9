//! Sessions for unit tests, built the one way a real session is: by ingesting events.

use super::{Model, NameId, Retention, Session, SpanId, ThreadId};
use probe_protocol::{
    BlockEvent, Event, GpuSpan, Hello, Marker, ProofBegin, ProofEnd, SpanBegin, SpanEnd,
    ThreadSched,
};
use std::collections::HashMap;

/// Events to ingest, with names interned and span ids handed out as a probe would.
#[derive(Debug)]
pub struct Fixture {
    events: Vec<Event>,
    names: HashMap<String, u32>,
    next_span: u64,
}

impl Default for Fixture {
    fn default() -> Self {
        Fixture::new()
    }
}

impl Fixture {
    /// A session of prover `fixture`, pid 1.
    pub fn new() -> Fixture {
        Fixture::with_hello(Hello {
            protocol_major: probe_protocol::PROTOCOL_MAJOR,
            prover_name: "fixture".into(),
            pid: 1,
            ..Hello::default()
        })
    }

    pub fn with_hello(h: Hello) -> Fixture {
        Fixture {
            events: vec![Event::Hello(Box::new(h))],
            names: HashMap::new(),
            next_span: 1,
        }
    }

    pub fn name(&mut self, n: &str) -> NameId {
        let next = self.names.len() as u32 + 1;
        let id = *self.names.entry(n.to_owned()).or_insert(next);
        if id == next {
            self.events.push(Event::NameDef { id, name: n.into() });
        }
        NameId(id)
    }

    pub fn thread(&mut self, id: u32, name: &str) -> ThreadId {
        self.events.push(Event::ThreadDef {
            id,
            name: name.into(),
            os_tid: u64::from(id) + 100,
        });
        ThreadId(id)
    }

    /// A span `name` on `thread` over [a, b), in `proof`, under `parent`.
    pub fn span(
        &mut self,
        proof: Option<u64>,
        parent: Option<SpanId>,
        name: &str,
        thread: ThreadId,
        a: u64,
        b: u64,
    ) -> SpanId {
        let name = self.name(name);
        let span = self.next_span;
        self.next_span += 1;
        self.events.push(Event::SpanBegin(SpanBegin {
            ts: a,
            span,
            parent: parent.map(SpanId::get),
            proof,
            name: name.get(),
            thread: thread.get(),
        }));
        self.events.push(Event::SpanEnd(SpanEnd { ts: b, span }));
        SpanId(span)
    }

    /// Proof `proof` on `backend`: its outer span `name` over [a, b), begun and ended.
    pub fn proof(
        &mut self,
        proof: u64,
        backend: &str,
        name: &str,
        thread: ThreadId,
        a: u64,
        b: u64,
    ) -> SpanId {
        let outer = self.next_span;
        self.events.push(Event::ProofBegin(Box::new(ProofBegin {
            ts: a,
            proof,
            span: outer,
            backend: backend.into(),
            ..ProofBegin::default()
        })));
        let id = self.span(Some(proof), None, name, thread, a, b);
        self.events.push(Event::ProofEnd(Box::new(ProofEnd {
            ts: b,
            proof,
            ok: true,
            ..ProofEnd::default()
        })));
        id
    }

    /// Device work `name` launched from `span`, over [a, b).
    pub fn gpu_span(&mut self, span: SpanId, device: u32, name: &str, a: u64, b: u64) {
        let name = self.name(name);
        self.events.push(Event::GpuSpan(GpuSpan {
            start: a,
            end: b,
            device,
            stream: 0,
            name: name.get(),
            span: Some(span.get()),
        }));
    }

    /// A large release of `bytes` at `ts` taking `inside_ns` on `thread`.
    pub fn release(
        &mut self,
        ts: u64,
        bytes: u64,
        inside_ns: u64,
        thread: ThreadId,
        span: Option<SpanId>,
    ) {
        self.events.push(Event::Release(BlockEvent {
            ts,
            bytes,
            inside_ns,
            thread: thread.get(),
            span: span.map(SpanId::get),
            stack: None,
        }));
    }

    /// Scheduler counters of `thread` at `ts`.
    pub fn sched(&mut self, ts: u64, thread: ThreadId, cpu_ns: u64, runq_ns: u64) {
        self.events.push(Event::ThreadSched(ThreadSched {
            ts,
            thread: thread.get(),
            cpu_ns,
            runq_ns,
            timeslices: 0,
        }));
    }

    /// Marker `name` on `thread` at `ts`, in `span`, with `text`.
    pub fn marker(
        &mut self,
        ts: u64,
        name: &str,
        thread: ThreadId,
        span: Option<SpanId>,
        text: &str,
    ) {
        let name = self.name(name);
        self.events.push(Event::Marker(Box::new(Marker {
            ts,
            name: name.get(),
            thread: thread.get(),
            span: span.map(SpanId::get),
            text: Some(text.into()),
        })));
    }

    /// Any other event.
    pub fn event(&mut self, e: Event) {
        self.events.push(e);
    }

    /// The model of everything so far.
    pub fn model(&self) -> Model {
        let mut m = Model::new(Retention::default());
        m.ingest_all(self.events.iter().cloned());
        m
    }
}

/// The one session of `m`.
pub fn session(m: &Model) -> &Session {
    m.current().expect("a fixture has a session")
}

#![allow(dead_code)]
//! A minimal viewer for tests: connects, subscribes, reads frames until the goodbye.

use probe_protocol::*;
use std::collections::HashMap;
use std::io::Write;
use std::os::unix::net::UnixStream;
use std::path::Path;
use std::sync::Mutex;
use std::time::{Duration, Instant};

/// One probe session per process at a time: tests that start one take this lock.
pub static SERIAL: Mutex<()> = Mutex::new(());

pub fn serial() -> std::sync::MutexGuard<'static, ()> {
    SERIAL.lock().unwrap_or_else(|p| p.into_inner())
}

pub struct Client {
    frames: FrameReader<UnixStream>,
}

impl Client {
    pub fn connect(path: &Path, history: bool) -> Client {
        let deadline = Instant::now() + Duration::from_secs(5);
        let mut stream = loop {
            match UnixStream::connect(path) {
                Ok(s) => break s,
                Err(e) if Instant::now() < deadline => {
                    let _ = e;
                    std::thread::sleep(Duration::from_millis(10));
                }
                Err(e) => panic!("connect {}: {e}", path.display()),
            }
        };
        let sub = encode_frame(
            0,
            &[Event::Subscribe(Subscribe {
                history,
                client: "test".into(),
            })],
        )
        .unwrap();
        stream.write_all(&sub).unwrap();
        stream
            .set_read_timeout(Some(Duration::from_secs(20)))
            .unwrap();
        Client {
            frames: FrameReader::new(stream),
        }
    }

    /// Reads one frame's events (blocking).
    pub fn next_events(&mut self) -> Option<Vec<Event>> {
        let raw = self.frames.next_raw().ok()??;
        Some(raw.decode().unwrap().events)
    }

    /// Reads until `Goodbye` (inclusive) or the end of the stream, optionally pausing after
    /// each frame to play a slow viewer.
    pub fn read_until_goodbye(&mut self, pause: Option<Duration>) -> Vec<Event> {
        let mut out = Vec::new();
        while let Some(evs) = self.next_events() {
            let bye = evs.iter().any(|e| matches!(e, Event::Goodbye { .. }));
            out.extend(evs);
            if bye {
                break;
            }
            if let Some(p) = pause {
                std::thread::sleep(p);
            }
        }
        out
    }

    /// Reads until an event matches.
    pub fn read_until(&mut self, mut f: impl FnMut(&Event) -> bool) -> Vec<Event> {
        let mut out = Vec::new();
        while let Some(evs) = self.next_events() {
            let hit = evs.iter().any(&mut f);
            out.extend(evs);
            if hit {
                break;
            }
        }
        out
    }
}

/// Per-kind totals of received events and of reported drops.
pub fn tally(events: &[Event]) -> (HashMap<EventKind, u64>, HashMap<EventKind, u64>) {
    let mut got = HashMap::new();
    let mut dropped = HashMap::new();
    for e in events {
        match e {
            Event::Dropped(d) => {
                for (k, n) in &d.counts {
                    *dropped.entry(*k).or_insert(0) += n;
                }
            }
            e => *got.entry(e.kind()).or_insert(0) += 1,
        }
    }
    (got, dropped)
}

pub fn names(events: &[Event]) -> HashMap<u32, String> {
    events
        .iter()
        .filter_map(|e| match e {
            Event::NameDef { id, name } => Some((*id, name.clone())),
            _ => None,
        })
        .collect()
}

pub fn threads(events: &[Event]) -> HashMap<u32, String> {
    events
        .iter()
        .filter_map(|e| match e {
            Event::ThreadDef { id, name, .. } => Some((*id, name.clone())),
            _ => None,
        })
        .collect()
}

/// Spans and markers from four threads under one outer span, over a real socket: every span
/// arrives, once, closed after it opened, under the right parent and thread. Returns the
/// session's events. The caller holds [`serial`].
pub fn spans_nest_across_threads() -> Vec<Event> {
    use proofscope_probe::{Probe, ProbeConfig, SessionInfo, SocketChoice, SpanHandle};
    use proofscope_probe::{marker, span};
    use std::collections::HashSet;
    let dir = tempfile::tempdir().unwrap();
    let sock = dir.path().join("p.sock");
    let cfg = ProbeConfig::new("test-prover", "0.0.0")
        .socket(SocketChoice::At(sock.to_owned()))
        .gpu_sample(None)
        .large_block(u64::MAX / 2);
    let p = Probe::start(cfg, SessionInfo::default()).unwrap();
    let mut client = Client::connect(&sock, false);
    // Wait until we are live, so everything below is received live.
    let mut events = client.read_until(|e| matches!(e, Event::LiveStart { .. }));

    let outer = span!("outer");
    let handle = outer.handle();
    let workers: Vec<_> = (0..4)
        .map(|i| {
            std::thread::Builder::new()
                .name(format!("worker-{i}"))
                .spawn(move || {
                    // Adopt the main thread's span as parent, then nest.
                    let _a = handle.adopt();
                    for _ in 0..100 {
                        let _mid = span!("mid");
                        let _inner = span!("inner");
                        marker!("tick");
                    }
                    let _x = span!("under_explicit", parent = SpanHandle::current());
                })
                .unwrap()
        })
        .collect();
    for w in workers {
        w.join().unwrap();
    }
    let outer_id = outer.id();
    drop(outer);
    p.shutdown("test done");
    events.extend(client.read_until_goodbye(None));

    let names = names(&events);
    let threads = threads(&events);
    let mut open: HashMap<u64, SpanBegin> = HashMap::new();
    let mut closed = HashSet::new();
    for e in &events {
        match e {
            Event::SpanBegin(b) => {
                assert!(open.insert(b.span, *b).is_none(), "span id reused");
            }
            Event::SpanEnd(end) => {
                assert!(open.contains_key(&end.span), "end before begin");
                assert!(closed.insert(end.span));
                assert!(end.ts >= open[&end.span].ts);
            }
            _ => {}
        }
    }
    assert_eq!(open.len(), 1 + 4 * 201);
    assert_eq!(closed.len(), open.len(), "every span closed");
    for b in open.values() {
        let name = names[&b.name].as_str();
        let parent = b.parent.map(|p| names[&open[&p].name].as_str());
        match name {
            "outer" => assert_eq!(b.parent, None),
            "mid" => assert_eq!(b.parent, Some(outer_id)),
            "inner" => {
                assert_eq!(parent, Some("mid"));
                assert_eq!(
                    open[&b.parent.unwrap()].thread,
                    b.thread,
                    "nests per thread"
                );
            }
            "under_explicit" => assert_eq!(b.parent, Some(outer_id)),
            other => panic!("unexpected span {other}"),
        }
        if name != "outer" {
            assert!(
                threads[&b.thread].starts_with("worker-"),
                "{}",
                threads[&b.thread]
            );
        }
    }
    let markers = events
        .iter()
        .filter(|e| matches!(e, Event::Marker(_)))
        .count();
    assert_eq!(markers, 400);
    assert!(matches!(events.last(), Some(Event::Goodbye { reason, .. }) if reason == "test done"));
    events
}

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

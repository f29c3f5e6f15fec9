//! A recording started in the middle of a session (`r` in the dashboard) reads on its own: it
//! begins with the session's welcome — Hello, names, threads and call stacks, the same list
//! the prover's collector gives a late viewer — so every release in it is attributed to the
//! code that freed it, as in the whole recording.
mod common;

use probe_protocol::{Event, FRAME_PREFIX_LEN, RecordingReader, decode_frame};
use proofscope_engine::analysis::frames::who_of;
use proofscope_engine::model::{Model, Retention};
use proofscope_engine::tap::record::Recorder;
use std::collections::HashMap;

/// Every frame of a recording: its raw bytes and its events.
fn frames(name: &str) -> Vec<(Vec<u8>, Vec<Event>)> {
    let f = std::fs::File::open(common::recording(name)).unwrap();
    let mut r = RecordingReader::new(f).unwrap();
    let mut out = Vec::new();
    while let Ok(Some(raw)) = r.next_raw() {
        let bytes = raw.into_bytes();
        let events = decode_frame(&bytes[FRAME_PREFIX_LEN..]).unwrap().events;
        out.push((bytes, events));
    }
    out
}

/// The cut that leaves the most releases after it whose stack was defined before it, and
/// how many.
fn best_cut(frames: &[(Vec<u8>, Vec<Event>)]) -> (usize, usize) {
    let mut defined_at = HashMap::new();
    let mut uses = Vec::new();
    for (i, (_, evs)) in frames.iter().enumerate() {
        for e in evs {
            match e {
                Event::StackDef { id, .. } => {
                    defined_at.entry(*id).or_insert(i);
                }
                Event::Release(b) => uses.extend(b.stack.map(|s| (i, s))),
                _ => {}
            }
        }
    }
    let mut cuts: Vec<usize> = defined_at.values().map(|i| i + 1).collect();
    cuts.sort_unstable();
    cuts.dedup();
    cuts.into_iter()
        .map(|cut| {
            let n = uses
                .iter()
                .filter(|(at, s)| *at >= cut && defined_at[s] < cut)
                .count();
            (cut, n)
        })
        .max_by_key(|&(_, n)| n)
        .unwrap_or((0, 0))
}

/// (ts, bytes, thread name, freed_by) of every release of the model's current session.
fn releases(m: &Model) -> Vec<(u64, u64, String, Option<String>)> {
    let s = m.current().unwrap();
    s.releases()
        .all()
        .iter()
        .map(|r| {
            (
                r.ts,
                r.bytes,
                s.thread_name(r.thread).into_owned(),
                who_of(s, r),
            )
        })
        .collect()
}

#[test]
fn a_recording_started_midway_names_who_freed_every_block() {
    let name = "h200-overlap.psrec";
    let frames = frames(name);
    let (cut, reused) = best_cut(&frames);
    assert!(
        reused > 100,
        "releases after the cut use stacks defined before it: {reused}"
    );
    let mut m = Model::new(Retention::default());
    for (_, events) in &frames[..cut] {
        m.ingest_all(events.iter().cloned());
    }
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("late.psrec");
    let mut rec = Recorder::create(&path, m.current()).unwrap();
    for (raw, _) in &frames[cut..] {
        rec.frame(raw).unwrap();
    }
    rec.finish().unwrap();

    let full = common::replayed(name);
    let late = common::replayed(path.to_str().unwrap());
    let want = releases(full.model());
    let got = releases(late.model());
    let named = got.iter().filter(|r| r.3.is_some()).count();
    assert!(
        named >= reused,
        "{named} of the late recording's releases are named, {reused} by stacks from before the cut"
    );
    for r in &got {
        assert!(
            want.contains(r),
            "{r:?}: not as in the whole recording (freed_by lost?)"
        );
    }
}

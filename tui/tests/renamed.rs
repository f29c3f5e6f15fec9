//! The analysis knows no prover's phase names: every recording, with every span renamed
//! (`ntt_msm_h` → `zq7_span`, …), reports the same gaps, flags, diagnoses and GPU findings,
//! word for word once the names are mapped back.
mod common;

use probe_protocol::{Event, RecordingReader, RecordingWriter, encode_frames};
use proofscope::app::App;
use proofscope_engine::report;
use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

/// A name no report would otherwise contain, for span name `i`.
fn renamed(i: usize) -> String {
    format!("zq{i}_span")
}

/// Copies recording `from` to `to` with every span's name replaced; returns new → old.
fn rename_spans(from: &Path, to: &Path) -> BTreeMap<String, String> {
    let read = || {
        let mut r = RecordingReader::new(std::fs::File::open(from).unwrap()).unwrap();
        let mut frames = Vec::new();
        while let Ok(Some(f)) = r.next_frame() {
            frames.push(f.events);
        }
        frames
    };
    let frames = read();
    let span_names: BTreeSet<u32> = frames
        .iter()
        .flatten()
        .filter_map(|e| match e {
            Event::SpanBegin(b) => Some(b.name),
            _ => None,
        })
        .collect();
    let mut map = BTreeMap::new();
    let mut w = RecordingWriter::new(std::fs::File::create(to).unwrap()).unwrap();
    for mut events in frames {
        for e in &mut events {
            if let Event::NameDef { id, name } = e
                && span_names.contains(id)
            {
                let new = renamed(*id as usize);
                map.insert(new.clone(), std::mem::replace(name, new));
            }
        }
        for f in encode_frames(&events).unwrap() {
            w.write_frame(&f).unwrap();
        }
    }
    w.flush().unwrap();
    map
}

fn json_report(path: &Path, label: &str) -> String {
    let mut app = App::replay(path.to_owned(), &common::opts()).unwrap();
    app.relabel(label);
    common::read_through(&mut app);
    report::json(&app.report())
}

#[test]
fn renamed_phases_get_the_same_analysis_word_for_word() {
    let dir = tempfile::tempdir().unwrap();
    for name in common::all_recordings() {
        let original = common::recording(&name);
        let copy = dir.path().join(&name);
        let map = rename_spans(&original, &copy);
        assert!(map.len() >= 2, "{name}: spans to rename");
        let want: serde_json::Value = serde_json::from_str(&json_report(&original, &name)).unwrap();
        let mut got = json_report(&copy, &name);
        // Longest first: no renamed name is a prefix of another (`zq1_span` / `zq12_span`).
        let mut back: Vec<_> = map.iter().collect();
        back.sort_by_key(|(new, _)| std::cmp::Reverse(new.len()));
        for (new, old) in back {
            got = got.replace(new.as_str(), old);
        }
        let got: serde_json::Value = serde_json::from_str(&got).unwrap();
        let sessions = |v: &serde_json::Value| v["sessions"].clone();
        assert_eq!(
            sessions(&got),
            sessions(&want),
            "{name}: the analysis changed with the names"
        );
        // Phase statistics are the same rows; only ties in start order may fall apart.
        let rows = |v: &serde_json::Value| {
            let mut r: Vec<String> = v["phase_stats"]
                .as_array()
                .unwrap()
                .iter()
                .map(|x| x.to_string())
                .collect();
            r.sort();
            r
        };
        assert_eq!(rows(&got), rows(&want), "{name}: phase statistics");
    }
}

//! A verdict is final only when its evidence is: replayed frame by frame, every gap the
//! dashboard would show for a proof that has settled keeps its diagnosis to the last frame,
//! and a proof that has not settled shows only what is known so far ("in progress: …"), never
//! a cause a later frame could replace. Live, while the demo's 2.2 GB were being freed, the gap
//! read "6.3 MB freed in 6 large releases on serve-0 …" and became "synchronous release:
//! 2.2 GB" only when the proof ended.

mod common;

use proofscope_engine::analysis::settled::is_settled;
use proofscope_engine::analysis::{GapRule, gap_listing};
use proofscope_engine::model::{Model, ProofId};
use std::collections::HashMap;

/// What the gaps panel shows for each gap of a proof: its span, place and words.
fn shown(model: &Model, id: ProofId) -> (bool, Vec<String>) {
    let s = model.current().unwrap();
    let p = s.proof(id).unwrap();
    let settled = is_settled(s, p);
    let (listed, _, _) = gap_listing(s, p, &GapRule::default());
    let words = listed
        .iter()
        .map(|l| {
            format!(
                "{} {:?}: {}",
                s.name(l.span.name),
                l.gap.place,
                l.shown(settled)
            )
        })
        .collect();
    (settled, words)
}

fn check(name: &str) {
    let rec =
        probe_protocol::read_all(std::fs::File::open(common::recording(name)).unwrap()).unwrap();
    let mut model = Model::new(Default::default());
    let mut first: HashMap<ProofId, Vec<String>> = HashMap::new();
    let (mut settled_seen, mut provisional_seen) = (0, 0);
    for f in rec.frames {
        model.ingest_all(f.events);
        let Some(s) = model.current() else { continue };
        let ids: Vec<ProofId> = s.proofs().map(|p| p.id()).collect();
        for id in ids {
            let (settled, words) = shown(&model, id);
            if !settled {
                provisional_seen += 1;
                for w in &words {
                    assert!(w.contains("in progress:"), "{name} proof {id:?}: {w}");
                }
                continue;
            }
            settled_seen += 1;
            let was = first.entry(id).or_insert_with(|| words.clone());
            assert_eq!(
                *was, words,
                "{name} proof {id:?}: a verdict shown once was replaced later"
            );
        }
    }
    assert!(
        settled_seen > 0 && provisional_seen > 0,
        "{name}: both kinds of frame seen ({settled_seen} settled, {provisional_seen} not)"
    );
    assert!(!first.is_empty(), "{name}: verdicts were shown");
}

#[test]
fn no_verdict_shown_on_the_h200_ghost_is_replaced_later() {
    check("h200-ghost-sync.psrec");
}

#[test]
fn no_verdict_shown_on_the_cpp_c2_ghost_is_replaced_later() {
    check("cpp-c2-sync.psrec");
}

//! Every recording (and every log) in `recordings/` replays to the same text report, JSON
//! report and Chrome trace as the golden files say: a change of the model, the analysis or the
//! reports that moves any figure shows here. Text and JSON are snapshots (a diff shows what
//! moved); a Chrome trace is megabytes, so its digest is kept (`golden/chrome.digests`), and a
//! mismatch names the recording to look at with `proofscope replay … --format chrome`.
//!
//! To accept a change on purpose: `INSTA_UPDATE=always cargo test -p proofscope --test golden`
//! and `PROOFSCOPE_GOLDEN_UPDATE=1` for the digests; say in the commit which outputs moved and
//! why.
mod common;

use proofscope_engine::report;
use std::collections::BTreeMap;
use std::path::PathBuf;

/// FNV-1a, 64 bits: stable across builds and platforms (a digest, not a defence).
fn digest(bytes: &[u8]) -> String {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for b in bytes {
        h ^= u64::from(*b);
        h = h.wrapping_mul(0x0100_0000_01b3);
    }
    format!("{h:016x} {}", bytes.len())
}

/// The recordings and logs, by the name the snapshots carry.
fn inputs() -> Vec<(String, String)> {
    let mut v: Vec<(String, String)> = common::all_recordings()
        .into_iter()
        .map(|n| (n.clone(), n))
        .collect();
    let logs = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../recordings/logs");
    let mut names: Vec<String> = std::fs::read_dir(logs)
        .unwrap()
        .filter_map(|e| e.ok()?.file_name().into_string().ok())
        .collect();
    names.sort();
    v.extend(names.into_iter().map(|n| (n.clone(), format!("logs/{n}"))));
    v
}

fn digests_file() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/golden/chrome.digests")
}

fn read_digests() -> BTreeMap<String, String> {
    std::fs::read_to_string(digests_file())
        .unwrap_or_default()
        .lines()
        .filter_map(|l| {
            let (name, d) = l.split_once(": ")?;
            Some((name.to_owned(), d.to_owned()))
        })
        .collect()
}

#[test]
fn every_recording_reports_as_the_golden_files_say() {
    let mut digests = BTreeMap::new();
    for (name, path) in inputs() {
        let app = common::replayed(&path);
        let r = app.report();
        insta::assert_snapshot!(format!("{name}.text"), report::text(&r));
        insta::assert_snapshot!(format!("{name}.json"), report::json(&r));
        let chrome = report::chrome_trace(app.model(), &app.view.rule);
        digests.insert(name, digest(chrome.as_bytes()));
    }
    if std::env::var_os("PROOFSCOPE_GOLDEN_UPDATE").is_some() {
        let text: String = digests.iter().map(|(n, d)| format!("{n}: {d}\n")).collect();
        std::fs::create_dir_all(digests_file().parent().unwrap()).unwrap();
        std::fs::write(digests_file(), text).unwrap();
        return;
    }
    let want = read_digests();
    let moved: Vec<String> = digests
        .iter()
        .filter(|(n, d)| want.get(*n) != Some(d))
        .map(|(n, d)| format!("{n}: {d} (golden: {:?})", want.get(n)))
        .collect();
    assert!(
        moved.is_empty(),
        "Chrome traces moved (PROOFSCOPE_GOLDEN_UPDATE=1 accepts them):\n{}",
        moved.join("\n")
    );
}

//! `proofscope diff A B` on real and crafted recordings: the ghost fixed, a session against
//! itself, and a regression that fails a CI gate.
mod common;

use common::BIN;

use std::process::{Command, Output};

fn diff(a: &std::path::Path, b: &std::path::Path, extra: &[&str]) -> Output {
    Command::new(BIN)
        .arg("diff")
        .arg(a)
        .arg(b)
        .args(extra)
        .output()
        .unwrap()
}

#[test]
fn the_ghost_fixed_shows_as_the_tail_gone_and_the_releases_moved() {
    let o = diff(
        &common::recording("h200-ghost-sync.psrec"),
        &common::recording("h200-ghost-async.psrec"),
        &["--format", "json"],
    );
    assert!(o.status.success(), "{o:?}");
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    // Unaccounted time falls by ~1.4 s (one proof each side: no interval).
    let u = v["unaccounted_s"]["diff"].as_f64().unwrap();
    assert!((-1.45..=-1.3).contains(&u), "{u}");
    assert!(v["unaccounted_s"]["interval"].is_null());
    let gone = v["flagged_gaps"]
        .as_array()
        .unwrap()
        .iter()
        .find(|g| g["kind"] == "synchronous_release")
        .expect("the tail gap");
    assert_eq!(
        (gone["in_a"].as_u64(), gone["in_b"].as_u64()),
        (Some(1), Some(0))
    );
    let place = |name: &str| {
        v["releases"]
            .as_array()
            .unwrap()
            .iter()
            .find(|r| r["place"] == name)
            .unwrap()
            .clone()
    };
    let outer = place("in the outer span, outside phases");
    let after = place("after the proof");
    assert!(
        outer["bytes_a"].as_u64().unwrap() > 26_000_000_000,
        "{outer}"
    );
    assert_eq!(outer["bytes_b"], 0, "{outer}");
    assert_eq!(outer["threads_a"][0], "main");
    assert!(
        after["bytes_b"].as_u64().unwrap() > 26_000_000_000,
        "{after}"
    );
    assert_eq!(after["threads_b"][0], "dealloc");
    let text = diff(
        &common::recording("h200-ghost-sync.psrec"),
        &common::recording("h200-ghost-async.psrec"),
        &[],
    );
    let t = String::from_utf8(text.stdout).unwrap();
    assert!(
        t.contains(
            "GONE: gap in prove after the last child (synchronous_release): 1 of 1 → 0 of 1"
        ),
        "{t}"
    );
}

#[test]
fn a_session_against_itself_changes_nothing_and_passes_the_gate() {
    let a = common::recording("cpu-sha256-sync.psrec");
    let o = diff(&a, &a, &["--fail-on-regression", "1"]);
    let t = String::from_utf8_lossy(&o.stdout);
    assert_eq!(o.status.code(), Some(0), "{t}");
    assert!(!t.contains("changed"), "{t}");
    assert!(t.contains("within noise"), "{t}");
}

#[test]
fn a_regression_beyond_noise_fails_the_gate_with_status_4() {
    let dir = tempfile::tempdir().unwrap();
    let (before, after) = (dir.path().join("a.psrec"), dir.path().join("b.psrec"));
    common::busy_session(&before, 40, None);
    common::busy_session(&after, 40, Some(1));
    let o = diff(&before, &after, &["--fail-on-regression", "5"]);
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(4), "{err}");
    assert!(err.contains("unaccounted share"), "{err}");
    // The same pair the other way round is an improvement: no failure.
    let o = diff(&after, &before, &["--fail-on-regression", "5"]);
    assert_eq!(o.status.code(), Some(0));
    let t = String::from_utf8_lossy(&o.stdout);
    assert!(t.contains("GONE") && t.contains("changed"), "{t}");
}

/// One proof a side has no interval, yet a flagged gap that appears is plain: the ghost
/// coming back (async → sync on the H200) fails the gate, and "no interval" is said once.
#[test]
fn a_flagged_gap_that_appears_is_a_regression_whatever_the_intervals() {
    let (a, b) = (
        common::recording("h200-ghost-async.psrec"),
        common::recording("h200-ghost-sync.psrec"),
    );
    let o = diff(&a, &b, &["--fail-on-regression", "5"]);
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(4), "{err}");
    assert!(err.contains("a flagged gap appeared: prove"), "{err}");
    let t = String::from_utf8_lossy(&o.stdout);
    assert_eq!(t.matches("no interval").count(), 1, "{t}");
    // The fix the other way round cannot be judged by its figures (one proof a side): a gate
    // fails on that, says why, and passes when told it may.
    let o = diff(&b, &a, &["--fail-on-regression", "5"]);
    assert_eq!(o.status.code(), Some(1), "{o:?}");
    assert!(
        String::from_utf8_lossy(&o.stderr).contains("no figure could be judged"),
        "{o:?}"
    );
    let o = diff(&b, &a, &["--fail-on-regression", "5", "--allow-unjudged"]);
    assert_eq!(
        o.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&o.stderr)
    );
}

/// A phase of nanoseconds that grew by 250 % is no regression: below --min-change (1 ms by
/// default) no change counts; with the floor at 0 the same pair fails.
#[test]
fn a_change_below_the_floor_is_never_a_regression() {
    let (a, b) = (
        common::recording("cpp-c2-async.psrec"),
        common::recording("cpp-c2-sync.psrec"),
    );
    let o = diff(&a, &b, &["--fail-on-regression", "5"]);
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(!err.contains("epilogue"), "{err}");
    let o = diff(&a, &b, &["--fail-on-regression", "5", "--min-change", "0"]);
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(4), "{err}");
    assert!(err.contains("epilogue"), "{err}");
    let t = String::from_utf8_lossy(&o.stdout);
    // One minus sign: the real one.
    assert!(!t.contains("[-") && !t.contains(", -"), "{t}");
}

/// A side without a complete proof: the text says `-`, never NaN, and a gate does not pass
/// on nothing (exit 1, saying which side).
#[test]
fn a_gate_never_passes_on_a_side_without_proofs() {
    let dir = tempfile::tempdir().unwrap();
    let empty = dir.path().join("empty.psrec");
    // A recording of no frames: the header alone.
    let header = std::fs::read(common::recording("cpu-sha256-sync.psrec")).unwrap();
    std::fs::write(&empty, &header[..12]).unwrap();
    let a = common::recording("cpu-sha256-sync.psrec");
    let o = diff(&a, &empty, &[]);
    assert!(o.status.success(), "{o:?}");
    let text = String::from_utf8_lossy(&o.stdout);
    assert!(!text.contains("NaN"), "{text}");
    for (x, y) in [(&a, &empty), (&empty, &a), (&empty, &empty)] {
        let o = diff(x, y, &["--fail-on-regression", "0"]);
        let err = String::from_utf8_lossy(&o.stderr);
        assert_eq!(o.status.code(), Some(1), "{err}");
        assert!(err.contains("empty.psrec has no complete proof"), "{err}");
    }
}

//! Golden tests of the three headless formats, from the real recordings.
mod common;

use proofscope_engine::report::{self, Place};

fn text(name: &str) -> String {
    let app = common::replayed(name);
    report::text(&app.report())
}

/// Timings differ between recordings but not between runs: the reports are golden.
#[test]
fn text_reports_are_golden() {
    insta::assert_snapshot!("sync_text", text("cpu-sha256-sync.psrec"));
    insta::assert_snapshot!("async_text", text("cpu-sha256-async.psrec"));
}

#[test]
fn json_report_is_golden_and_follows_the_schema() {
    let app = common::replayed("cpu-sha256-sync.psrec");
    let r = report::build(app.model(), &app.view.rule, app.session.label(), vec![]);
    let j = report::json(&r);
    insta::assert_snapshot!("sync_json", j);
    let v: serde_json::Value = serde_json::from_str(&j).unwrap();
    assert_eq!(v["protocol"], probe_protocol::protocol_version());
    let proofs = v["sessions"][0]["proofs"].as_array().unwrap();
    assert_eq!(proofs.len(), 4);
    for p in proofs {
        assert_eq!(p["verification"], "valid");
        assert_eq!(
            p["phases"].as_array().unwrap().len(),
            8,
            "7 phases and barrier_wait"
        );
    }
}

#[test]
fn chrome_trace_is_golden_and_well_formed() {
    let app = common::replayed("cpu-sha256-sync.psrec");
    let t = report::chrome_trace(app.model(), &app.view.rule);
    insta::assert_snapshot!("sync_chrome", t);
    let v: serde_json::Value = serde_json::from_str(&t).unwrap();
    let evs = v["traceEvents"].as_array().unwrap();
    let spans = evs
        .iter()
        .filter(|e| e["ph"] == "X" && e["cat"] == "span")
        .count();
    assert_eq!(spans, 129, "every span of the recording");
    assert!(evs.iter().any(|e| e["ph"] == "C" && e["name"] == "memory"));
    assert!(evs.iter().any(|e| e["cat"] == "release"));
    assert!(
        evs.iter()
            .any(|e| e["ph"] == "M" && e["args"]["name"] == "main")
    );
    for e in evs.iter().filter(|e| e["ph"] == "X") {
        assert!(e["dur"].as_f64().unwrap() >= 0.0 && e["ts"].as_f64().is_some());
    }
}

/// Slices of one track in a Chrome trace may nest but never overlap partly (Perfetto drops
/// them): checked on every recording, with every track named.
#[test]
fn chrome_traces_of_every_recording_nest_their_slices_and_name_their_tracks() {
    let names = common::all_recordings();
    for name in &names {
        let app = common::replayed(name);
        let t = report::chrome_trace(app.model(), &app.view.rule);
        let v: serde_json::Value =
            serde_json::from_str(&t).unwrap_or_else(|e| panic!("{name}: not JSON: {e}"));
        let evs = v["traceEvents"].as_array().unwrap();
        // (pid, tid) → slices as (start, end, name).
        type Slices = Vec<(f64, f64, String)>;
        let mut tracks: std::collections::BTreeMap<(u64, u64), Slices> = Default::default();
        let mut named = std::collections::HashSet::new();
        for e in evs {
            let key = (e["pid"].as_u64().unwrap(), e["tid"].as_u64().unwrap_or(0));
            if e["ph"] == "M" && e["name"] == "thread_name" {
                named.insert(key);
            }
            if e["ph"] == "X" {
                let ts = e["ts"].as_f64().unwrap();
                let dur = e["dur"].as_f64().unwrap();
                tracks.entry(key).or_default().push((
                    ts,
                    ts + dur,
                    e["name"].as_str().unwrap().to_owned(),
                ));
            }
        }
        // A thousandth of a microsecond: the ns resolution of the events.
        const EPS: f64 = 1e-3;
        for (key, slices) in &mut tracks {
            assert!(named.contains(key), "{name}: track {key:?} has no name");
            slices.sort_by(|a, b| a.0.total_cmp(&b.0).then(b.1.total_cmp(&a.1)));
            let mut open: Vec<&(f64, f64, String)> = Vec::new();
            for s in slices.iter() {
                while open.last().is_some_and(|top| top.1 <= s.0 + EPS) {
                    open.pop();
                }
                if let Some(top) = open.last() {
                    assert!(
                        s.1 <= top.1 + EPS,
                        "{name}: on track {key:?}, {} [{}, {}] overlaps {} [{}, {}] without nesting",
                        s.2,
                        s.0,
                        s.1,
                        top.2,
                        top.0,
                        top.1
                    );
                }
                open.push(s);
            }
        }
    }
    // The ghost's flagged gap is in the trace with its diagnosis.
    let app = common::replayed("h200-ghost-sync.psrec");
    let t = report::chrome_trace(app.model(), &app.view.rule);
    let v: serde_json::Value = serde_json::from_str(&t).unwrap();
    let gap = v["traceEvents"]
        .as_array()
        .unwrap()
        .iter()
        .find(|e| e["cat"] == "gap" && e["args"]["flagged"] == true)
        .expect("the flagged gap");
    assert_eq!(gap["args"]["kind"], "synchronous_release", "{gap}");
    assert!(
        gap["args"]["diagnosis"]
            .as_str()
            .unwrap()
            .contains("on the proving thread main"),
        "{gap}"
    );
}

/// The acceptance story: sync — releases of the proving vectors inside the outer span after
/// its last phase, attributed to the unaccounted tail even though it is under the threshold;
/// async — on the dealloc thread, outside the proof.
#[test]
fn sync_and_async_releases_are_where_the_story_says() {
    for (name, sync) in [
        ("cpu-sha256-sync.psrec", true),
        ("cpu-sha256-async.psrec", false),
    ] {
        let app = common::replayed(name);
        let r = report::build(app.model(), &app.view.rule, app.session.label(), vec![]);
        for p in &r.sessions[0].proofs {
            let last_phase_end = p
                .phases
                .iter()
                .map(|ph| ph.start_offset_ns + ph.duration_ns)
                .max()
                .unwrap();
            let tail = p
                .gaps
                .iter()
                .find(|g| g.span == "prove" && g.place == Place::AfterLast);
            let rel = &p.releases;
            if sync {
                let tail = tail.expect("the tail is listed: releases overlap it");
                assert!(rel.in_outer_outside_phases.count >= 6, "{name}: {rel:?}");
                assert_eq!(
                    rel.in_outer_outside_phases.threads,
                    vec![(p.thread.clone(), rel.in_outer_outside_phases.count)]
                );
                assert!(tail.start_offset_ns >= last_phase_end);
                assert!(!tail.flagged, "under the threshold at this size");
                assert_eq!(
                    tail.diagnosis.releases.count,
                    rel.in_outer_outside_phases.count
                );
                assert!(
                    tail.diagnosis
                        .sentence()
                        .contains("on the proving thread main"),
                    "{}",
                    tail.diagnosis.sentence()
                );
                assert_eq!(rel.after_outer.count, 0);
            } else {
                assert_eq!(rel.in_outer_outside_phases.count, 0, "{name}: {rel:?}");
                assert!(rel.after_outer.count >= 6);
                assert!(rel.after_outer.threads.iter().all(|(t, _)| t == "dealloc"));
                // No release in the tail: listed only when it is long, else named in the
                // summary line.
                match tail {
                    Some(t) => assert_eq!(t.diagnosis.releases.count, 0),
                    None => assert!(p.small_gaps.tail_ns.is_some(), "{:?}", p.small_gaps),
                }
            }
        }
    }
}

#[test]
fn fail_on_gap_measures_the_worst_gap() {
    let app = common::replayed("cpu-sha256-sync.psrec");
    let r = report::build(app.model(), &app.view.rule, app.session.label(), vec![]);
    let w = r.worst_gap_pct();
    assert!(w > 0.0 && w < 1.0, "{w}");
}

/// The ghost at scale, recorded on the 2-GPU H200 host: 48 SHA-256 circuits of 2^22
/// constraints, 26.8 GB of proving vectors. Sync: after the last phase, 1.4 s on `main` inside
/// free, the whole tail of the outer span, flagged at the default threshold (7.2 % of 19.3 s);
/// async: the same bytes on `dealloc`, after the proof, no tail and nothing flagged.
#[test]
fn h200_ghost_recordings_tell_the_story_at_scale() {
    const GB: u64 = 1_000_000_000;
    for (name, sync) in [
        ("h200-ghost-sync.psrec", true),
        ("h200-ghost-async.psrec", false),
    ] {
        let app = common::replayed(name);
        let r = report::build(app.model(), &app.view.rule, app.session.label(), vec![]);
        let s = &r.sessions[0];
        assert_eq!(s.proofs.len(), 1, "{name}");
        let p = &s.proofs[0];
        assert_eq!((p.circuits, p.backend.as_str()), (48, "gpu"), "{name}");
        let tail = p
            .gaps
            .iter()
            .find(|g| g.span == "prove" && g.place == Place::AfterLast);
        // Listed, or (short, with no release in it) named on the summary line.
        let tail_ns = tail
            .map(|t| t.duration_ns)
            .or(p.small_gaps.tail_ns)
            .expect("the tail is in the report");
        // Memory per phase: synthesis builds the 26.8 GB of vectors; the GPU holds the SRS.
        let synth = p.phases.iter().find(|ph| ph.name == "synthesis").unwrap();
        let m = synth.memory.expect("samples during synthesis");
        assert!(
            m.live_max > 25 * GB && m.live_before.unwrap() < 2 * GB,
            "{m:?}"
        );
        let h = p.phases.iter().find(|ph| ph.name == "ntt_msm_h").unwrap();
        assert!(h.memory.unwrap().gpu_used_max.unwrap() > GB, "{h:?}");
        // Both GPUs idle through synthesis: 16-20 % busy from their GPU spans, and said so.
        assert_eq!(p.gpu_use.len(), 2, "{name}");
        for u in &p.gpu_use {
            assert_eq!(u.source, proofscope_engine::analysis::BusySource::GpuSpans);
            assert!((0.1..0.25).contains(&u.busy_share), "{u:?}");
            assert_eq!(u.idle_during[0].0, "synthesis", "{u:?}");
            let f = u.finding.as_deref().expect("flagged at the default 50 %");
            assert!(
                f.contains(&format!("GPU {} idle", u.device))
                    && f.contains("while synthesis ran on main")
                    && f.contains("keep the GPU fed while synthesis runs"),
                "{f}"
            );
        }
        let rel = &p.releases;
        if sync {
            let tail = tail.expect("the ghost's tail is listed");
            assert!(rel.in_outer_outside_phases.bytes > 25 * GB, "{rel:?}");
            assert_eq!(
                rel.in_outer_outside_phases.threads,
                vec![("main".to_string(), rel.in_outer_outside_phases.count)]
            );
            assert!(tail.duration_ns > 1_000_000_000, "{tail:?}");
            assert!(tail.flagged, "the default threshold flags it: {tail:?}");
            // The frees explain the tail: time inside free ≥ 95 % of the gap.
            let inside = tail.diagnosis.releases.inside_ns;
            assert!(inside * 100 >= tail.duration_ns * 95, "{tail:?}");
            assert!(
                tail.diagnosis
                    .sentence()
                    .contains("synchronous release of large buffers"),
                "{}",
                tail.diagnosis.sentence()
            );
            // The largest gap of the proof by far.
            assert!(p.gaps.iter().all(|g| g.duration_ns <= tail.duration_ns));
        } else {
            assert_eq!(rel.in_outer_outside_phases.count, 0, "{rel:?}");
            assert!(rel.after_outer.bytes > 25 * GB, "{rel:?}");
            assert!(rel.after_outer.threads.iter().all(|(t, _)| t == "dealloc"));
            assert!(tail_ns < 1_000_000, "{tail:?}");
            assert!(!p.gaps.iter().any(|g| g.flagged), "{:?}", p.gaps);
        }
    }
}

/// A 400-proof session's text report is summarised to fit an issue body (GitHub holds 65,536
/// characters) and keeps every flagged gap; `--full` prints the whole; `--slowest` selects.
#[test]
fn a_long_session_reports_a_summary_that_fits_an_issue() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("busy.psrec");
    common::busy_session(&file, 400, Some(10));
    let run = |args: &[&str]| {
        let o = std::process::Command::new(env!("CARGO_BIN_EXE_proofscope"))
            .arg("replay")
            .arg(&file)
            .arg("--headless")
            .args(args)
            .output()
            .unwrap();
        assert!(o.status.success(), "{args:?}: {o:?}");
        String::from_utf8(o.stdout).unwrap()
    };
    let summary = run(&[]);
    assert!(summary.len() < 60_000, "{} characters", summary.len());
    assert!(
        summary.starts_with("(summary: the whole report is "),
        "{summary}"
    );
    assert!(summary.contains("-- flagged gaps: 40 --"), "{summary}");
    for id in (10..=400).step_by(10) {
        assert!(
            summary.contains(&format!("proof #{id}: gap in prove:")),
            "flagged gap of proof {id} missing"
        );
    }
    assert!(summary.contains("a synchronous release of large buffers"));
    assert!(
        summary.contains("worst 10 by unaccounted share:"),
        "{summary}"
    );
    let full = run(&["--full"]);
    assert!(full.len() > 60_000 && full.matches("\nproof #").count() == 400);
    let slowest = run(&["--full", "--slowest", "5"]);
    assert_eq!(slowest.matches("\nproof #").count(), 5, "{slowest}");
    let short = run(&["--summary", "--worst", "3"]);
    assert!(short.contains("worst 3 by unaccounted share:"), "{short}");
}

#[test]
fn replay_proofs_n_reports_the_first_n_and_refuses_zero() {
    let bin = env!("CARGO_BIN_EXE_proofscope");
    let file = common::recording("cpu-sha256-sync.psrec");
    let o = std::process::Command::new(bin)
        .arg("replay")
        .arg(&file)
        .args(["--headless", "--format", "json", "--proofs", "2"])
        .output()
        .unwrap();
    assert!(o.status.success(), "{o:?}");
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    let ids: Vec<u64> = v["sessions"][0]["proofs"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| p["id"].as_u64().unwrap())
        .collect();
    assert_eq!(ids, [1, 2]);
    // With --slowest: the slowest of the first N.
    let o = std::process::Command::new(bin)
        .arg("replay")
        .arg(&file)
        .args([
            "--headless",
            "--format",
            "json",
            "--proofs",
            "3",
            "--slowest",
            "1",
        ])
        .output()
        .unwrap();
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    let proofs = v["sessions"][0]["proofs"].as_array().unwrap();
    assert_eq!(proofs.len(), 1);
    assert!(proofs[0]["id"].as_u64().unwrap() <= 3);
    let o = std::process::Command::new(bin)
        .arg("replay")
        .arg(&file)
        .args(["--headless", "--proofs", "0"])
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(2), "{o:?}");
}

/// The ghost re-recorded on the H200 host with call stacks (48 × SHA-256 2^22, protocol 1.3):
/// the report names the code that dropped the proving vectors, with its file:line — on the
/// proving thread in the sync recording, on the dealloc thread after the proof in the async one.
#[test]
fn the_ghost_with_stacks_names_who_freed_the_vectors() {
    let app = common::replayed("h200-ghost-sync-stacks.psrec");
    let r = report::build(app.model(), &app.view.rule, app.session.label(), vec![]);
    let p = &r.sessions[0].proofs[0];
    let tail = p
        .gaps
        .iter()
        .find(|g| g.flagged && g.place == Place::AfterLast)
        .expect("the ghost's tail is flagged");
    let who = "`drop_in_place<ProvingVectors>` ← `release<ProvingVectors>` (dealloc.rs:";
    assert!(
        tail.diagnosis
            .sentence()
            .contains(&format!("freed by {who}")),
        "{}",
        tail.diagnosis.sentence()
    );
    let by = &tail.diagnosis.releases.freed_by;
    assert!(
        by[0].0.starts_with(who) && by[0].1 > 25_000_000_000,
        "{by:?}"
    );
    // The line is the synchronous drop in the prover's own source.
    let line: usize = by[0]
        .0
        .rsplit(':')
        .next()
        .unwrap()
        .trim_end_matches(')')
        .parse()
        .unwrap();
    let src = include_str!("../../prover-core/src/groth16/dealloc.rs");
    assert!(
        src.lines().nth(line - 1).unwrap().contains("drop(v)"),
        "dealloc.rs:{line}"
    );

    let app = common::replayed("h200-ghost-async-stacks.psrec");
    let r = report::build(app.model(), &app.view.rule, app.session.label(), vec![]);
    let p = &r.sessions[0].proofs[0];
    assert!(!p.gaps.iter().any(|g| g.flagged), "{:?}", p.gaps);
    let after = &p.releases.after_outer;
    assert_eq!(after.threads[0].0, "dealloc", "{after:?}");
    assert!(
        after.freed_by[0]
            .0
            .starts_with("`drop_in_place<ProvingVectors>` ← `{closure#0}` (dealloc.rs:"),
        "{after:?}"
    );
}

/// Every flagged gap of every recording has evidence: none is left "no evidence".
#[test]
fn no_flagged_gap_of_any_recording_is_left_without_evidence() {
    for name in common::all_recordings() {
        let app = common::replayed(&name);
        let r = report::build(app.model(), &app.view.rule, app.session.label(), vec![]);
        for p in &r.sessions[0].proofs {
            for g in p.gaps.iter().filter(|g| g.flagged) {
                assert_ne!(
                    g.diagnosis.kind,
                    proofscope_engine::analysis::DiagnosisKind::NoEvidence,
                    "{name} proof {}: {}",
                    p.id,
                    g.diagnosis.sentence()
                );
            }
        }
    }
}

/// A reader that stops early (`… --format chrome | head -c 100`) is a normal end: status 0,
/// nothing on stderr, in every format. Chrome's said "error: Broken pipe" and exited 1 (its
/// events' JSON errors hid the pipe's kind).
#[test]
fn a_reader_that_stops_early_is_a_normal_end() {
    use std::io::Read;
    for format in ["chrome", "json", "text"] {
        let mut child = std::process::Command::new(common::BIN)
            .args(["replay", "--headless", "--format", format])
            // Reports larger than a pipe's buffer (64 KiB) in every format: 3.9 MB, 204 and
            // 89 KB.
            .arg(common::recording("h200-4x2e25-sync.psrec"))
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::piped())
            .spawn()
            .unwrap();
        let mut head = [0u8; 100];
        child.stdout.take().unwrap().read_exact(&mut head).unwrap();
        // The read end is closed here: the rest of the report meets a closed pipe.
        let out = child.wait_with_output().unwrap();
        assert_eq!(out.status.code(), Some(0), "{format}: {out:?}");
        assert!(out.stderr.is_empty(), "{format}: {out:?}");
    }
}

//! `proofscope diff A B`: what changed between two sessions (before → after), so that a fix is
//! judged by numbers and a change within noise is not called one.
//!
//! Per phase and for the unaccounted time, the difference of the medians comes with a
//! percentile-bootstrap 95 % interval (each side resampled on its own, 2,000 times, from a
//! fixed seed so that a report is reproducible). An interval needs at least
//! [`MIN_FOR_INTERVAL`] proofs on each side; with fewer the difference is shown without one
//! and never counts as a change. Flagged gaps are compared by where they are (span and place)
//! and what they are (diagnosis kind); releases by place and by thread.

use crate::analysis::stats::percentile;
use crate::format::{bytes, dur};
use crate::report::{ProofReport, Report};
use serde::Serialize;
use std::collections::BTreeMap;
use std::fmt::Write;

/// Proofs needed on each side for an interval.
pub const MIN_FOR_INTERVAL: usize = 3;
const RESAMPLES: usize = 2_000;

/// A difference of medians, B − A.
#[derive(Debug, Clone, Serialize)]
pub struct Change {
    pub n_a: usize,
    pub n_b: usize,
    pub median_a: f64,
    pub median_b: f64,
    pub p95_a: f64,
    pub p95_b: f64,
    pub diff: f64,
    /// 95 % bootstrap interval of `diff`; `None` with too few proofs.
    pub interval: Option<(f64, f64)>,
}

impl Change {
    /// The interval excludes zero.
    pub fn significant(&self) -> bool {
        self.interval.is_some_and(|(lo, hi)| lo > 0.0 || hi < 0.0)
    }
}

fn median(v: &[f64]) -> f64 {
    let mut s = v.to_vec();
    s.sort_by(f64::total_cmp);
    let n = s.len();
    if n == 0 {
        return f64::NAN;
    }
    if n % 2 == 1 {
        s[n / 2]
    } else {
        (s[n / 2 - 1] + s[n / 2]) / 2.0
    }
}

fn p95(v: &[f64]) -> f64 {
    let mut s: Vec<u64> = v.iter().map(|x| (x * 1e3) as u64).collect();
    s.sort_unstable();
    percentile(&s, 95.0) as f64 / 1e3
}

/// B − A of the medians, with the bootstrap interval when both sides have enough values.
pub fn change(a: &[f64], b: &[f64], rng: &mut fastrand::Rng) -> Change {
    let interval = (a.len() >= MIN_FOR_INTERVAL && b.len() >= MIN_FOR_INTERVAL).then(|| {
        let mut diffs: Vec<f64> = (0..RESAMPLES)
            .map(|_| {
                let ra: Vec<f64> = (0..a.len()).map(|_| a[rng.usize(..a.len())]).collect();
                let rb: Vec<f64> = (0..b.len()).map(|_| b[rng.usize(..b.len())]).collect();
                median(&rb) - median(&ra)
            })
            .collect();
        diffs.sort_by(f64::total_cmp);
        (
            diffs[(RESAMPLES as f64 * 0.025) as usize],
            diffs[(RESAMPLES as f64 * 0.975) as usize - 1],
        )
    });
    let (ma, mb) = (median(a), median(b));
    Change {
        n_a: a.len(),
        n_b: b.len(),
        median_a: ma,
        median_b: mb,
        p95_a: p95(a),
        p95_b: p95(b),
        diff: mb - ma,
        interval,
    }
}

/// A flagged gap's where and what, counted over a side's proofs.
#[derive(Debug, Clone, Serialize)]
pub struct GapChange {
    pub span: String,
    pub place: String,
    pub kind: String,
    /// Proofs with such a gap, of the proofs compared.
    pub in_a: usize,
    pub in_b: usize,
    /// One diagnosis of it, from the side that has it (B's when both).
    pub example: String,
}

/// Large releases in one place, both sides.
#[derive(Debug, Clone, Serialize)]
pub struct PlaceChange {
    pub place: String,
    pub bytes_a: u64,
    pub bytes_b: u64,
    pub inside_ns_a: u64,
    pub inside_ns_b: u64,
    /// Threads with most time inside free there, each side.
    pub threads_a: Vec<String>,
    pub threads_b: Vec<String>,
}

#[derive(Debug, Clone, Serialize)]
pub struct Diff {
    pub a: String,
    pub b: String,
    pub proofs_a: usize,
    pub proofs_b: usize,
    /// Per phase name, seconds.
    pub phases: Vec<(String, Change)>,
    pub prove_s: Change,
    pub unaccounted_s: Change,
    /// Unaccounted share of each proof, percent.
    pub unaccounted_pct: Change,
    pub flagged_gaps: Vec<GapChange>,
    pub releases: Vec<PlaceChange>,
    pub gpu_util_avg_pct: (Option<f64>, Option<f64>),
    /// Per proof: the share of its window its GPUs were busy (any proof's work), percent,
    /// averaged over its GPUs; proofs without GPU use are left out.
    pub gpu_busy_pct: Change,
    /// Complete proofs per minute over each side's sessions (`None`: no complete proof).
    pub per_minute: (Option<f64>, Option<f64>),
}

fn complete(r: &Report) -> Vec<&ProofReport> {
    r.sessions
        .iter()
        .flat_map(|s| s.proofs.iter())
        .filter(|p| p.complete)
        .collect()
}

/// The places of a proof's releases, in the order a report lists them.
const PLACES: [&str; 4] = [
    "in the outer span, outside phases",
    "inside phases",
    "other threads during the proof",
    "after the proof",
];

/// Per place (in [`PLACES`] order): bytes, time inside free, releases per thread.
fn place_totals(proofs: &[&ProofReport]) -> Vec<(u64, u64, BTreeMap<String, usize>)> {
    let mut out: Vec<(u64, u64, BTreeMap<String, usize>)> = vec![Default::default(); 4];
    for p in proofs {
        for (i, g) in [
            &p.releases.in_outer_outside_phases,
            &p.releases.in_phases,
            &p.releases.elsewhere_during,
            &p.releases.after_outer,
        ]
        .into_iter()
        .enumerate()
        {
            let e = &mut out[i];
            e.0 += g.bytes;
            e.1 += g.inside_ns;
            for (t, n) in &g.threads {
                *e.2.entry(t.clone()).or_default() += n;
            }
        }
    }
    out
}

/// Complete proofs per minute: all sessions' completions over their windows added up.
fn per_minute(r: &Report) -> Option<f64> {
    let t: Vec<_> = r.sessions.iter().filter_map(|s| s.throughput).collect();
    let intervals: u64 = t.iter().map(|x| x.proofs.saturating_sub(1).max(1)).sum();
    let window: u64 = t.iter().map(|x| x.window_ns).sum();
    (window > 0).then(|| intervals as f64 * 60e9 / window as f64)
}

fn gpu_avg(r: &Report) -> Option<f64> {
    let v: Vec<f64> = r
        .sessions
        .iter()
        .flat_map(|s| s.gpus.iter().filter_map(|g| g.util_avg_pct))
        .collect();
    (!v.is_empty()).then(|| v.iter().sum::<f64>() / v.len() as f64)
}

/// Compares session A (before) with B (after).
pub fn diff(a: &Report, b: &Report) -> Diff {
    // One generator for every interval, drawn from in this order: the figures are the same
    // on every run.
    let mut rng = fastrand::Rng::with_seed(0x5eed);
    let (pa, pb) = (complete(a), complete(b));
    let secs = |ns: u64| ns as f64 / 1e9;
    let phases = phase_order(&pa, &pb)
        .into_iter()
        .map(|n| {
            let c = change(&per_proof(&pa, &n), &per_proof(&pb, &n), &mut rng);
            (n, c)
        })
        .collect();
    let of = |ps: &[&ProofReport], f: &dyn Fn(&ProofReport) -> f64| -> Vec<f64> {
        ps.iter().map(|p| f(p)).collect()
    };
    let prove_s = change(
        &of(&pa, &|p| secs(p.duration_ns)),
        &of(&pb, &|p| secs(p.duration_ns)),
        &mut rng,
    );
    let unaccounted_s = change(
        &of(&pa, &|p| secs(p.unaccounted_ns)),
        &of(&pb, &|p| secs(p.unaccounted_ns)),
        &mut rng,
    );
    let share = |p: &ProofReport| p.unaccounted_ns as f64 / p.duration_ns.max(1) as f64 * 100.0;
    let unaccounted_pct = change(&of(&pa, &share), &of(&pb, &share), &mut rng);
    let gpu_busy_pct = change(&gpu_busy(&pa), &gpu_busy(&pb), &mut rng);
    let releases = release_changes(&pa, &pb);
    let gaps = gap_changes(&pa, &pb);
    Diff {
        a: a.source.clone(),
        b: b.source.clone(),
        proofs_a: pa.len(),
        proofs_b: pb.len(),
        phases,
        prove_s,
        unaccounted_s,
        unaccounted_pct,
        flagged_gaps: gaps,
        releases,
        gpu_util_avg_pct: (gpu_avg(a), gpu_avg(b)),
        gpu_busy_pct,
        per_minute: (per_minute(a), per_minute(b)),
    }
}

/// Phases in the order they typically start (their median offset into the proof).
fn phase_order(pa: &[&ProofReport], pb: &[&ProofReport]) -> Vec<String> {
    let mut offsets: std::collections::BTreeMap<String, Vec<u64>> = Default::default();
    for ph in pa.iter().chain(pb.iter()).flat_map(|p| &p.phases) {
        offsets
            .entry(ph.name.clone())
            .or_default()
            .push(ph.start_offset_ns);
    }
    let mut names: Vec<(u64, String)> = offsets
        .into_iter()
        .map(|(n, mut v)| {
            v.sort_unstable();
            (crate::analysis::stats::percentile(&v, 50.0), n)
        })
        .collect();
    names.sort();
    names.into_iter().map(|(_, n)| n).collect()
}

/// Phase `name`'s duration in each proof, seconds. A phase run by several threads in one
/// proof counts once per proof: its longest run.
fn per_proof(ps: &[&ProofReport], name: &str) -> Vec<f64> {
    ps.iter()
        .filter_map(|p| {
            p.phases
                .iter()
                .filter(|ph| ph.name == name)
                .map(|ph| ph.duration_ns)
                .max()
                .map(|ns| ns as f64 / 1e9)
        })
        .collect()
}

/// The GPUs' mean busy share in each proof that measured it, percent.
fn gpu_busy(ps: &[&ProofReport]) -> Vec<f64> {
    ps.iter()
        .filter(|p| !p.gpu_use.is_empty())
        .map(|p| {
            let u = &p.gpu_use;
            u.iter().map(|g| g.device_busy_share).sum::<f64>() / u.len() as f64 * 100.0
        })
        .collect()
}

/// Flagged gaps by (span, place, kind): in how many proofs of each side.
fn gap_changes(pa: &[&ProofReport], pb: &[&ProofReport]) -> Vec<GapChange> {
    let mut gaps: BTreeMap<(String, String, String), GapChange> = BTreeMap::new();
    for (side, ps) in [(0, pa), (1, pb)] {
        for p in ps.iter() {
            let mut seen = std::collections::BTreeSet::new();
            for g in p.gaps.iter().filter(|g| g.flagged) {
                let key = (
                    g.span.clone(),
                    g.place.as_str().to_owned(),
                    g.diagnosis.kind.as_str().to_owned(),
                );
                let e = gaps.entry(key.clone()).or_insert_with(|| GapChange {
                    span: key.0.clone(),
                    place: key.1.clone(),
                    kind: key.2.clone(),
                    in_a: 0,
                    in_b: 0,
                    example: String::new(),
                });
                if side == 1 || e.example.is_empty() {
                    e.example = g.diagnosis.sentence();
                }
                if seen.insert(key) {
                    if side == 0 {
                        e.in_a += 1;
                    } else {
                        e.in_b += 1;
                    }
                }
            }
        }
    }
    gaps.into_values().collect()
}

/// Large releases by place on each side: bytes, time inside free, the threads that freed most.
fn release_changes(pa: &[&ProofReport], pb: &[&ProofReport]) -> Vec<PlaceChange> {
    let (ra, rb) = (place_totals(pa), place_totals(pb));
    let top = |m: &BTreeMap<String, usize>| {
        let mut v: Vec<(&String, &usize)> = m.iter().collect();
        v.sort_by_key(|(t, n)| (std::cmp::Reverse(**n), (*t).clone()));
        v.into_iter().take(3).map(|(t, _)| t.clone()).collect()
    };
    PLACES
        .iter()
        .zip(ra.iter().zip(&rb))
        .map(|(place, (x, y))| PlaceChange {
            place: (*place).to_owned(),
            bytes_a: x.0,
            bytes_b: y.0,
            inside_ns_a: x.1,
            inside_ns_b: y.1,
            threads_a: top(&x.2),
            threads_b: top(&y.2),
        })
        .collect()
}

impl Diff {
    /// What `--fail-on-regression PCT` fails on: a flagged gap that B has and A has not
    /// (whatever the intervals: one proof a side is enough to see it); a phase whose median
    /// grew by more than PCT % and by at least `min_change_s`; an unaccounted share that grew
    /// by more than PCT percentage points — the last two with their interval above zero.
    pub fn regressions(&self, pct: f64, min_change_s: f64) -> Vec<String> {
        let mut out = Vec::new();
        for g in self
            .flagged_gaps
            .iter()
            .filter(|g| g.in_a == 0 && g.in_b > 0)
        {
            out.push(format!(
                "a flagged gap appeared: {} {} ({}) in {} of {} proofs",
                g.span, g.place, g.kind, g.in_b, self.proofs_b
            ));
        }
        for (name, c) in &self.phases {
            let grew = c.diff > 0.0 && c.diff > c.median_a * pct / 100.0;
            if c.significant() && grew && c.diff >= min_change_s {
                out.push(format!(
                    "{name}: median {} → {} (+{:.1}%)",
                    dur_s(c.median_a),
                    dur_s(c.median_b),
                    c.diff / c.median_a.max(1e-12) * 100.0
                ));
            }
        }
        let u = &self.unaccounted_pct;
        if u.significant() && u.diff > pct {
            out.push(format!(
                "unaccounted share: median {:.1}% → {:.1}% (+{:.1} points)",
                u.median_a, u.median_b, u.diff
            ));
        }
        out
    }
}

fn dur_s(s: f64) -> String {
    if s.is_nan() {
        "-".into()
    } else {
        dur((s * 1e9).round().max(0.0) as u64)
    }
}

/// `x` with its sign, the minus a real one (U+2212) as in [`signed_s`].
fn signed(x: f64, decimals: usize) -> String {
    if !x.is_finite() {
        return "-".to_owned();
    }
    let t = format!("{:.*}", decimals, x.abs());
    // A value that rounds to zero has no sign.
    if t.chars().all(|c| c == '0' || c == '.') {
        return format!("±{t}");
    }
    if x < 0.0 {
        format!("−{t}")
    } else {
        format!("+{t}")
    }
}

fn signed_s(s: f64) -> String {
    let d = dur_s(s.abs());
    if s < 0.0 {
        format!("−{d}")
    } else {
        format!("+{d}")
    }
}

/// The verdict on one figure; one with too few proofs has none (the text says why once).
pub fn verdict(c: &Change) -> &'static str {
    match c.interval {
        None => "",
        Some(_) if c.significant() => "changed",
        Some(_) => "within noise",
    }
}

fn line(o: &mut String, name: &str, c: &Change) {
    let iv = c
        .interval
        .map(|(lo, hi)| format!(" [{}, {}]", signed_s(lo), signed_s(hi)))
        .unwrap_or_default();
    let text = format!(
        "  {name:<14} {:>10} → {:<10} {:>11}{iv}  {}",
        dur_s(c.median_a),
        dur_s(c.median_b),
        signed_s(c.diff),
        verdict(c)
    );
    let _ = writeln!(o, "{}", text.trim_end());
}

/// The diff as text.
/// A share in percent, `-` where there is none (a side without proofs).
fn share(v: f64) -> String {
    if v.is_finite() {
        format!("{v:.1}%")
    } else {
        "-".to_owned()
    }
}

pub fn text(d: &Diff) -> String {
    let mut o = String::new();
    let _ = writeln!(o, "proofscope diff (before → after)");
    let _ = writeln!(o, "A: {} ({} complete proofs)", d.a, d.proofs_a);
    let _ = writeln!(o, "B: {} ({} complete proofs)", d.b, d.proofs_b);
    let _ = writeln!(
        o,
        "medians, B − A with a 95 % bootstrap interval (at least {MIN_FOR_INTERVAL} proofs a side):"
    );
    if d.prove_s.interval.is_none() {
        let _ = writeln!(
            o,
            "  no interval: {} and {} complete proofs; no figure below is judged (only a \
             flagged gap that appears is a regression)",
            d.proofs_a, d.proofs_b
        );
    }
    let rate = |v: Option<f64>| v.map_or("-".to_owned(), |x| format!("{x:.2}"));
    let _ = writeln!(
        o,
        "  {:<14} {:>10} → {:<10} proofs per minute (completions, first to last)",
        "throughput",
        rate(d.per_minute.0),
        rate(d.per_minute.1)
    );
    line(&mut o, "prove", &d.prove_s);
    line(&mut o, "unaccounted", &d.unaccounted_s);
    let u = &d.unaccounted_pct;
    let _ = writeln!(
        o,
        "  {:<14} {:>10} → {:<10} {:>11} points{}",
        "  share",
        share(u.median_a),
        share(u.median_b),
        signed(u.diff, 1),
        u.interval
            .map(|(lo, hi)| format!(" [{}, {}]", signed(lo, 1), signed(hi, 1)))
            .unwrap_or_default()
    );
    let _ = writeln!(o, "\n-- phases --");
    for (name, c) in &d.phases {
        line(&mut o, name, c);
    }
    gaps_text(&mut o, d);
    releases_text(&mut o, d);
    gpu_text(&mut o, d);
    o
}

/// The flagged gaps that came, went or stayed.
fn gaps_text(o: &mut String, d: &Diff) {
    let _ = writeln!(o, "\n-- flagged gaps (proofs with one) --");
    if d.flagged_gaps.is_empty() {
        let _ = writeln!(o, "none on either side");
    }
    for g in &d.flagged_gaps {
        let what = match (g.in_a, g.in_b) {
            (_, 0) => "GONE",
            (0, _) => "NEW",
            _ => "still there",
        };
        let _ = writeln!(
            o,
            "  {what}: gap in {} {} ({}): {} of {} → {} of {}",
            g.span, g.place, g.kind, g.in_a, d.proofs_a, g.in_b, d.proofs_b
        );
        let _ = writeln!(o, "      {}", g.example);
    }
}

/// Large releases by place, A → B.
fn releases_text(o: &mut String, d: &Diff) {
    let _ = writeln!(o, "\n-- large releases by place (all proofs) --");
    for r in &d.releases {
        if r.bytes_a == 0 && r.bytes_b == 0 {
            continue;
        }
        let threads = |t: &[String]| {
            if t.is_empty() {
                "-".to_owned()
            } else {
                t.join(", ")
            }
        };
        let _ = writeln!(
            o,
            "  {:<34} {} in free {} on {} → {} in free {} on {}",
            r.place,
            bytes(r.bytes_a),
            dur(r.inside_ns_a),
            threads(&r.threads_a),
            bytes(r.bytes_b),
            dur(r.inside_ns_b),
            threads(&r.threads_b),
        );
    }
}

/// The GPUs' utilisation and busy share, A → B.
fn gpu_text(o: &mut String, d: &Diff) {
    let pct = |v: Option<f64>| v.map_or("-".to_owned(), |x| format!("{x:.0}%"));
    let _ = writeln!(
        o,
        "\nGPU utilisation (session average): {} → {}",
        pct(d.gpu_util_avg_pct.0),
        pct(d.gpu_util_avg_pct.1)
    );
    let b = &d.gpu_busy_pct;
    if b.n_a + b.n_b > 0 {
        let _ = writeln!(
            o,
            "GPU busy share of each proof's window (median): {:.0}% → {:.0}%, {} points{}",
            b.median_a,
            b.median_b,
            signed(b.diff, 0),
            b.interval
                .map(|(lo, hi)| format!(" [{}, {}]", signed(lo, 0), signed(hi, 0)))
                .unwrap_or_default()
        );
    }
}

/// The diff as one JSON document (the fields of [`Diff`], times in seconds).
pub fn json(d: &Diff) -> String {
    serde_json::to_string_pretty(d).unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_same_numbers_are_no_change_and_a_shift_is_one() {
        let mut rng = fastrand::Rng::with_seed(1);
        let a: Vec<f64> = (0..20).map(|i| 1.0 + (i % 5) as f64 * 0.01).collect();
        let same = change(&a, &a, &mut rng);
        assert_eq!(same.diff, 0.0);
        assert!(!same.significant(), "{same:?}");
        let b: Vec<f64> = a.iter().map(|x| x + 0.5).collect();
        let up = change(&a, &b, &mut rng);
        assert!(up.significant() && (up.diff - 0.5).abs() < 1e-9, "{up:?}");
        let few = change(&a[..2], &b[..2], &mut rng);
        assert!(few.interval.is_none() && !few.significant());
    }
}

//! Where a proof's large frees happened, each counted once: inside its wrapper outside every
//! phase (the ghost's place), inside a phase, on other threads during it, or after it (a
//! detached thread's frees). And the session's totals per thread.

use crate::model::{Block, Proof, ProofId, Session};
use serde::Serialize;
use std::collections::BTreeMap;

/// Large frees around one proof, by the place they are attributed to.
#[derive(Debug, Clone, Default, Serialize)]
pub struct ProofReleases {
    /// Attributed to the outer span itself: outside every phase, inside the wrapper timer.
    pub in_outer_outside_phases: ReleaseGroup,
    /// Attributed to a phase or a span below one (temporaries).
    pub in_phases: ReleaseGroup,
    /// During the outer span on threads with no span of this proof (other work).
    pub elsewhere_during: ReleaseGroup,
    /// After the outer span ended, before the next proof began (detached frees).
    pub after_outer: ReleaseGroup,
}

impl ProofReleases {
    /// The four places with their label (as fleet metrics name them) and group.
    pub fn places(&self) -> [(&'static str, &ReleaseGroup); 4] {
        [
            ("in_outer_outside_phases", &self.in_outer_outside_phases),
            ("in_phases", &self.in_phases),
            ("elsewhere_during", &self.elsewhere_during),
            ("after_outer", &self.after_outer),
        ]
    }
}

/// The place labels of [`ProofReleases::places`].
pub const PLACES: [&str; 4] = [
    "in_outer_outside_phases",
    "in_phases",
    "elsewhere_during",
    "after_outer",
];

#[derive(Debug, Clone, Default, Serialize)]
pub struct ReleaseGroup {
    pub count: usize,
    pub bytes: u64,
    pub inside_ns: u64,
    /// (thread, count) pairs.
    pub threads: Vec<(String, usize)>,
    /// The code that freed them, from their call stacks: (who, bytes), most bytes first.
    pub freed_by: Vec<(String, u64)>,
}

impl ReleaseGroup {
    fn add(&mut self, s: &Session, r: &Block) {
        self.count += 1;
        self.bytes += r.bytes;
        self.inside_ns += r.inside_ns;
        let thread = s.thread_name(r.thread);
        match self.threads.iter_mut().find(|(t, _)| *t == thread) {
            Some(x) => x.1 += 1,
            None => self.threads.push((thread.into_owned(), 1)),
        }
        super::frames::tally(&mut self.freed_by, s, r);
    }
}

/// A session's large frees in all.
#[derive(Debug, Clone, Default, Serialize)]
pub struct ReleaseTotals {
    pub count: usize,
    pub bytes: u64,
    pub inside_ns: u64,
    /// (thread, time inside free), most first.
    pub by_thread: Vec<(String, u64)>,
}

/// The outer-span windows of the session's other proofs: (start, end).
fn other_windows(s: &Session, p: &Proof) -> Vec<(u64, u64)> {
    s.proofs()
        .filter(|q| q.id() != p.id())
        .filter_map(|q| q.outer().map(|o| (o.start, o.end_or(s.now()))))
        .collect()
}

/// The span of `p` a free that names none ran in, by time and thread: the innermost span of
/// the proof open on `r`'s thread at its time (an allocator probe that sees no spans, joined
/// to phases from a log, names none).
fn span_by_time<'p>(p: &'p Proof, r: &Block, now: u64) -> Option<&'p crate::model::Span> {
    p.spans()
        .iter()
        .filter(|s| s.thread == r.thread && s.start <= r.ts && r.ts < s.end_or(now))
        .max_by_key(|s| (s.start, s.id))
}

/// The proof's releases by place. A free in a proof's span is that proof's — by the span it
/// names, or, naming none, by the span open on its thread at its time. A free in no proof's
/// span is counted once: by the proof whose window holds it (the one that began first, when
/// proofs overlap), else by the proof that ended last before it. `next_start` (the start of
/// the first proof that begins after this one ended) bounds those counted as after it.
pub fn proof_releases(s: &Session, p: &Proof, next_start: Option<u64>) -> ProofReleases {
    let mut rel = ProofReleases::default();
    let Some(outer) = p.outer() else {
        return rel;
    };
    let (a, b) = (outer.start, outer.end_or(s.now()));
    let until = next_start.unwrap_or(u64::MAX);
    let windows = other_windows(s, p);
    let held_by_other = |t: u64| windows.iter().any(|&(qa, qb)| qa <= t && t <= qb);
    for r in s.releases().range(a, until.max(b + 1)) {
        let span = r
            .span
            .or_else(|| span_by_time(p, r, s.now()).map(|sp| sp.id));
        let own = span.is_some_and(|sp| p.tree().contains(sp));
        if !own && r.span.is_some_and(|sp| s.knows_span(sp)) {
            continue;
        }
        let t = r.ts;
        let group = if t > b {
            // After the outer span: the proof's own (its verification) or detached frees.
            let ended_later = windows.iter().any(|&(_, qb)| b < qb && qb < t);
            if !own && (t >= until || held_by_other(t) || ended_later) {
                continue;
            }
            &mut rel.after_outer
        } else if own && span == Some(outer.id) {
            &mut rel.in_outer_outside_phases
        } else if own {
            &mut rel.in_phases
        } else if windows.iter().any(|&(qa, qb)| qa < a && qa <= t && t <= qb) {
            continue; // an older proof in flight holds it
        } else {
            &mut rel.elsewhere_during
        };
        group.add(s, r);
    }
    rel
}

/// The start of the first proof that begins after proof `id`'s outer span ended: what bounds
/// the frees counted as after it (with overlapping proofs, the next one began before).
pub fn next_start(s: &Session, id: ProofId) -> Option<u64> {
    let end = s.proof(id)?.outer()?.end_or(s.now());
    s.proofs()
        .filter_map(|p| p.outer().map(|o| o.start))
        .filter(|&x| x > end)
        .min()
}

/// Every large free of the session, with the time inside free per thread.
pub fn session_releases(s: &Session) -> ReleaseTotals {
    let mut totals = ReleaseTotals::default();
    let mut by_thread: BTreeMap<String, u64> = BTreeMap::new();
    for r in s.releases().all() {
        totals.count += 1;
        totals.bytes += r.bytes;
        totals.inside_ns += r.inside_ns;
        *by_thread
            .entry(s.thread_name(r.thread).into_owned())
            .or_default() += r.inside_ns;
    }
    let mut bt: Vec<(String, u64)> = by_thread.into_iter().collect();
    bt.sort_by_key(|(n, ns)| (std::cmp::Reverse(*ns), n.clone()));
    totals.by_thread = bt;
    totals
}

/// One large free, as a report lists it.
#[derive(Debug, Clone, Serialize)]
pub struct NotableRelease {
    /// Session time it began.
    pub ts: u64,
    pub bytes: u64,
    pub inside_ns: u64,
    pub thread: String,
    /// The code that freed it, from its stack.
    pub freed_by: Option<String>,
    /// How much of it was resident: the fall of the RSS across it, when the samples around it
    /// say (a mapping reserved but never touched frees address space, not memory).
    pub resident_bytes: Option<u64>,
}

impl NotableRelease {
    /// Whether it freed mostly address space: under half of it was resident.
    pub fn address_space(&self) -> bool {
        self.resident_bytes.is_some_and(|r| r * 2 < self.bytes)
    }
}

/// The fall of the resident set across a free (from the last sample before it to the first
/// after it), when both samples exist and nothing else large was freed between them.
fn resident_fall(s: &Session, r: &Block) -> Option<u64> {
    let before = s.alloc_samples().at(r.ts)?;
    let end = r.ts + r.inside_ns;
    let after = s.alloc_samples().range(end, u64::MAX).first()?;
    if before.rss_bytes == 0 || after.rss_bytes == 0 {
        return None;
    }
    let others = s
        .releases()
        .range(before.ts, after.ts)
        .iter()
        .any(|o| o.ts != r.ts && o.bytes * 8 >= r.bytes);
    (!others).then(|| before.rss_bytes.saturating_sub(after.rss_bytes))
}

/// The `n` largest frees of the session, largest first.
pub fn largest_releases(s: &Session, n: usize) -> Vec<NotableRelease> {
    let mut all: Vec<&Block> = s.releases().all().iter().collect();
    all.sort_by_key(|r| (std::cmp::Reverse(r.bytes), r.ts));
    all.into_iter()
        .take(n)
        .map(|r| NotableRelease {
            ts: r.ts,
            bytes: r.bytes,
            inside_ns: r.inside_ns,
            thread: s.thread_name(r.thread).into_owned(),
            freed_by: super::frames::who_of(s, r),
            resident_bytes: resident_fall(s, r),
        })
        .collect()
}

/// The frees of one call site, added up.
#[derive(Debug, Clone, Serialize)]
pub struct ReleaseSite {
    /// Who freed them ("unknown" when the probe captured no stack).
    pub freed_by: String,
    pub count: usize,
    pub bytes: u64,
    pub inside_ns: u64,
    /// Threads, most time first.
    pub threads: Vec<String>,
}

/// The call sites that spent the most time freeing, `n` of them, most first; frees without
/// a stack count as one site, "unknown".
pub fn release_sites(s: &Session, n: usize) -> Vec<ReleaseSite> {
    let mut by: BTreeMap<String, (ReleaseSite, BTreeMap<String, u64>)> = BTreeMap::new();
    for r in s.releases().all() {
        let who = super::frames::who_of(s, r).unwrap_or_else(|| "unknown".into());
        let e = by.entry(who.clone()).or_insert_with(|| {
            (
                ReleaseSite {
                    freed_by: who,
                    count: 0,
                    bytes: 0,
                    inside_ns: 0,
                    threads: Vec::new(),
                },
                BTreeMap::new(),
            )
        });
        e.0.count += 1;
        e.0.bytes += r.bytes;
        e.0.inside_ns += r.inside_ns;
        *e.1.entry(s.thread_name(r.thread).into_owned()).or_default() += r.inside_ns;
    }
    let mut sites: Vec<ReleaseSite> = by
        .into_values()
        .map(|(mut site, threads)| {
            let mut t: Vec<(String, u64)> = threads.into_iter().collect();
            t.sort_by_key(|(n, ns)| (std::cmp::Reverse(*ns), n.clone()));
            site.threads = t.into_iter().map(|(n, _)| n).take(3).collect();
            site
        })
        .collect();
    sites.sort_by_key(|x| (std::cmp::Reverse(x.inside_ns), x.freed_by.clone()));
    sites.truncate(n);
    sites
}

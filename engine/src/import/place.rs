//! A call's durations → spans on the session clock. The log gives lengths, and `TIMELINE` (or
//! a wall clock: the logger's, or the time `run` saw the line arrive) where the call ended;
//! the order inside a call is the C2 pipeline's: on the caller, setup and the split (both
//! measured from the call's entry: `setup_to_split_ms` contains the split), the wait for the
//! lock; the locked section itself (`mutex_held_ms`, on the caller: its own timer measured it)
//! and inside it `prep_msm` then `b_g2_msm` on one CPU thread (`b_g2_msm` may outlast the lock)
//! and, per GPU worker, `ntt_msm_h` (with its `CUZK_NTT_H` steps), `barrier_wait`,
//! `batch_add`, `tail_msm`; the epilogue (older branches). What the wrapper
//! timer measured past every C++ timer is left uncovered: it is the gap the report flags,
//! explained by the releases measured in it or, with none, by a cause inferred from the log.

use super::calls::{Call, Calls, Worker};
use crate::format::dur;
use probe_protocol::markers::DiagnosisKind;

const MS: u64 = 1_000_000;

/// Threads of an imported session, by role.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Lane {
    /// The thread that called the prover and holds its lock.
    Caller,
    /// `prep_msm` then `b_g2_msm`.
    Prep,
    /// GPU worker `gpu_tid`.
    Gpu(u64),
    /// The detached thread of `async_dealloc_ms`.
    Dealloc,
}

impl Lane {
    pub fn name(self) -> String {
        match self {
            Lane::Caller => "caller".into(),
            Lane::Prep => "prep_msm".into(),
            Lane::Gpu(t) => format!("gpu-{t}"),
            Lane::Dealloc => "dealloc".into(),
        }
    }
}

/// A span to emit; `parent` indexes [`Placed::spans`].
#[derive(Debug, Clone)]
pub struct PlannedSpan {
    pub name: String,
    pub lane: Lane,
    pub start: u64,
    pub end: u64,
    pub parent: Option<usize>,
}

/// One proof, placed.
#[derive(Debug, Clone)]
pub struct Placed {
    pub label: String,
    pub circuits: u32,
    pub gpu: bool,
    /// `spans[0]` is the outer span (the wrapper timer).
    pub spans: Vec<PlannedSpan>,
    /// (at, cause kind, sentence), on the caller.
    pub causes: Vec<(u64, DiagnosisKind, String)>,
    /// The GPU phases (indexes into `spans`): declared as such, the log has no GPU spans.
    pub gpu_phases: Vec<usize>,
    /// What the prover said during the call: notes at its end.
    pub notes: Vec<String>,
    /// Where the call's lines are, for the report.
    pub lines: String,
    /// The start came from the log (TIMELINE or a wall clock), not from the previous proof.
    pub anchored: bool,
    /// How exactly the outer span's end is known: the resolution of the time stamp that
    /// placed it (the call returned within this much before it was printed); 0: exactly.
    pub end_res_ns: u64,
    /// The session (daemon run) it belongs to.
    pub segment: usize,
}

struct Tree {
    spans: Vec<PlannedSpan>,
    gpu_phases: Vec<usize>,
}

impl Tree {
    fn add(
        &mut self,
        name: &str,
        lane: Lane,
        start: u64,
        len: u64,
        parent: Option<usize>,
    ) -> usize {
        self.spans.push(PlannedSpan {
            name: name.into(),
            lane,
            start,
            end: start + len,
            parent,
        });
        self.spans.len() - 1
    }

    /// Steps one after another from `at`; returns where they end.
    fn chain(
        &mut self,
        steps: &[(&str, Option<u64>)],
        lane: Lane,
        mut at: u64,
        parent: usize,
    ) -> u64 {
        for (name, ms) in steps {
            // A step logged as 0 ms took no time to show.
            if let Some(ms) = ms.filter(|&ms| ms > 0) {
                let i = self.add(name, lane, at, ms * MS, Some(parent));
                if matches!(lane, Lane::Gpu(_)) && parent == OUTER {
                    self.gpu_phases.push(i);
                }
                at += ms * MS;
            }
        }
        at
    }

    /// Where the last span ends.
    fn end(&self) -> u64 {
        self.spans.iter().map(|s| s.end).max().unwrap_or(0)
    }

    /// Moves every span (and `causes`) back by `by`, cutting what would fall before 0.
    fn cut_front(&mut self, by: u64, causes: &mut [(u64, DiagnosisKind, String)]) {
        for s in &mut self.spans {
            s.start = s.start.saturating_sub(by);
            s.end = s.end.saturating_sub(by);
        }
        for c in causes {
            c.0 = c.0.saturating_sub(by);
        }
    }

    /// Moves every span (and `causes`) by `by`.
    fn shift(&mut self, by: u64, causes: &mut [(u64, DiagnosisKind, String)]) {
        for s in &mut self.spans {
            s.start += by;
            s.end += by;
        }
        for c in causes {
            c.0 += by;
        }
    }
}

/// The outer span's index.
const OUTER: usize = 0;

/// The session's time 0 on the wall clock (Unix ns) for each segment, when known.
pub type Origins = [Option<u64>];

/// Places every call; `origins` give each segment's time 0 on the wall clock.
pub fn place(calls: &Calls, origins: &Origins) -> Vec<Placed> {
    let mut out = Vec::new();
    let mut cursor = vec![0u64; origins.len().max(1)];
    for c in calls.calls.iter() {
        let seg = c.segment.min(cursor.len() - 1);
        let p = place_call(calls, c, cursor[seg], origins.get(seg).copied().flatten());
        let end = p.spans.iter().map(|s| s.end).max().unwrap_or(0);
        cursor[seg] = end.max(cursor[seg]) + MS;
        out.push(p);
    }
    out
}

/// The caller's part before the lock: setup and the split (both from the call's entry), the
/// CPU work before the lock, the wait for it. Returns where the locked section begins.
fn before_lock(t: &mut Tree, c: &Call) -> u64 {
    let get = |k: &str| c.ms.get(k).copied();
    let split = get("split_vectors_ms").unwrap_or(0);
    let steps_end = match get("setup_to_split_ms") {
        // Measured from entry, the split inside it: setup, then the split, ending there.
        Some(s2s) if s2s >= split => t.chain(
            &[("setup", Some(s2s - split)), ("split_vectors", Some(split))],
            Lane::Caller,
            0,
            OUTER,
        ),
        // Numbers that cannot both count from entry: one after the other.
        s2s => t.chain(
            &[("setup", s2s), ("split_vectors", get("split_vectors_ms"))],
            Lane::Caller,
            0,
            OUTER,
        ),
    };
    let at = match get("pre_lock_cpu_ms") {
        Some(pre) if steps_end == 0 => {
            t.chain(&[("pre_lock_cpu", Some(pre))], Lane::Caller, 0, OUTER)
        }
        Some(pre) => steps_end.max(pre * MS),
        None => steps_end,
    };
    t.chain(
        &[("mutex_wait", get("mutex_wait_ms"))],
        Lane::Caller,
        at,
        OUTER,
    )
}

/// One GPU worker's phases from `at`; returns where they end.
fn worker(t: &mut Tree, tid: u64, w: &Worker, at: u64) -> u64 {
    let lane = Lane::Gpu(tid);
    let get = |k: &str| w.ms.get(k).copied();
    let mut g = at;
    if let Some(ntt) = get("ntt_msm_h_ms").filter(|&n| n > 0) {
        let s = t.add("ntt_msm_h", lane, g, ntt * MS, Some(OUTER));
        t.gpu_phases.push(s);
        let steps: Vec<(&str, Option<u64>)> = w
            .ntt_h
            .iter()
            .flatten()
            .filter(|(k, _)| k != "total")
            .map(|(k, v)| (k.as_str(), Some(*v)))
            .collect();
        t.chain(&steps, lane, g, s);
        g += ntt * MS;
    }
    let g = t.chain(
        &[
            ("barrier_wait", get("barrier_wait_ms")),
            ("batch_add", get("batch_add_ms")),
            ("tail_msm", get("tail_msm_ms")),
        ],
        lane,
        g,
        OUTER,
    );
    g.max(at + get("gpu_total_ms").unwrap_or(0) * MS)
}

/// The locked section from `at`: the prep thread and every GPU worker; the lock's end
/// (`mutex_held_ms`), where the last logged step of it ended, and the epilogue. Returns where
/// the C++ timers end: the latest of every step, `total_start_fn_ms` and `pre_destructor_ms`.
fn locked_section(t: &mut Tree, c: &Call, at: u64) -> u64 {
    let get = |k: &str| c.ms.get(k).copied();
    let prep_end = t.chain(
        &[
            ("prep_msm", get("prep_msm_ms")),
            ("b_g2_msm", get("b_g2_msm_ms")),
        ],
        Lane::Prep,
        at,
        OUTER,
    );
    let mut gpu_end = at;
    for (&tid, w) in &c.workers {
        gpu_end = gpu_end.max(worker(t, tid, w, at));
    }
    let mut section_end = gpu_end.max(prep_end);
    if let Some(ms) = get("mutex_held_ms").filter(|&ms| ms > 0) {
        // The caller holds the lock for this long, measured by its own timer: its time is
        // accounted for, whatever ran inside it. Left out, the locked section's untimed end
        // (the workers' joins, slow on a loaded machine) joined the call's unmeasured return
        // into one gap that its frees then explained only in part.
        let held_end = at + ms * MS;
        t.add("mutex_held", Lane::Caller, at, ms * MS, Some(OUTER));
        section_end = section_end.max(held_end);
    }
    // Epilogue (older branches), ending where the C++ timers stop.
    let pre_destructor = get("pre_destructor_ms").map(|ms| ms * MS);
    if let Some(ep) = get("epilogue_ms").filter(|&ms| ms > 0) {
        let start = pre_destructor.map_or(section_end, |p| p.saturating_sub(ep * MS).max(at));
        t.add("epilogue", Lane::Caller, start, ep * MS, Some(OUTER));
    }
    let from_entry = get("total_start_fn_ms")
        .max(get("pre_destructor_ms"))
        .unwrap_or(0)
        * MS;
    t.end().max(section_end).max(from_entry)
}

/// The wrapper's length: its timer, else the TIMELINE run, else the C++ timers themselves;
/// and the sentence that names it.
fn wrapper_of(calls: &Calls, c: &Call, timers_end: u64) -> (u64, Option<String>) {
    if let Some((w, d)) = c.wrapper() {
        let ns = d.as_nanos() as u64;
        return (ns, Some(format!("{} {}", w.label(), dur(ns))));
    }
    let run = c.run.map(|i| &calls.runs[i]);
    match run.and_then(|r| Some(r.end?.checked_sub(r.start?)? * MS)) {
        Some(ns) => (ns, Some(format!("GPU_START→GPU_END {}", dur(ns)))),
        None => (timers_end, None),
    }
}

/// The cause of the time the wrapper measured past the C++ timers, inferred from the log
/// (the report uses it only when no release was measured in the gap).
fn inferred_tail(c: &Call, what: &str, timers_end: u64, lost: u64) -> String {
    let inner = match c.ms.get("pre_destructor_ms") {
        Some(p) => format!("pre_destructor_ms {}", dur(p * MS)),
        None => format!("the C++ timers {}", dur(timers_end)),
    };
    format!(
        "inferred from the log, no release measured: {what} − {inner} = {} that no C++ timer measured, after the call's last timer and before it returned: the destructors of the proving vectors (a, b, c, split vectors, tail-MSM bases) freeing synchronously on the calling thread; no async_dealloc_ms line for this call (move the drops to a detached thread)",
        dur(lost)
    )
}

/// Places one call: after `cursor` when the log does not say where, else by its TIMELINE run
/// or wall clock against `origin_ns` (the session's time 0 on the wall clock).
pub fn place_one(calls: &Calls, c: &Call, cursor: u64, origin_ns: Option<u64>) -> Placed {
    place_call(calls, c, cursor, origin_ns)
}

fn place_call(calls: &Calls, c: &Call, cursor: u64, origin_ns: Option<u64>) -> Placed {
    let mut t = Tree {
        spans: Vec::new(),
        gpu_phases: Vec::new(),
    };
    // The outer span first, with a provisional length.
    t.add("prove", Lane::Caller, 0, 0, None);
    let mut causes = Vec::new();
    let lock_at = before_lock(&mut t, c);
    let mut timers_end = locked_section(&mut t, c, lock_at);
    // bellperson's `prover time` counts synthesis too: inside the wrapper, before the call.
    let synthesis_inside = c.synthesis.is_some()
        && c.wrapper()
            .is_some_and(|(w, _)| w == super::lines::Wrapper::ProverTime);
    if synthesis_inside {
        timers_end += synthesis_first(&mut t, c, &mut causes);
    }
    let (wrapper, named) = wrapper_of(calls, c, timers_end);
    if synthesis_inside {
        timers_end = close_to_return(&mut t, c, &mut causes, wrapper, timers_end);
    }
    if !c.has_cuzk() {
        // Nothing inside is known: one child says so rather than a gap that is no finding.
        t.add(
            "gpu_call (no inner timers)",
            Lane::Caller,
            0,
            wrapper,
            Some(OUTER),
        );
    }
    let lost = wrapper.saturating_sub(timers_end);
    if let (true, true, None, Some(what)) = (c.has_cuzk(), lost > 0, c.async_dealloc_ms, &named) {
        let sentence = inferred_tail(c, what, timers_end, lost);
        causes.push((timers_end, DiagnosisKind::SynchronousRelease, sentence));
    }
    t.spans[OUTER].end = wrapper.max(timers_end);
    if let Some(ms) = c.async_dealloc_ms {
        // The detached thread starts as the call's destructors run, after its last timer.
        t.add("async_dealloc", Lane::Dealloc, timers_end, ms * MS, None);
    }
    let lead = if synthesis_inside {
        0
    } else {
        prepend_synthesis(&mut t, c, &mut causes)
    };
    let (start, anchored, by_wall, before_session) = anchor(calls, c, &t, lead, cursor, origin_ns);
    t.shift(start, &mut causes);
    let mut notes = c.notes.clone();
    if before_session > 0 {
        // The call began before the session did (the preload's session starts on a thread of
        // its own as the program starts, and a prover proves at once): its end is where the
        // log says, its first moments are cut. Shifted whole instead, every later call was
        // pushed after it as well, and their frees fell into their phases.
        t.cut_front(before_session, &mut causes);
        notes.push(format!(
            "began {} before the probe's session: its first {} are not shown",
            dur(before_session),
            dur(before_session)
        ));
    }
    Placed {
        label: label(calls, c),
        circuits: c
            .ms
            .get("num_circuits")
            .map_or(0, |n| (*n).min(u32::MAX as u64) as u32),
        gpu: !c.workers.is_empty(),
        spans: t.spans,
        causes,
        gpu_phases: t.gpu_phases,
        notes,
        lines: lines(c),
        anchored,
        end_res_ns: if by_wall { c.wall_res_ns } else { 0 },
        segment: c.segment,
    }
}

/// Where the call's steps end, measured. The log's durations are whole milliseconds, and the
/// wrapper's line may be written well after the wrapper stopped (a loaded machine preempts the
/// thread in between): chained from the wrapper's start, the steps ended up to a millisecond a
/// step too early, or tens of milliseconds too late — over the frees that follow them. The
/// line that ends the C++ timers (`total_start_fn_ms`) is written after every step and before
/// the call returns: when it and the wrapper's line are both stamped, the steps move (either
/// way) to end exactly there, and synthesis is cut where they begin if it reaches past that.
/// Returns where the steps end now.
fn close_to_return(
    t: &mut Tree,
    c: &Call,
    causes: &mut [(u64, DiagnosisKind, String)],
    wrapper: u64,
    timers_end: u64,
) -> u64 {
    let (Some(timers), Some(end)) = (c.timers_wall, c.wall_end) else {
        return timers_end;
    };
    let Ok(tail) = end.duration_since(timers) else {
        return timers_end;
    };
    let want = wrapper.saturating_sub(tail.as_nanos() as u64);
    let is_synthesis = |s: &PlannedSpan| s.name == "synthesis" && s.start == 0;
    // The call's steps: every span but the outer one and the synthesis before them; moved
    // earlier, never before 0.
    let first = t
        .spans
        .iter()
        .skip(1)
        .filter(|s| !is_synthesis(s))
        .map(|s| s.start)
        .min()
        .unwrap_or(0);
    let delta = want as i128 - timers_end as i128;
    let delta = delta.max(-(first as i128));
    let moved = |v: u64| (v as i128 + delta) as u64;
    for s in t.spans.iter_mut().skip(1) {
        if !is_synthesis(s) {
            s.start = moved(s.start);
            s.end = moved(s.end);
        }
    }
    let synthesis = c.synthesis.map_or(0, |d| d.as_nanos() as u64);
    for cause in causes.iter_mut().filter(|cause| cause.0 >= synthesis) {
        cause.0 = moved(cause.0);
    }
    let steps_start = moved(first);
    for s in t.spans.iter_mut().skip(1).filter(|s| is_synthesis(s)) {
        s.end = s.end.min(steps_start);
    }
    moved(timers_end)
}

/// Synthesis as the proof's first phase, on the caller, the call's steps after it (the
/// wrapper counts both). Returns its length.
fn synthesis_first(t: &mut Tree, c: &Call, causes: &mut [(u64, DiagnosisKind, String)]) -> u64 {
    let Some(d) = c.synthesis else { return 0 };
    let len = d.as_nanos() as u64;
    for s in t.spans.iter_mut().skip(1) {
        s.start += len;
        s.end += len;
    }
    for cause in causes.iter_mut() {
        cause.0 += len;
    }
    t.add("synthesis", Lane::Caller, 0, len, Some(OUTER));
    len
}

/// Synthesis before the call, on the caller: everything else moves after it. Returns its
/// length.
fn prepend_synthesis(t: &mut Tree, c: &Call, causes: &mut [(u64, DiagnosisKind, String)]) -> u64 {
    let Some(d) = c.synthesis else { return 0 };
    let len = d.as_nanos() as u64;
    t.shift(len, causes);
    t.spans.push(PlannedSpan {
        name: "synthesis".into(),
        lane: Lane::Caller,
        start: 0,
        end: len,
        parent: None,
    });
    len
}

/// Where the call starts on the session clock: its TIMELINE run's start, else its last line's
/// wall clock (the wrapper's end) from the origin, else after the previous call. Whether the
/// log said so, whether by a wall clock, and how long before the session's 0 it began (by a
/// wall clock that puts its end after 0 and its start before).
fn anchor(
    calls: &Calls,
    c: &Call,
    t: &Tree,
    lead: u64,
    cursor: u64,
    origin_ns: Option<u64>,
) -> (u64, bool, bool, u64) {
    let run = c.run.map(|i| &calls.runs[i]);
    // TIMELINE offsets count from the daemon's start: where that is on the session's clock.
    let daemon_start = calls
        .segments
        .get(c.segment)
        .and_then(|s| s.timeline_base)
        .and_then(|b| b.duration_since(std::time::UNIX_EPOCH).ok())
        .map(|b| b.as_nanos() as u64);
    let daemon_at = match (daemon_start, origin_ns) {
        (Some(d), Some(o)) => d.saturating_sub(o),
        _ => 0,
    };
    let from_run = run
        .and_then(|r| r.start)
        .map(|s| (daemon_at + s * MS).saturating_sub(lead));
    let outer_end = t.spans[OUTER].end;
    let mut before_session = 0;
    let from_wall = c.wall_end.zip(origin_ns).and_then(|(w, origin)| {
        let w = w.duration_since(std::time::UNIX_EPOCH).ok()?.as_nanos() as u64;
        let end = w.checked_sub(origin)?;
        before_session = outer_end.saturating_sub(end);
        Some(end.saturating_sub(outer_end))
    });
    match (from_run, from_wall) {
        (Some(r), _) => (r, true, false, 0),
        (None, Some(w)) if cursor == 0 => (w, true, true, before_session),
        (None, Some(w)) => (w.max(cursor), true, true, 0),
        (None, None) => (cursor, false, false, 0),
    }
}

/// What the proof is, for its `circuit` field.
fn label(calls: &Calls, c: &Call) -> String {
    let Some(r) = c.run.map(|i| &calls.runs[i]) else {
        return if c.has_cuzk() {
            "cuzk call".into()
        } else {
            "bellperson proof".into()
        };
    };
    // Written into one string (a `format!` a part was a string each, 100k calls over).
    use std::fmt::Write as _;
    let mut label = format!("cuzk job {}", r.job);
    if let Some(p) = &r.partition {
        let _ = write!(label, " partition {p}");
    }
    if let (Some(q), Some(s)) = (r.queue, r.start) {
        let _ = write!(label, ", queued {}", dur(s.saturating_sub(q) * MS));
    }
    if let Some(sy) = calls.synthesis.get(&r.job)
        && let (Some(a), Some(b)) = (sy.start, sy.end)
    {
        let _ = write!(label, ", job synthesis {}", dur(b.saturating_sub(a) * MS));
        if !sy.kind.is_empty() {
            let _ = write!(label, " ({})", sy.kind);
        }
    }
    label
}

/// Where the call's lines are, for the report.
fn lines(c: &Call) -> String {
    match (&c.first, &c.last) {
        (Some(a), Some(b)) if a == b => format!("{a}"),
        (Some(a), Some(b)) if a.file == b.file => format!("{a}–{}", b.line),
        (Some(a), Some(b)) => format!("{a} – {b}"),
        _ => "TIMELINE only".into(),
    }
}

/// Moves a call placed by a coarse time stamp to where it most likely ended: within the
/// stamp's resolution after the placed end, the moment the calling thread was not inside a
/// free — the thread that stopped the wrapper timer cannot have been — at the middle of the
/// longest such stretch. `busy` is the calling thread's frees, (start, end), by start.
pub fn settle_end(p: &mut Placed, busy: &[(u64, u64)]) {
    if p.end_res_ns == 0 {
        return;
    }
    let end = p.spans[OUTER].end;
    let window = (end, end + p.end_res_ns);
    let mut idle = Vec::new();
    let mut at = window.0;
    for &(a, b) in busy.iter().filter(|(a, b)| *b > window.0 && *a < window.1) {
        if a > at {
            idle.push((at, a));
        }
        at = at.max(b);
    }
    if at < window.1 {
        idle.push((at, window.1));
    }
    let Some(&(a, b)) = idle
        .iter()
        .max_by_key(|(a, b)| (b - a, std::cmp::Reverse(*a)))
    else {
        return;
    };
    let by = (a + (b - a) / 2) - end;
    for s in &mut p.spans {
        s.start += by;
        s.end += by;
    }
    for c in &mut p.causes {
        c.0 += by;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::import::calls::tests::group;

    fn span<'a>(p: &'a Placed, name: &str) -> &'a PlannedSpan {
        p.spans
            .iter()
            .find(|s| s.name == name)
            .unwrap_or_else(|| panic!("no {name} in {:?}", p.spans))
    }

    /// supraseal measures `setup_to_split_ms` from the call's entry, the split inside it: the
    /// setup is what it has beyond the split, and the locked section starts where it ends. Read
    /// as a span of its own after the split, it pushed `b_g2_msm` past the wrapper's end and
    /// the 10.2 s tail lost its diagnosis.
    #[test]
    fn setup_to_split_counts_from_the_calls_entry() {
        let calls = group(
            "CUZK_TIMING: split_vectors_ms=300 setup_to_split_ms=1000\n\
             CUZK_TIMING: pre_lock_cpu_ms=1000 mutex_wait_ms=0\n\
             CUZK_TIMING: prep_msm_ms=500\n\
             CUZK_TIMING: gpu_tid=0 ntt_msm_h_ms=4000\n\
             CUZK_TIMING: gpu_tid=0 tail_msm_ms=1000 gpu_total_ms=5000\n\
             CUZK_TIMING: mutex_held_ms=5000 total_start_fn_ms=6000\n\
             CUZK_TIMING: b_g2_msm_ms=4800 num_circuits=10\n\
             prover time: 16.2s\n",
        );
        assert_eq!(calls.calls.len(), 1);
        let first = calls.calls.get(0).expect("one call");
        let p = place_one(&calls, first, 0, None);
        let ms = |ns: u64| ns / MS;
        let (setup, split) = (span(&p, "setup"), span(&p, "split_vectors"));
        assert_eq!((ms(setup.start), ms(setup.end)), (0, 700));
        assert_eq!((ms(split.start), ms(split.end)), (700, 1000));
        let prep = span(&p, "prep_msm");
        assert_eq!(ms(prep.start), 1000, "the lock is taken at 1 s from entry");
        // b_g2_msm follows prep_msm on its thread and ends inside the timers (6 s).
        let b_g2 = span(&p, "b_g2_msm");
        assert_eq!((ms(b_g2.start), ms(b_g2.end)), (1500, 6300));
        let outer = &p.spans[0];
        assert_eq!(ms(outer.end - outer.start), 16_200);
        // The wrapper beyond the C++ timers, without async_dealloc_ms: the synchronous
        // release, inferred, after the latest step (b_g2_msm at 6.3 s): 9.9 s.
        let (at, kind, sentence) = &p.causes[0];
        assert_eq!(ms(*at), 6300);
        assert_eq!(*kind, DiagnosisKind::SynchronousRelease);
        assert!(sentence.contains("= 9.90 s"), "{sentence}");
    }
}

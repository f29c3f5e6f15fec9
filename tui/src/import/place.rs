//! A call's durations → spans on the session clock. The log gives lengths, and `TIMELINE` (or a
//! logger's wall clock) where the call started; the order inside a call is the C2 pipeline's
//! (domain.md): on the caller, CPU work before the lock, the wait for it, the locked GPU section
//! and the epilogue ending at `pre_destructor_ms`; inside the locked section, `prep_msm` then
//! `b_g2_msm` on one CPU thread and, per GPU worker, `ntt_msm_h` (with its `CUZK_NTT_H` steps),
//! `barrier_wait`, `batch_add`, `tail_msm`. What the wrapper timer measured past the C++ timers
//! is left uncovered: it is the gap the report flags, explained by a cause marker.

use super::calls::{Call, Calls};
use probe_protocol::markers::DiagnosisKind;

const MS: u64 = 1_000_000;

/// Threads of an imported session, by role.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
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

/// A span to emit; `parent` and `id` index [`Placed::spans`].
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
    /// Where the call's lines are, for the report.
    pub lines: String,
    /// The start came from the log (TIMELINE or wall clock), not from the previous proof.
    pub anchored: bool,
}

struct Tree {
    spans: Vec<PlannedSpan>,
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
                self.add(name, lane, at, ms * MS, Some(parent));
                at += ms * MS;
            }
        }
        at
    }
}

/// Places every call; `first_wall_ns` is the session's time 0 on the wall clock, when the log
/// has one.
pub fn place(calls: &Calls, first_wall_ns: Option<u64>) -> Vec<Placed> {
    let mut out = Vec::new();
    let mut cursor = 0u64;
    for c in &calls.calls {
        let p = place_call(calls, c, cursor, first_wall_ns);
        cursor = p
            .spans
            .iter()
            .map(|s| s.end)
            .max()
            .unwrap_or(cursor)
            .max(cursor)
            + MS;
        out.push(p);
    }
    out
}

fn place_call(calls: &Calls, c: &Call, cursor: u64, first_wall_ns: Option<u64>) -> Placed {
    let run = c.run.map(|i| &calls.runs[i]);
    let get = |k: &str| c.ms.get(k).copied();
    let mut t = Tree { spans: Vec::new() };
    // The outer span first, with a provisional length.
    let outer = t.add("prove", Lane::Caller, 0, 0, None);

    // Caller: before the lock. Every logged step is a phase (a child of the outer span);
    // `pre_lock_cpu_ms` and `mutex_held_ms` only place them when their steps are logged.
    let mut at = 0;
    let before = [
        ("setup", get("setup_to_split_ms")),
        ("split_vectors", get("split_vectors_ms")),
    ];
    let steps_end = t.chain(&before, Lane::Caller, at, outer);
    at = match get("pre_lock_cpu_ms") {
        Some(pre) if steps_end == at => {
            t.chain(&[("pre_lock_cpu", Some(pre))], Lane::Caller, at, outer)
        }
        Some(pre) => steps_end.max(pre * MS),
        None => steps_end,
    };
    at = t.chain(
        &[("mutex_wait", get("mutex_wait_ms"))],
        Lane::Caller,
        at,
        outer,
    );

    // The locked section: prep_msm then b_g2_msm on one thread, the GPU workers beside it.
    let mut section_end = t.chain(
        &[
            ("prep_msm", get("prep_msm_ms")),
            ("b_g2_msm", get("b_g2_msm_ms")),
        ],
        Lane::Prep,
        at,
        outer,
    );
    for (&tid, w) in &c.workers {
        let lane = Lane::Gpu(tid);
        let wget = |k: &str| w.ms.get(k).copied();
        let mut g = at;
        if let Some(ntt) = wget("ntt_msm_h_ms").filter(|&n| n > 0) {
            let s = t.add("ntt_msm_h", lane, g, ntt * MS, Some(outer));
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
        g = t.chain(
            &[
                ("barrier_wait", wget("barrier_wait_ms")),
                ("batch_add", wget("batch_add_ms")),
                ("tail_msm", wget("tail_msm_ms")),
            ],
            lane,
            g,
            outer,
        );
        section_end = section_end
            .max(g)
            .max(at + wget("gpu_total_ms").unwrap_or(0) * MS);
    }
    let mut causes = Vec::new();
    at = match get("mutex_held_ms") {
        Some(ms) => {
            let held_end = at + ms * MS;
            if held_end > section_end {
                causes.push((
                    section_end,
                    DiagnosisKind::NoEvidence,
                    format!(
                        "inside mutex_held_ms ({}) after the last logged step of the locked section: the log has no timer for it",
                        crate::format::dur(ms * MS)
                    ),
                ));
            }
            held_end
        }
        None => section_end,
    };

    // Epilogue, ending where the C++ timers stop.
    let pre_destructor = get("pre_destructor_ms").map(|ms| ms * MS);
    if let Some(ep) = get("epilogue_ms").filter(|&ms| ms > 0) {
        let start = pre_destructor.map_or(at, |p| p.saturating_sub(ep * MS).max(at));
        t.add("epilogue", Lane::Caller, start, ep * MS, Some(outer));
        at = start + ep * MS;
    }
    let timers_end = pre_destructor.unwrap_or(at).max(at);

    // The wrapper: `prover time`, else the TIMELINE run, else the C++ timers themselves.
    let run_len = run.and_then(|r| Some(r.end?.checked_sub(r.start?)? * MS));
    let wrapper = c
        .wrapper
        .map(|d| d.as_nanos() as u64)
        .or(run_len)
        .unwrap_or(timers_end);
    if !c.has_cuzk() {
        // Nothing inside is known: one child says so rather than a gap that is no finding.
        t.add(
            "gpu_call (no inner timers)",
            Lane::Caller,
            0,
            wrapper,
            Some(outer),
        );
    }
    let lost = wrapper.saturating_sub(timers_end);
    if c.has_cuzk() && lost > 0 && c.async_dealloc_ms.is_none() {
        let what = if c.wrapper.is_some() {
            format!("`prover time` {}", crate::format::dur(wrapper))
        } else {
            format!("GPU_START→GPU_END {}", crate::format::dur(wrapper))
        };
        let inner = match pre_destructor {
            Some(p) => format!("pre_destructor_ms {}", crate::format::dur(p)),
            None => format!("the inner timers {}", crate::format::dur(timers_end)),
        };
        causes.push((
            timers_end,
            DiagnosisKind::SynchronousRelease,
            format!(
                "reconstructed from the log: {what} − {inner} = {} that no C++ timer measured, after the epilogue and before the call returned: the destructors of the proving vectors (a, b, c, split vectors, tail-MSM bases) freeing synchronously on the calling thread; no async_dealloc_ms line for this call (move the drops to a detached thread)",
                crate::format::dur(lost)
            ),
        ));
    }
    t.spans[outer].end = wrapper.max(timers_end);
    if let Some(ms) = c.async_dealloc_ms {
        t.add("async_dealloc", Lane::Dealloc, timers_end, ms * MS, None);
    }
    if let Some(d) = c.synthesis {
        let len = d.as_nanos() as u64;
        // Before the call, on the same thread; shifted below so it does not start before 0.
        t.spans.push(PlannedSpan {
            name: "synthesis".into(),
            lane: Lane::Caller,
            start: 0,
            end: len,
            parent: None,
        });
        let n = t.spans.len() - 1;
        for (i, s) in t.spans.iter_mut().enumerate() {
            if i != n {
                s.start += len;
                s.end += len;
            }
        }
        for cause in &mut causes {
            cause.0 += len;
        }
    }

    // Where it starts on the session clock.
    let lead = c.synthesis.map_or(0, |d| d.as_nanos() as u64);
    let from_run = run
        .and_then(|r| r.start)
        .map(|s| (s * MS).saturating_sub(lead));
    let from_wall = c.wall_end.zip(first_wall_ns).and_then(|(w, first)| {
        let w = w.duration_since(std::time::UNIX_EPOCH).ok()?.as_nanos() as u64;
        // The wall clock of the last line is the wrapper's end.
        Some(w.checked_sub(first)?.saturating_sub(t.spans[outer].end))
    });
    let anchored = from_run.is_some() || from_wall.is_some();
    let start = match (from_run, from_wall) {
        (Some(r), _) => r,
        (None, Some(w)) => w.max(cursor),
        (None, None) => cursor,
    };
    for s in &mut t.spans {
        s.start += start;
        s.end += start;
    }
    for cause in &mut causes {
        cause.0 += start;
    }

    let mut label = String::new();
    if let Some(r) = run {
        label += &format!("cuzk job {}", r.job);
        if let Some(p) = &r.partition {
            label += &format!(" partition {p}");
        }
        if let (Some(q), Some(s)) = (r.queue, r.start) {
            label += &format!(", queued {}", crate::format::dur(s.saturating_sub(q) * MS));
        }
        if let Some(sy) = calls.synthesis.get(&r.job)
            && let (Some(a), Some(b)) = (sy.start, sy.end)
        {
            label += &format!(
                ", job synthesis {}",
                crate::format::dur(b.saturating_sub(a) * MS)
            );
            if !sy.kind.is_empty() {
                label += &format!(" ({})", sy.kind);
            }
        }
    } else if c.has_cuzk() {
        label += "cuzk call";
    } else {
        label += "bellperson proof";
    }
    let lines = match (&c.first, &c.last) {
        (Some(a), Some(b)) if a == b => format!("{a}"),
        (Some(a), Some(b)) if a.file == b.file => format!("{a}–{}", b.line),
        (Some(a), Some(b)) => format!("{a} – {b}"),
        _ => "TIMELINE only".into(),
    };
    Placed {
        label,
        circuits: get("num_circuits").map_or(1, |n| n.min(u32::MAX as u64) as u32),
        gpu: !c.workers.is_empty(),
        spans: t.spans,
        causes,
        lines,
        anchored,
    }
}

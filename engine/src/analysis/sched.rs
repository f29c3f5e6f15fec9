//! What a gap's thread did, from its scheduler counters (`ThreadSched`) around the gap:
//! running, waiting for a CPU, or neither (blocked or sleeping) — and, when blocked, which
//! other thread's span it likely waited for.

use super::gaps::Interval;
use super::index::ProofIndex;
use crate::format::dur;
use crate::model::{Session, Span, ThreadId};
use probe_protocol::markers::DiagnosisKind;

/// How far around a gap scheduler samples are looked for.
pub const SLACK_NS: u64 = 250_000_000;
/// A run-queue share of the window from which the thread counts as waiting for a CPU.
const WAITING_SHARE: f64 = 0.2;
/// Spans that waited-for spans may end this close to the gap's end (or 1/50 of the gap).
const RESUME_NS: u64 = 2_000_000;

/// What the gap's thread did around the gap.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct SchedEvidence {
    /// The samples' window (it covers at least half the gap).
    pub window_ns: u64,
    pub cpu_ns: u64,
    pub runq_ns: u64,
    /// Neither on a CPU nor runnable: blocked or sleeping.
    pub off_ns: u64,
    pub kind: DiagnosisKind,
    /// Spans of other threads that ended as the gap did: what it likely waited for
    /// (thread, span).
    pub waited_for: Vec<(String, String)>,
}

/// The evidence of `span`'s thread's counters around `gap`; `None` when no samples cover at
/// least half of it.
pub fn sched_evidence(
    session: &Session,
    idx: &ProofIndex<'_>,
    span: &Span,
    gap: Interval,
) -> Option<SchedEvidence> {
    let series = session.sched(span.thread)?;
    let near = series.range(
        gap.start.saturating_sub(SLACK_NS),
        gap.end.saturating_add(SLACK_NS),
    );
    let s0 = near
        .iter()
        .rev()
        .find(|s| s.ts <= gap.start)
        .or_else(|| near.first())?;
    let s1 = near
        .iter()
        .find(|s| s.ts >= gap.end)
        .or_else(|| near.last())?;
    let window = Interval::new(s0.ts, s1.ts);
    if window.is_empty() || window.overlap(&gap) * 2 < gap.len() {
        return None;
    }
    let w = window.len();
    let cpu = s1.cpu_ns.saturating_sub(s0.cpu_ns).min(w);
    let runq = s1.runq_ns.saturating_sub(s0.runq_ns).min(w - cpu);
    let off = w - cpu - runq;
    let kind = if runq as f64 / w as f64 >= WAITING_SHARE {
        DiagnosisKind::WaitingForCpu
    } else if cpu >= off {
        DiagnosisKind::RunningUninstrumented
    } else {
        DiagnosisKind::Blocked
    };
    let waited_for = if kind == DiagnosisKind::Blocked {
        waited_for(session, idx, span, gap)
    } else {
        Vec::new()
    };
    Some(SchedEvidence {
        window_ns: w,
        cpu_ns: cpu,
        runq_ns: runq,
        off_ns: off,
        kind,
        waited_for,
    })
}

/// How long `thread` was runnable but waiting for a CPU inside `gap` and outside `busy` (its
/// own frees: disjoint calls, in order, not clipped). The kernel adds a wait to `runq_ns` when
/// the wait ends (the thread gets a CPU), so a pair of samples counts the waits that *ended*
/// between them, however long before they began (a 28 ms wait between two frees showed up in
/// the samples after the next free had begun, 24 ms apart, on a loaded machine). The thread is
/// seen running where a free starts or returns, where it writes to stdout or stderr, where a
/// span of the proof begins or ends on it, and where the gap ends; a wait ends at such an
/// instant and lies after the one before. Each pair's waits fill those
/// stretches in order, each up to its length, the first first (only it can hold a wait that
/// began before the earlier sample); what lies inside `within` (the gap, or a part of it) and
/// outside `busy` counts.
pub fn cpu_wait_outside(
    session: &Session,
    idx: &ProofIndex<'_>,
    thread: ThreadId,
    (gap, within): (Interval, Interval),
    busy: &[Interval],
) -> u64 {
    let Some(series) = session.sched(thread) else {
        return 0;
    };
    let (from, to) = (
        gap.start.saturating_sub(SLACK_NS),
        gap.end.saturating_add(SLACK_NS),
    );
    let near = series.range(from, to);
    let ran = running_instants(session, idx, thread, (from, to), busy, gap);
    let mut wait = 0;
    // Where the last stretch filled ends: a thread waits once at a time, so a later pair's
    // wait never reaches back over an earlier pair's (both could claim the time between the
    // last sign of running before a sample and the sample: counted twice, frees and waits
    // came to 1.15 of a gap under load).
    let mut filled_to = 0;
    for w in near.windows(2) {
        let (s0, s1) = (w[0].ts, w[1].ts);
        let mut left = w[1].runq_ns.saturating_sub(w[0].runq_ns).min(MAX_WAIT_NS);
        if s1 <= s0 || left == 0 {
            continue;
        }
        let first = ran.partition_point(|&t| t <= s0);
        let last = ran.partition_point(|&t| t <= s1);
        let ends = ran[first..last].iter().copied().chain([s1]);
        let mut before = first.checked_sub(1).map(|k| ran[k]);
        for end in ends {
            let start = before
                .unwrap_or(end.saturating_sub(left))
                .max(filled_to)
                .min(end);
            let x = left.min(end - start);
            wait += outside(Interval::new(end - x, end), within, busy);
            left -= x;
            before = Some(end);
            if x > 0 {
                filled_to = end;
            }
            if left == 0 {
                break;
            }
        }
    }
    wait
}

/// Where `thread` is known to have been running within `(from, to)`, in order.
fn running_instants(
    session: &Session,
    idx: &ProofIndex<'_>,
    thread: ThreadId,
    (from, to): (u64, u64),
    busy: &[Interval],
    gap: Interval,
) -> Vec<u64> {
    let spans = idx.edges(thread, from, to).iter().copied();
    let writes = session
        .writes_between(from, to)
        .filter(|w| w.thread == thread.get())
        .map(|w| w.ts);
    let mut ran: Vec<u64> = busy
        .iter()
        .flat_map(|b| [b.start, b.end])
        .chain(spans)
        .chain(writes)
        .chain([gap.end])
        .filter(|&t| t >= from && t <= to)
        .collect();
    ran.sort_unstable();
    ran
}

/// The part of `stretch` inside `gap` and outside `busy`.
fn outside(stretch: Interval, gap: Interval, busy: &[Interval]) -> u64 {
    let (a, b) = (stretch.start.max(gap.start), stretch.end.min(gap.end));
    if a >= b {
        return 0;
    }
    let inside = Interval::new(a, b);
    let freeing: u64 = busy.iter().map(|f| f.overlap(&inside)).sum();
    inside.len().saturating_sub(freeing)
}

/// The longest wait one pair of samples is taken to show (a thread stopped for a debugger, a
/// suspended machine).
const MAX_WAIT_NS: u64 = 10_000_000_000;

/// Spans on other threads (the proof's, and those outside every proof: a server's other work)
/// that ended as the gap did: (thread, span), at most three.
fn waited_for(
    session: &Session,
    idx: &ProofIndex<'_>,
    span: &Span,
    gap: Interval,
) -> Vec<(String, String)> {
    let near_end = (gap.len() / 50).max(RESUME_NS);
    let (from, to) = (gap.end.saturating_sub(near_end), gap.end + near_end);
    let mut ours: Vec<&Span> = idx.ended_in(from, to).collect();
    // In the order they began (as the proof received them).
    ours.sort_by_key(|s| s.id);
    let loose = session
        .loose()
        .spans()
        .iter()
        .filter(|s| s.end.is_some_and(|e| e >= from && e <= to));
    ours.into_iter()
        .chain(loose)
        .filter(|s| s.thread != span.thread)
        .take(3)
        .map(|s| {
            (
                session.thread_name(s.thread).into_owned(),
                session.name(s.name).to_owned(),
            )
        })
        .collect()
}

/// The evidence as a sentence.
pub fn sched_sentence(e: &SchedEvidence) -> String {
    let pct = |x: u64| x as f64 / e.window_ns.max(1) as f64 * 100.0;
    match e.kind {
        DiagnosisKind::WaitingForCpu => format!(
            "runnable but waiting for a CPU {} ({:.0}% of the thread's time around the gap; on a CPU {:.0}%): more runnable threads than CPUs, the host is oversubscribed",
            dur(e.runq_ns),
            pct(e.runq_ns),
            pct(e.cpu_ns)
        ),
        DiagnosisKind::RunningUninstrumented => format!(
            "the thread ran on a CPU {} ({:.0}% of its time around the gap): code no span covers",
            dur(e.cpu_ns),
            pct(e.cpu_ns)
        ),
        _ => {
            let mut s = format!(
                "the thread was blocked or sleeping {} ({:.0}% of its time around the gap; on a CPU {:.0}%, waiting for one {:.0}%): a lock, I/O or another thread",
                dur(e.off_ns),
                pct(e.off_ns),
                pct(e.cpu_ns),
                pct(e.runq_ns)
            );
            if !e.waited_for.is_empty() {
                let w: Vec<String> = e
                    .waited_for
                    .iter()
                    .map(|(t, n)| format!("{n} on {t}"))
                    .collect();
                s += &format!("; it resumed as {} ended", w.join(", "));
            }
            s
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::ProofId;
    use crate::model::fixture::{Fixture, session};

    const MS: u64 = 1_000_000;

    /// A gap over 1000–2000 ms on `main` and scheduler samples of `main` at `samples`
    /// (ts ms, cpu ms, runq ms); the evidence docs/PROTOCOL.md §10 defines.
    fn evidence(samples: &[(u64, u64, u64)]) -> Option<SchedEvidence> {
        let mut f = Fixture::new();
        let main = f.thread(1, "main");
        f.proof(1, "cpu", "prove", main, 0, 3000 * MS);
        for &(ts, cpu, runq) in samples {
            f.sched(ts * MS, ThreadId(1), cpu * MS, runq * MS);
        }
        let m = f.model();
        let s = session(&m);
        let p = s.proof(ProofId(1)).unwrap();
        sched_evidence(
            s,
            &ProofIndex::new(s, p),
            p.outer().unwrap(),
            Interval::new(1000 * MS, 2000 * MS),
        )
    }

    /// §10 "Scheduling evidence": the window runs from the last sample at or before the gap's
    /// start to the first at or after its end, within 250 ms of the gap (else the nearest
    /// inside that reach); under half the gap covered, no evidence; the kind by the shares.
    #[test]
    fn the_window_and_the_kind_follow_the_spec() {
        // Samples at 900 and 2100 ms: the window is 1200 ms; 300 ms on a CPU, 240 ms (20 %)
        // runnable: waiting for a CPU.
        let e = evidence(&[(900, 0, 0), (2100, 300, 240)]).unwrap();
        assert_eq!(e.window_ns, 1200 * MS);
        assert_eq!(e.kind, DiagnosisKind::WaitingForCpu);
        // Just under 20 % runnable, on a CPU at least as long as off it: running.
        let e = evidence(&[(900, 0, 0), (2100, 700, 239)]).unwrap();
        assert_eq!(e.kind, DiagnosisKind::RunningUninstrumented);
        // Mostly neither: blocked.
        let e = evidence(&[(900, 0, 0), (2100, 100, 0)]).unwrap();
        assert_eq!((e.kind, e.off_ns), (DiagnosisKind::Blocked, 1100 * MS));
        // No sample after the gap: the last one inside the reach ends the window — 900 to
        // 1600 ms covers 600 ms of the 1000 ms gap (at least half): evidence.
        let e = evidence(&[(900, 0, 0), (1600, 700, 0)]).unwrap();
        assert_eq!(e.window_ns, 700 * MS);
        // 900 to 1400 ms covers 400 ms: under half, none.
        assert_eq!(evidence(&[(900, 0, 0), (1400, 500, 0)]), None);
        // Samples farther than 250 ms from the gap are not looked at.
        assert_eq!(evidence(&[(700, 0, 0), (2300, 100, 0)]), None);
    }

    /// Waits for a CPU count inside the gap and outside the frees, each placed to end where
    /// the thread next ran.
    #[test]
    fn cpu_waits_between_frees() {
        let mut f = Fixture::new();
        let main = f.thread(1, "main");
        f.proof(1, "cpu", "prove", main, 0, 3000 * MS);
        // 100 ms apart; 40 ms runnable in each interval.
        for i in 0..=30 {
            f.sched(i * 100 * MS, ThreadId(1), 0, i * 40 * MS);
        }
        let m = f.model();
        let s = session(&m);
        let gap = Interval::new(1000 * MS, 2000 * MS);
        let iv = |a: u64, b: u64| Interval::new(a * MS, b * MS);
        let p = s.proof(ProofId(1)).unwrap();
        let idx = ProofIndex::new(s, p);
        let wait =
            |busy: &[Interval]| cpu_wait_outside(s, &idx, ThreadId(1), (gap, gap), busy) / MS;
        // No frees: each wait ends at the later sample, 10 of them inside the gap.
        assert_eq!(wait(&[]), 400);
        // A free over the first half: the waits that end inside it are its own.
        assert_eq!(wait(&[iv(1000, 1500)]), 200);
        // The waits that ended as a long free returned lie inside it.
        assert_eq!(wait(&[iv(1000, 1560), iv(1570, 1590)]), 40 * 4);
        // Between two samples, the stretch before the first instant the thread ran (a hole
        // between frees: 10 ms) takes what it can hold, the next (inside a free: 15 ms) its
        // share, the rest lies before the later sample (15 ms, between frees) — where an even
        // spread over the interval put most of it inside the frees.
        assert_eq!(wait(&[iv(1000, 1495), iv(1505, 1520)]), 40 * 4 + 10 + 15);
        // Another thread: no samples, no waits.
        assert_eq!(cpu_wait_outside(s, &idx, ThreadId(2), (gap, gap), &[]), 0);
        // Counted within a part of the gap only: the waits before 1500 ms.
        let first_half = Interval::new(1000 * MS, 1500 * MS);
        assert_eq!(
            cpu_wait_outside(s, &idx, ThreadId(1), (gap, first_half), &[]) / MS,
            200
        );
    }

    /// A thread waits once at a time: a later pair's wait does not reach back over an earlier
    /// pair's (it did, and frees and waits came to more than the gap under load).
    #[test]
    fn waits_of_two_sample_pairs_never_overlap() {
        let mut f = Fixture::new();
        let main = f.thread(1, "main");
        f.proof(1, "cpu", "prove", main, 0, 3000 * MS);
        // 50 ms runnable up to 1100 ms, then 150 more by 1200 ms: with no sign of running
        // between, the first ends at 1100 (1050–1100), the second can only be 1100–1200.
        f.sched(1000 * MS, ThreadId(1), 0, 0);
        f.sched(1100 * MS, ThreadId(1), 0, 50 * MS);
        f.sched(1200 * MS, ThreadId(1), 0, 200 * MS);
        let m = f.model();
        let s = session(&m);
        let p = s.proof(ProofId(1)).unwrap();
        let idx = ProofIndex::new(s, p);
        let gap = Interval::new(1000 * MS, 1200 * MS);
        let wait = cpu_wait_outside(s, &idx, ThreadId(1), (gap, gap), &[]) / MS;
        assert_eq!(
            wait, 150,
            "50 ms and then 100 ms, the rest would lie over the first"
        );
    }
}

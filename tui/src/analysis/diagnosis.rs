//! A diagnosis is a sentence attached to a gap from the evidence that overlaps it: releases
//! (bytes, time inside free, thread, whether on the proving thread), GPU idle during a GPU
//! phase, other threads' work, dropped events in the window.

use super::gaps::Interval;
use crate::format::{bytes, dur};
use crate::model::{Proof, Session, Span};

/// Large frees overlapping a gap.
#[derive(Debug, Clone, Default, PartialEq, Eq, serde::Serialize)]
pub struct ReleaseEvidence {
    pub count: usize,
    pub bytes: u64,
    /// Time spent inside those frees, clipped to the gap.
    pub inside_ns: u64,
    /// How much of that on the thread that owns the gapped span.
    pub on_proving_thread_ns: u64,
    /// Thread names, most time first.
    pub threads: Vec<String>,
    /// The code that freed them, from their call stacks (protocol 1.3): who, bytes; most
    /// bytes first.
    pub freed_by: Vec<(String, u64)>,
}

/// The leading finding of a diagnosis, as a closed set: what fleet metrics count gaps by
/// (the sentence is for people, this is for alert rules).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash, serde::Serialize)]
#[serde(rename_all = "snake_case")]
pub enum DiagnosisKind {
    /// Large frees on the gap's own thread took at least half of it.
    SynchronousRelease,
    /// Large frees overlapped the gap, but not mostly on its thread.
    Releases,
    /// A GPU phase's gap with the GPU mostly idle.
    GpuIdle,
    /// A GPU phase's gap with the GPU busy: device work no span covers.
    GpuBusy,
    /// Events were dropped around the gap: spans may be missing.
    DroppedEvents,
    /// The thread was waiting on a run queue: more runnable threads than CPUs.
    WaitingForCpu,
    /// The thread ran on a CPU through the gap: code no span covers.
    RunningUninstrumented,
    /// The thread was off-CPU and not runnable: a lock, I/O, a sleep or another thread.
    Blocked,
    /// Nothing on the gap's thread; other threads of the proof worked meanwhile.
    WaitingOnOtherThreads,
    /// No evidence at all.
    #[default]
    NoEvidence,
}

impl DiagnosisKind {
    /// The label value: snake_case, as in the JSON report.
    pub fn as_str(self) -> &'static str {
        match self {
            DiagnosisKind::SynchronousRelease => "synchronous_release",
            DiagnosisKind::Releases => "releases",
            DiagnosisKind::GpuIdle => "gpu_idle",
            DiagnosisKind::GpuBusy => "gpu_busy",
            DiagnosisKind::DroppedEvents => "dropped_events",
            DiagnosisKind::WaitingForCpu => "waiting_for_cpu",
            DiagnosisKind::RunningUninstrumented => "running_uninstrumented",
            DiagnosisKind::Blocked => "blocked",
            DiagnosisKind::WaitingOnOtherThreads => "waiting_on_other_threads",
            DiagnosisKind::NoEvidence => "no_evidence",
        }
    }

    /// Every kind, in the order of precedence a diagnosis applies.
    pub const ALL: [DiagnosisKind; 10] = [
        DiagnosisKind::SynchronousRelease,
        DiagnosisKind::Releases,
        DiagnosisKind::GpuIdle,
        DiagnosisKind::GpuBusy,
        DiagnosisKind::WaitingForCpu,
        DiagnosisKind::RunningUninstrumented,
        DiagnosisKind::Blocked,
        DiagnosisKind::DroppedEvents,
        DiagnosisKind::WaitingOnOtherThreads,
        DiagnosisKind::NoEvidence,
    ];

    /// The kind named by [`DiagnosisKind::as_str`].
    pub fn from_name(name: &str) -> Option<DiagnosisKind> {
        DiagnosisKind::ALL.into_iter().find(|k| k.as_str() == name)
    }
}

/// Marker names that state a gap's cause, `cause:<kind>` with the sentence as the marker's
/// text (docs/PROTOCOL.md): `import` writes them from a log's timers; any client may.
pub const CAUSE_PREFIX: &str = "cause:";

/// A cause the prover (or an importer) stated in a `cause:<kind>` marker inside the gap.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct StatedCause {
    pub kind: DiagnosisKind,
    pub sentence: String,
}

/// What the gap's thread did, from its scheduler counters (`ThreadSched`) around the gap.
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

fn sched_evidence(
    session: &Session,
    proof: &Proof,
    span: &Span,
    gap: Interval,
) -> Option<SchedEvidence> {
    let series = session.sched.get(&span.thread)?;
    let slack = 250_000_000;
    let near = series.range(
        gap.start.saturating_sub(slack),
        gap.end.saturating_add(slack),
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
    let share = |x: u64| x as f64 / w as f64;
    let kind = if share(runq) >= 0.2 {
        DiagnosisKind::WaitingForCpu
    } else if cpu >= off {
        DiagnosisKind::RunningUninstrumented
    } else {
        DiagnosisKind::Blocked
    };
    let mut waited_for = Vec::new();
    if kind == DiagnosisKind::Blocked {
        let near_end = (gap.len() / 50).max(2_000_000);
        // The proof's spans, and those outside every proof (a server's other work).
        for s in proof.spans.iter().chain(&session.loose.spans) {
            if s.thread == span.thread {
                continue;
            }
            if let Some(e) = s.end
                && e + near_end >= gap.end
                && e <= gap.end + near_end
            {
                waited_for.push((
                    session.thread_name(s.thread).into_owned(),
                    session.name(s.name).to_owned(),
                ));
            }
        }
        waited_for.truncate(3);
    }
    Some(SchedEvidence {
        window_ns: w,
        cpu_ns: cpu,
        runq_ns: runq,
        off_ns: off,
        kind,
        waited_for,
    })
}

fn sched_sentence(e: &SchedEvidence) -> String {
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

/// What the evidence says about one gap.
#[derive(Debug, Clone, Default, PartialEq, serde::Serialize)]
pub struct Diagnosis {
    pub sentence: String,
    /// The first finding the sentence states.
    pub kind: DiagnosisKind,
    pub releases: ReleaseEvidence,
    /// Average GPU utilisation during the gap, when the span is a GPU phase with samples.
    pub gpu_util_pct: Option<f64>,
    /// Spans of other threads running during the gap: (thread, span name, overlap ns).
    pub other_work: Vec<(String, String, u64)>,
    /// Events reported dropped within the gap (± 1 collector cycle).
    pub dropped: u64,
    /// What a `cause:<kind>` marker on the gap's thread, inside the gap, says.
    pub stated: Option<StatedCause>,
    /// Whether the thread ran, waited for a CPU or was blocked (protocol 1.2 probes).
    pub sched: Option<SchedEvidence>,
}

/// Phases that run on the GPU in C2.
const GPU_PHASES: [&str; 3] = ["ntt_msm_h", "batch_add", "tail_msm"];

/// Builds the diagnosis of gap `gap` inside `span` of `proof`.
pub fn diagnose(session: &Session, proof: &Proof, span: &Span, gap: Interval) -> Diagnosis {
    let mut d = Diagnosis::default();
    let len = gap.len().max(1);

    // Releases: any large free whose call overlaps the gap.
    let mut by_thread: Vec<(u32, u64)> = Vec::new();
    let lookback = 60_000_000_000; // frees longer than a minute are not plausible
    for r in session
        .releases
        .range(gap.start.saturating_sub(lookback), gap.end)
    {
        let call = Interval::new(r.ts, r.ts + r.inside_ns);
        let ov = call.overlap(&gap);
        if ov == 0 && !(r.ts >= gap.start && r.ts < gap.end) {
            continue;
        }
        d.releases.count += 1;
        d.releases.bytes += r.bytes;
        super::frames::tally(&mut d.releases.freed_by, session, r);
        d.releases.inside_ns += ov;
        if r.thread == span.thread {
            d.releases.on_proving_thread_ns += ov;
        }
        match by_thread.iter_mut().find(|(t, _)| *t == r.thread) {
            Some(x) => x.1 += ov,
            None => by_thread.push((r.thread, ov)),
        }
    }
    by_thread.sort_by_key(|x| std::cmp::Reverse(x.1));
    d.releases.threads = by_thread
        .iter()
        .map(|(t, _)| session.thread_name(*t).into_owned())
        .collect();

    // GPU utilisation during a GPU phase.
    let name = session.name(span.name);
    if GPU_PHASES.contains(&name) {
        let samples: Vec<f64> = session
            .gpu
            .values()
            .flat_map(|s| s.range(gap.start, gap.end))
            .filter_map(|s| s.util_pct.map(f64::from))
            .collect();
        if !samples.is_empty() {
            d.gpu_util_pct = Some(samples.iter().sum::<f64>() / samples.len() as f64);
        }
    }

    // Other threads' work overlapping the gap (spans that are not descendants' siblings on
    // this thread: anything on another thread).
    let mut others: Vec<(String, String, u64)> = Vec::new();
    for s in &proof.spans {
        if s.thread == span.thread || s.id == span.id {
            continue;
        }
        let ov = Interval::new(s.start, s.end_or(session.now)).overlap(&gap);
        if ov * 10 >= len {
            others.push((
                session.thread_name(s.thread).into_owned(),
                session.name(s.name).to_owned(),
                ov,
            ));
        }
    }
    others.sort_by_key(|o| std::cmp::Reverse(o.2));
    others.truncate(3);
    d.other_work = others;

    // Drops close to the window: a collector cycle may report them a little later.
    let slack = 20_000_000;
    d.dropped = session
        .dropped
        .iter()
        .filter(|(ts, _)| *ts + slack >= gap.start && *ts <= gap.end + slack)
        .map(|(_, c)| c.iter().map(|(_, n)| n).sum::<u64>())
        .sum();

    // A cause stated by the source (e.g. reconstructed by `import` from a log's timers).
    d.stated = proof
        .markers
        .iter()
        .filter(|m| m.thread == span.thread && m.ts >= gap.start && m.ts <= gap.end)
        .find_map(|m| {
            let kind = session.name(m.name).strip_prefix(CAUSE_PREFIX)?;
            Some(StatedCause {
                kind: DiagnosisKind::from_name(kind).unwrap_or_default(),
                sentence: m.text.clone().unwrap_or_else(|| kind.replace('_', " ")),
            })
        });

    d.sched = sched_evidence(session, proof, span, gap);

    d.sentence = sentence(&d, len, &session.thread_name(span.thread));
    d.kind = kind(&d, len);
    d
}

/// The finding `sentence` leads with, in the same order of precedence.
fn kind(d: &Diagnosis, len: u64) -> DiagnosisKind {
    let r = &d.releases;
    if r.count > 0 {
        if r.on_proving_thread_ns * 2 >= len {
            DiagnosisKind::SynchronousRelease
        } else {
            DiagnosisKind::Releases
        }
    } else if let Some(c) = &d.stated {
        c.kind
    } else if let (Some(s), None) = (&d.sched, d.gpu_util_pct) {
        s.kind
    } else if let Some(u) = d.gpu_util_pct {
        if u < 30.0 {
            DiagnosisKind::GpuIdle
        } else {
            DiagnosisKind::GpuBusy
        }
    } else if d.dropped > 0 {
        DiagnosisKind::DroppedEvents
    } else if !d.other_work.is_empty() {
        DiagnosisKind::WaitingOnOtherThreads
    } else {
        DiagnosisKind::NoEvidence
    }
}

fn sentence(d: &Diagnosis, len: u64, thread: &str) -> String {
    let mut parts = Vec::new();
    let r = &d.releases;
    if r.count > 0 {
        let share = r.inside_ns as f64 / len as f64 * 100.0;
        let whose = if r.on_proving_thread_ns * 2 >= r.inside_ns && r.inside_ns > 0 {
            format!("on the proving thread {thread}")
        } else {
            format!("on {}", r.threads.join(", "))
        };
        let verdict = if r.on_proving_thread_ns * 2 >= len {
            ": a synchronous release of large buffers (move the drops off this thread)"
        } else {
            ""
        };
        let by = match r.freed_by.as_slice() {
            [] => String::new(),
            [(w, _)] => format!(" by {w}"),
            [(w, b), rest @ ..] => format!(
                " ({} by {w}; {} more call site{})",
                bytes(*b),
                rest.len(),
                if rest.len() == 1 { "" } else { "s" }
            ),
        };
        parts.push(format!(
            "{} freed{by} in {} large release{} taking {} {whose} ({share:.0}% of the gap){verdict}",
            bytes(r.bytes),
            r.count,
            if r.count == 1 { "" } else { "s" },
            dur(r.inside_ns),
        ));
    }
    if let Some(c) = &d.stated {
        parts.push(c.sentence.clone());
    }
    // Scheduling evidence leads unless the GPU's says more (a GPU phase's gap).
    if let (Some(s), None) = (&d.sched, d.gpu_util_pct)
        && d.releases.count == 0
    {
        parts.push(sched_sentence(s));
    }
    if let Some(u) = d.gpu_util_pct {
        if u < 30.0 {
            parts.push(format!("GPU mostly idle (average utilisation {u:.0}%)"));
        } else {
            parts.push(format!(
                "GPU busy (average utilisation {u:.0}%) with no span covering it"
            ));
        }
    }
    if let (Some(s), Some(_)) = (&d.sched, d.gpu_util_pct)
        && d.releases.count == 0
    {
        parts.push(sched_sentence(s));
    }
    if d.dropped > 0 {
        parts.push(format!(
            "{} events were dropped around this time: spans may be missing",
            d.dropped
        ));
    }
    if parts.is_empty() {
        if let Some((t, n, _)) = d.other_work.first() {
            parts.push(format!(
                "no instrumented work on {thread}; meanwhile {n} ran on {t} (waiting on it?)"
            ));
        } else {
            parts.push(format!(
                "no evidence: uninstrumented work or waiting on {thread}"
            ));
        }
    }
    parts.join("; ")
}

#[cfg(test)]
mod tests {
    use super::*;
    use probe_protocol::BlockEvent;

    const MS: u64 = 1_000_000;

    fn session() -> Session {
        let mut s = Session {
            names: [(1, "prove"), (2, "epilogue"), (3, "prep_msm")]
                .into_iter()
                .map(|(id, n)| (id, n.to_string()))
                .collect(),
            ..Session::default()
        };
        s.threads.insert(1, ("main".into(), 10));
        s.threads.insert(2, ("dealloc".into(), 11));
        s.threads.insert(3, ("prep_msm".into(), 12));
        s.now = 10_000 * MS;
        s
    }

    fn span(id: u64, name: u32, thread: u32, a: u64, b: u64) -> Span {
        Span {
            id,
            parent: None,
            name,
            thread,
            start: a * MS,
            end: Some(b * MS),
        }
    }

    #[test]
    fn a_synchronous_release_on_the_proving_thread_is_named_as_such() {
        let mut s = session();
        for i in 0..10 {
            s.releases.push(BlockEvent {
                ts: (1000 + i * 180) * MS,
                bytes: 4_170_000_000,
                inside_ns: 180 * MS,
                thread: 1,
                span: Some(1),
                stack: None,
            });
        }
        let outer = span(1, 1, 1, 0, 2900);
        let proof = Proof::default();
        let d = diagnose(&s, &proof, &outer, Interval::new(1000 * MS, 2900 * MS));
        assert_eq!(d.releases.count, 10);
        assert_eq!(d.releases.bytes, 41_700_000_000);
        assert_eq!(d.releases.inside_ns, 1800 * MS);
        assert_eq!(d.releases.on_proving_thread_ns, 1800 * MS);
        assert!(
            d.sentence.contains("41.7 GB freed in 10 large releases"),
            "{}",
            d.sentence
        );
        assert!(
            d.sentence.contains("on the proving thread main"),
            "{}",
            d.sentence
        );
        assert!(d.sentence.contains("synchronous release"), "{}", d.sentence);
        assert_eq!(d.kind, DiagnosisKind::SynchronousRelease);
    }

    #[test]
    fn releases_elsewhere_are_not_blamed_on_the_proving_thread() {
        let mut s = session();
        s.releases.push(BlockEvent {
            ts: 1100 * MS,
            bytes: 1 << 30,
            inside_ns: 100 * MS,
            thread: 2,
            span: None,
            stack: None,
        });
        let outer = span(1, 1, 1, 0, 3000);
        let d = diagnose(
            &s,
            &Proof::default(),
            &outer,
            Interval::new(1000 * MS, 1500 * MS),
        );
        assert_eq!(d.releases.on_proving_thread_ns, 0);
        assert!(d.sentence.contains("on dealloc"), "{}", d.sentence);
        assert!(!d.sentence.contains("synchronous"), "{}", d.sentence);
        assert_eq!(d.kind, DiagnosisKind::Releases);
    }

    /// Samples every 10 ms across a 500 ms gap on thread 1, with the given shares.
    fn sched_session(cpu_pct: u64, runq_pct: u64) -> Session {
        let mut s = session();
        let mut series = crate::model::TimeSeries::default();
        for i in 0..=60u64 {
            let t = 950 + i * 10;
            series.push(probe_protocol::ThreadSched {
                ts: t * MS,
                thread: 1,
                cpu_ns: t * MS * cpu_pct / 100,
                runq_ns: t * MS * runq_pct / 100,
                timeslices: i,
            });
        }
        s.sched.insert(1, series);
        s
    }

    #[test]
    fn scheduler_counters_say_running_waiting_for_a_cpu_or_blocked() {
        let outer = span(1, 1, 1, 0, 3000);
        let gap = Interval::new(1000 * MS, 1500 * MS);
        let d = diagnose(&sched_session(50, 50), &Proof::default(), &outer, gap);
        assert_eq!(d.kind, DiagnosisKind::WaitingForCpu, "{}", d.sentence);
        assert!(
            d.sentence
                .contains("runnable but waiting for a CPU 250.0 ms"),
            "{}",
            d.sentence
        );
        let d = diagnose(&sched_session(95, 2), &Proof::default(), &outer, gap);
        assert_eq!(
            d.kind,
            DiagnosisKind::RunningUninstrumented,
            "{}",
            d.sentence
        );
        assert!(d.sentence.contains("code no span covers"), "{}", d.sentence);
        // Blocked until a span on another thread ended: named.
        let mut proof = Proof::default();
        proof.spans.push(span(5, 3, 3, 900, 1500));
        let d = diagnose(&sched_session(1, 0), &proof, &outer, gap);
        assert_eq!(d.kind, DiagnosisKind::Blocked, "{}", d.sentence);
        assert!(
            d.sentence.contains("blocked or sleeping 495.0 ms"),
            "{}",
            d.sentence
        );
        assert!(
            d.sentence
                .contains("it resumed as prep_msm on prep_msm ended"),
            "{}",
            d.sentence
        );
        // Samples that do not cover the gap say nothing.
        let mut s = sched_session(50, 50);
        s.sched.get_mut(&1).unwrap().trim_before(1400 * MS);
        assert!(diagnose(&s, &Proof::default(), &outer, gap).sched.is_none());
    }

    #[test]
    fn other_threads_and_drops_are_reported() {
        let mut s = session();
        s.dropped
            .push((1200 * MS, vec![(probe_protocol::EventKind::SpanBegin, 7)]));
        let outer = span(1, 1, 1, 0, 3000);
        let mut proof = Proof::default();
        proof.spans.push(span(5, 3, 3, 900, 1600));
        let gap = Interval::new(1000 * MS, 1500 * MS);
        let d = diagnose(&s, &proof, &outer, gap);
        assert_eq!(d.dropped, 7);
        assert_eq!(d.other_work[0].1, "prep_msm");
        assert!(
            d.sentence.contains("7 events were dropped"),
            "{}",
            d.sentence
        );
        s.dropped.clear();
        let d = diagnose(&s, &proof, &outer, gap);
        assert!(
            d.sentence.contains("meanwhile prep_msm ran on prep_msm"),
            "{}",
            d.sentence
        );
    }
}

//! A diagnosis is a sentence attached to a gap from the evidence that overlaps it: releases
//! (bytes, time inside free, thread, whether on the proving thread), GPU idle during a GPU
//! phase, the thread's scheduling, other threads' work, dropped events in the window, and a
//! cause the prover stated. Which evidence is gathered depends on the proof's structure (a GPU
//! phase is a span with device work under it), never on the phases' names.

use super::gaps::Interval;
use super::index::ProofIndex;
use super::kernel::{KernelEvidence, kernel_evidence};
use super::samples::{StackSamples, samples_sentence, stack_samples};
use super::sched::{SchedEvidence, sched_evidence, sched_sentence};
use crate::format::{bytes, dur};
use crate::model::{Proof, Session, Span, ThreadId};
use probe_protocol::markers::{self, Meaning};

pub use probe_protocol::markers::DiagnosisKind;

/// Large frees overlapping a gap.
#[derive(Debug, Clone, Default, PartialEq, Eq, serde::Serialize)]
pub struct ReleaseEvidence {
    pub count: usize,
    pub bytes: u64,
    /// Time spent inside those frees, clipped to the gap.
    pub inside_ns: u64,
    /// How much of that on the thread that owns the gapped span.
    pub on_proving_thread_ns: u64,
    /// The time that thread was runnable but waiting for a CPU inside the gap and outside
    /// its own frees (from its scheduler samples; 0 without them).
    pub cpu_wait_ns: u64,
    /// Of that, the waits between its first free's start and its last free's end: on a loaded
    /// machine a release is stretched by these as much as by the waits inside the frees.
    pub cpu_wait_between_ns: u64,
    /// Thread names, most time first.
    pub threads: Vec<String>,
    /// The code that freed them, from their call stacks (protocol 1.3): who, bytes; most
    /// bytes first.
    pub freed_by: Vec<(String, u64)>,
}

impl ReleaseEvidence {
    /// Whether these frees are the gapped thread's own (most of their time on it): only then
    /// are they its cause. Frees of another thread that merely overlap the gap are said as
    /// what happened meanwhile — a detached thread's 50 MB free, slow *because* the gapped
    /// thread held the address space while pinning memory, took the blame for 94 % of that
    /// gap (issue 44).
    pub fn are_own(&self) -> bool {
        self.count > 0 && self.inside_ns > 0 && self.on_proving_thread_ns * 2 >= self.inside_ns
    }

    /// Frees in the gap, none of them the gapped thread's own cause.
    fn only_meanwhile(&self) -> bool {
        self.count > 0 && !self.are_own()
    }
}

/// A cause the prover (or an importer) stated in a `cause:<kind>` marker inside the gap.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct StatedCause {
    pub kind: DiagnosisKind,
    pub sentence: String,
}

/// What the evidence says about one gap. Its sentence is made when asked for
/// ([`Diagnosis::sentence`]): a listing of 400k gaps held 1.4 KB of words per gap (559 MB)
/// that a report writes once and the dashboard shows for a screenful.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Diagnosis {
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
    /// Its page faults, user and kernel time, and the system calls it was blocked in
    /// (protocol 1.7 probes).
    pub kernel: Option<KernelEvidence>,
    /// Where its stack was sampled inside the gap (protocol 1.7 probes).
    pub samples: Option<StackSamples>,
    /// The gap's length (at least 1) and its thread's name: what the sentence is made of
    /// besides the evidence.
    pub gap_ns: u64,
    pub thread: String,
}

impl serde::Serialize for Diagnosis {
    /// The evidence, and the sentence made from it.
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        use serde::ser::SerializeStruct;
        let mut st = s.serialize_struct("Diagnosis", 10)?;
        st.serialize_field("sentence", &self.sentence())?;
        st.serialize_field("kind", &self.kind)?;
        st.serialize_field("releases", &self.releases)?;
        st.serialize_field("gpu_util_pct", &self.gpu_util_pct)?;
        st.serialize_field("other_work", &self.other_work)?;
        st.serialize_field("dropped", &self.dropped)?;
        st.serialize_field("stated", &self.stated)?;
        st.serialize_field("sched", &self.sched)?;
        if self.kernel.is_some() {
            st.serialize_field("kernel", &self.kernel)?;
        } else {
            st.skip_field("kernel")?;
        }
        if self.samples.is_some() {
            st.serialize_field("samples", &self.samples)?;
        } else {
            st.skip_field("samples")?;
        }
        st.end()
    }
}

impl Diagnosis {
    /// The finding, in words: every piece of evidence that says something, the verdict last.
    pub fn sentence(&self) -> String {
        sentence(self, self.gap_ns.max(1), &self.thread)
    }

    /// What is known so far, for a gap of a proof that has not settled: the evidence without a
    /// verdict, in words that stay true when more arrives ("in progress: 6.3 MB released so
    /// far on serve-0 …" while 2.2 GB are still being freed, where a verdict read "6.3 MB freed
    /// … (0% of the gap)" and became "synchronous release: 2.2 GB" only when the proof ended).
    pub fn so_far(&self) -> String {
        let r = &self.releases;
        if r.count == 0 {
            return "in progress: no evidence yet".into();
        }
        format!(
            "in progress: {} released so far in {} large release{} on {} ({} inside free)",
            crate::format::bytes(r.bytes),
            r.count,
            if r.count == 1 { "" } else { "s" },
            r.threads.join(", "),
            crate::format::dur(r.inside_ns),
        )
    }

    /// The finding in a few words, for a line that also names the gap: what was freed where,
    /// or what the thread was doing.
    pub fn headline(&self) -> String {
        let r = &self.releases;
        let freeing = matches!(
            self.kind,
            DiagnosisKind::SynchronousRelease | DiagnosisKind::Releases
        );
        if r.are_own() && freeing {
            let sync = if self.kind == DiagnosisKind::SynchronousRelease {
                "synchronous release: "
            } else {
                ""
            };
            return format!(
                "{sync}{} freed in {} large release{} on {} ({} inside free)",
                crate::format::bytes(r.bytes),
                r.count,
                if r.count == 1 { "" } else { "s" },
                r.threads.first().map_or("?", String::as_str),
                crate::format::dur(r.inside_ns),
            );
        }
        let base = match self.kind {
            DiagnosisKind::SynchronousRelease | DiagnosisKind::Releases => "large releases",
            DiagnosisKind::GpuIdle => "the GPU idle",
            DiagnosisKind::GpuBusy => "the GPU busy with work no span covers",
            DiagnosisKind::DroppedEvents => "events were dropped: spans may be missing",
            DiagnosisKind::WaitingForCpu => "the thread waited for a CPU",
            DiagnosisKind::PageFaults => "page faults: memory touched for the first time or pinned",
            DiagnosisKind::InKernel => "the thread ran in the kernel: a system call no span covers",
            DiagnosisKind::RunningUninstrumented => "the thread ran code no span covers",
            DiagnosisKind::Blocked => "the thread was blocked (a lock, I/O or a sleep)",
            DiagnosisKind::WaitingOnOtherThreads => "the thread waited on other threads",
            DiagnosisKind::NoEvidence => "no evidence",
        };
        self.named(base)
    }

    /// `base`, with what the kernel names: the call a blocked thread was in for half the gap
    /// or more, the function a running thread's stack was sampled in half the time or more.
    fn named(&self, base: &str) -> String {
        let half_gap = |ns: u64| ns * 2 >= self.gap_ns;
        let call = self
            .kernel
            .as_ref()
            .and_then(|k| k.blocked_in.first())
            .filter(|b| half_gap(b.ns));
        let function = self
            .samples
            .as_ref()
            .and_then(|s| s.top.first().filter(|(_, n)| n * 2 >= s.total));
        let ran = matches!(
            self.kind,
            DiagnosisKind::RunningUninstrumented
                | DiagnosisKind::WaitingForCpu
                | DiagnosisKind::PageFaults
                | DiagnosisKind::InKernel
        );
        match (self.kind, call, function) {
            (DiagnosisKind::Blocked, Some(b), _) => {
                format!("the thread was blocked {}", super::kernel::blocked_words(b))
            }
            (_, _, Some((f, _))) if ran => format!("{base}, in {f}"),
            _ => base.to_owned(),
        }
    }
}

/// Frees longer than this are not plausible: how far before a gap a release may start.
const RELEASE_LOOKBACK_NS: u64 = 60_000_000_000;
/// A drop report this close to the gap counts: a collector cycle may report drops late.
const DROP_SLACK_NS: u64 = 20_000_000;
/// Other threads' spans count as work meanwhile when they cover a tenth of the gap.
const OTHER_WORK_SHARE: u64 = 10;

/// Builds the diagnosis of gap `gap` inside `span` of `proof`. For many gaps of one proof,
/// build its [`ProofIndex`] once and call [`diagnose_in`].
pub fn diagnose(session: &Session, proof: &Proof, span: &Span, gap: Interval) -> Diagnosis {
    diagnose_in(session, &ProofIndex::new(session, proof), span, gap)
}

/// [`diagnose`], with the proof's index built once by the caller.
pub fn diagnose_in(
    session: &Session,
    idx: &ProofIndex<'_>,
    span: &Span,
    gap: Interval,
) -> Diagnosis {
    let len = gap.len().max(1);
    let mut releases = release_evidence(session, span.thread, gap);
    if releases.on_proving_thread_ns > 0 {
        let calls = own_release_calls(session, span.thread, gap);
        let wait = |within: Interval| {
            super::sched::cpu_wait_outside(session, idx, span.thread, (gap, within), &calls)
        };
        releases.cpu_wait_ns = wait(gap);
        if let Some(between) = first_to_last(&calls, gap) {
            releases.cpu_wait_between_ns = wait(between);
        }
    }
    let mut d = Diagnosis {
        releases,
        gpu_util_pct: idx
            .is_gpu_phase(span)
            .then(|| gpu_utilisation(session, gap))
            .flatten(),
        other_work: other_work(session, idx, span, gap),
        dropped: dropped_near(session, gap),
        stated: stated_cause(session, idx, span.thread, gap),
        sched: sched_evidence(session, idx, span, gap),
        kernel: kernel_evidence(session, span.thread, gap),
        samples: stack_samples(session, span.thread, gap),
        gap_ns: len,
        thread: session.thread_name(span.thread).into_owned(),
        ..Diagnosis::default()
    };
    d.kind = kind(&d, len);
    d
}

/// Whether a large free's call overlaps the gap or starts inside it: how much of it overlaps.
fn in_gap(r: &crate::model::Block, gap: Interval) -> Option<u64> {
    let ov = Interval::new(r.ts, r.ts + r.inside_ns).overlap(&gap);
    (ov > 0 || (r.ts >= gap.start && r.ts < gap.end)).then_some(ov)
}

/// Whether any large free is in the gap as [`diagnose`] counts them (a listing lists such a
/// gap whatever its length).
pub fn has_releases(session: &Session, gap: Interval) -> bool {
    let from = gap.start.saturating_sub(RELEASE_LOOKBACK_NS);
    session
        .releases()
        .range(from, gap.end)
        .iter()
        .any(|r| in_gap(r, gap).is_some())
}

/// Any large free whose call overlaps the gap (or starts inside it).
fn release_evidence(session: &Session, thread: ThreadId, gap: Interval) -> ReleaseEvidence {
    let mut e = ReleaseEvidence::default();
    let mut by_thread: Vec<(ThreadId, u64)> = Vec::new();
    let from = gap.start.saturating_sub(RELEASE_LOOKBACK_NS);
    for r in session.releases().range(from, gap.end) {
        let Some(ov) = in_gap(r, gap) else {
            continue;
        };
        e.count += 1;
        e.bytes += r.bytes;
        super::frames::tally(&mut e.freed_by, session, r);
        e.inside_ns += ov;
        if r.thread == thread {
            e.on_proving_thread_ns += ov;
        }
        match by_thread.iter_mut().find(|(t, _)| *t == r.thread) {
            Some(x) => x.1 += ov,
            None => by_thread.push((r.thread, ov)),
        }
    }
    by_thread.sort_by_key(|x| std::cmp::Reverse(x.1));
    e.threads = by_thread
        .iter()
        .map(|(t, _)| session.thread_name(*t).into_owned())
        .collect();
    e
}

/// The calls of the large frees on `thread` near the gap (as far as its scheduler samples are
/// looked for), in order.
fn own_release_calls(session: &Session, thread: ThreadId, gap: Interval) -> Vec<Interval> {
    let reach = super::sched::SLACK_NS;
    session
        .releases()
        .range(gap.start.saturating_sub(reach), gap.end + reach)
        .iter()
        .filter(|r| r.thread == thread)
        .map(|r| Interval::new(r.ts, r.ts + r.inside_ns))
        .collect()
}

/// From the first of `calls` to start inside the gap to the last to end in it, clipped to
/// the gap: the stretch a sequence of frees took.
fn first_to_last(calls: &[Interval], gap: Interval) -> Option<Interval> {
    let inside = calls.iter().filter(|c| c.overlap(&gap) > 0);
    let start = inside.clone().map(|c| c.start).min()?.max(gap.start);
    let end = inside.map(|c| c.end).max()?.min(gap.end);
    (start < end).then(|| Interval::new(start, end))
}

/// Whether the proving thread's releases, with its waits for a CPU between them, take half
/// the gap or more: a synchronous release on a loaded machine is stretched by the waits
/// between its frees (at four times more runnable threads than cores, the frees alone covered
/// 59–100 % of it). Waits before the first free or after the last are not the release's.
fn is_synchronous(r: &ReleaseEvidence, len: u64) -> bool {
    (r.on_proving_thread_ns + r.cpu_wait_between_ns) * 2 >= len
}

/// NVML's utilisation over the gap, of every device with readings for it (each placed over
/// the window it averages: [`super::nvml`]).
fn gpu_utilisation(session: &Session, gap: Interval) -> Option<f64> {
    super::nvml::mean_util_any(session, gap)
}

/// Spans of the proof on other threads that overlap a tenth of the gap or more: (thread,
/// span, overlap), the three largest.
fn other_work(
    session: &Session,
    idx: &ProofIndex<'_>,
    span: &Span,
    gap: Interval,
) -> Vec<(String, String, u64)> {
    let len = gap.len().max(1);
    let mut found: Vec<(u64, &Span)> = idx
        .overlapping(gap)
        .into_iter()
        .filter(|s| s.thread != span.thread && s.id != span.id)
        .map(|s| {
            (
                Interval::new(s.start, s.end_or(session.now())).overlap(&gap),
                s,
            )
        })
        .filter(|(ov, _)| ov * OTHER_WORK_SHARE >= len)
        .collect();
    // The largest first; of equal overlaps, the earliest.
    found.sort_by_key(|(ov, s)| (std::cmp::Reverse(*ov), s.start, s.id));
    found.truncate(3);
    found
        .into_iter()
        .map(|(ov, s)| {
            (
                session.thread_name(s.thread).into_owned(),
                session.name(s.name).to_owned(),
                ov,
            )
        })
        .collect()
}

/// Events reported dropped close to the gap.
fn dropped_near(session: &Session, gap: Interval) -> u64 {
    session
        .drops()
        .iter()
        .filter(|d| d.ts + DROP_SLACK_NS >= gap.start && d.ts <= gap.end + DROP_SLACK_NS)
        .map(|d| d.counts.total())
        .sum()
}

/// A cause stated by the source (e.g. reconstructed by `import` from a log's timers) in a
/// `cause:<kind>` marker on the gap's thread, inside the gap. A marker naming no known kind
/// states nothing (it is listed among the proof's notes instead).
fn stated_cause(
    session: &Session,
    idx: &ProofIndex<'_>,
    thread: ThreadId,
    gap: Interval,
) -> Option<StatedCause> {
    idx.marks_in(gap.start, gap.end)
        .iter()
        .filter(|m| m.thread == thread)
        .find_map(|m| {
            let Meaning::Cause(Ok(kind)) = markers::meaning(session.name(m.name)) else {
                return None;
            };
            Some(StatedCause {
                kind,
                sentence: m
                    .text
                    .clone()
                    .unwrap_or_else(|| kind.as_str().replace('_', " ")),
            })
        })
}

/// The finding `sentence` leads with, in the same order of precedence.
fn kind(d: &Diagnosis, len: u64) -> DiagnosisKind {
    let r = &d.releases;
    if r.are_own() && !kernel_outweighs_releases(d) {
        if is_synchronous(r, len) {
            DiagnosisKind::SynchronousRelease
        } else {
            DiagnosisKind::Releases
        }
    } else if let Some(c) = &d.stated {
        c.kind
    } else if let (Some(s), None) = (&d.sched, d.gpu_util_pct) {
        thread_kind(s, d.kernel.as_ref())
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

/// The scheduling evidence's kind, refined by the kernel's: a thread on a CPU mostly in the
/// kernel was serving page faults, or in another call into the kernel, not running code. Its
/// waits for a CPU are that work's, as waits between frees are a release's: on a loaded
/// machine a first touch of 1 GiB was 35 % on a CPU serving faults and 63 % waiting for one,
/// and "waiting for a CPU" named the load, not the ghost that the load stretched.
fn thread_kind(s: &SchedEvidence, k: Option<&KernelEvidence>) -> DiagnosisKind {
    let runnable = matches!(
        s.kind,
        DiagnosisKind::RunningUninstrumented | DiagnosisKind::WaitingForCpu
    );
    match k {
        Some(k)
            if runnable
                && super::kernel::kernel_work_leads(k, s.cpu_ns + s.runq_ns, s.window_ns) =>
        {
            if k.faulting() {
                DiagnosisKind::PageFaults
            } else {
                DiagnosisKind::InKernel
            }
        }
        _ => s.kind,
    }
}

/// What the thread did, in words: its scheduling, refined by its kernel counters, then what
/// else the kernel saw.
fn thread_sentences(s: &SchedEvidence, k: Option<&KernelEvidence>, len: u64) -> Vec<String> {
    let share = s.cpu_ns as f64 / s.window_ns.max(1) as f64 * 100.0;
    match (thread_kind(s, k), k) {
        (DiagnosisKind::PageFaults | DiagnosisKind::InKernel, Some(k)) => {
            vec![super::kernel::kernel_sentence(s.cpu_ns, share, k) + &stretched(s)]
        }
        (_, k) => std::iter::once(sched_sentence(s))
            .chain(k.map(|k| super::kernel::detail(k, len)).unwrap_or_default())
            .collect(),
    }
}

/// The waits for a CPU that stretched the thread's work, when they are a twentieth of its
/// time around the gap or more.
fn stretched(s: &SchedEvidence) -> String {
    if s.runq_ns * 20 < s.window_ns {
        return String::new();
    }
    format!(
        "; stretched by waiting for a CPU {} ({:.0}% of its time around the gap): the host is oversubscribed",
        dur(s.runq_ns),
        s.runq_ns as f64 / s.window_ns.max(1) as f64 * 100.0
    )
}

/// Whether the thread's own kernel work other than its frees (page faults, another call)
/// covers more of the gap than its frees and the waits between them: then it leads, ranked by
/// how much of the gap each covers. A free's own time is in the kernel too (`munmap`), so it
/// is taken off the kernel time first.
fn kernel_outweighs_releases(d: &Diagnosis) -> bool {
    let (Some(s), Some(k)) = (&d.sched, &d.kernel) else {
        return false;
    };
    let r = &d.releases;
    let beyond_frees = k.system_ns.saturating_sub(r.on_proving_thread_ns);
    matches!(
        thread_kind(s, Some(k)),
        DiagnosisKind::PageFaults | DiagnosisKind::InKernel
    ) && beyond_frees > r.on_proving_thread_ns + r.cpu_wait_between_ns
}

fn sentence(d: &Diagnosis, len: u64, thread: &str) -> String {
    let mut parts = Vec::new();
    let r = &d.releases;
    let own = r.are_own();
    // The gapped thread's own frees lead unless its other kernel work covers more of the gap.
    let releases_lead = own && !kernel_outweighs_releases(d);
    if releases_lead {
        parts.push(releases_sentence(r, len, thread));
    }
    // A stated cause (an importer's inference from a log's timers) says what measurement
    // could not; with the thread's own releases measured in the gap, they speak instead.
    if let (Some(c), false) = (&d.stated, own) {
        parts.push(c.sentence.clone());
    }
    // Scheduling evidence leads unless the GPU's says more (a GPU phase's gap).
    if let (Some(s), None, false) = (&d.sched, d.gpu_util_pct, releases_lead) {
        parts.extend(thread_sentences(s, d.kernel.as_ref(), len));
        parts.extend(d.samples.as_ref().and_then(samples_sentence));
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
    if let (Some(s), Some(_), false) = (&d.sched, d.gpu_util_pct, releases_lead) {
        parts.extend(thread_sentences(s, d.kernel.as_ref(), len));
        parts.extend(d.samples.as_ref().and_then(samples_sentence));
    }
    if own && !releases_lead {
        parts.push(releases_sentence(r, len, thread));
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
    if r.only_meanwhile() {
        parts.push(meanwhile_sentence(r, thread));
    }
    parts.join("; ")
}

/// Who freed them, from their stacks: " by `f`", or the largest and how many more.
fn freed_by(r: &ReleaseEvidence) -> String {
    match r.freed_by.as_slice() {
        [] => String::new(),
        [(w, _)] => format!(" by {w}"),
        [(w, b), rest @ ..] => format!(
            " ({} by {w}; {} more call site{})",
            bytes(*b),
            rest.len(),
            if rest.len() == 1 { "" } else { "s" }
        ),
    }
}

/// Other threads' frees during the gap, as context: what they freed, where and how long.
fn meanwhile_sentence(r: &ReleaseEvidence, thread: &str) -> String {
    format!(
        "meanwhile {}{} freed in {} large release{} taking {} on {} (not on {thread})",
        bytes(r.bytes),
        freed_by(r),
        r.count,
        if r.count == 1 { "" } else { "s" },
        dur(r.inside_ns),
        r.threads.join(", "),
    )
}

/// The releases' part: what was freed, by whom, how long it took on which thread, the waits
/// for a CPU around them, and the verdict.
fn releases_sentence(r: &ReleaseEvidence, len: u64, thread: &str) -> String {
    let share = r.inside_ns as f64 / len as f64 * 100.0;
    let whose = if r.on_proving_thread_ns * 2 >= r.inside_ns && r.inside_ns > 0 {
        format!("on the proving thread {thread}")
    } else {
        format!("on {}", r.threads.join(", "))
    };
    // Waits under a hundredth of the gap say nothing a reader needs.
    let pct = |x: u64| x as f64 / len as f64 * 100.0;
    let between = r.cpu_wait_between_ns;
    let outside = r.cpu_wait_ns.saturating_sub(between);
    let waits = if r.cpu_wait_ns * 100 >= len {
        let mut w = format!(
            ", and waiting for a CPU {} between them ({:.0}%)",
            dur(between),
            pct(between)
        );
        if outside * 100 >= len {
            w += &format!(
                " and {} before or after them ({:.0}%)",
                dur(outside),
                pct(outside)
            );
        }
        w
    } else {
        String::new()
    };
    let verdict = if is_synchronous(r, len) {
        ": a synchronous release of large buffers (move the drops off this thread)"
    } else {
        ""
    };
    let by = freed_by(r);
    format!(
        "{} freed{by} in {} large release{} taking {} {whose} ({share:.0}% of the gap){waits}{verdict}",
        bytes(r.bytes),
        r.count,
        if r.count == 1 { "" } else { "s" },
        dur(r.inside_ns),
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::fixture::{Fixture, session};
    use crate::model::{Model, ProofId};

    const MS: u64 = 1_000_000;

    /// Threads main (1), dealloc (2) and prep_msm (3), and proof 1's outer span `prove` on main
    /// over 0–3000 ms (or `outer_ms`).
    fn fixture(outer_ms: u64) -> (Fixture, crate::model::SpanId) {
        let mut f = Fixture::new();
        let main = f.thread(1, "main");
        f.thread(2, "dealloc");
        f.thread(3, "prep_msm");
        let outer = f.proof(1, "cpu", "prove", main, 0, outer_ms * MS);
        (f, outer)
    }

    fn diagnose_in(m: &Model, gap: Interval) -> Diagnosis {
        let s = session(m);
        let p = s.proof(ProofId(1)).unwrap();
        diagnose(s, p, p.outer().unwrap(), gap)
    }

    #[test]
    fn a_synchronous_release_on_the_proving_thread_is_named_as_such() {
        let (mut f, outer) = fixture(2900);
        for i in 0..10 {
            let ts = (1000 + i * 180) * MS;
            f.release(ts, 4_170_000_000, 180 * MS, ThreadId(1), Some(outer));
        }
        let d = diagnose_in(&f.model(), Interval::new(1000 * MS, 2900 * MS));
        assert_eq!(d.releases.count, 10);
        assert_eq!(d.releases.bytes, 41_700_000_000);
        assert_eq!(d.releases.inside_ns, 1800 * MS);
        assert_eq!(d.releases.on_proving_thread_ns, 1800 * MS);
        assert!(
            d.sentence().contains("41.7 GB freed in 10 large releases"),
            "{}",
            d.sentence()
        );
        assert!(
            d.sentence().contains("on the proving thread main"),
            "{}",
            d.sentence()
        );
        assert!(
            d.sentence().contains("synchronous release"),
            "{}",
            d.sentence()
        );
        assert_eq!(d.kind, DiagnosisKind::SynchronousRelease);
    }

    #[test]
    fn releases_elsewhere_are_not_blamed_on_the_proving_thread() {
        let (mut f, _) = fixture(3000);
        f.release(1100 * MS, 1 << 30, 100 * MS, ThreadId(2), None);
        let d = diagnose_in(&f.model(), Interval::new(1000 * MS, 1500 * MS));
        assert_eq!(d.releases.on_proving_thread_ns, 0);
        assert!(d.sentence().contains("on dealloc"), "{}", d.sentence());
        assert!(!d.sentence().contains("synchronous"), "{}", d.sentence());
        // Context, said after the thread's own (here: none), never the verdict.
        assert!(
            d.sentence().starts_with("no evidence: uninstrumented work or waiting on main; meanwhile 1.1 GB freed in 1 large release taking 100.0 ms on dealloc (not on main)"),
            "{}",
            d.sentence()
        );
        assert_eq!(d.kind, DiagnosisKind::NoEvidence);
        assert_eq!(d.headline(), "no evidence");
    }

    /// The gapped thread's own evidence leads; another thread's frees in the gap are what
    /// happened meanwhile (issue 44: a detached thread's free, slow because main pinned
    /// memory meanwhile, got 94 % of main's gap as its verdict).
    #[test]
    fn the_gapped_threads_own_evidence_leads_and_other_frees_are_context() {
        let (mut f, _) = fixture(3000);
        with_sched(&mut f, 90, 5, 990);
        f.release(1100 * MS, 50 << 20, 300 * MS, ThreadId(2), None);
        let d = diagnose_in(&f.model(), Interval::new(1000 * MS, 1500 * MS));
        assert_eq!(
            d.kind,
            DiagnosisKind::RunningUninstrumented,
            "{}",
            d.sentence()
        );
        let s = d.sentence();
        let meanwhile = s.find("meanwhile 52.4 MB freed").expect(&s);
        let own = s.find("ran on a CPU").expect(&s);
        assert!(own < meanwhile, "{s}");
    }

    /// Samples of main every 10 ms across a 500 ms gap, with the given shares.
    fn with_sched(f: &mut Fixture, cpu_pct: u64, runq_pct: u64, from_ms: u64) {
        for i in 0..=60u64 {
            let t = 950 + i * 10;
            if t >= from_ms {
                let ts = t * MS;
                f.sched(ts, ThreadId(1), ts * cpu_pct / 100, ts * runq_pct / 100);
            }
        }
    }

    #[test]
    fn scheduler_counters_say_running_waiting_for_a_cpu_or_blocked() {
        let gap = Interval::new(1000 * MS, 1500 * MS);
        let (mut f, _) = fixture(3000);
        with_sched(&mut f, 50, 50, 0);
        let d = diagnose_in(&f.model(), gap);
        assert_eq!(d.kind, DiagnosisKind::WaitingForCpu, "{}", d.sentence());
        assert!(
            d.sentence()
                .contains("runnable but waiting for a CPU 250.0 ms"),
            "{}",
            d.sentence()
        );
        let (mut f, _) = fixture(3000);
        with_sched(&mut f, 95, 2, 0);
        let d = diagnose_in(&f.model(), gap);
        assert_eq!(
            d.kind,
            DiagnosisKind::RunningUninstrumented,
            "{}",
            d.sentence()
        );
        assert!(
            d.sentence().contains("code no span covers"),
            "{}",
            d.sentence()
        );
        // Blocked until a span on another thread ended: named.
        let (mut f, outer) = fixture(3000);
        f.span(
            Some(1),
            Some(outer),
            "prep_msm",
            ThreadId(3),
            900 * MS,
            1500 * MS,
        );
        with_sched(&mut f, 1, 0, 0);
        let d = diagnose_in(&f.model(), gap);
        assert_eq!(d.kind, DiagnosisKind::Blocked, "{}", d.sentence());
        assert!(
            d.sentence().contains("blocked or sleeping 495.0 ms"),
            "{}",
            d.sentence()
        );
        assert!(
            d.sentence()
                .contains("it resumed as prep_msm on prep_msm ended"),
            "{}",
            d.sentence()
        );
        // Samples that do not cover the gap say nothing.
        let (mut f, _) = fixture(3000);
        with_sched(&mut f, 50, 50, 1400);
        assert!(diagnose_in(&f.model(), gap).sched.is_none());
    }

    #[test]
    fn other_threads_and_drops_are_reported() {
        let gap = Interval::new(1000 * MS, 1500 * MS);
        let (mut f, outer) = fixture(3000);
        f.span(
            Some(1),
            Some(outer),
            "prep_msm",
            ThreadId(3),
            900 * MS,
            1600 * MS,
        );
        let quiet = f.model();
        f.event(probe_protocol::Event::Dropped(probe_protocol::Dropped {
            ts: 1200 * MS,
            counts: vec![(probe_protocol::EventKind::SpanBegin, 7)],
        }));
        let d = diagnose_in(&f.model(), gap);
        assert_eq!(d.dropped, 7);
        assert_eq!(d.other_work[0].1, "prep_msm");
        assert!(
            d.sentence().contains("7 events were dropped"),
            "{}",
            d.sentence()
        );
        let d = diagnose_in(&quiet, gap);
        assert!(
            d.sentence().contains("meanwhile prep_msm ran on prep_msm"),
            "{}",
            d.sentence()
        );
    }

    #[test]
    fn a_cause_marker_of_no_known_kind_states_nothing() {
        let gap = Interval::new(1000 * MS, 1500 * MS);
        let (mut f, outer) = fixture(3000);
        f.marker(
            1200 * MS,
            &format!("{}synchronous_releases", markers::CAUSE_PREFIX),
            ThreadId(1),
            Some(outer),
            "typo",
        );
        assert_eq!(diagnose_in(&f.model(), gap).stated, None);
        f.marker(
            1300 * MS,
            &DiagnosisKind::Blocked.cause_marker(),
            ThreadId(1),
            Some(outer),
            "a lock",
        );
        let d = diagnose_in(&f.model(), gap);
        assert_eq!(d.kind, DiagnosisKind::Blocked);
        assert_eq!(d.sentence(), "a lock");
    }

    /// docs/PROTOCOL.md §10: a cause marker counts when it is on the gap's thread and its time
    /// lies in the gap, both ends included; one on another thread, or just outside, does not.
    #[test]
    fn a_cause_marker_counts_on_the_gaps_thread_with_both_ends_included() {
        let gap = Interval::new(1000 * MS, 1500 * MS);
        let cause = DiagnosisKind::Blocked.cause_marker();
        for (ts, thread, counts) in [
            (1000 * MS, 1, true),
            (1500 * MS, 1, true),
            (1000 * MS - 1, 1, false),
            (1500 * MS + 1, 1, false),
            (1200 * MS, 2, false),
        ] {
            let (mut f, outer) = fixture(3000);
            f.marker(ts, &cause, ThreadId(thread), Some(outer), "a lock");
            let d = diagnose_in(&f.model(), gap);
            assert_eq!(
                d.stated.is_some(),
                counts,
                "marker at {ts} on thread {thread}"
            );
        }
    }
}

//! Known lines → proving calls. `CUZK_TIMING` lines carry no job id: a call is the run of
//! lines from its first timer to the line that ends its GPU part — `mutex_held_ms …
//! total_start_fn_ms` in today's supraseal, `epilogue_ms … pre_destructor_ms` on older dev
//! branches. Lines that arrive after that and that the call lacks (`b_g2_msm_ms`, which the
//! CPU finishes later; an epilogue line) are still its own; `async_dealloc_ms` (a detached
//! thread, later still) and the wrapper timers (the Rust caller, after the call returned)
//! belong to the latest call that lacks them. GPU workers are told apart by `gpu_tid`; the
//! `CUZK_NTT_H` steps of interleaved workers go to the worker whose `ntt_msm_h_ms` they add up
//! to. `TIMELINE` GPU runs are matched to the call whose lines appear while they run. A daemon
//! restart (TIMELINE offsets back near 0, or the wall clock going back) starts a new session.

use super::lines::{Key, LogLine, TimelineEvent, Wrapper};
pub use super::runs::GpuRun;
use super::runs::{Edge, Runs};
use litemap::LiteMap;
use std::collections::{BTreeMap, HashMap};
use std::time::{Duration, SystemTime};

/// Where a line is: file and 1-based line number.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct At {
    /// Shared by every line of the file (a `String` per line was a fifth of the reading).
    pub file: std::sync::Arc<str>,
    pub line: usize,
}

impl std::fmt::Display for At {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}:{}", self.file, self.line)
    }
}

/// One GPU worker's lines within a call.
#[derive(Debug, Clone, Default)]
pub struct Worker {
    pub ms: LiteMap<Key, u64>,
    /// `CUZK_NTT_H` lines of this worker: the inside of its `ntt_msm_h`.
    pub ntt_h: Vec<Vec<(Key, u64)>>,
}

/// One call of the C++ prover (one partition), or a bare bellperson proof.
#[derive(Debug, Clone, Default)]
pub struct Call {
    pub first: Option<At>,
    pub last: Option<At>,
    /// The caller's keys (milliseconds), e.g. `prep_msm_ms`, `total_start_fn_ms`.
    pub ms: LiteMap<Key, u64>,
    pub workers: LiteMap<u64, Worker>,
    pub async_dealloc_ms: Option<u64>,
    /// The wrapper timers the caller printed, one per kind.
    pub wrappers: LiteMap<Wrapper, Duration>,
    pub synthesis: Option<Duration>,
    /// Index into [`Calls::runs`].
    pub run: Option<usize>,
    /// Its GPU part ended (`total_start_fn_ms` or the epilogue line).
    pub closed: bool,
    /// What the prover said during the call without a timer, and job totals.
    pub notes: Vec<String>,
    /// Wall clock of the line that ended it (the wrapper line when there is one).
    pub wall_end: Option<SystemTime>,
    /// How fine that wall clock is (its time stamp's resolution; 0: exact).
    pub wall_res_ns: u64,
    /// Wall clock of the line that ended its C++ timers (`total_start_fn_ms`, printed as the
    /// locked section ends), when that line had one: with `wall_end`, how long the call took
    /// to return after its last timer, measured rather than inferred from rounded durations.
    pub timers_wall: Option<SystemTime>,
    /// The session (daemon run) it belongs to, from 0.
    pub segment: usize,
}

impl Call {
    /// Where its first line is, for messages.
    pub fn started_at(&self) -> String {
        self.first.as_ref().map_or("?".into(), At::to_string)
    }

    pub fn has_cuzk(&self) -> bool {
        !self.ms.is_empty() || !self.workers.is_empty()
    }

    /// The wrapper timer around the C++ call: the innermost one the caller printed.
    pub fn wrapper(&self) -> Option<(Wrapper, Duration)> {
        self.wrappers.iter().next().map(|(w, d)| (*w, *d))
    }

    /// Whether the call has every key of `pairs` already (for `gpu_tid` lines, its worker).
    fn has_any(&self, pairs: &[(Key, u64)], tid: Option<u64>) -> bool {
        let have = match tid {
            Some(t) => self.workers.get(&t).map(|w| &w.ms),
            None => Some(&self.ms),
        };
        have.is_some_and(|m| {
            pairs
                .iter()
                .any(|(k, _)| k != "gpu_tid" && m.contains_key(k))
        })
    }
}

/// Keys that end a call's GPU part.
const ENDS_CALL: [&str; 2] = ["total_start_fn_ms", "pre_destructor_ms"];
/// Keys a call prints first: a line with one of them never belongs to the call before.
const STARTS_CALL: [&str; 4] = [
    "split_vectors_ms",
    "setup_to_split_ms",
    "pre_lock_cpu_ms",
    "mutex_wait_ms",
];
/// A `ntt_msm_h_ms` may exceed the sum of its steps by this share (setup between them).
const NTT_SLACK: f64 = 0.05;

/// A job's synthesis from `TIMELINE` lines.
#[derive(Debug, Clone, Default)]
pub struct Synthesis {
    pub start: Option<u64>,
    pub end: Option<u64>,
    pub kind: String,
}

/// The daemon's start on the wall clock for one segment (session).
#[derive(Debug, Clone, Copy, Default)]
pub struct Segment {
    /// From the first `TIMELINE` line with a time stamp: the daemon's start.
    pub timeline_base: Option<SystemTime>,
    /// The first time stamp of the segment.
    pub first_wall: Option<SystemTime>,
    /// Whether it has `TIMELINE` lines (whose offsets count from the daemon's start).
    pub has_timeline: bool,
}

impl Segment {
    /// Session time 0 on the wall clock (Unix ns): the daemon's start when `TIMELINE` lines
    /// have time stamps, else (without `TIMELINE`) the first time stamp; `None` when the log
    /// does not say.
    pub fn wall_origin_ns(&self) -> Option<u64> {
        let first = (!self.has_timeline).then_some(self.first_wall).flatten();
        let t = self.timeline_base.or(first)?;
        Some(t.duration_since(std::time::UNIX_EPOCH).ok()?.as_nanos() as u64)
    }
}

/// A wall clock going back more than this starts a new session (a restart, or a second log).
const CLOCK_BACK: Duration = Duration::from_secs(60);
/// TIMELINE offsets falling this far below the last one start a new session.
const OFFSET_BACK_MS: u64 = 60_000;

/// Indexes over the calls for the lines that go to "the latest call that lacks them"
/// (`async_dealloc_ms`, the wrapper timers), so that filing one never scans the calls: a log
/// of N calls and then N such lines made each scan N long (80k calls: 3.4 s for
/// `async_dealloc_ms`, 6.3 s for `prover time:`, ×10 and ×16 the time for ×4 the calls).
/// Kept by [`Calls::append`], the one place a call joins [`Calls::calls`].
#[derive(Debug, Default)]
struct Lacking {
    /// Calls before the latest that lacked `async_dealloc_ms` when the next one came, in
    /// order. Only the latest call gains C++ timers (late lines go to it alone), so one that
    /// is not the latest can only stop lacking: those found filled are dropped for good.
    dealloc: Vec<usize>,
    /// Per wrapper timer: the latest call that has it.
    wrapped: LiteMap<Wrapper, usize>,
    /// The first of the calls at the end that share the latest call's session.
    session_from: usize,
}

impl Call {
    /// A detached free's `async_dealloc_ms` can still come for it.
    fn lacks_dealloc(&self) -> bool {
        self.async_dealloc_ms.is_none() && self.has_cuzk()
    }
}

/// Everything grouped, with what could not be.
#[derive(Debug, Default)]
pub struct Calls {
    pub calls: super::call_log::CallLog<Call>,
    pub runs: Runs,
    pub synthesis: BTreeMap<Key, Synthesis>,
    pub segments: Vec<Segment>,
    pub warnings: Vec<String>,
    /// Calls whose GPU part has not ended, oldest first: one, unless the log's `TIMELINE`
    /// lines say several GPU runs are in flight (GPU workers each in a call of its own, their
    /// lines interleaved).
    open: Vec<Call>,
    /// `CUZK_NTT_H` lines no worker has claimed yet (of whichever open call: the worker's
    /// `ntt_msm_h_ms` line says whose).
    pending_ntt: Vec<Vec<(Key, u64)>>,
    pending_synthesis: Option<Duration>,
    last_wall: Option<SystemTime>,
    last_offset: Option<u64>,
    /// Calls handed out by [`Calls::take_ready`] so far.
    handed: usize,
    /// Lines for a call already forgotten ([`Calls::forget_handed`]), not filed.
    pub forgotten_lines: usize,
    /// Warnings not kept word for word ([`Calls::warn`]), counted.
    pub warnings_past: usize,
    warning_shapes: HashMap<String, u64>,
    /// Where the lines that go to "the latest call that lacks them" find it.
    lacking: Lacking,
    /// The resolution of the line being filed's time stamp.
    res_ns: u64,
}

/// Warnings of a log's grouping kept word for word; past them, counted (a log of 100k GPU
/// runs without their queue lines warned 100k times).
const MAX_WARNINGS: usize = 256;

/// Which call lacks a detached free's line.
enum Lacks {
    Kept(usize),
    /// One did, but it was forgotten.
    Forgotten,
    None,
}

impl Calls {
    /// Keeps `w` word for word unless [`crate::warnings::KEEP`] of its shape (its numbers
    /// set aside) or [`MAX_WARNINGS`] in all were kept: then counts it.
    fn warn(&mut self, w: String) {
        if self.warnings.len() >= MAX_WARNINGS {
            self.warnings_past += 1;
            return;
        }
        let said = self
            .warning_shapes
            .entry(crate::warnings::shape(&w))
            .or_insert(0);
        *said += 1;
        if *said <= crate::warnings::KEEP {
            self.warnings.push(w);
        } else {
            self.warnings_past += 1;
        }
    }

    fn segment(&self) -> usize {
        self.segments.len().saturating_sub(1)
    }

    /// Adds a closed call, keeping [`Lacking`].
    fn append(&mut self, c: Call) {
        let i = self.calls.len();
        let l = &mut self.lacking;
        if let Some(prev) = self.calls.last() {
            if prev.lacks_dealloc() {
                l.dealloc.push(i - 1);
            }
            if prev.segment != c.segment {
                l.session_from = i;
            }
        }
        for (w, _) in c.wrappers.iter() {
            l.wrapped.insert(*w, i);
        }
        self.calls.push(c);
    }

    /// The latest call that lacks `async_dealloc_ms`.
    fn lacking_dealloc(&mut self) -> Lacks {
        let Some(latest) = self.calls.len().checked_sub(1) else {
            return Lacks::None;
        };
        if self.calls.last().is_some_and(Call::lacks_dealloc) {
            return Lacks::Kept(latest);
        }
        while let Some(&i) = self.lacking.dealloc.last() {
            match self.calls.get(i) {
                Some(c) if c.lacks_dealloc() => return Lacks::Kept(i),
                Some(_) => {
                    self.lacking.dealloc.pop();
                }
                None => return Lacks::Forgotten,
            }
        }
        Lacks::None
    }

    /// The earliest of the latest calls of session `seg` that lack wrapper timer `w`.
    fn lacking_wrapper(&self, w: Wrapper, seg: usize) -> Option<usize> {
        if self.calls.last()?.segment != seg {
            return None;
        }
        let after = self.lacking.wrapped.get(&w).map_or(0, |&k| k + 1);
        let from = after
            .max(self.lacking.session_from)
            .max(self.calls.first_kept());
        (from < self.calls.len()).then_some(from)
    }

    /// Files one line.
    /// Files one line; `res_ns` is how fine its time stamp `wall` is.
    pub fn push(&mut self, line: LogLine, at: At, wall: Option<SystemTime>, res_ns: u64) {
        self.res_ns = res_ns;
        self.follow_clock(&line, wall);
        match line {
            LogLine::Timing(pairs) => self.timing(pairs, at, wall),
            LogLine::Info(text) => {
                let c = self.latest_mut(&at);
                c.notes.push(text);
            }
            LogLine::NttH(pairs) => {
                self.pending_ntt.push(pairs);
                let c = self.open_call(&at);
                c.last = Some(at);
            }
            LogLine::Timeline {
                offset_ms,
                event,
                job,
                detail,
            } => self.timeline(offset_ms, event, job, &detail, &at),
            LogLine::Wrapper(w, d) => self.wrapper(w, d, at, wall),
            LogLine::Synthesis(d) => self.pending_synthesis = Some(d),
            LogLine::JobTotals(what, fields) => {
                let text = fields
                    .iter()
                    .map(|(k, v)| format!("{k}={v}"))
                    .collect::<Vec<_>>()
                    .join(" ");
                self.latest_mut(&at).notes.push(format!("{what}: {text}"));
            }
        }
    }

    /// Starts a new segment at a restart; keeps each segment's wall-clock origin.
    fn follow_clock(&mut self, line: &LogLine, wall: Option<SystemTime>) {
        let offset = match line {
            LogLine::Timeline { offset_ms, .. } => Some(*offset_ms),
            _ => None,
        };
        let clock_back = matches!((self.last_wall, wall), (Some(a), Some(b))
            if a.duration_since(b).is_ok_and(|d| d > CLOCK_BACK));
        let offset_back = matches!((self.last_offset, offset), (Some(a), Some(b))
            if b + OFFSET_BACK_MS < a);
        if self.segments.is_empty() || clock_back || offset_back {
            if !self.segments.is_empty() {
                self.restart();
            }
            self.segments.push(Segment::default());
            self.last_offset = None;
        }
        let seg = self.segments.last_mut().expect("a segment");
        if seg.first_wall.is_none() {
            seg.first_wall = wall;
        }
        if let Some(o) = offset {
            seg.has_timeline = true;
            if let (None, Some(w)) = (seg.timeline_base, wall) {
                seg.timeline_base = w.checked_sub(Duration::from_millis(o));
            }
            self.last_offset = Some(o);
        }
        if wall.is_some() {
            self.last_wall = wall;
        }
    }

    /// A restart: the call in flight ends with the daemon run it belonged to.
    fn restart(&mut self) {
        while !self.open.is_empty() {
            let c = self.open.remove(0);
            self.warn(format!(
                "the call starting at {} ends where the prover restarted",
                c.started_at()
            ));
            self.close(c);
        }
    }

    /// Ends the log: a call left open is kept (with a warning), runs no call claimed become
    /// calls of their own.
    pub fn finish(&mut self) {
        while !self.open.is_empty() {
            let c = self.open.remove(0);
            self.warn(format!(
                "the call starting at {} has no line that ends it (`total_start_fn_ms` or `pre_destructor_ms`): the log ends inside it",
                c.started_at()
            ));
            self.close(c);
        }
        for i in self.runs.claim_the_rest() {
            self.append(Call {
                run: Some(i),
                closed: true,
                segment: self.runs[i].segment,
                ..Call::default()
            });
        }
    }

    /// Calls that nothing more will change, in order, each once: those a newer call followed,
    /// a bellperson proof once its wrapper timer is in, a C++ call once its wrapper and its
    /// detached free (`async_dealloc_ms`) are (without the free, the next call settles it:
    /// the release was synchronous). After [`Calls::finish`], every call.
    pub fn take_ready(&mut self, finished: bool) -> Vec<Call> {
        let n = self.calls.len();
        let settled =
            |c: &Call| c.wrapper().is_some() && (!c.has_cuzk() || c.async_dealloc_ms.is_some());
        let mut upto = self.handed;
        while upto < n && (finished || upto + 1 < n || self.calls.get(upto).is_some_and(settled)) {
            upto += 1;
        }
        let out = self.calls.cloned(self.handed, upto);
        self.handed = upto;
        out
    }

    /// Forgets the calls handed out by [`Calls::take_ready`] but the latest `keep`: what they
    /// could still gain (a late line) nobody would read.
    pub fn forget_handed(&mut self, keep: usize) -> usize {
        self.calls.forget_before(self.handed.saturating_sub(keep))
    }

    /// Forgets the oldest calls beyond the latest `keep`, placed or not (a log replayed whole
    /// within a budget keeps its latest calls, as a replayed recording keeps its latest
    /// proofs); returns how many it forgot.
    pub fn forget_oldest(&mut self, keep: usize) -> usize {
        let n = self
            .calls
            .forget_before(self.calls.len().saturating_sub(keep));
        self.handed = self.handed.max(self.calls.first_kept());
        n
    }

    /// The call a line without a timer of its own goes with: the newest open one, else the
    /// latest.
    fn latest_mut(&mut self, at: &At) -> &mut Call {
        if self.open.is_empty() && self.calls.last().is_some() {
            return self.calls.last_mut().expect("just seen");
        }
        self.open_call(at)
    }

    /// The newest open call, opened now when none is.
    fn open_call(&mut self, at: &At) -> &mut Call {
        if self.open.is_empty() {
            self.open_new(at);
        }
        self.open.last_mut().expect("just opened")
    }

    /// Opens a call (claiming the earliest GPU run in flight); its index in `open`.
    fn open_new(&mut self, at: &At) -> usize {
        let run = self.runs.claim_running();
        self.open.push(Call {
            first: Some(at.clone()),
            run,
            synthesis: self.pending_synthesis.take(),
            segment: self.segment(),
            ..Call::default()
        });
        self.open.len() - 1
    }

    fn close(&mut self, mut c: Call) {
        if c.run.is_none() {
            // Lines printed after their run's GPU_END (buffered stderr): the earliest run left.
            c.run = self.runs.claim_started();
        }
        // Steps no worker claimed are this call's when no other call is open to claim them.
        if !self.pending_ntt.is_empty() && self.open.is_empty() {
            let n = self.pending_ntt.len();
            let w = c.workers.entry(0).or_default();
            w.ntt_h.append(&mut self.pending_ntt);
            self.warn(format!(
                "{n} CUZK_NTT_H line(s) of the call at {} came after every `ntt_msm_h_ms`: filed under GPU worker 0",
                c.started_at()
            ));
        }
        c.closed = true;
        self.append(c);
    }

    /// The index of the latest closed call when a line of timers `pairs` belongs to it: no
    /// call is open, the line is the caller's (workers end before the call does), starts no
    /// call, and the call has none of its keys yet (a late line: `b_g2_msm_ms`, an epilogue).
    fn late_line_of(&self, pairs: &[(Key, u64)], tid: Option<u64>) -> Option<usize> {
        let starts = pairs.iter().any(|(k, _)| STARTS_CALL.contains(&k.as_str()));
        if !self.open.is_empty() || tid.is_some() || starts {
            return None;
        }
        let i = self.calls.len().checked_sub(1)?;
        let c = self.calls.last()?;
        (c.has_cuzk() && c.segment == self.segment() && !c.has_any(pairs, tid)).then_some(i)
    }

    fn timing(&mut self, pairs: Vec<(Key, u64)>, at: At, wall: Option<SystemTime>) {
        // `async_dealloc_ms` comes from a detached thread, after its call closed.
        if let [(k, v)] = pairs.as_slice()
            && k == "async_dealloc_ms"
        {
            match self.lacking_dealloc() {
                Lacks::Kept(i) => {
                    if let Some(c) = self.calls.get_mut(i) {
                        c.async_dealloc_ms = Some(*v);
                    }
                }
                Lacks::Forgotten => self.forgotten_lines += 1,
                Lacks::None => self.open_call(&at).async_dealloc_ms = Some(*v),
            }
            return;
        }
        let tid = pairs.iter().find(|(k, _)| k == "gpu_tid").map(|p| p.1);
        if let Some(c) = self
            .late_line_of(&pairs, tid)
            .and_then(|i| self.calls.get_mut(i))
        {
            file_pairs(c, &mut self.pending_ntt, pairs, tid);
            c.last = Some(at);
            return;
        }
        let i = self.call_for(&pairs, tid, &at);
        let ends = pairs.iter().any(|(k, _)| ENDS_CALL.contains(&k.as_str()));
        let res = self.res_ns;
        let c = &mut self.open[i];
        file_pairs(c, &mut self.pending_ntt, pairs, tid);
        c.last = Some(at);
        if wall.is_some() {
            c.wall_end = wall;
            c.wall_res_ns = res;
            if ends {
                c.timers_wall = wall;
            }
        }
        if ends {
            let c = self.open.remove(i);
            self.close(c);
        }
    }

    /// The open call a line of timers `pairs` goes to (its index in `open`): the oldest that
    /// has none of its keys. When every open call has one, another call began: opened beside
    /// them while the log's `TIMELINE` has more GPU runs in flight than calls open (workers
    /// whose calls interleave), else in place of the oldest, whose end was not logged.
    fn call_for(&mut self, pairs: &[(Key, u64)], tid: Option<u64>, at: &At) -> usize {
        if let Some(i) = self.open.iter().position(|c| !c.has_any(pairs, tid)) {
            return i;
        }
        if !self.open.is_empty() && self.open.len() >= self.runs.in_flight(self.segment()) {
            let c = self.open.remove(0);
            self.warn(format!(
                "the call starting at {} ends without a line that ends it ({} starts another)",
                c.started_at(),
                at
            ));
            self.close(c);
        }
        self.open_new(at)
    }

    fn wrapper(&mut self, w: Wrapper, d: Duration, at: At, wall: Option<SystemTime>) {
        // The Rust caller prints it after the call returned: the earliest of the latest calls
        // that lack this timer.
        let seg = self.segment();
        if let Some(i) = self.lacking_wrapper(w, seg)
            && let Some(c) = self.calls.get_mut(i)
        {
            self.lacking.wrapped.insert(w, i);
            c.wrappers.insert(w, d);
            // The innermost wrapper's line says when the call returned.
            if c.wrapper().is_some_and(|(first, _)| first == w) && wall.is_some() {
                c.wall_end = wall;
                c.wall_res_ns = self.res_ns;
            }
            c.last = Some(at);
            return;
        }
        if !self.open.is_empty() {
            let mut c = self.open.remove(0);
            self.warn(format!(
                "{} at {at} ends the call starting at {} before a line that ends it",
                w.label(),
                c.started_at()
            ));
            c.wrappers.insert(w, d);
            if wall.is_some() {
                c.wall_end = wall;
                c.wall_res_ns = self.res_ns;
            }
            self.close(c);
            return;
        }
        // A bellperson proof with no C++ timers.
        let run = self.runs.claim_running();
        let synthesis = self.pending_synthesis.take();
        self.append(Call {
            first: Some(at.clone()),
            last: Some(at),
            wrappers: LiteMap::from_iter([(w, d)]),
            synthesis,
            run,
            closed: true,
            wall_end: wall,
            wall_res_ns: self.res_ns,
            segment: seg,
            ..Call::default()
        });
    }

    fn timeline(&mut self, t: u64, event: TimelineEvent, job: Key, detail: &str, at: &At) {
        let field = |name: &str| {
            detail
                .split([' ', ','])
                .find_map(|kv| kv.strip_prefix(name))
                .map(Key::from)
        };
        let partition = field("partition=");
        let segment = self.segment();
        match event {
            TimelineEvent::ChanSend => {}
            TimelineEvent::SynthStart => {
                let s = self.synthesis.entry(job).or_default();
                s.start = Some(t);
                s.kind = field("kind=").map(String::from).unwrap_or_default();
            }
            TimelineEvent::SynthEnd => self.synthesis.entry(job).or_default().end = Some(t),
            TimelineEvent::GpuQueue => {
                self.runs.push(GpuRun {
                    job,
                    partition: partition
                        .or_else(|| (detail == "monolithic").then(|| detail.into())),
                    queue: Some(t),
                    segment,
                    ..GpuRun::default()
                });
            }
            TimelineEvent::GpuPickup | TimelineEvent::GpuStart | TimelineEvent::GpuEnd => {
                self.gpu_run_edge(t, event, job, partition, at)
            }
        }
    }

    fn gpu_run_edge(
        &mut self,
        t: u64,
        event: TimelineEvent,
        job: Key,
        partition: Option<Key>,
        at: &At,
    ) {
        let edge = match event {
            TimelineEvent::GpuPickup => Edge::Pickup,
            TimelineEvent::GpuStart => Edge::Start,
            _ => Edge::End,
        };
        let segment = self.segment();
        let i = match self
            .runs
            .waiting_for(segment, &job, partition.as_deref(), edge)
        {
            Some(i) => i,
            None => {
                self.warn(format!(
                    "{at}: {event:?} of job {job}{} without its GPU_QUEUE line: counted as a run of its own",
                    partition
                        .as_deref()
                        .map_or(String::new(), |p| format!(" partition {p}"))
                ));
                self.runs.push(GpuRun {
                    job,
                    partition,
                    segment,
                    ..GpuRun::default()
                })
            }
        };
        self.runs.set(i, edge, t);
    }
}

/// Files a line's timers under the call or, with `gpu_tid`, under its worker; a worker's
/// `ntt_msm_h_ms` claims the pending `CUZK_NTT_H` steps it adds up to.
fn file_pairs(
    c: &mut Call,
    pending_ntt: &mut Vec<Vec<(Key, u64)>>,
    pairs: Vec<(Key, u64)>,
    tid: Option<u64>,
) {
    let Some(t) = tid else {
        c.ms.extend(pairs);
        return;
    };
    let ntt = pairs.iter().find(|(k, _)| k == "ntt_msm_h_ms").map(|p| p.1);
    let claimed = match ntt {
        Some(ms) => claim_ntt(pending_ntt, ms),
        None => Vec::new(),
    };
    let w = c.workers.entry(t).or_default();
    w.ntt_h.extend(claimed);
    w.ms.extend(pairs.into_iter().filter(|(k, _)| k != "gpu_tid"));
}

/// The oldest pending steps whose totals add up to at most `ntt_ms` (with [`NTT_SLACK`]), at
/// least one: with two workers printing at once, each takes as many circuits' steps as its own
/// timer covers.
fn claim_ntt(pending: &mut Vec<Vec<(Key, u64)>>, ntt_ms: u64) -> Vec<Vec<(Key, u64)>> {
    let total = |s: &[(Key, u64)]| {
        s.iter()
            .find(|(k, _)| k == "total")
            .map_or_else(|| s.iter().map(|p| p.1).sum(), |p| p.1)
    };
    let limit = (ntt_ms as f64 * (1.0 + NTT_SLACK)).ceil() as u64 + 1;
    let mut sum = 0;
    let mut n = 0;
    for s in pending.iter() {
        let t = total(s);
        if n > 0 && sum + t > limit {
            break;
        }
        sum += t;
        n += 1;
    }
    pending.drain(..n).collect()
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use crate::import::lines::parse;

    pub(crate) fn group(log: &str) -> Calls {
        let mut c = Calls::default();
        for (i, l) in log.lines().enumerate() {
            if let Some(Ok(p)) = parse(l) {
                let at = At {
                    file: "t".into(),
                    line: i + 1,
                };
                c.push(p.line, at, p.wall, p.wall_res_ns);
            }
        }
        c.finish();
        c
    }

    #[test]
    fn wrapper_timers_go_to_the_calls_in_order_and_async_dealloc_to_the_latest() {
        let c = group(
            "CUZK_TIMING: prep_msm_ms=1\n\
             CUZK_TIMING: epilogue_ms=2 pre_destructor_ms=10\n\
             CUZK_TIMING: prep_msm_ms=3\n\
             CUZK_TIMING: epilogue_ms=4 pre_destructor_ms=20\n\
             prover time: 11s\n\
             prover time: 21s\n\
             CUZK_TIMING: async_dealloc_ms=7\n",
        );
        assert_eq!(c.calls.len(), 2);
        assert_eq!(c.calls[0].wrapper().unwrap().1, Duration::from_secs(11));
        assert_eq!(c.calls[1].wrapper().unwrap().1, Duration::from_secs(21));
        assert_eq!(c.calls[0].async_dealloc_ms, None);
        assert_eq!(c.calls[1].async_dealloc_ms, Some(7));
        assert!(c.warnings.is_empty(), "{:?}", c.warnings);
    }

    /// Today's supraseal: the call's GPU part ends at `total_start_fn_ms`; `b_g2_msm_ms`
    /// (CPU) arrives after it, then the wrapper, then the detached free.
    #[test]
    fn total_start_fn_ends_a_call_and_late_lines_stay_with_it() {
        let c = group(
            "CUZK_TIMING: split_vectors_ms=0 setup_to_split_ms=1145\n\
             CUZK_TIMING: pre_lock_cpu_ms=1145 mutex_wait_ms=0\n\
             CUZK_TIMING: set pool release threshold to MAX on gpu 0\n\
             CUZK_TIMING: prep_msm_ms=325\n\
             CUZK_TIMING: gpu_tid=0 ntt_msm_h_ms=557\n\
             CUZK_TIMING: gpu_tid=0 tail_msm_ms=304 gpu_total_ms=935\n\
             CUZK_TIMING: mutex_held_ms=936 total_start_fn_ms=2081\n\
             CUZK_TIMING: b_g2_msm_ms=14084 num_circuits=4\n\
             prover time: 15.56s\n\
             CUZK_TIMING: async_dealloc_ms=65\n\
             CUZK_TIMING: split_vectors_ms=0 setup_to_split_ms=0\n\
             CUZK_TIMING: mutex_held_ms=944 total_start_fn_ms=944\n\
             CUZK_TIMING: b_g2_msm_ms=14447 num_circuits=4\n\
             prover time: 14.78s\n",
        );
        assert_eq!(c.calls.len(), 2, "{:?}", c.warnings);
        assert_eq!(c.calls[0].ms.get("b_g2_msm_ms"), Some(&14084));
        assert_eq!(c.calls[0].ms.get("num_circuits"), Some(&4));
        assert_eq!(
            c.calls[0].notes,
            vec!["set pool release threshold to MAX on gpu 0"]
        );
        assert_eq!(c.calls[0].async_dealloc_ms, Some(65));
        assert_eq!(c.calls[1].ms.get("b_g2_msm_ms"), Some(&14447));
        assert!(c.warnings.is_empty(), "{:?}", c.warnings);
    }

    #[test]
    fn a_call_without_its_end_line_is_kept_and_said() {
        let c = group(
            "CUZK_TIMING: gpu_tid=0 ntt_msm_h_ms=5\n\
             CUZK_TIMING: gpu_tid=0 ntt_msm_h_ms=6\n\
             CUZK_TIMING: epilogue_ms=4 pre_destructor_ms=20\n",
        );
        assert_eq!(c.calls.len(), 2);
        assert_eq!(c.calls[0].workers[&0].ms.get("ntt_msm_h_ms"), Some(&5));
        assert_eq!(c.calls[1].workers[&0].ms.get("ntt_msm_h_ms"), Some(&6));
        assert!(c.warnings[0].contains("t:1"), "{:?}", c.warnings);
    }

    /// Two workers print at once: each `ntt_msm_h_ms` takes the steps it adds up to, so each
    /// worker gets its own circuits' steps (5 and 5 of 10), not all that came before.
    #[test]
    fn interleaved_workers_each_take_the_steps_their_timer_covers() {
        let mut log = String::new();
        for i in 0..9 {
            log += "CUZK_NTT_H: msm_invoke=50ms total=100ms\n";
            if i == 8 {
                log += "CUZK_TIMING: gpu_tid=0 ntt_msm_h_ms=501\n";
            }
        }
        log += "CUZK_NTT_H: msm_invoke=50ms total=100ms\n";
        log += "CUZK_TIMING: gpu_tid=1 ntt_msm_h_ms=502\n";
        log += "CUZK_TIMING: mutex_held_ms=900 total_start_fn_ms=1000\n";
        let c = group(&log);
        let w = &c.calls[0].workers;
        assert_eq!((w[&0].ntt_h.len(), w[&1].ntt_h.len()), (5, 5));
        assert!(c.warnings.is_empty(), "{:?}", c.warnings);
    }

    #[test]
    fn timeline_runs_are_matched_to_the_call_logged_while_they_ran() {
        let c = group(
            "TIMELINE,10,GPU_QUEUE,j,partition=0\n\
             TIMELINE,11,GPU_QUEUE,j,partition=1\n\
             TIMELINE,20,GPU_START,j,partition=1\n\
             CUZK_TIMING: prep_msm_ms=1\n\
             CUZK_TIMING: epilogue_ms=1 pre_destructor_ms=9\n\
             TIMELINE,30,GPU_END,j,partition=1\n\
             TIMELINE,31,GPU_START,j,partition=0\n\
             TIMELINE,40,GPU_END,j,partition=0\n",
        );
        // The call ran in partition 1; partition 0 has only TIMELINE lines.
        assert_eq!(c.calls.len(), 2);
        let run = |i: usize| &c.runs[c.calls[i].run.unwrap()];
        assert_eq!(run(0).partition.as_deref(), Some("1"));
        assert_eq!((run(0).start, run(0).end), (Some(20), Some(30)));
        assert_eq!(run(1).partition.as_deref(), Some("0"));
        assert!(!c.calls[1].has_cuzk());
    }

    #[test]
    fn a_daemon_restart_starts_a_new_session() {
        let c = group(
            "TIMELINE,100000,GPU_QUEUE,a,partition=0\n\
             TIMELINE,100010,GPU_START,a,partition=0\n\
             TIMELINE,101000,GPU_END,a,partition=0\n\
             TIMELINE,50,GPU_QUEUE,b,partition=0\n\
             TIMELINE,60,GPU_START,b,partition=0\n\
             TIMELINE,900,GPU_END,b,partition=0\n",
        );
        assert_eq!(c.segments.len(), 2);
        assert_eq!(c.calls.len(), 2);
        assert_eq!((c.calls[0].segment, c.calls[1].segment), (0, 1));
        let c = group(
            "2026-11-30T12:00:00Z prover time: 1s\n\
             2026-11-30T12:05:00Z prover time: 1s\n\
             2026-11-30T11:00:00Z prover time: 1s\n",
        );
        assert_eq!(c.segments.len(), 2, "the clock went back an hour");
    }

    #[test]
    fn ready_calls_come_out_once_as_they_are_settled() {
        let mut c = Calls::default();
        let at = |line| At {
            file: "t".into(),
            line,
        };
        let push = |c: &mut Calls, s: &str, n| {
            let p = parse(s).unwrap().unwrap();
            c.push(p.line, at(n), None, 0);
        };
        push(&mut c, "CUZK_TIMING: prep_msm_ms=1", 1);
        push(
            &mut c,
            "CUZK_TIMING: mutex_held_ms=9 total_start_fn_ms=10",
            2,
        );
        assert!(c.take_ready(false).is_empty(), "its wrapper may follow");
        push(&mut c, "prover time: 1s", 3);
        assert!(
            c.take_ready(false).is_empty(),
            "its detached free may follow"
        );
        push(&mut c, "CUZK_TIMING: async_dealloc_ms=7", 3);
        assert_eq!(c.take_ready(false).len(), 1);
        push(&mut c, "prover time: 2s", 3);
        assert_eq!(
            c.take_ready(false).len(),
            1,
            "a bellperson proof: settled by its wrapper"
        );
        push(&mut c, "CUZK_TIMING: prep_msm_ms=1", 4);
        push(
            &mut c,
            "CUZK_TIMING: mutex_held_ms=9 total_start_fn_ms=10",
            5,
        );
        push(
            &mut c,
            "CUZK_TIMING: split_vectors_ms=1 setup_to_split_ms=2",
            6,
        );
        push(&mut c, "CUZK_TIMING: prep_msm_ms=1", 7);
        // The second call is followed by a third: settled without a wrapper.
        assert_eq!(c.take_ready(false).len(), 0, "the third is still open");
        push(
            &mut c,
            "CUZK_TIMING: mutex_held_ms=9 total_start_fn_ms=10",
            8,
        );
        assert_eq!(c.take_ready(false).len(), 1);
        c.finish();
        assert_eq!(c.take_ready(true).len(), 1);
        assert!(c.take_ready(true).is_empty());
    }
}

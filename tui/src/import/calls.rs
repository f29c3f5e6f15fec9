//! Known lines → proving calls. `CUZK_TIMING` lines carry no job id: a call is the run of
//! lines that ends with its `epilogue_ms … pre_destructor_ms` line; `async_dealloc_ms` (printed
//! later by a detached thread) and bellperson's `prover time:` (printed by the Rust caller after
//! the call returned) belong to the latest call that lacks them. `TIMELINE` GPU runs are matched
//! to the call whose lines appear while they run.

use super::lines::{LogLine, TimelineEvent};
use std::collections::BTreeMap;
use std::time::{Duration, SystemTime};

/// Where a line is: file and 1-based line number.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct At {
    pub file: String,
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
    pub ms: BTreeMap<String, u64>,
    /// `CUZK_NTT_H` lines that preceded this worker's `ntt_msm_h_ms`: the inside of it.
    pub ntt_h: Vec<Vec<(String, u64)>>,
}

/// One call of the C++ prover (one partition), or a bare bellperson proof.
#[derive(Debug, Clone, Default)]
pub struct Call {
    pub first: Option<At>,
    pub last: Option<At>,
    /// The caller's keys (milliseconds), e.g. `prep_msm_ms`, `pre_destructor_ms`.
    pub ms: BTreeMap<String, u64>,
    pub workers: BTreeMap<u64, Worker>,
    pending_ntt: Vec<Vec<(String, u64)>>,
    pub async_dealloc_ms: Option<u64>,
    /// bellperson's `prover time`: the wrapper timer.
    pub wrapper: Option<Duration>,
    pub synthesis: Option<Duration>,
    /// Index into [`Calls::runs`].
    pub run: Option<usize>,
    /// The epilogue line was seen.
    pub closed: bool,
    /// Wall clock of the line that ended it (the `prover time` line when there is one).
    pub wall_end: Option<SystemTime>,
}

impl Call {
    /// Where its first line is, for messages.
    fn started_at(&self) -> String {
        self.first.as_ref().map_or("?".into(), At::to_string)
    }

    pub fn has_cuzk(&self) -> bool {
        !self.ms.is_empty() || !self.workers.is_empty()
    }
}

/// A `TIMELINE` GPU run of one job's partition (offsets in ms from the daemon's start).
#[derive(Debug, Clone, Default)]
pub struct GpuRun {
    pub job: String,
    pub partition: Option<String>,
    pub queue: Option<u64>,
    pub pickup: Option<u64>,
    pub start: Option<u64>,
    pub end: Option<u64>,
    pub claimed: bool,
}

/// A job's synthesis from `TIMELINE` lines.
#[derive(Debug, Clone, Default)]
pub struct Synthesis {
    pub start: Option<u64>,
    pub end: Option<u64>,
    pub kind: String,
}

/// Everything grouped, with what could not be.
#[derive(Debug, Default)]
pub struct Calls {
    pub calls: Vec<Call>,
    pub runs: Vec<GpuRun>,
    pub synthesis: BTreeMap<String, Synthesis>,
    pub warnings: Vec<String>,
    open: Option<Call>,
    pending_synthesis: Option<Duration>,
    first_wall: Option<SystemTime>,
    /// The daemon's start on the wall clock, from the first `TIMELINE` line with a timestamp.
    timeline_base: Option<SystemTime>,
}

impl Calls {
    /// Files one line.
    pub fn push(&mut self, line: LogLine, at: At, wall: Option<SystemTime>) {
        if self.first_wall.is_none() {
            self.first_wall = wall;
        }
        if let (None, Some(w), LogLine::Timeline { offset_ms, .. }) =
            (self.timeline_base, wall, &line)
        {
            self.timeline_base = w.checked_sub(Duration::from_millis(*offset_ms));
        }
        match line {
            LogLine::Timing(pairs) => self.timing(pairs, at, wall),
            LogLine::NttH(pairs) => {
                let c = self.open_call(&at);
                c.pending_ntt.push(pairs);
                c.last = Some(at);
            }
            LogLine::Timeline {
                offset_ms,
                event,
                job,
                detail,
            } => self.timeline(offset_ms, event, job, &detail, &at),
            LogLine::ProverTime(d) => self.prover_time(d, at, wall),
            LogLine::SynthesisTime(d) => self.pending_synthesis = Some(d),
        }
    }

    /// Session time 0 on the wall clock (Unix ns): the daemon's start when `TIMELINE` lines
    /// have timestamps, else (without `TIMELINE`, whose offsets count from the daemon's start)
    /// the first timestamp; `None` when the log does not say.
    pub fn wall_origin_ns(&self) -> Option<u64> {
        let first = self.runs.is_empty().then_some(self.first_wall).flatten();
        let t = self.timeline_base.or(first)?;
        Some(t.duration_since(std::time::UNIX_EPOCH).ok()?.as_nanos() as u64)
    }

    /// Ends the log: a call left open is kept (with a warning), runs no call claimed become
    /// calls of their own.
    pub fn finish(mut self) -> Calls {
        if let Some(c) = self.open.take() {
            self.warnings.push(format!(
                "the call starting at {} has no `epilogue_ms … pre_destructor_ms` line: the log ends inside it",
                c.started_at()
            ));
            self.close(c);
        }
        for i in 0..self.runs.len() {
            if !self.runs[i].claimed && self.runs[i].start.is_some() {
                self.runs[i].claimed = true;
                self.calls.push(Call {
                    run: Some(i),
                    closed: true,
                    ..Call::default()
                });
            }
        }
        self
    }

    fn open_call(&mut self, at: &At) -> &mut Call {
        if self.open.is_none() {
            let run = self.claim_running();
            self.open = Some(Call {
                first: Some(at.clone()),
                run,
                synthesis: self.pending_synthesis.take(),
                ..Call::default()
            });
        }
        self.open.as_mut().expect("just opened")
    }

    /// The earliest-started GPU run that has not ended and no call has claimed.
    fn claim_running(&mut self) -> Option<usize> {
        let i = (0..self.runs.len())
            .filter(|&i| {
                let r = &self.runs[i];
                !r.claimed && r.start.is_some() && r.end.is_none()
            })
            .min_by_key(|&i| self.runs[i].start)?;
        self.runs[i].claimed = true;
        Some(i)
    }

    fn close(&mut self, mut c: Call) {
        if c.run.is_none() {
            // Lines printed after their run's GPU_END (buffered stderr): the earliest run left.
            let i = (0..self.runs.len())
                .filter(|&i| !self.runs[i].claimed && self.runs[i].start.is_some())
                .min_by_key(|&i| self.runs[i].start);
            if let Some(i) = i {
                self.runs[i].claimed = true;
                c.run = Some(i);
            }
        }
        if !c.pending_ntt.is_empty() {
            let n = c.pending_ntt.len();
            let w = c.workers.entry(0).or_default();
            w.ntt_h.append(&mut c.pending_ntt);
            self.warnings.push(format!(
                "{n} CUZK_NTT_H line(s) of the call at {} came after every `ntt_msm_h_ms`: filed under GPU worker 0",
                c.started_at()
            ));
        }
        c.closed = true;
        self.calls.push(c);
    }

    fn timing(&mut self, pairs: Vec<(String, u64)>, at: At, wall: Option<SystemTime>) {
        // `async_dealloc_ms` comes from a detached thread, after its call closed.
        if let [(k, v)] = pairs.as_slice()
            && k == "async_dealloc_ms"
        {
            match self
                .calls
                .iter_mut()
                .rev()
                .find(|c| c.async_dealloc_ms.is_none() && c.has_cuzk())
            {
                Some(c) => c.async_dealloc_ms = Some(*v),
                None => self.open_call(&at).async_dealloc_ms = Some(*v),
            }
            return;
        }
        let tid = pairs.iter().find(|(k, _)| k == "gpu_tid").map(|p| p.1);
        // A key the open call already has: its end was not logged, a new call began.
        let repeats = self.open.as_ref().is_some_and(|c| {
            let have = match tid {
                Some(t) => c.workers.get(&t).map(|w| &w.ms),
                None => Some(&c.ms),
            };
            have.is_some_and(|m| {
                pairs
                    .iter()
                    .any(|(k, _)| k != "gpu_tid" && m.contains_key(k))
            })
        });
        if repeats && let Some(c) = self.open.take() {
            self.warnings.push(format!(
                "the call starting at {} ends without its `epilogue_ms … pre_destructor_ms` line ({} starts another)",
                c.started_at(),
                at
            ));
            self.close(c);
        }
        let ends = pairs.iter().any(|(k, _)| k == "pre_destructor_ms");
        let c = self.open_call(&at);
        match tid {
            Some(t) => {
                let has_ntt = pairs.iter().any(|(k, _)| k == "ntt_msm_h_ms");
                let pending = if has_ntt {
                    std::mem::take(&mut c.pending_ntt)
                } else {
                    Vec::new()
                };
                let w = c.workers.entry(t).or_default();
                w.ntt_h.extend(pending);
                for (k, v) in pairs.into_iter().filter(|(k, _)| k != "gpu_tid") {
                    w.ms.insert(k, v);
                }
            }
            None => {
                for (k, v) in pairs {
                    c.ms.insert(k, v);
                }
            }
        }
        c.last = Some(at);
        c.wall_end = wall.or(c.wall_end);
        if ends && let Some(c) = self.open.take() {
            self.close(c);
        }
    }

    fn prover_time(&mut self, d: Duration, at: At, wall: Option<SystemTime>) {
        // The Rust caller prints it after the call returned: the latest closed call without one.
        if let Some(c) = self
            .calls
            .iter_mut()
            .rev()
            .take_while(|c| c.wrapper.is_none())
            .last()
        {
            c.wrapper = Some(d);
            c.wall_end = wall.or(c.wall_end);
            c.last = Some(at);
            return;
        }
        if let Some(mut c) = self.open.take() {
            self.warnings.push(format!(
                "`prover time` at {at} ends the call starting at {} before its `epilogue_ms … pre_destructor_ms` line",
                c.started_at()
            ));
            c.wrapper = Some(d);
            c.wall_end = wall.or(c.wall_end);
            self.close(c);
            return;
        }
        // A bellperson proof with no C++ timers.
        let run = self.claim_running();
        self.calls.push(Call {
            first: Some(at.clone()),
            last: Some(at),
            wrapper: Some(d),
            synthesis: self.pending_synthesis.take(),
            run,
            closed: true,
            wall_end: wall,
            ..Call::default()
        });
    }

    fn timeline(&mut self, t: u64, event: TimelineEvent, job: String, detail: &str, at: &At) {
        let partition = detail
            .split([' ', ','])
            .find_map(|kv| kv.strip_prefix("partition="))
            .map(str::to_owned);
        match event {
            TimelineEvent::SynthStart => {
                let s = self.synthesis.entry(job).or_default();
                s.start = Some(t);
                s.kind = detail
                    .split([' ', ','])
                    .find_map(|kv| kv.strip_prefix("kind="))
                    .unwrap_or("")
                    .to_owned();
            }
            TimelineEvent::SynthEnd => self.synthesis.entry(job).or_default().end = Some(t),
            TimelineEvent::GpuQueue => self.runs.push(GpuRun {
                job,
                partition: partition.or_else(|| (detail == "monolithic").then(|| detail.into())),
                queue: Some(t),
                ..GpuRun::default()
            }),
            TimelineEvent::GpuPickup | TimelineEvent::GpuStart | TimelineEvent::GpuEnd => {
                let slot = |r: &GpuRun| match event {
                    TimelineEvent::GpuPickup => r.pickup,
                    TimelineEvent::GpuStart => r.start,
                    _ => r.end,
                };
                let i = self.runs.iter().position(|r| {
                    r.job == job
                        && slot(r).is_none()
                        && (partition.is_none() || r.partition == partition)
                });
                let i = match i {
                    Some(i) => i,
                    None => {
                        self.warnings.push(format!(
                            "{at}: {event:?} of job {job}{} without its GPU_QUEUE line: counted as a run of its own",
                            partition.as_deref().map_or(String::new(), |p| format!(" partition {p}"))
                        ));
                        self.runs.push(GpuRun {
                            job,
                            partition,
                            ..GpuRun::default()
                        });
                        self.runs.len() - 1
                    }
                };
                let r = &mut self.runs[i];
                match event {
                    TimelineEvent::GpuPickup => r.pickup = Some(t),
                    TimelineEvent::GpuStart => r.start = Some(t),
                    _ => r.end = Some(t),
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::import::lines::parse;

    fn group(log: &str) -> Calls {
        let mut c = Calls::default();
        for (i, l) in log.lines().enumerate() {
            if let Some(Ok(line)) = parse(l) {
                let at = At {
                    file: "t".into(),
                    line: i + 1,
                };
                c.push(line, at, None);
            }
        }
        c.finish()
    }

    #[test]
    fn prover_times_go_to_the_calls_in_order_and_async_dealloc_to_the_latest() {
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
        assert_eq!(c.calls[0].wrapper, Some(Duration::from_secs(11)));
        assert_eq!(c.calls[1].wrapper, Some(Duration::from_secs(21)));
        assert_eq!(c.calls[0].async_dealloc_ms, None);
        assert_eq!(c.calls[1].async_dealloc_ms, Some(7));
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
        assert_eq!(c.calls[0].workers[&0].ms["ntt_msm_h_ms"], 5);
        assert_eq!(c.calls[1].workers[&0].ms["ntt_msm_h_ms"], 6);
        assert!(c.warnings[0].contains("t:1"), "{:?}", c.warnings);
    }

    #[test]
    fn ntt_h_lines_belong_to_the_worker_whose_ntt_msm_h_follows() {
        let c = group(
            "CUZK_NTT_H: msm_invoke=3ms total=3ms\n\
             CUZK_TIMING: gpu_tid=1 ntt_msm_h_ms=3\n\
             CUZK_NTT_H: msm_invoke=4ms total=4ms\n\
             CUZK_TIMING: gpu_tid=0 ntt_msm_h_ms=4\n\
             CUZK_TIMING: epilogue_ms=1 pre_destructor_ms=9\n",
        );
        let w = &c.calls[0].workers;
        assert_eq!(w[&1].ntt_h[0][0], ("msm_invoke".into(), 3));
        assert_eq!(w[&0].ntt_h[0][0], ("msm_invoke".into(), 4));
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
}

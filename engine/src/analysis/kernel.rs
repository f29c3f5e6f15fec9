//! What a gap's thread did in the kernel, from its `ThreadKernel` samples (protocol 1.7): page
//! faults, its CPU time split between user code and the kernel, and the system calls it was
//! seen blocked in. The scheduling evidence ([`super::sched`]) says whether the thread ran,
//! waited for a CPU or was blocked; this says what the running was (the program's code, or
//! pages first touched or pinned, or another call into the kernel) and what the blocking was
//! in (`futex`, `ioctl`, `read`…).
//!
//! Samples are sent only when something changed, each change after the last unchanged reading:
//! between two consecutive samples a counter moved at an even pace (it is interpolated), and
//! the system call of the earlier one held until the later one.

use super::gaps::Interval;
use crate::format::{bytes, dur, grouped};
use crate::model::{Session, ThreadId};
use probe_protocol::ThreadKernel;

/// How far after a gap a sample closing it is looked for.
const REACH_NS: u64 = 250_000_000;
/// Page faults per millisecond of kernel time from which the kernel's work was serving them.
/// A first touch of fresh anonymous memory is 500–2,000 a millisecond (a page zeroed each),
/// `mlock` of fresh memory as many — but only 62 a millisecond in a VM whose host had never
/// backed those pages (1 GiB first touched in 4.2 s on the build VM); a `munmap` of a populated
/// 3 GiB mapping made 300 in 80 ms (the probe's own, and the program's elsewhere).
pub const FAULTS_PER_KERNEL_MS: u64 = 10;
/// The bytes one fault maps at least (a 4 KiB page; the viewer does not know the prover's
/// page size, and a huge page maps more).
pub const PAGE_BYTES: u64 = 4096;

/// A system call the thread was seen blocked in during the gap.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct BlockedIn {
    pub call: String,
    /// The part of the gap it was seen in it.
    pub ns: u64,
    /// Its second argument, the largest seen (a length for `munmap`, `madvise`, `mlock`).
    pub arg: u64,
}

/// The gapped thread's kernel counters over the gap.
#[derive(Debug, Clone, Default, PartialEq, Eq, serde::Serialize)]
pub struct KernelEvidence {
    pub minor_faults: u64,
    pub major_faults: u64,
    /// CPU time in user code and in the kernel, inside the gap (the kernel's split, at its
    /// tick's resolution).
    pub user_ns: u64,
    pub system_ns: u64,
    /// Most time first, at most three.
    pub blocked_in: Vec<BlockedIn>,
}

impl KernelEvidence {
    /// Whether the kernel's time went to serving page faults: many of them for the time.
    pub fn faulting(&self) -> bool {
        let faults = self.minor_faults + self.major_faults;
        faults > 0 && faults * 1_000_000 >= FAULTS_PER_KERNEL_MS * self.system_ns.max(1)
    }

    /// Whether the thread's time on a CPU was mostly in the kernel.
    pub fn mostly_kernel(&self) -> bool {
        self.system_ns > 0 && self.system_ns >= self.user_ns
    }

    /// The bytes the faults mapped at least.
    pub fn faulted_bytes(&self) -> u64 {
        (self.minor_faults + self.major_faults).saturating_mul(PAGE_BYTES)
    }
}

/// Whether the kernel's work leads a gap whose thread was on a CPU or waiting for one
/// `runnable_ns` of its `window_ns` around the gap: it was so at least half the time, and its
/// time on a CPU inside the gap was mostly in the kernel and a tenth of the window or more.
pub fn kernel_work_leads(k: &KernelEvidence, runnable_ns: u64, window_ns: u64) -> bool {
    runnable_ns * 2 >= window_ns && k.mostly_kernel() && k.system_ns * 10 >= window_ns
}

/// The evidence of `thread`'s kernel samples over `gap`; `None` when none opens it (at or
/// before its middle) or none closes it (at or after its middle, within [`REACH_NS`] of its
/// end).
pub fn kernel_evidence(
    session: &Session,
    thread: ThreadId,
    gap: Interval,
) -> Option<KernelEvidence> {
    let all = session.kernel(thread)?.all();
    let mid = gap.start + gap.len() / 2;
    // From the last sample at or before the gap's start (else the first) to the first at or
    // after its end (else the last within reach).
    let first = all.partition_point(|k| k.ts <= gap.start).saturating_sub(1);
    let last = all
        .partition_point(|k| k.ts < gap.end)
        .min(all.len().checked_sub(1)?);
    let near = all.get(first..=last)?;
    let (open, close) = (near.first()?, near.last()?);
    if open.ts > mid || close.ts < mid || close.ts > gap.end + REACH_NS {
        return None;
    }
    let at = |t: u64, f: fn(&ThreadKernel) -> u64| value_at(near, t, f);
    let delta = |f: fn(&ThreadKernel) -> u64| at(gap.end, f).saturating_sub(at(gap.start, f));
    let len = gap.len();
    let user_ns = delta(|k| k.user_ns).min(len);
    Some(KernelEvidence {
        minor_faults: delta(|k| k.minor_faults),
        major_faults: delta(|k| k.major_faults),
        user_ns,
        system_ns: delta(|k| k.system_ns).min(len - user_ns),
        blocked_in: blocked_in(session, near, gap),
    })
}

/// Counter `f` at time `t`, moving at an even pace between consecutive samples; held before
/// the first and after the last.
fn value_at(near: &[ThreadKernel], t: u64, f: fn(&ThreadKernel) -> u64) -> u64 {
    let i = near.partition_point(|k| k.ts <= t);
    match (i.checked_sub(1).map(|j| &near[j]), near.get(i)) {
        (Some(a), Some(b)) if b.ts > a.ts => {
            let (va, vb) = (f(a), f(b).max(f(a)));
            va + ((vb - va) as u128 * u128::from(t - a.ts) / u128::from(b.ts - a.ts)) as u64
        }
        (Some(a), _) => f(a),
        (None, Some(b)) => f(b),
        (None, None) => 0,
    }
}

/// The system calls of the samples in `near`, clipped to the gap: between two samples, the
/// time the thread was off a CPU is the earlier sample's call's, or — when the earlier one saw
/// it in none — the later one's (it entered the call it was found blocked in after it last
/// ran: a 300 ms wait for a lock was otherwise found in `futex` only from the collector's
/// next reading, 90 ms late, its start read as no call). A thread blocked in a call gains no
/// CPU time; one that gained some between two samples far apart (the collector stalled while
/// the program held its address space) returned from it somewhere between, and only the time
/// it was off a CPU is the call's — a `futex` read before a 580 ms `mlock` was otherwise held
/// across it.
fn blocked_in(session: &Session, near: &[ThreadKernel], gap: Interval) -> Vec<BlockedIn> {
    let mut found: Vec<BlockedIn> = Vec::new();
    for w in near.windows(2) {
        let Some(name) = w[0].syscall.or(w[1].syscall) else {
            continue;
        };
        let arg = if w[0].syscall.is_some() {
            w[0].syscall_arg
        } else {
            w[1].syscall_arg
        };
        let pair = Interval::new(w[0].ts, w[1].ts);
        let ran = (w[1].user_ns + w[1].system_ns).saturating_sub(w[0].user_ns + w[0].system_ns);
        let off = pair.len().saturating_sub(ran);
        let ns = (u128::from(pair.overlap(&gap)) * u128::from(off) / u128::from(pair.len().max(1)))
            as u64;
        if ns == 0 {
            continue;
        }
        let call = session.name(crate::model::NameId(name));
        match found.iter_mut().find(|b| b.call == call) {
            Some(b) => {
                b.ns += ns;
                b.arg = b.arg.max(arg);
            }
            None => found.push(BlockedIn {
                call: call.to_owned(),
                ns,
                arg,
            }),
        }
    }
    found.sort_by_key(|b| std::cmp::Reverse(b.ns));
    found.truncate(3);
    found
}

/// The calls on a range of memory, whose second argument is its length.
fn is_memory_call(call: &str) -> bool {
    matches!(
        call,
        "munmap" | "madvise" | "mlock" | "mlock2" | "munlock" | "mmap" | "mprotect"
    )
}

/// What a system call's blocking usually means, for a reader who does not know the call.
fn meaning(call: &str) -> &'static str {
    match call {
        "futex" => " (a lock or a condition: another thread)",
        "ioctl" => " (a driver: a GPU's, often)",
        "read" | "pread64" | "readv" | "preadv" | "preadv2" | "recvfrom" | "recvmsg" => " (I/O)",
        "write" | "pwrite64" | "writev" | "pwritev" | "sendto" | "sendmsg" => " (I/O)",
        "fsync" | "fdatasync" | "sync_file_range" => " (flushing to disk)",
        "nanosleep" | "clock_nanosleep" => " (a sleep)",
        "poll" | "ppoll" | "select" | "pselect6" | "epoll_wait" | "epoll_pwait"
        | "epoll_pwait2" => " (waiting for an event)",
        "wait4" | "waitid" => " (a child process)",
        c if is_memory_call(c) => " (a large range's pages)",
        _ => "",
    }
}

/// A call the thread was blocked in, in words: "in `futex` 0.30 s (a lock or …)".
pub fn blocked_words(b: &BlockedIn) -> String {
    let size = if is_memory_call(&b.call) && b.arg > 0 {
        format!(" of {}", bytes(b.arg))
    } else {
        String::new()
    };
    format!("in `{}`{size} {}{}", b.call, dur(b.ns), meaning(&b.call))
}

/// The faults, as a clause: "262,144 minor faults (≈ 1.0 GB at 4 KiB a page)".
fn faults_words(k: &KernelEvidence) -> String {
    let major = if k.major_faults > 0 {
        format!(" and {} major (read from disk)", grouped(k.major_faults))
    } else {
        String::new()
    };
    format!(
        "{} minor faults{major} (≈ {} at 4 KiB a page)",
        grouped(k.minor_faults),
        bytes(k.faulted_bytes())
    )
}

/// The thread on a CPU mostly in the kernel: serving page faults when `k` is
/// [`KernelEvidence::faulting`], else another call into the kernel (named where a sample saw
/// the thread blocked in one).
pub fn kernel_sentence(cpu_ns: u64, share_pct: f64, k: &KernelEvidence) -> String {
    let what = if k.faulting() {
        format!(
            "serving page faults: {}, memory touched for the first time or pinned",
            faults_words(k)
        )
    } else {
        let seen: Vec<String> = k.blocked_in.iter().map(blocked_words).collect();
        let seen = if seen.is_empty() {
            String::new()
        } else {
            format!("; seen {}", seen.join(", "))
        };
        format!(
            "with few page faults ({}): a system call no span covers (a munmap, madvise or mlock of a large range){seen}",
            grouped(k.minor_faults + k.major_faults),
        )
    };
    format!(
        "the thread ran on a CPU {} ({share_pct:.0}% of its time around the gap), {} of it in the kernel {what}",
        dur(cpu_ns),
        // The two come from different readings around the gap: never more than the whole.
        dur(k.system_ns.min(cpu_ns)),
    )
}

/// What the kernel saw besides the scheduling evidence's finding, clause by clause: the
/// calls the thread was blocked in, and what its time on a CPU went to (user code, the
/// kernel, page faults) — each only where it covers a twentieth of the gap `len` (faults:
/// where they map 4 MiB or more). Under load the program's own code reads "runnable but
/// waiting for a CPU 190 ms …; its time on a CPU: 118.8 ms in user code, 2.8 ms in the kernel".
pub fn detail(k: &KernelEvidence, len: u64) -> Vec<String> {
    let mut out: Vec<String> = k
        .blocked_in
        .iter()
        .filter(|b| b.ns * 20 >= len)
        .map(|b| format!("blocked {}", blocked_words(b)))
        .collect();
    let faults = k.faulted_bytes() >= 4 << 20;
    let cpu = (k.system_ns + k.user_ns) * 20 >= len;
    let user = if k.user_ns * 100 >= len {
        format!(", {} in user code", dur(k.user_ns))
    } else {
        String::new()
    };
    match (cpu, faults && k.faulting()) {
        (true, true) => out.push(format!(
            "its time on a CPU: {} in the kernel serving page faults{user}: {}, memory touched for the first time or pinned",
            dur(k.system_ns),
            faults_words(k)
        )),
        (true, false) => out.push(format!(
            "its time on a CPU: {} in user code, {} in the kernel",
            dur(k.user_ns),
            dur(k.system_ns)
        )),
        (false, _) if faults => out.push(faults_words(k)),
        (false, _) => {}
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::analysis::{DiagnosisKind, diagnose};
    use crate::model::ProofId;
    use crate::model::fixture::{Fixture, session};
    use probe_protocol::Event;

    const MS: u64 = 1_000_000;

    /// A proof over 0–3000 ms on `main` whose outer span has one child over 0–1000 ms (so
    /// 1000–3000 ms is its tail gap), scheduler samples `sched` (ts, cpu, runq: ms) and kernel
    /// samples `kernel` (ts ms, minor faults, user ms, system ms, the call blocked in).
    fn fixture(
        sched: &[(u64, u64, u64)],
        kernel: &[(u64, u64, u64, u64, Option<&str>)],
    ) -> Fixture {
        let mut f = Fixture::new();
        let main = f.thread(1, "main");
        let outer = f.proof(1, "cpu", "prove", main, 0, 3000 * MS);
        f.span(Some(1), Some(outer), "phase", main, 0, 1000 * MS);
        for &(ts, cpu, runq) in sched {
            f.sched(ts * MS, main, cpu * MS, runq * MS);
        }
        for &(ts, minor, user, system, call) in kernel {
            let syscall = call.map(|c| f.name(c).0);
            f.event(Event::ThreadKernel(ThreadKernel {
                ts: ts * MS,
                thread: 1,
                minor_faults: minor,
                major_faults: 0,
                user_ns: user * MS,
                system_ns: system * MS,
                syscall,
                syscall_arg: 1 << 30,
            }));
        }
        f
    }

    fn tail(f: &Fixture) -> crate::analysis::Diagnosis {
        let m = f.model();
        let s = session(&m);
        let p = s.proof(ProofId(1)).unwrap();
        diagnose(
            s,
            p,
            p.outer().unwrap(),
            Interval::new(1000 * MS, 3000 * MS),
        )
    }

    /// Counters move evenly between samples: the gap's share of a pair's change is its share
    /// of the pair's time; before the first and after the last they hold.
    #[test]
    fn counters_are_interpolated_between_samples() {
        let f = fixture(
            &[],
            &[
                (500, 0, 0, 0, None),
                (1500, 1000, 0, 1000, None),
                (3100, 2600, 0, 2600, None),
            ],
        );
        let m = f.model();
        let s = session(&m);
        let k = kernel_evidence(s, ThreadId(1), Interval::new(1000 * MS, 3000 * MS)).unwrap();
        // 1000 → 3000 ms: 500 at 1000 ms, 2500 at 3000 ms.
        assert_eq!((k.minor_faults, k.system_ns / MS), (2000, 2000));
        // None opening the gap by its middle: no evidence.
        assert_eq!(
            kernel_evidence(s, ThreadId(1), Interval::new(3200 * MS, 3400 * MS)),
            None
        );
    }

    /// Page faults with kernel time: a first touch; kernel time without them: another call;
    /// user time: the program's code. Under load the kernel's work keeps the verdict, its
    /// waits for a CPU said as its stretch; the program's own code waiting for a CPU stays
    /// `waiting_for_cpu`, with what ran said beside it.
    #[test]
    fn time_in_the_kernel_is_told_apart_from_the_programs_code() {
        let on_cpu = [(900, 0, 0), (3000, 2000, 0)];
        let first_touch = fixture(
            &on_cpu,
            &[(1000, 0, 0, 0, None), (3000, 500_000, 200, 1800, None)],
        );
        let d = tail(&first_touch);
        assert_eq!(d.kind, DiagnosisKind::PageFaults, "{}", d.sentence());
        assert!(
            d.sentence().contains("500,000 minor faults"),
            "{}",
            d.sentence()
        );
        let unmap = fixture(
            &on_cpu,
            &[(900, 0, 0, 0, None), (3000, 10, 100, 1900, None)],
        );
        assert_eq!(tail(&unmap).kind, DiagnosisKind::InKernel);
        let code = fixture(
            &on_cpu,
            &[(900, 0, 0, 0, None), (3000, 10, 1900, 100, None)],
        );
        assert_eq!(tail(&code).kind, DiagnosisKind::RunningUninstrumented);
        let loaded = fixture(
            &[(900, 0, 0), (3000, 600, 1400)],
            &[(900, 0, 0, 0, None), (3000, 150_000, 50, 550, None)],
        );
        let d = tail(&loaded);
        assert_eq!(d.kind, DiagnosisKind::PageFaults);
        assert!(
            d.sentence()
                .contains("stretched by waiting for a CPU 1.40 s"),
            "{}",
            d.sentence()
        );
        let loaded_code = fixture(
            &[(900, 0, 0), (3000, 600, 1400)],
            &[(900, 0, 0, 0, None), (3000, 10, 550, 50, None)],
        );
        let d = tail(&loaded_code);
        assert_eq!(d.kind, DiagnosisKind::WaitingForCpu);
        assert!(
            d.sentence()
                .contains("its time on a CPU: 523.8 ms in user code"),
            "{}",
            d.sentence()
        );
        // Mostly blocked, a little kernel work: blocked.
        let blocked = fixture(
            &[(900, 0, 0), (3000, 150, 0)],
            &[(900, 0, 0, 0, None), (3000, 30_000, 0, 150, None)],
        );
        assert_eq!(tail(&blocked).kind, DiagnosisKind::Blocked);
    }

    /// A blocked thread's call is named for the time it was off a CPU: a reading in `futex`
    /// before a stretch the collector could not read (it ran 1.5 s meanwhile) is not held
    /// across it.
    #[test]
    fn a_blocking_call_is_held_only_while_the_thread_is_off_a_cpu() {
        let blocked = fixture(
            &[(900, 0, 0), (3000, 10, 0)],
            &[(900, 0, 0, 0, Some("futex")), (3000, 0, 0, 10, None)],
        );
        let d = tail(&blocked);
        assert_eq!(d.kind, DiagnosisKind::Blocked);
        let k = d.kernel.as_ref().unwrap();
        assert_eq!(k.blocked_in[0].call, "futex");
        assert!(k.blocked_in[0].ns >= 1990 * MS, "{k:?}");
        assert!(
            d.sentence().contains("blocked in `futex`"),
            "{}",
            d.sentence()
        );
        // Found in it only at the later reading: it entered the call after it last ran.
        let entered = fixture(
            &[(900, 0, 0), (3000, 10, 0)],
            &[(900, 0, 0, 0, None), (3000, 0, 0, 10, Some("futex"))],
        );
        let k = tail(&entered).kernel.unwrap();
        assert!(k.blocked_in[0].ns >= 1990 * MS, "{k:?}");
        let ran = fixture(
            &[(900, 0, 0), (3000, 1600, 0)],
            &[(900, 0, 0, 0, Some("futex")), (3000, 0, 1500, 0, None)],
        );
        let k = tail(&ran).kernel.unwrap();
        // 2100 ms between the readings, 1500 ms of them on a CPU: 600 ms at most in the
        // call, 2000/2100 of which inside the gap.
        assert_eq!(k.blocked_in[0].ns / MS, 571, "{k:?}");
    }
}

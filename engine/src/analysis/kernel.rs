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
use crate::format::{bytes, dur};
use crate::model::{Session, ThreadId};
use probe_protocol::ThreadKernel;

/// How far after a gap a sample closing it is looked for.
const REACH_NS: u64 = 250_000_000;
/// Page faults per millisecond of kernel time from which the kernel's work was serving them
/// (first touch of fresh anonymous memory: 500–2,000 a millisecond, a page zeroed each;
/// `mlock` of touched memory as many; `munmap` of a populated mapping: none).
pub const FAULTS_PER_KERNEL_MS: u64 = 100;
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

/// The system calls of the samples in `near`, each held until the next sample, clipped to
/// the gap.
fn blocked_in(session: &Session, near: &[ThreadKernel], gap: Interval) -> Vec<BlockedIn> {
    let mut found: Vec<BlockedIn> = Vec::new();
    for w in near.windows(2) {
        let Some(name) = w[0].syscall else {
            continue;
        };
        let ns = Interval::new(w[0].ts, w[1].ts).overlap(&gap);
        if ns == 0 {
            continue;
        }
        let call = session.name(crate::model::NameId(name));
        match found.iter_mut().find(|b| b.call == call) {
            Some(b) => {
                b.ns += ns;
                b.arg = b.arg.max(w[0].syscall_arg);
            }
            None => found.push(BlockedIn {
                call: call.to_owned(),
                ns,
                arg: w[0].syscall_arg,
            }),
        }
    }
    found.sort_by_key(|b| std::cmp::Reverse(b.ns));
    found.truncate(3);
    found
}

/// A count with thousands separated ("262,144").
fn count(n: u64) -> String {
    let s = n.to_string();
    let mut out = String::with_capacity(s.len() + s.len() / 3);
    for (i, c) in s.chars().enumerate() {
        if i > 0 && (s.len() - i) % 3 == 0 {
            out.push(',');
        }
        out.push(c);
    }
    out
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
        "munmap" | "madvise" | "mlock" | "mlock2" | "munlock" | "mmap" | "mprotect" => {
            " (a large range's pages)"
        }
        _ => "",
    }
}

/// A call the thread was blocked in, in words: "in `futex` 0.30 s (a lock or …)".
fn blocked_words(b: &BlockedIn) -> String {
    let size = match b.call.as_str() {
        "munmap" | "madvise" | "mlock" | "mlock2" | "munlock" | "mmap" | "mprotect"
            if b.arg > 0 =>
        {
            format!(" of {}", bytes(b.arg))
        }
        _ => String::new(),
    };
    format!("in `{}`{size} {}{}", b.call, dur(b.ns), meaning(&b.call))
}

/// The faults, as a clause: "262,144 minor faults (≈ 1.0 GB at 4 KiB a page)".
fn faults_words(k: &KernelEvidence) -> String {
    let major = if k.major_faults > 0 {
        format!(" and {} major (read from disk)", count(k.major_faults))
    } else {
        String::new()
    };
    format!(
        "{} minor faults{major} (≈ {} at 4 KiB a page)",
        count(k.minor_faults),
        bytes(k.faulted_bytes())
    )
}

/// The thread on a CPU mostly in the kernel serving page faults.
pub fn faults_sentence(cpu_ns: u64, share_pct: f64, k: &KernelEvidence) -> String {
    format!(
        "the thread ran on a CPU {} ({share_pct:.0}% of its time around the gap), {} of it in the kernel serving page faults: {}, memory touched for the first time or pinned",
        dur(cpu_ns),
        dur(k.system_ns),
        faults_words(k),
    )
}

/// The thread on a CPU mostly in the kernel with few faults: another call into the kernel.
pub fn in_kernel_sentence(cpu_ns: u64, share_pct: f64, k: &KernelEvidence) -> String {
    let seen: Vec<String> = k.blocked_in.iter().map(blocked_words).collect();
    let seen = if seen.is_empty() {
        String::new()
    } else {
        format!("; seen {}", seen.join(", "))
    };
    format!(
        "the thread ran on a CPU {} ({share_pct:.0}% of its time around the gap), {} of it in the kernel with few page faults ({}): a system call no span covers (a munmap, madvise or mlock of a large range){seen}",
        dur(cpu_ns),
        dur(k.system_ns),
        count(k.minor_faults + k.major_faults),
    )
}

/// What the kernel saw besides the scheduling evidence's finding, clause by clause: the
/// calls the thread was blocked in, its faults, its kernel time — each only where it covers
/// a twentieth of the gap `len` (or, for faults, maps at least 4 MiB).
pub fn detail(k: &KernelEvidence, len: u64) -> Vec<String> {
    let mut out: Vec<String> = k
        .blocked_in
        .iter()
        .filter(|b| b.ns * 20 >= len)
        .map(|b| format!("blocked {}", blocked_words(b)))
        .collect();
    if k.faulted_bytes() >= 4 << 20 {
        out.push(faults_words(k));
    }
    if k.system_ns * 20 >= len {
        out.push(format!(
            "{} in the kernel, {} in user code",
            dur(k.system_ns),
            dur(k.user_ns)
        ));
    }
    out
}

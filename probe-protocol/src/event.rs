//! Decoded events: every id and timestamp is absolute here; the deltas live only on the wire.

use crate::kind::EventKind;
use serde::{Deserialize, Serialize};

/// Nanoseconds on the prover's monotonic clock since the session started.
pub type Ns = u64;
/// Span id, unique within a session; never 0.
pub type SpanId = u64;
/// Proof (batch) id, unique within a session.
pub type ProofId = u64;
/// Interned name id (see [`Event::NameDef`]).
pub type NameId = u32;
/// Thread id on the wire (see [`Event::ThreadDef`]); small, dense, per session.
pub type ThreadId = u32;
/// Interned call stack id (see [`Event::StackDef`]).
pub type StackId = u32;

/// The first event of every session: who is talking and on what machine.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Default)]
#[serde(default)]
pub struct Hello {
    pub protocol_major: u16,
    pub protocol_minor: u16,
    pub prover_name: String,
    pub prover_version: String,
    pub pid: u32,
    pub hostname: String,
    /// Wall-clock time (Unix epoch, ns) of session time 0.
    pub session_start_unix_ns: u64,
    /// How session timestamps are taken, e.g. `"monotonic-tsc"` or `"monotonic"`.
    pub clock: String,
    /// Proving backend in use, e.g. `"cpu"` or `"gpu"`.
    pub backend: String,
    /// Why that backend (e.g. why the GPU backend is off). Empty when there is nothing to say.
    pub backend_reason: String,
    pub gpus: Vec<GpuInfo>,
    /// Why `gpus` is empty (no NVML, no driver, ...). `None` when GPUs were enumerated.
    pub gpu_unavailable_reason: Option<String>,
    pub gpu_driver_version: Option<String>,
    pub cpu_count: u32,
    pub total_ram_bytes: u64,
    /// Threshold at or above which allocations produce `Alloc`/`Release` events.
    pub large_block_threshold: u64,
    pub alloc_sample_interval_ns: u64,
    pub gpu_sample_interval_ns: u64,
    pub history_budget_bytes: u64,
    /// The prover's command line, for bug reports.
    pub command_line: Vec<String>,
    /// CPU model as the OS names it, e.g. `AMD EPYC 9454 48-Core Processor` (protocol 1.1;
    /// empty when unknown or sent by a 1.0 prover).
    pub cpu_model: String,
    /// Operating system and kernel, e.g. `Debian GNU/Linux 12 (bookworm), Linux 6.1.0-18-amd64`
    /// (protocol 1.1; empty when unknown).
    pub os: String,
    /// The worker's name for a fleet (`PROOFSCOPE_INSTANCE`), stable across its restarts
    /// (protocol 1.4; empty when unset or sent by an older prover).
    pub instance: String,
    /// Blocks at or above this many bytes carry their call stack on `Alloc`/`Release`; 0: no
    /// stacks (protocol 1.4; 0 when sent by an older prover, which may still send stacks).
    pub stack_threshold: u64,
}

/// One GPU as NVML reports it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Default)]
#[serde(default)]
pub struct GpuInfo {
    pub index: u32,
    pub name: String,
    pub memory_total_bytes: u64,
    pub uuid: String,
    pub pci_bus_id: String,
}

/// A proof (one batch) starts. `span` is its outer span: the wrapper timer.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Default)]
#[serde(default)]
pub struct ProofBegin {
    #[serde(skip)]
    pub ts: Ns,
    pub proof: ProofId,
    pub span: SpanId,
    pub circuit: String,
    pub constraints: u64,
    /// Circuits in the batch.
    pub circuits: u32,
    pub backend: String,
    /// `true` when the parameters are a synthetic SRS: proofs cannot verify.
    pub synthetic_srs: bool,
}

/// How a proof ended.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Default)]
#[serde(default)]
pub struct ProofEnd {
    #[serde(skip)]
    pub ts: Ns,
    pub proof: ProofId,
    /// `true` when proving finished without error.
    pub ok: bool,
    pub verification: Verification,
    /// Error text when `ok` is false.
    pub error: Option<String>,
}

/// The verifier's verdict on a proof.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(rename_all = "snake_case")]
pub enum Verification {
    /// Checked and valid.
    Valid,
    /// Checked and rejected.
    Invalid,
    /// Not checked (verification off, or not this proof of the batch).
    #[default]
    NotChecked,
    /// Cannot be checked: made with a synthetic SRS.
    Unverifiable,
}

impl Verification {
    pub fn as_str(self) -> &'static str {
        match self {
            Verification::Valid => "valid",
            Verification::Invalid => "INVALID",
            Verification::NotChecked => "not checked",
            Verification::Unverifiable => "unverifiable (synthetic SRS)",
        }
    }
}

/// A span opens. `parent` may live on another thread; `proof` is the proof it belongs to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SpanBegin {
    pub ts: Ns,
    pub span: SpanId,
    pub parent: Option<SpanId>,
    pub proof: Option<ProofId>,
    pub name: NameId,
    pub thread: ThreadId,
}

/// A span closes (on the thread that opened it).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SpanEnd {
    pub ts: Ns,
    pub span: SpanId,
}

/// An instant with a name, optionally a short text.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Marker {
    pub ts: Ns,
    pub name: NameId,
    pub thread: ThreadId,
    pub span: Option<SpanId>,
    pub text: Option<String>,
}

/// Allocator counters, sampled periodically.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct AllocSample {
    pub ts: Ns,
    pub live_bytes: u64,
    pub peak_bytes: u64,
    pub allocs: u64,
    pub frees: u64,
    pub alloc_bytes: u64,
    pub free_bytes: u64,
    /// Resident set size of the process; 0 when unknown.
    pub rss_bytes: u64,
}

/// A large allocation (`Alloc`) or release (`Release`): at or above the threshold.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct BlockEvent {
    /// When the call into the allocator started.
    pub ts: Ns,
    pub bytes: u64,
    /// Time spent inside the allocator call.
    pub inside_ns: u64,
    pub thread: ThreadId,
    /// Innermost open span on that thread, if any.
    pub span: Option<SpanId>,
    /// The call stack that made the call ([`Event::StackDef`]), for blocks at or above the
    /// stack threshold (protocol 1.3; a trailing field older readers skip).
    pub stack: Option<StackId>,
}

/// One NVML sample of one device. Fields are `None` when the device did not answer.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct GpuSample {
    pub ts: Ns,
    pub device: u32,
    /// Percent of time a kernel was running.
    pub util_pct: Option<u8>,
    /// Percent of time device memory was read or written.
    pub mem_util_pct: Option<u8>,
    pub mem_used_bytes: Option<u64>,
    pub mem_total_bytes: Option<u64>,
    pub power_mw: Option<u32>,
    /// Millijoules since the driver loaded.
    pub energy_mj: Option<u64>,
    pub temp_c: Option<u32>,
    pub sm_clock_mhz: Option<u32>,
    pub mem_clock_mhz: Option<u32>,
    /// PCIe throughput, KB/s (sampled at a lower rate).
    pub pcie_rx_kbps: Option<u32>,
    pub pcie_tx_kbps: Option<u32>,
}

/// Device-side work (kernel or copy) timed by CUDA events, already on the session clock.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct GpuSpan {
    pub start: Ns,
    pub end: Ns,
    pub device: u32,
    pub stream: u32,
    pub name: NameId,
    /// The phase span that launched it.
    pub span: Option<SpanId>,
}

/// Events lost since the previous `Dropped` of this stream, per kind.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Dropped {
    pub ts: Ns,
    pub counts: Vec<(EventKind, u64)>,
}

impl Dropped {
    pub fn total(&self) -> u64 {
        self.counts.iter().map(|(_, n)| n).sum()
    }
}

/// The flight recorder evicted older history before this subscriber joined.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct HistoryGap {
    pub ts: Ns,
    pub evicted_events: u64,
    /// Session time of the first and last evicted event.
    pub evicted_from: Ns,
    pub evicted_until: Ns,
}

/// A thread's scheduler counters (Linux `/proc/self/task/<tid>/schedstat`), sampled while it
/// is inside a span: what a gap on it was — running, waiting for a CPU, or neither (blocked or
/// sleeping). Counters are cumulative since the thread started; readers take differences.
/// Since protocol 1.2; carries an absolute timestamp, as kinds added by a minor version must.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct ThreadSched {
    pub ts: Ns,
    pub thread: ThreadId,
    /// Time on a CPU.
    pub cpu_ns: u64,
    /// Time runnable, waiting on a run queue.
    pub runq_ns: u64,
    /// Times it was scheduled in.
    pub timeslices: u64,
}

/// Which of the program's standard streams a write went to.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Default)]
pub enum OutputStream {
    #[default]
    Stdout,
    Stderr,
}

impl OutputStream {
    /// The stream's fd, as on the wire (1 or 2).
    pub fn fd(self) -> u8 {
        match self {
            OutputStream::Stdout => 1,
            OutputStream::Stderr => 2,
        }
    }

    /// The stream of fd 1 or 2.
    pub fn of_fd(fd: u64) -> Option<OutputStream> {
        match fd {
            1 => Some(OutputStream::Stdout),
            2 => Some(OutputStream::Stderr),
            _ => None,
        }
    }
}

/// A write to the program's standard output or error, stamped where it happened: when it
/// returned, on which thread, and which bytes of the stream it carried (`offset`: the bytes
/// the process wrote to that stream before it). A reader of the stream (`proofscope run`'s
/// relay) places each line by the write that carried its first byte — the prover's clock, not
/// the reader's arrival, which a loaded machine delays. Since protocol 1.5; carries an absolute
/// timestamp, as kinds added by a minor version must.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct OutputWrite {
    pub ts: Ns,
    pub thread: ThreadId,
    pub stream: OutputStream,
    pub offset: u64,
    pub bytes: u64,
}

/// Whether this process holds a CUDA context on a device, from NVML's list of the device's
/// compute processes, and the device memory the driver counts for it: how a prover that times
/// nothing on its GPU (an unmodified one under the preload) is still known to be on it. Sent
/// when either changes. Since protocol 1.6; absolute, as kinds added by a minor version must.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct GpuProcess {
    pub ts: Ns,
    pub device: u32,
    /// `false`: it held one and no longer does.
    pub context: bool,
    /// Its device memory; `None` where the driver does not say (NVML reports no figure for
    /// a process in another pid namespace, or without the permission).
    pub used_bytes: Option<u64>,
}

/// A thread's kernel-side counters and the system call it is in (Linux
/// `/proc/self/task/<tid>/stat` and `…/syscall`), sampled beside [`ThreadSched`] for the same
/// threads: what a gap on it was when it was neither the program's code nor a wait for a CPU
/// — pages touched for the first time (minor faults), pages read from disk (major), time in the
/// kernel (a `munmap`, `mlock` or `madvise` of a large range), or a system call it was blocked
/// in (`futex`: a lock or a condition; `ioctl`: a driver). Counters are cumulative since the
/// thread started; readers take differences. Sent only when something changed, preceded by
/// the last unchanged reading (so a change is placed between two readings, never spread over a
/// stretch nothing was sent for). Since protocol 1.7; absolute, as kinds added by a minor
/// version must.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct ThreadKernel {
    pub ts: Ns,
    pub thread: ThreadId,
    /// Page faults served without I/O: mostly pages touched for the first time (or pinned).
    pub minor_faults: u64,
    /// Page faults that waited for I/O.
    pub major_faults: u64,
    /// CPU time in user space and in the kernel (the kernel's split of the thread's CPU time,
    /// at its tick's resolution: 10 ms).
    pub user_ns: u64,
    pub system_ns: u64,
    /// The system call the thread was blocked in when read (its name, defined by a
    /// `NameDef`), and its second argument (a length for `munmap`, `madvise`, `mlock`; a
    /// request for `ioctl`). `None`: running, or not in a system call.
    pub syscall: Option<NameId>,
    pub syscall_arg: u64,
}

/// A thread's user-space call stack, sampled by the kernel every so much of the thread's CPU
/// time (`perf_event_open`'s task clock): where a gap whose thread ran code no span covers
/// spent it. The stack is defined by a `StackDef` sent before. Since protocol 1.7; absolute,
/// as kinds added by a minor version must.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct StackSample {
    pub ts: Ns,
    pub thread: ThreadId,
    pub stack: StackId,
}

/// What a client asks for on connect.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Subscribe {
    /// Send the flight recorder's history before live events.
    pub history: bool,
    /// Who is asking, for the prover's log.
    pub client: String,
}

/// Everything that travels in a frame.
#[derive(Debug, Clone, PartialEq)]
pub enum Event {
    Hello(Box<Hello>),
    NameDef {
        id: NameId,
        name: String,
    },
    ThreadDef {
        id: ThreadId,
        name: String,
        os_tid: u64,
    },
    ProofBegin(Box<ProofBegin>),
    ProofEnd(Box<ProofEnd>),
    SpanBegin(SpanBegin),
    SpanEnd(SpanEnd),
    Marker(Box<Marker>),
    AllocSample(AllocSample),
    Alloc(BlockEvent),
    Release(BlockEvent),
    GpuSample(Box<GpuSample>),
    GpuSpan(GpuSpan),
    Dropped(Dropped),
    Heartbeat {
        ts: Ns,
    },
    HistoryGap(HistoryGap),
    /// History ends here; what follows is live.
    LiveStart {
        ts: Ns,
    },
    Goodbye {
        ts: Ns,
        reason: String,
    },
    ThreadSched(ThreadSched),
    /// A call stack, defined once and then referred to by id: frames innermost first, each
    /// `function (file:line)` as far as the prover's symbols say. Since 1.3.
    StackDef {
        id: StackId,
        frames: Vec<String>,
    },
    OutputWrite(OutputWrite),
    GpuProcess(GpuProcess),
    ThreadKernel(ThreadKernel),
    StackSample(StackSample),
    Subscribe(Subscribe),
}

impl Event {
    pub fn kind(&self) -> EventKind {
        match self {
            Event::Hello(_) => EventKind::Hello,
            Event::NameDef { .. } => EventKind::NameDef,
            Event::ThreadDef { .. } => EventKind::ThreadDef,
            Event::ProofBegin(_) => EventKind::ProofBegin,
            Event::ProofEnd(_) => EventKind::ProofEnd,
            Event::SpanBegin(_) => EventKind::SpanBegin,
            Event::SpanEnd(_) => EventKind::SpanEnd,
            Event::Marker(_) => EventKind::Marker,
            Event::AllocSample(_) => EventKind::AllocSample,
            Event::Alloc(_) => EventKind::Alloc,
            Event::Release(_) => EventKind::Release,
            Event::GpuSample(_) => EventKind::GpuSample,
            Event::GpuSpan(_) => EventKind::GpuSpan,
            Event::Dropped(_) => EventKind::Dropped,
            Event::Heartbeat { .. } => EventKind::Heartbeat,
            Event::HistoryGap(_) => EventKind::HistoryGap,
            Event::LiveStart { .. } => EventKind::LiveStart,
            Event::Goodbye { .. } => EventKind::Goodbye,
            Event::ThreadSched(_) => EventKind::ThreadSched,
            Event::StackDef { .. } => EventKind::StackDef,
            Event::OutputWrite(_) => EventKind::OutputWrite,
            Event::GpuProcess(_) => EventKind::GpuProcess,
            Event::ThreadKernel(_) => EventKind::ThreadKernel,
            Event::StackSample(_) => EventKind::StackSample,
            Event::Subscribe(_) => EventKind::Subscribe,
        }
    }

    /// The event's session timestamp, when it has one (a GPU span reports its start).
    pub fn ts(&self) -> Option<Ns> {
        Some(match self {
            Event::Hello(_)
            | Event::NameDef { .. }
            | Event::ThreadDef { .. }
            | Event::StackDef { .. }
            | Event::Subscribe(_) => return None,
            Event::ProofBegin(p) => p.ts,
            Event::ProofEnd(p) => p.ts,
            Event::SpanBegin(s) => s.ts,
            Event::SpanEnd(s) => s.ts,
            Event::Marker(m) => m.ts,
            Event::AllocSample(s) => s.ts,
            Event::Alloc(b) | Event::Release(b) => b.ts,
            Event::GpuSample(s) => s.ts,
            Event::GpuSpan(s) => s.start,
            Event::Dropped(d) => d.ts,
            Event::Heartbeat { ts } | Event::LiveStart { ts } | Event::Goodbye { ts, .. } => *ts,
            Event::HistoryGap(h) => h.ts,
            Event::ThreadSched(s) => s.ts,
            Event::OutputWrite(w) => w.ts,
            Event::GpuProcess(p) => p.ts,
            Event::ThreadKernel(k) => k.ts,
            Event::StackSample(s) => s.ts,
        })
    }

    /// Definitions and session bookkeeping that a stream must never lose.
    pub fn is_essential(&self) -> bool {
        self.kind().is_essential()
    }

    /// Sets the event's session timestamp (a GPU span: its start, keeping its length); no
    /// effect on a kind without one ([`crate::Clock::None`]).
    pub fn set_ts(&mut self, ns: Ns) {
        match self {
            Event::Hello(_)
            | Event::NameDef { .. }
            | Event::ThreadDef { .. }
            | Event::StackDef { .. }
            | Event::Subscribe(_) => {}
            Event::ProofBegin(p) => p.ts = ns,
            Event::ProofEnd(p) => p.ts = ns,
            Event::SpanBegin(s) => s.ts = ns,
            Event::SpanEnd(s) => s.ts = ns,
            Event::Marker(m) => m.ts = ns,
            Event::AllocSample(s) => s.ts = ns,
            Event::Alloc(b) | Event::Release(b) => b.ts = ns,
            Event::GpuSample(s) => s.ts = ns,
            Event::GpuSpan(s) => {
                let len = s.end.saturating_sub(s.start);
                s.start = ns;
                s.end = ns.saturating_add(len);
            }
            Event::Dropped(d) => d.ts = ns,
            Event::Heartbeat { ts } | Event::LiveStart { ts } | Event::Goodbye { ts, .. } => {
                *ts = ns
            }
            Event::HistoryGap(h) => h.ts = ns,
            Event::ThreadSched(s) => s.ts = ns,
            Event::OutputWrite(w) => w.ts = ns,
            Event::GpuProcess(p) => p.ts = ns,
            Event::ThreadKernel(k) => k.ts = ns,
            Event::StackSample(s) => s.ts = ns,
        }
    }
}

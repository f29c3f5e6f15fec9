//! Probe configuration: a builder whose defaults are documented constants, overridable by
//! environment variables that share the `PROOFSCOPE_` prefix.
//!
//! | variable | meaning | default |
//! |---|---|---|
//! | `PROOFSCOPE_OFF` | `1`/`true`: the probe does nothing (a span costs one relaxed load) | off |
//! | `PROOFSCOPE_SOCKET` | socket path (`{pid}` in it: this process's id), or `none` for no socket | `$XDG_RUNTIME_DIR/proofscope/<prover>-<pid>.sock`, else `/tmp/proofscope-<uid>/…` |
//! | `PROOFSCOPE_RECORD` | also write the stream to this recording file | none |
//! | `PROOFSCOPE_INSTANCE` | the worker's name in a fleet's metrics, stable across restarts (Hello `instance`) | the prover name and a hash of its command line |
//! | `PROOFSCOPE_HISTORY_BYTES` | flight recorder budget | 64 MiB |
//! | `PROOFSCOPE_LARGE_BLOCK` | bytes at or above which allocations are reported | 1 MiB |
//! | `PROOFSCOPE_ALLOC_SAMPLE_MS` | allocator sample interval while memory does something new (stretched to up to 20 ms while it climbs or falls steadily, 50 ms while it is still) | 10 |
//! | `PROOFSCOPE_GPU_SAMPLE_MS` | NVML sample interval (`0`: no NVML sampling) | 100 |
//! | `PROOFSCOPE_RING_EVENTS` | per-thread buffer, events | 16384 |
//! | `PROOFSCOPE_SUBSCRIBER_BYTES` | per-subscriber queue bound | 16 MiB |
//! | `PROOFSCOPE_STACK_HZ` | user-space stack samples a second of CPU time of each thread inside a span or writing the log (`0`: none) | 99 |
//!
//! Sizes accept a `K`, `M` or `G` suffix (binary units).

use std::path::PathBuf;
use std::time::Duration;

/// Default threshold for large-block events (1 MiB).
pub const DEFAULT_LARGE_BLOCK: u64 = 1 << 20;
/// Blocks from this size on carry their call stack: a capture costs about what freeing a few
/// MiB does, so it stays a small share of these frees (docs/BENCHMARKS.md).
pub const DEFAULT_STACK_BLOCK: u64 = 16 << 20;
/// A size variable (`1048576`, `1M`).
fn env_size(
    get: &impl Fn(&str) -> Option<String>,
    name: &'static str,
) -> Result<Option<u64>, ConfigError> {
    match get(name) {
        None => Ok(None),
        Some(v) => parse_size(&v).map(Some).ok_or(ConfigError {
            name,
            value: v,
            reason: "expected a size in bytes, e.g. 1048576 or 1M",
        }),
    }
}

/// A whole number of milliseconds.
fn env_millis(
    get: &impl Fn(&str) -> Option<String>,
    name: &'static str,
) -> Result<Option<u64>, ConfigError> {
    match get(name) {
        None => Ok(None),
        Some(v) => v.trim().parse::<u64>().map(Some).map_err(|_| ConfigError {
            name,
            value: v,
            reason: "expected a whole number of milliseconds",
        }),
    }
}

/// A flag: 1/0, true/false, yes/no, on/off (empty: off).
fn env_flag(
    get: &impl Fn(&str) -> Option<String>,
    name: &'static str,
) -> Result<Option<bool>, ConfigError> {
    let Some(v) = get(name) else { return Ok(None) };
    match v.trim().to_ascii_lowercase().as_str() {
        "1" | "true" | "yes" | "on" => Ok(Some(true)),
        "0" | "false" | "no" | "off" | "" => Ok(Some(false)),
        _ => Err(ConfigError {
            name,
            value: v,
            reason: "expected 1/0, true/false",
        }),
    }
}

/// `PROOFSCOPE_STACK_HZ`: samples a second, at most 10,000.
fn stack_hz(v: String) -> Result<u32, ConfigError> {
    match v.trim().parse::<u32>() {
        Ok(hz) if hz <= 10_000 => Ok(hz),
        _ => Err(ConfigError {
            name: "PROOFSCOPE_STACK_HZ",
            value: v,
            reason: "expected a whole number of samples a second, 0 to 10000",
        }),
    }
}

/// Stack samples a second of a followed thread's CPU time: perf's default is 4,000; at 99 a
/// thread busy all the time costs ~0.1 % of a core (docs/BENCHMARKS.md).
pub const DEFAULT_STACK_HZ: u32 = 99;
/// Flight recorder budget.
pub const DEFAULT_HISTORY_BYTES: usize = 64 << 20;
/// Allocator sample interval.
pub const DEFAULT_ALLOC_SAMPLE: Duration = Duration::from_millis(10);
/// NVML sample interval (10 Hz).
pub const DEFAULT_GPU_SAMPLE: Duration = Duration::from_millis(100);
/// Events each thread can buffer between collector cycles (32 bytes each, `ring::RawEvent`).
pub const DEFAULT_RING_EVENTS: usize = 16_384;
/// Bytes of live frames a subscriber may have queued before its frames are dropped.
pub const DEFAULT_SUBSCRIBER_BYTES: usize = 16 << 20;
/// Bytes a recording file writer may have queued (it only drops if the disk stalls).
pub const DEFAULT_RECORDER_BYTES: usize = 256 << 20;
/// A heartbeat is sent when nothing was sent for this long.
pub const HEARTBEAT: Duration = Duration::from_secs(1);

/// Where the socket goes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SocketChoice {
    /// The per-user default directory, file `<prover>-<pid>.sock`.
    Default,
    At(PathBuf),
    None,
}

#[derive(Debug, Clone)]
pub struct ProbeConfig {
    pub prover_name: String,
    pub prover_version: String,
    pub off: bool,
    pub socket: SocketChoice,
    pub record: Option<PathBuf>,
    pub history_bytes: usize,
    pub large_block: u64,
    /// The allocator sample interval while memory does something new; the collector stretches
    /// it while memory keeps to a line or stands still (`cadence.rs`).
    pub alloc_sample: Duration,
    /// `None`: no NVML sampling.
    pub gpu_sample: Option<Duration>,
    pub ring_events: usize,
    pub subscriber_bytes: usize,
    /// How soon the collector drains the thread buffers again while events flow, when nothing
    /// wakes it sooner (a half-full buffer does). `None`: the allocator sample interval in
    /// effect (stretched while memory is still: `cadence.rs`), so that drains fall on the
    /// samples' wake-ups instead of adding their own — each costs ~40–55 µs of kernel time on
    /// the H200 host (docs/BENCHMARKS.md).
    pub flush_interval: Option<Duration>,
    /// Scheduler counters of the threads inside a span, at the allocator cadence
    /// (`ThreadSched`); `PROOFSCOPE_SCHED=0` turns them off.
    pub sched_sample: bool,
    /// With them, the same threads' page faults, user and kernel time and blocking system
    /// call (`ThreadKernel`); `PROOFSCOPE_KERNEL=0` turns them off.
    pub kernel_sample: bool,
    /// With them, the same threads' user-space call stacks, sampled this many times a second
    /// of each thread's CPU time (`StackSample`; 0: none); `PROOFSCOPE_STACK_HZ`.
    pub stack_hz: u32,
    /// Blocks at or above this many bytes carry their call stack (`u64::MAX`: none);
    /// `PROOFSCOPE_STACK_BLOCK` (a size, or `off`).
    pub stack_block: u64,
    /// The worker's name for a fleet, stable across restarts (`PROOFSCOPE_INSTANCE`; empty:
    /// the exporter names it from the prover name and its command line).
    pub instance: String,
}

/// A bad environment variable.
#[derive(Debug, thiserror::Error)]
#[error("environment variable {name}={value:?}: {reason}")]
pub struct ConfigError {
    pub name: &'static str,
    pub value: String,
    pub reason: &'static str,
}

fn parse_size(s: &str) -> Option<u64> {
    let s = s.trim();
    let (num, mul) = match s.chars().last()? {
        'k' | 'K' => (&s[..s.len() - 1], 1u64 << 10),
        'm' | 'M' => (&s[..s.len() - 1], 1 << 20),
        'g' | 'G' => (&s[..s.len() - 1], 1 << 30),
        _ => (s, 1),
    };
    num.trim().parse::<u64>().ok()?.checked_mul(mul)
}

impl ProbeConfig {
    /// Defaults for a prover called `prover_name`.
    pub fn new(prover_name: &str, prover_version: &str) -> ProbeConfig {
        ProbeConfig {
            prover_name: prover_name.to_owned(),
            prover_version: prover_version.to_owned(),
            off: false,
            socket: SocketChoice::Default,
            record: None,
            history_bytes: DEFAULT_HISTORY_BYTES,
            large_block: DEFAULT_LARGE_BLOCK,
            alloc_sample: DEFAULT_ALLOC_SAMPLE,
            gpu_sample: Some(DEFAULT_GPU_SAMPLE),
            ring_events: DEFAULT_RING_EVENTS,
            subscriber_bytes: DEFAULT_SUBSCRIBER_BYTES,
            flush_interval: None,
            sched_sample: true,
            kernel_sample: true,
            stack_hz: DEFAULT_STACK_HZ,
            stack_block: DEFAULT_STACK_BLOCK,
            instance: String::new(),
        }
    }

    /// Defaults, then the `PROOFSCOPE_*` environment variables.
    pub fn from_env(prover_name: &str, prover_version: &str) -> Result<ProbeConfig, ConfigError> {
        Self::new(prover_name, prover_version).apply_env(|k| std::env::var(k).ok())
    }

    /// Applies variables read through `get` (testable without touching the environment).
    pub fn apply_env(
        mut self,
        get: impl Fn(&str) -> Option<String>,
    ) -> Result<ProbeConfig, ConfigError> {
        let size = |name| env_size(&get, name);
        let millis = |name| env_millis(&get, name);
        let flag = |name| env_flag(&get, name);
        let flags = [
            ("PROOFSCOPE_OFF", &mut self.off),
            ("PROOFSCOPE_SCHED", &mut self.sched_sample),
            ("PROOFSCOPE_KERNEL", &mut self.kernel_sample),
        ];
        for (name, field) in flags {
            if let Some(v) = flag(name)? {
                *field = v;
            }
        }
        if let Some(v) = get("PROOFSCOPE_STACK_HZ") {
            self.stack_hz = stack_hz(v)?;
        }
        match get("PROOFSCOPE_STACK_BLOCK") {
            Some(v) if matches!(v.trim(), "off" | "none" | "0") => self.stack_block = u64::MAX,
            _ => {
                if let Some(v) = size("PROOFSCOPE_STACK_BLOCK")? {
                    self.stack_block = v.max(1);
                }
            }
        }
        if let Some(v) = get("PROOFSCOPE_SOCKET") {
            self.socket = match v.trim() {
                "" | "default" => SocketChoice::Default,
                "none" | "off" => SocketChoice::None,
                // `{pid}` is this process's id: the processes of one program (a prover and
                // the children that inherit its environment) each get a socket of their own.
                p => SocketChoice::At(PathBuf::from(
                    p.replace("{pid}", &std::process::id().to_string()),
                )),
            };
        }
        if let Some(v) = get("PROOFSCOPE_INSTANCE") {
            self.instance = v.trim().to_owned();
        }
        if let Some(v) = get("PROOFSCOPE_RECORD").filter(|v| !v.trim().is_empty()) {
            self.record = Some(PathBuf::from(v));
        }
        if let Some(v) = size("PROOFSCOPE_HISTORY_BYTES")? {
            self.history_bytes = v as usize;
        }
        if let Some(v) = size("PROOFSCOPE_LARGE_BLOCK")? {
            self.large_block = v.max(1);
        }
        if let Some(v) = millis("PROOFSCOPE_ALLOC_SAMPLE_MS")? {
            self.alloc_sample = Duration::from_millis(v.max(1));
        }
        if let Some(v) = millis("PROOFSCOPE_GPU_SAMPLE_MS")? {
            self.gpu_sample = (v > 0).then(|| Duration::from_millis(v));
        }
        if let Some(v) = size("PROOFSCOPE_RING_EVENTS")? {
            self.ring_events = (v as usize).clamp(64, 1 << 24);
        }
        if let Some(v) = size("PROOFSCOPE_SUBSCRIBER_BYTES")? {
            self.subscriber_bytes = (v as usize).max(64 << 10);
        }
        Ok(self)
    }

    pub fn off(mut self, off: bool) -> Self {
        self.off = off;
        self
    }
    pub fn socket(mut self, socket: SocketChoice) -> Self {
        self.socket = socket;
        self
    }
    pub fn record(mut self, path: Option<PathBuf>) -> Self {
        self.record = path;
        self
    }
    pub fn history_bytes(mut self, bytes: usize) -> Self {
        self.history_bytes = bytes;
        self
    }
    pub fn large_block(mut self, bytes: u64) -> Self {
        self.large_block = bytes.max(1);
        self
    }
    pub fn alloc_sample(mut self, every: Duration) -> Self {
        self.alloc_sample = every.max(Duration::from_millis(1));
        self
    }
    pub fn gpu_sample(mut self, every: Option<Duration>) -> Self {
        self.gpu_sample = every;
        self
    }
    pub fn ring_events(mut self, n: usize) -> Self {
        self.ring_events = n.clamp(16, 1 << 24);
        self
    }
    pub fn subscriber_bytes(mut self, n: usize) -> Self {
        self.subscriber_bytes = n;
        self
    }
    pub fn flush_interval(mut self, every: Duration) -> Self {
        self.flush_interval = Some(every.max(Duration::from_micros(100)));
        self
    }

    /// The socket path this configuration resolves to, if any.
    pub fn socket_path(&self) -> Option<PathBuf> {
        match &self.socket {
            SocketChoice::None => None,
            SocketChoice::At(p) => Some(p.clone()),
            SocketChoice::Default => Some(probe_protocol::discovery::default_socket_path(
                &self.prover_name,
                std::process::id(),
            )),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashMap;

    fn env(pairs: &[(&str, &str)]) -> impl Fn(&str) -> Option<String> {
        let m: HashMap<String, String> = pairs
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect();
        move |k| m.get(k).cloned()
    }

    #[test]
    fn environment_overrides_defaults() {
        let c = ProbeConfig::new("p", "0")
            .apply_env(env(&[
                ("PROOFSCOPE_HISTORY_BYTES", "8M"),
                ("PROOFSCOPE_LARGE_BLOCK", "4096"),
                ("PROOFSCOPE_GPU_SAMPLE_MS", "0"),
                ("PROOFSCOPE_SOCKET", "/tmp/x.sock"),
                ("PROOFSCOPE_OFF", "true"),
            ]))
            .unwrap();
        assert_eq!(c.history_bytes, 8 << 20);
        assert_eq!(c.large_block, 4096);
        assert_eq!(c.gpu_sample, None);
        assert_eq!(c.socket, SocketChoice::At("/tmp/x.sock".into()));
        assert!(c.off);
    }

    #[test]
    fn bad_values_name_the_variable() {
        let err = ProbeConfig::new("p", "0")
            .apply_env(env(&[("PROOFSCOPE_HISTORY_BYTES", "lots")]))
            .unwrap_err();
        assert!(
            err.to_string().contains("PROOFSCOPE_HISTORY_BYTES"),
            "{err}"
        );
    }
}

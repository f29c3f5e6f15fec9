//! The proofscope probe: observes the prover and streams to viewers.
//!
//! - [`span!`](crate::span) opens an RAII span (name interned once per call site); spans nest
//!   per thread; a [`SpanHandle`] lets rayon tasks and GPU threads name their parent;
//!   [`ProofScope`] brackets one proof (`ProofBegin`/`ProofEnd` and the outer span).
//! - A span edge is a tick and a push into a ring the thread owns; with the probe off it is
//!   one relaxed atomic load.
//! - A named collector thread drains the rings, keeps a flight recorder bounded in bytes and
//!   fans out to subscribers on a local socket (and optionally to a recording file).
//! - [`CountingAllocator`] counts every allocation and times large blocks (`Alloc`/`Release`).
//! - A named NVML thread samples the GPUs when there are any.
//!
//! This module depends on nothing else in the prover, so it can become a crate of its own.

mod alloc;
mod clock;
mod collector;
mod config;
mod error;
mod fanout;
mod local;
mod names;
mod nvml;
mod recorder;
mod ring;
mod server;
mod session;
mod system;

pub use alloc::{AllocTotals, CountingAllocator, DEFAULT_LARGE_BLOCK, thread_totals, totals};
pub use collector::CollectorStats;
pub use config::{ConfigError, ProbeConfig, SocketChoice, default_socket_dir};
pub use error::ProbeError;
pub use local::{
    Adopted, ProofInfo, ProofScope, SpanGuard, SpanHandle, enabled, gpu_span, marker,
    marker_with_text, monotonic_to_session_ns, now_ns,
};
pub use names::{CallSite, intern};
pub use probe_protocol::Verification;
pub use system::{cpu_count, total_ram_bytes};

use probe_protocol::{Hello, PROTOCOL_MAJOR, PROTOCOL_MINOR, RecordingWriter};
use session::Shared;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::Ordering;

/// Opens a span until the end of the enclosing scope: `let _s = span!("ntt");`, or under an
/// explicit parent from another thread: `let _s = span!("msm", parent = handle);`.
#[macro_export]
macro_rules! span {
    ($name:literal) => {{
        static SITE: $crate::CallSite = $crate::CallSite::new($name);
        $crate::SpanGuard::enter(&SITE)
    }};
    ($name:literal, parent = $parent:expr) => {{
        static SITE: $crate::CallSite = $crate::CallSite::new($name);
        $crate::SpanGuard::enter_under(&SITE, $parent)
    }};
}

/// Records an instant: `marker!("barrier")`.
#[macro_export]
macro_rules! marker {
    ($name:literal) => {{
        static SITE: $crate::CallSite = $crate::CallSite::new($name);
        $crate::marker(&SITE)
    }};
}

/// The probe's own log lines go to stderr with a prefix (never on the hot path).
pub(crate) fn log(msg: &str) {
    eprintln!("[proofscope probe] {msg}");
}

/// What the prover tells the probe about itself for `Hello`.
#[derive(Debug, Clone, Default)]
pub struct SessionInfo {
    pub backend: String,
    pub backend_reason: String,
    pub command_line: Vec<String>,
}

/// A running probe session. Dropping it shuts the session down (goodbye, socket removed).
#[derive(Debug)]
pub struct Probe {
    shared: Option<Arc<Shared>>,
    collector: Option<std::thread::JoinHandle<CollectorStats>>,
    nvml: Option<std::thread::JoinHandle<()>>,
    recorder: Option<std::thread::JoinHandle<()>>,
    server: Option<server::Server>,
    gpus: usize,
    gpu_reason: Option<String>,
}

fn spawn_named<T: Send + 'static>(
    name: &str,
    what: &'static str,
    f: impl FnOnce() -> T + Send + 'static,
) -> Result<std::thread::JoinHandle<T>, ProbeError> {
    std::thread::Builder::new()
        .name(name.into())
        .spawn(f)
        .map_err(|source| ProbeError::Thread { what, source })
}

impl Probe {
    /// A probe that records nothing: every span costs one relaxed load.
    pub fn disabled() -> Probe {
        Probe {
            shared: None,
            collector: None,
            nvml: None,
            recorder: None,
            server: None,
            gpus: 0,
            gpu_reason: None,
        }
    }

    /// Starts a session: clock, NVML inventory, socket server, optional recording file,
    /// collector and sampler threads.
    pub fn start(config: ProbeConfig, info: SessionInfo) -> Result<Probe, ProbeError> {
        if config.off {
            return Ok(Probe::disabled());
        }
        if session::current().is_some() {
            return Err(ProbeError::AlreadyRunning);
        }
        let clock = clock::Clock::start();
        let inv = nvml::inventory();
        let hello = Hello {
            protocol_major: PROTOCOL_MAJOR,
            protocol_minor: PROTOCOL_MINOR,
            prover_name: config.prover_name.clone(),
            prover_version: config.prover_version.clone(),
            pid: std::process::id(),
            hostname: system::hostname(),
            session_start_unix_ns: clock.unix_start_ns(),
            clock: clock.description().into(),
            backend: info.backend,
            backend_reason: info.backend_reason,
            gpus: inv.gpus.clone(),
            gpu_unavailable_reason: inv.unavailable_reason.clone(),
            gpu_driver_version: inv.driver_version.clone(),
            cpu_count: system::cpu_count(),
            total_ram_bytes: system::total_ram_bytes(),
            large_block_threshold: config.large_block,
            alloc_sample_interval_ns: config.alloc_sample.as_nanos() as u64,
            gpu_sample_interval_ns: config
                .gpu_sample
                .filter(|_| !inv.gpus.is_empty())
                .map_or(0, |d| d.as_nanos() as u64),
            history_budget_bytes: config.history_bytes as u64,
            command_line: info.command_line,
        };
        let socket = config.socket_path();
        let default_dir = config.socket == SocketChoice::Default;
        let record = config.record.clone();
        let gpu_sample = config.gpu_sample;
        let large_block = config.large_block;
        let shared = Arc::new(Shared::new(
            session::next_generation(),
            config,
            clock,
            hello,
        ));
        session::install(shared.clone()).map_err(|_| ProbeError::AlreadyRunning)?;

        let mut probe = Probe {
            shared: Some(shared.clone()),
            collector: None,
            nvml: None,
            recorder: None,
            server: None,
            gpus: inv.gpus.len(),
            gpu_reason: inv.unavailable_reason.clone(),
        };
        // From here on, an error drops `probe`, which undoes what was started.
        if let Some(path) = record {
            let file = std::fs::File::create(&path).map_err(|source| ProbeError::Record {
                path: path.clone(),
                source,
            })?;
            let writer = RecordingWriter::new(std::io::BufWriter::with_capacity(1 << 20, file))
                .map_err(|source| ProbeError::Record { path, source })?;
            let q = fanout::SubQueue::new("recording".into(), config::DEFAULT_RECORDER_BYTES);
            shared
                .new_subscribers
                .lock()
                .unwrap_or_else(|p| p.into_inner())
                .push((q.clone(), true));
            probe.recorder = Some(spawn_named("probe-recorder", "recorder", move || {
                recorder::run(q, writer)
            })?);
        }
        if let Some(path) = socket {
            probe.server = Some(server::Server::start(shared.clone(), path, default_dir)?);
        }
        alloc::enable_events(large_block);
        let s2 = shared.clone();
        let handle = spawn_named("probe-collector", "collector", move || {
            collector::Collector::new(s2).run()
        })?;
        let _ = shared.collector.set(handle.thread().clone());
        probe.collector = Some(handle);
        if let (Some(nvml), Some(every)) = (inv.nvml, gpu_sample)
            && !inv.gpus.is_empty()
        {
            let s3 = shared.clone();
            probe.nvml = Some(spawn_named("probe-nvml", "NVML sampler", move || {
                nvml::run(nvml, s3, every)
            })?);
        }
        session::set_enabled(true);
        Ok(probe)
    }

    pub fn is_enabled(&self) -> bool {
        self.shared.is_some()
    }

    /// The socket viewers attach to, when serving.
    pub fn socket_path(&self) -> Option<&Path> {
        self.server.as_ref().map(|s| s.path())
    }

    /// GPUs NVML reported, and why none when there are none.
    pub fn gpus(&self) -> (usize, Option<&str>) {
        (self.gpus, self.gpu_reason.as_deref())
    }

    /// Ends the session: a final drain, `Goodbye` with `reason` to every subscriber and the
    /// recording, then the socket is removed.
    pub fn shutdown(mut self, reason: &str) -> Option<CollectorStats> {
        self.stop(reason)
    }

    fn stop(&mut self, reason: &str) -> Option<CollectorStats> {
        let shared = self.shared.take()?;
        session::set_enabled(false);
        alloc::disable_events();
        *shared.goodbye.lock().unwrap_or_else(|p| p.into_inner()) = Some(reason.to_owned());
        shared.stop.store(true, Ordering::Release);
        if let Some(t) = self.nvml.take() {
            t.thread().unpark();
            let _ = t.join();
        }
        let mut stats = None;
        if let Some(t) = self.collector.take() {
            t.thread().unpark();
            stats = t.join().ok();
        } else {
            // The collector never started: close what was queued so writers end.
            for (q, _) in shared
                .new_subscribers
                .lock()
                .unwrap_or_else(|p| p.into_inner())
                .drain(..)
            {
                q.close();
            }
        }
        if let Some(s) = self.server.take() {
            s.shutdown();
        }
        if let Some(t) = self.recorder.take() {
            let _ = t.join();
        }
        session::uninstall(shared.generation);
        stats
    }
}

impl Drop for Probe {
    fn drop(&mut self) {
        let _ = self.stop("prover exiting");
    }
}

/// Waits until every thread buffer of the running session has been drained by the collector
/// (true), or `timeout` passes (false). For benchmarks and tests; never used by the prover.
pub fn wait_drained(timeout: std::time::Duration) -> bool {
    let deadline = std::time::Instant::now() + timeout;
    let Some(shared) = session::current() else {
        return true;
    };
    loop {
        let empty = shared
            .rings
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .iter()
            .all(|r| r.is_empty());
        if empty {
            return true;
        }
        if std::time::Instant::now() >= deadline {
            return false;
        }
        shared.wake_collector();
        std::thread::sleep(std::time::Duration::from_micros(200));
    }
}

/// Where a prover with this name and pid listens by default.
pub fn default_socket_path(prover: &str, pid: u32) -> PathBuf {
    default_socket_dir().join(format!("{prover}-{pid}.sock"))
}

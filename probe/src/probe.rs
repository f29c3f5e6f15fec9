//! A probe session's lifetime: [`Probe::start`] starts the clock, the NVML inventory, the
//! socket server, an optional recording file, the collector and the samplers; dropping the
//! [`Probe`] (or [`Probe::shutdown`]) says goodbye and undoes all of it.

use crate::clock::Clock;
use crate::collector::{Collector, CollectorStats};
use crate::config::{self, ProbeConfig, SocketChoice};
use crate::error::ProbeError;
use crate::server::Server;
use crate::session::{self, Arrival, Session};
use crate::subscriber::SubQueue;
use crate::{alloc, nvml, recorder, state, system};
use probe_protocol::{Hello, PROTOCOL_MAJOR, PROTOCOL_MINOR, RecordingWriter};
use std::path::Path;
use std::sync::Arc;
use std::thread::JoinHandle;

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
    session: Option<Arc<Session>>,
    collector: Option<JoinHandle<CollectorStats>>,
    nvml: Option<JoinHandle<()>>,
    recorder: Option<JoinHandle<Option<String>>>,
    server: Option<Server>,
    gpus: usize,
    gpu_reason: Option<String>,
}

/// The session's threads (collector, server, recorder, NVML sampler) and buffers must fit the
/// program's address space with room to spare ([`crate::headroom`]).
fn check_headroom(config: &ProbeConfig, serving: bool, gpus: bool) -> Result<(), ProbeError> {
    let threads = 1
        + u64::from(serving)
        + u64::from(config.record.is_some())
        + u64::from(gpus && config.gpu_sample.is_some());
    let budgets = config.history_bytes as u64 + config.subscriber_bytes as u64;
    crate::headroom::check(crate::headroom::need(threads, budgets))
}

fn spawn_named<T: Send + 'static>(
    name: &str,
    what: &'static str,
    f: impl FnOnce() -> T + Send + 'static,
) -> Result<JoinHandle<T>, ProbeError> {
    crate::observer::spawn(name, f).map_err(|source| ProbeError::Thread { what, source })
}

impl Probe {
    /// A probe that records nothing: every span costs one relaxed load.
    pub fn disabled() -> Probe {
        Probe {
            session: None,
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
        crate::fork::watch();
        let clock = Clock::start();
        let inv = nvml::inventory();
        let socket = config.socket_path();
        check_headroom(&config, socket.is_some(), !inv.gpus.is_empty())?;
        let hello = hello(&config, info, &clock, &inv);
        let default_dir = config.socket == SocketChoice::Default;
        let record = config.record.clone();
        let gpu_sample = config.gpu_sample;
        let large_block = config.large_block;
        let stack_block = config.stack_block;
        let session = Arc::new(Session::new(config, clock, hello));
        session::install(session.clone()).map_err(|_| ProbeError::AlreadyRunning)?;

        let mut probe = Probe {
            session: Some(session.clone()),
            collector: None,
            nvml: None,
            recorder: None,
            server: None,
            gpus: inv.gpus.len(),
            gpu_reason: inv.unavailable_reason.clone(),
        };
        // From here on, an error drops `probe`, which undoes what was started.
        if let Some(path) = record {
            probe.recorder = Some(start_recording(&session, path)?);
        }
        if let Some(path) = socket {
            probe.server = Some(Server::start(session.clone(), path, default_dir)?);
        }
        alloc::enable_events(large_block, stack_block);
        crate::output::enable();
        crate::sched_stamp::enable();
        let s2 = session.clone();
        let handle = spawn_named("probe-collector", "collector", move || {
            Collector::new(s2).run()
        })?;
        session.control.set_collector(handle.thread().clone());
        probe.collector = Some(handle);
        if let (Some(nvml), Some(every)) = (inv.nvml, gpu_sample)
            && !inv.gpus.is_empty()
        {
            let s3 = session.clone();
            let visible = crate::visible::visible_devices(
                std::env::var("CUDA_VISIBLE_DEVICES").ok().as_deref(),
                &inv.gpus,
            );
            probe.nvml = Some(spawn_named("probe-nvml", "NVML sampler", move || {
                nvml::run(nvml, s3, every, visible)
            })?);
        }
        state::set_enabled(true);
        Ok(probe)
    }

    pub fn is_enabled(&self) -> bool {
        self.session.is_some()
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
        if crate::fork::in_forked_child() {
            // The threads are the parent's: forget them, leave the socket to the parent.
            self.session.take();
            std::mem::forget(self.collector.take());
            std::mem::forget(self.nvml.take());
            std::mem::forget(self.recorder.take());
            std::mem::forget(self.server.take());
            return None;
        }
        let session = self.session.take()?;
        state::set_enabled(false);
        alloc::disable_events();
        crate::output::disable();
        crate::sched_stamp::disable();
        session.control.request_stop(reason);
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
            for a in session.arrivals.take() {
                a.queue.close();
            }
        }
        if let Some(s) = self.server.take() {
            s.shutdown();
        }
        if let Some(t) = self.recorder.take()
            && let Ok(Some(failed)) = t.join()
        {
            stats
                .get_or_insert_with(CollectorStats::default)
                .recording_failed = Some(failed);
        }
        session::uninstall(session.generation);
        stats
    }
}

impl Drop for Probe {
    fn drop(&mut self) {
        let _ = self.stop("prover exiting");
    }
}

/// Waits until the collector has drained everything the running session's threads pushed
/// before this call (true), or `timeout` passes (false): two whole collector cycles, the
/// second of which began after the call. For benchmarks and tests; never used by a prover.
pub fn wait_drained(timeout: std::time::Duration) -> bool {
    let deadline = std::time::Instant::now() + timeout;
    let Some(session) = session::current() else {
        return true;
    };
    let target = session.control.cycles() + 2;
    while session.control.cycles() < target {
        if std::time::Instant::now() >= deadline {
            return false;
        }
        session.control.wake_collector();
        std::thread::sleep(std::time::Duration::from_micros(200));
    }
    true
}

/// The session's `Hello`: who the prover is, on what, and how the probe samples.
fn hello(config: &ProbeConfig, info: SessionInfo, clock: &Clock, inv: &nvml::Inventory) -> Hello {
    Hello {
        protocol_major: PROTOCOL_MAJOR,
        protocol_minor: PROTOCOL_MINOR,
        prover_name: config.prover_name.clone(),
        prover_version: config.prover_version.clone(),
        pid: std::process::id(),
        hostname: system::hostname(),
        session_start_unix_ns: clock.unix_start_ns(),
        clock: clock.source().description().into(),
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
        // A prover that says nothing of its command line still has one (the exporter names
        // a worker by it).
        command_line: if info.command_line.is_empty() {
            std::env::args().collect()
        } else {
            info.command_line
        },
        cpu_model: system::cpu_model(),
        os: system::os(),
        instance: config.instance.clone(),
        stack_threshold: if config.stack_block == u64::MAX {
            0
        } else {
            config.stack_block
        },
    }
}

/// `--record`/`PROOFSCOPE_RECORD`: the file, its header written at once, and the thread that
/// writes every frame after it (a subscriber with the whole history).
fn start_recording(
    session: &Arc<Session>,
    path: std::path::PathBuf,
) -> Result<std::thread::JoinHandle<Option<String>>, ProbeError> {
    let file = std::fs::File::create(&path).map_err(|source| ProbeError::Record {
        path: path.clone(),
        source,
    })?;
    // The header reaches the file now: a prover killed before its first frame still
    // leaves a recording that says what it is.
    let writer = RecordingWriter::new(std::io::BufWriter::with_capacity(1 << 20, file))
        .and_then(|mut w| w.flush().map(|()| w))
        .map_err(|source| ProbeError::Record { path, source })?;
    let q = SubQueue::new("recording".into(), config::DEFAULT_RECORDER_BYTES);
    session.arrivals.arrive(Arrival {
        queue: q.clone(),
        history: true,
    });
    spawn_named("probe-recorder", "recorder", move || {
        recorder::run(q, writer)
    })
}

//! `proofscope export`: a headless daemon that watches every prover on the host and serves
//! what the viewer's analysis says about them as Prometheus/OpenMetrics metrics on `/metrics`.
//!
//! A named fleet thread scans the socket directories (and any sockets named on the command
//! line) every `scan` interval and starts a watcher per live socket; a prover whose socket is
//! gone is stopped once its stream has ended: its gauges go at once, its `up` turns 0, and
//! its counters stay until `forget_after` (so that alerts on it can fire) unless the same
//! worker comes back and continues them. The main thread serves HTTP.

mod cap;
mod exposition;
mod http;
mod identity;
pub mod log;
pub mod metrics;
mod owned;
mod process;
mod wake;
mod watcher;
pub mod web_config;

use anyhow::{Context, Result};
use log::Level;
use metrics::Metrics;
use probe_protocol::discovery;
use prometheus_client::registry::Registry;
use proofscope_engine::analysis::GapRule;
use proofscope_engine::model::Retention;
use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};
use watcher::{Shared, Watcher};

/// How `export` runs.
#[derive(Debug, Clone)]
pub struct ExportOpts {
    pub listen: String,
    /// `--web.config.file`: TLS and basic auth (web_config.rs).
    pub web_config: Option<PathBuf>,
    /// Sockets to watch besides the ones discovery finds.
    pub sockets: Vec<PathBuf>,
    /// Where discovery looks.
    pub socket_dirs: Vec<PathBuf>,
    pub rule: GapRule,
    /// What each prover's model may hold.
    pub retention: Retention,
    pub scan: Duration,
    pub forget_after: Duration,
    /// The `host` label of every series.
    pub host: String,
    /// Distinct values a capped label (circuit, phase) may take before `other`.
    pub max_label_values: usize,
    /// Workers with series at most, live and stopped: past it, the oldest stopped are
    /// forgotten before `forget_after`.
    pub max_workers: usize,
    /// The black box, when `--capture-dir` is given.
    pub capture: Option<proofscope_engine::capture::CaptureOpts>,
}

/// How soon a socket directory's change is looked at again.
const SOON: Duration = Duration::from_millis(100);

/// A socket gone this long is stopped even if its stream never said it ended.
const GONE_GRACE: Duration = Duration::from_secs(5);

/// This machine's host name (the kernel's, as `hostname` prints it), for the `host` label.
pub fn this_host() -> String {
    std::fs::read_to_string("/proc/sys/kernel/hostname")
        .map(|h| h.trim().to_owned())
        .ok()
        .filter(|h| !h.is_empty())
        .unwrap_or_else(|| "localhost".to_owned())
}

/// Serves `/metrics` on `opts.listen` until the process is stopped.
pub fn run(opts: ExportOpts) -> Result<()> {
    let mut registry = Registry::with_labels(
        [(
            std::borrow::Cow::Borrowed("host"),
            std::borrow::Cow::Owned(opts.host.clone()),
        )]
        .into_iter(),
    );
    let metrics = Metrics::register(&mut registry);
    registry.register_collector(Box::new(process::ProcessCollector));
    let access = match &opts.web_config {
        Some(path) => web_config::load(path)?,
        None => http::Access::default(),
    };
    let files = http::raise_file_limit();
    let listener = std::net::TcpListener::bind(&opts.listen)
        .with_context(|| format!("cannot listen on {}", opts.listen))?;
    let addr = listener
        .local_addr()
        .map_or_else(|_| opts.listen.clone(), |a| a.to_string());
    say_serving(&opts, &addr, &access);
    let m2 = metrics.clone();
    let o2 = opts.clone();
    let workers = identity::Workers::default();
    let w2 = workers.clone();
    let started_unix_ns = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos() as u64);
    let ready = Arc::new(AtomicBool::new(false));
    let r2 = ready.clone();
    std::thread::Builder::new()
        .name("proofscope-export-fleet".into())
        .spawn(move || {
            let _fatal = FleetGuard;
            Fleet::new(m2, o2, w2, started_unix_ns).run(&r2)
        })
        .context("starting the fleet thread")?;
    // Half the descriptors at most for clients: the rest are the watchers' and the captures'.
    let limits = http::Limits {
        connections: http::Limits::default()
            .connections
            .min((files / 2).max(16) as usize),
        ..http::Limits::default()
    };
    let registry = Arc::new(registry);
    let captures = opts.capture.as_ref().map(|c| c.store.dir.clone());
    let failed = http::serve(listener, limits, access, move |asked| {
        let scrape = Scrape {
            registry: &registry,
            metrics: &metrics,
            captures: captures.as_deref(),
            workers: &workers,
            started_s: started_unix_ns as f64 / 1e9,
            ready: ready.load(Ordering::Acquire),
        };
        respond(asked, &scrape)
    });
    Err(failed).with_context(|| format!("serving on {addr}"))
}

/// The first line of the log: where, for which sockets, how protected (tests and operators
/// read the address from it).
fn say_serving(opts: &ExportOpts, addr: &str, access: &http::Access) {
    let dirs: Vec<String> = opts
        .socket_dirs
        .iter()
        .map(|d| d.display().to_string())
        .collect();
    let scheme = if access.tls.is_some() {
        "https"
    } else {
        "http"
    };
    log::log(
        Level::Info,
        "serving metrics",
        &[
            ("address", &format!("{scheme}://{addr}/metrics")),
            ("socket_dirs", &dirs.join(",")),
            (
                "basic_auth",
                if access.users.is_some() { "on" } else { "off" },
            ),
        ],
    );
}

/// What a request is answered from.
struct Scrape<'a> {
    registry: &'a Registry,
    metrics: &'a Metrics,
    /// The capture directory (`--capture-dir`): exemplars name files in it.
    captures: Option<&'a std::path::Path>,
    /// Whose series began when (`_created`).
    workers: &'a identity::Workers,
    /// When the exporter started, Unix seconds: its own counters' `_created`.
    started_s: f64,
    /// The fleet has looked for provers once (before, `/metrics` would show none).
    ready: bool,
}

fn respond(asked: &http::Asked, scrape: &Scrape) -> http::Answer {
    let (registry, metrics, ready) = (scrape.registry, scrape.metrics, scrape.ready);
    if asked.method != "GET" && asked.method != "HEAD" {
        return http::Answer::text(405, "only GET /metrics\n");
    }
    match asked.path.as_str() {
        "/metrics" => {
            let t = Instant::now();
            let mut body = String::with_capacity(64 << 10);
            if let Err(e) = prometheus_client::encoding::text::encode(&mut body, registry) {
                return http::Answer::text(500, format!("encoding failed: {e}\n"));
            }
            if let Some(dir) = scrape.captures {
                body = exposition::without_removed_captures(body, |file| dir.join(file).exists());
            }
            let format = exposition::Exposition::negotiate(asked.accept.as_deref());
            if format == exposition::Exposition::OpenMetrics {
                let born = scrape.workers.born_s();
                body = exposition::with_created(body, |worker| match worker {
                    Some(w) => born.get(w).copied(),
                    None => Some(scrape.started_s),
                });
            }
            let body = format.body(body).into_bytes();
            metrics.scrapes.inc();
            metrics.scrape_duration.set(t.elapsed().as_secs_f64());
            let gzipped = exposition::accepts_gzip(asked.accept_encoding.as_deref())
                .then(|| exposition::gzip(&body).ok())
                .flatten();
            http::Answer {
                status: 200,
                content_type: format.content_type(),
                content_encoding: gzipped.is_some().then_some("gzip"),
                body: gzipped.unwrap_or(body),
            }
        }
        "/" => http::Answer::text(
            200,
            "proofscope export: metrics at /metrics (docs/FLEET.md)\n",
        ),
        // As Prometheus's own exporters answer them: alive; and ready to be scraped.
        "/-/healthy" => http::Answer::text(200, "Healthy\n"),
        "/-/ready" if ready => http::Answer::text(200, "Ready\n"),
        "/-/ready" => http::Answer::text(503, "Not ready: looking for provers\n"),
        _ => http::Answer::text(404, "not found: metrics are at /metrics\n"),
    }
}

/// The fleet thread never returns: if it unwinds, the exporter would serve frozen values
/// with no prover watched, so it ends the process with a failure for its supervisor.
struct FleetGuard;

impl Drop for FleetGuard {
    fn drop(&mut self) {
        log::log(
            Level::Error,
            "the fleet thread stopped; exiting so that the exporter is restarted",
            &[],
        );
        std::process::exit(1);
    }
}

/// One socket the fleet knows.
struct Entry {
    watcher: Option<Watcher>,
    /// Its watcher's number (identity.rs: whose worker names are whose).
    n: usize,
    /// When its socket was first seen gone.
    gone_since: Option<Instant>,
}

struct Fleet {
    shared: Shared,
    opts: ExportOpts,
    entries: HashMap<PathBuf, Entry>,
    /// Stopped watchers, with when they stopped: their series are forgotten after
    /// `forget_after`.
    stopped: Vec<(usize, Instant)>,
    started: usize,
}

impl Fleet {
    fn new(
        metrics: Metrics,
        opts: ExportOpts,
        workers: identity::Workers,
        started_unix_ns: u64,
    ) -> Fleet {
        let cap = cap::LabelCap::new(opts.max_label_values, metrics.labels_capped.clone());
        Fleet {
            shared: Shared {
                started_unix_ns,
                metrics,
                workers,
                cap,
                rule: opts.rule,
                retention: opts.retention,
                capture: opts.capture.clone(),
            },
            opts,
            entries: HashMap::new(),
            stopped: Vec::new(),
            started: 0,
        }
    }

    /// Scans for provers for ever, at once when a socket directory changes, else every
    /// `scan`; `ready` is set after the first scan.
    fn run(mut self, ready: &AtomicBool) {
        let mut wake = wake::Wake::new(&self.opts.socket_dirs);
        let mut next = self.opts.scan;
        loop {
            self.scan();
            ready.store(true, Ordering::Release);
            // A socket is made (bound) before its prover listens on it: a change is looked
            // at again soon.
            next = if wake.wait(next) {
                SOON.min(self.opts.scan)
            } else {
                self.opts.scan
            };
        }
    }

    fn scan(&mut self) {
        let alive = self.alive_sockets();
        // The gone first: a worker restarted since takes its name back (identity.rs).
        self.stop_gone(&alive);
        self.start_new(&alive);
        let watched = self
            .entries
            .values()
            .filter(|e| e.watcher.is_some())
            .count();
        self.forget_old(watched);
        self.shared.metrics.provers.set(watched as i64);
    }

    fn alive_sockets(&self) -> Vec<PathBuf> {
        let mut alive: Vec<PathBuf> = discovery::find_in(&self.opts.socket_dirs)
            .into_iter()
            .filter(|f| f.alive)
            .map(|f| f.path)
            .collect();
        alive.extend(
            self.opts
                .sockets
                .iter()
                .filter(|p| discovery::socket_state(p) == discovery::SocketState::Live)
                .cloned(),
        );
        alive
    }

    /// A watcher for every live socket without one (a socket alive again after its watcher
    /// stopped gets a new one).
    fn start_new(&mut self, alive: &[PathBuf]) {
        for path in alive {
            let fresh = self
                .entries
                .get(path)
                .is_none_or(|e| e.watcher.is_none() && e.gone_since.is_some());
            if !fresh {
                if let Some(e) = self.entries.get_mut(path) {
                    e.gone_since = None;
                }
                continue;
            }
            self.started += 1;
            match Watcher::start(path.clone(), self.started, self.shared.clone()) {
                Ok(w) => {
                    self.entries.insert(
                        path.clone(),
                        Entry {
                            watcher: Some(w),
                            n: self.started,
                            gone_since: None,
                        },
                    );
                }
                Err(e) => {
                    log::log(
                        Level::Warn,
                        "cannot watch a prover",
                        &[
                            ("socket", &path.display().to_string()),
                            ("err", &e.to_string()),
                        ],
                    );
                }
            }
        }
    }

    /// Stops the watchers of sockets gone, once their stream has ended (its last frames
    /// applied) or after a grace.
    fn stop_gone(&mut self, alive: &[PathBuf]) {
        let now = Instant::now();
        let mut gone = Vec::new();
        for (path, e) in &mut self.entries {
            if alive.contains(path) {
                continue;
            }
            let since = *e.gone_since.get_or_insert(now);
            if e.watcher
                .as_ref()
                .is_some_and(|w| !w.is_live() || now - since >= GONE_GRACE)
                && let Some(w) = e.watcher.take()
            {
                w.ask_to_stop();
                self.stopped.push((e.n, now));
                gone.push((path.clone(), w));
            }
        }
        // Asked all at once, then waited for: stopped one after another, the watchers of 300
        // provers gone together were still 452 threads 12 s later.
        let any = !gone.is_empty();
        for (path, w) in gone {
            w.stop();
            self.entries.remove(&path);
        }
        if any {
            give_back_freed_memory();
        }
    }

    /// Removes the series of watchers stopped `forget_after` ago (a worker that came back
    /// since keeps them: identity.rs), and of the oldest stopped ones past `max_workers`
    /// with `live` watchers running
    /// (100 provers that each lived a few seconds grew a scrape from 1,830 to 27,471 samples
    /// for the 20 minutes of `forget_after`), counted.
    fn forget_old(&mut self, live: usize) {
        let now = Instant::now();
        let (old, recent): (Vec<_>, Vec<_>) = self
            .stopped
            .drain(..)
            .partition(|(_, at)| now - *at >= self.opts.forget_after);
        self.stopped = recent;
        let forgot = !old.is_empty();
        for (n, _) in old {
            self.shared.workers.forget(n, &self.shared.metrics);
        }
        let over = (live + self.stopped.len()).saturating_sub(self.opts.max_workers);
        for (n, _) in self.stopped.drain(..over.min(self.stopped.len())) {
            self.shared.workers.forget(n, &self.shared.metrics);
            self.shared.metrics.workers_evicted.inc();
        }
        if forgot || over > 0 {
            give_back_freed_memory();
        }
    }
}

/// Hands the pages the stopped watchers' models (and forgotten workers' series) freed back to
/// the system: glibc keeps them in its arenas otherwise (after three waves of 300 provers, all
/// gone, the exporter held 71–108 MiB of a 110 MiB peak with nothing to watch; BENCHMARKS.md,
/// "proofscope export").
fn give_back_freed_memory() {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    // SAFETY: malloc_trim only returns free memory of glibc's arenas to the system.
    unsafe {
        libc::malloc_trim(0);
    }
}

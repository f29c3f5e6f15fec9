//! `proofscope export`: a headless daemon that watches every prover on the host and serves
//! what the viewer's analysis says about them as Prometheus/OpenMetrics metrics on `/metrics`.
//!
//! A named fleet thread scans the socket directories (and any sockets named on the command
//! line) every `scan` interval and starts a watcher per live socket; a prover whose socket is
//! gone is stopped once its stream has ended, and its series are removed after
//! `forget_after`, so that days of restarts do not pile up series of dead pids. The main
//! thread serves HTTP.

mod exposition;
pub mod metrics;
mod process;
mod watcher;

use crate::analysis::GapRule;
use crate::model::Retention;
use anyhow::{Context, Result};
use metrics::Metrics;
use probe_protocol::discovery;
use prometheus_client::registry::Registry;
use std::collections::HashMap;
use std::io::Write;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::{Duration, Instant};
use watcher::{Owned, Watcher};

/// How `export` runs.
#[derive(Debug, Clone)]
pub struct ExportOpts {
    pub listen: String,
    /// Sockets to watch besides the ones discovery finds.
    pub sockets: Vec<PathBuf>,
    /// Where discovery looks.
    pub socket_dirs: Vec<PathBuf>,
    pub rule: GapRule,
    /// What each prover's model may hold.
    pub retention: Retention,
    pub scan: Duration,
    pub forget_after: Duration,
}

/// A socket gone this long is stopped even if its stream never said it ended.
const GONE_GRACE: Duration = Duration::from_secs(5);

/// Serves `/metrics` on `opts.listen` until the process is stopped.
pub fn run(opts: ExportOpts) -> Result<()> {
    let mut registry = Registry::default();
    let metrics = Metrics::register(&mut registry);
    registry.register_collector(Box::new(process::ProcessCollector));
    let server = tiny_http::Server::http(&opts.listen)
        .map_err(|e| anyhow::anyhow!("cannot listen on {}: {e}", opts.listen))?;
    let addr = server
        .server_addr()
        .to_ip()
        .map_or_else(|| opts.listen.clone(), |a| a.to_string());
    let _ = writeln!(
        std::io::stderr(),
        "proofscope export: serving http://{addr}/metrics, watching {}",
        opts.socket_dirs
            .iter()
            .map(|d| d.display().to_string())
            .collect::<Vec<_>>()
            .join(", ")
    );
    let m2 = metrics.clone();
    let o2 = opts.clone();
    std::thread::Builder::new()
        .name("proofscope-export-fleet".into())
        .spawn(move || Fleet::new(m2, o2).run())
        .context("starting the fleet thread")?;
    let registry = Arc::new(registry);
    for request in server.incoming_requests() {
        let response = respond(&request, &registry, &metrics);
        let _ = request.respond(response);
    }
    Ok(())
}

fn respond(
    request: &tiny_http::Request,
    registry: &Registry,
    metrics: &Metrics,
) -> tiny_http::Response<std::io::Cursor<Vec<u8>>> {
    let header = |v: &str| {
        tiny_http::Header::from_bytes(&b"Content-Type"[..], v.as_bytes())
            .expect("a valid static header")
    };
    let asked = |name: &'static str| {
        request
            .headers()
            .iter()
            .find(|h| h.field.equiv(name))
            .map(|h| h.value.as_str().to_owned())
    };
    let path = request.url().split('?').next().unwrap_or("");
    if *request.method() != tiny_http::Method::Get && *request.method() != tiny_http::Method::Head {
        return tiny_http::Response::from_string("only GET /metrics\n").with_status_code(405);
    }
    match path {
        "/metrics" => {
            let t = Instant::now();
            let mut body = String::with_capacity(64 << 10);
            if let Err(e) = prometheus_client::encoding::text::encode(&mut body, registry) {
                return tiny_http::Response::from_string(format!("encoding failed: {e}\n"))
                    .with_status_code(500);
            }
            let format = exposition::Exposition::negotiate(asked("Accept").as_deref());
            let body = format.body(body).into_bytes();
            metrics.scrapes.inc();
            metrics.scrape_duration.set(t.elapsed().as_secs_f64());
            let gzipped = exposition::accepts_gzip(asked("Accept-Encoding").as_deref())
                .then(|| exposition::gzip(&body).ok())
                .flatten();
            let response = match gzipped {
                Some(z) => tiny_http::Response::from_data(z).with_header(
                    tiny_http::Header::from_bytes(&b"Content-Encoding"[..], &b"gzip"[..])
                        .expect("a valid static header"),
                ),
                None => tiny_http::Response::from_data(body),
            };
            response.with_header(header(format.content_type()))
        }
        "/" => tiny_http::Response::from_string(
            "proofscope export: metrics at /metrics (docs/FLEET.md)\n",
        )
        .with_header(header("text/plain; charset=utf-8")),
        _ => tiny_http::Response::from_string("not found: metrics are at /metrics\n")
            .with_status_code(404),
    }
}

/// One socket the fleet knows.
struct Entry {
    watcher: Option<Watcher>,
    /// When its socket was first seen gone.
    gone_since: Option<Instant>,
    /// The label sets of a stopped watcher, removed after `forget_after`.
    owned: Option<Owned>,
}

struct Fleet {
    metrics: Metrics,
    opts: ExportOpts,
    entries: HashMap<PathBuf, Entry>,
    started: usize,
}

impl Fleet {
    fn new(metrics: Metrics, opts: ExportOpts) -> Fleet {
        Fleet {
            metrics,
            opts,
            entries: HashMap::new(),
            started: 0,
        }
    }

    fn run(mut self) {
        loop {
            self.scan();
            std::thread::sleep(self.opts.scan);
        }
    }

    fn scan(&mut self) {
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
        for path in &alive {
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
            match Watcher::start(
                path.clone(),
                self.started,
                self.metrics.clone(),
                self.opts.rule,
                self.opts.retention,
            ) {
                Ok(w) => {
                    if let Some(old) = self.entries.remove(path)
                        && let Some(owned) = old.owned
                    {
                        owned.forget(&self.metrics);
                    }
                    self.entries.insert(
                        path.clone(),
                        Entry {
                            watcher: Some(w),
                            gone_since: None,
                            owned: None,
                        },
                    );
                }
                Err(e) => {
                    let _ = writeln!(
                        std::io::stderr(),
                        "proofscope export: cannot watch {}: {e}",
                        path.display()
                    );
                }
            }
        }
        let now = Instant::now();
        let mut forget = Vec::new();
        for (path, e) in &mut self.entries {
            if alive.contains(path) {
                continue;
            }
            let since = *e.gone_since.get_or_insert(now);
            // Stop once the stream has ended (its last frames applied), or after a grace.
            if e.watcher
                .as_ref()
                .is_some_and(|w| !w.is_live() || now - since >= GONE_GRACE)
                && let Some(w) = e.watcher.take()
            {
                e.owned = Some(w.stop());
            }
            if e.watcher.is_none() && now - since >= self.opts.forget_after {
                forget.push(path.clone());
            }
        }
        for path in forget {
            if let Some(e) = self.entries.remove(&path)
                && let Some(owned) = e.owned
            {
                owned.forget(&self.metrics);
            }
        }
        let watched = self
            .entries
            .values()
            .filter(|e| e.watcher.is_some())
            .count();
        self.metrics.provers.set(watched as i64);
    }
}

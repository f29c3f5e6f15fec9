//! One prover, watched for the exporter: a named thread owns a live source and a model of
//! its own, turns each proof into metric observations once it is settled, and keeps the
//! gauges at the prover's latest samples. It keeps aggregates, not events: the model retains
//! a few proofs (for the analysis of the next ones) within a byte budget.

use super::cap::LabelCap;
use super::identity::Workers;
use super::metrics::{
    CaptureExemplar, CaptureLabels, GapLabels, GpuInfoLabels, GpuLabels, KindLabels, Liveness,
    Metrics, PLACES, PhaseLabels, PlaceLabels, ProofLabels, ProverInfoLabels, ProverLabels,
    RESULTS, ResultLabels, gap_kinds, places, result_label,
};
use super::owned::Owned;
use probe_protocol::{Event, EventKind};
use proofscope_engine::analysis::GapRule;
use proofscope_engine::capture::{BlackBox, CaptureOpts};
use proofscope_engine::model::worker_name;
use proofscope_engine::model::{Model, Retention};
use proofscope_engine::report::ProofReport;
use proofscope_engine::settle::Settler;
use proofscope_engine::source::LinkState;
use proofscope_engine::source::SourceMsg;
use proofscope_engine::source::Target;
use proofscope_engine::source::link::{Link, Next};
use std::collections::{HashMap, VecDeque};
use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

/// A series is scraped at 0 before its first count, so that `increase()` counts the first
/// proofs (Prometheus takes a series' first sample as its baseline: one born at 2 loses 2).
/// A proof that creates series is held until a scrape has seen them (two scrape intervals at
/// most), or this long when nobody scrapes.
const BIRTH_HOLD: Duration = Duration::from_secs(60);

/// At most this many proofs wait for a scrape (a prover that finishes hundreds of proofs
/// between two scrapes loses its first baseline rather than grow the exporter: 10,000 1-ms
/// proofs held took 20 MB).
const MAX_HELD: usize = 256;

/// What every watcher of one exporter shares.
#[derive(Debug, Clone)]
pub struct Shared {
    /// When the exporter started (Unix ns).
    pub started_unix_ns: u64,
    pub metrics: Metrics,
    pub workers: Workers,
    pub cap: LabelCap,
    pub rule: GapRule,
    pub retention: Retention,
    /// The black box, when `--capture-dir` is given.
    pub capture: Option<CaptureOpts>,
}

/// A watcher's thread; `stop` ends it, its gauges removed and its series handed to its
/// worker names (identity.rs).
pub struct Watcher {
    stop: Arc<AtomicBool>,
    live: Arc<AtomicBool>,
    thread: Option<JoinHandle<()>>,
}

impl Watcher {
    /// Starts watching the prover at `path`; `n` is unique among the exporter's watchers.
    pub fn start(path: PathBuf, n: usize, shared: Shared) -> std::io::Result<Watcher> {
        let stop = Arc::new(AtomicBool::new(false));
        let live = Arc::new(AtomicBool::new(false));
        let (s2, l2) = (stop.clone(), live.clone());
        let thread = std::thread::Builder::new()
            .name(format!("proofscope-export-{n}"))
            .spawn(move || {
                let mut w = State::new(n, shared, l2);
                w.run(path, &s2);
                w.leave();
            })?;
        Ok(Watcher {
            stop,
            live,
            thread: Some(thread),
        })
    }

    /// Whether the prover's stream is flowing now.
    pub fn is_live(&self) -> bool {
        self.live.load(Ordering::Relaxed)
    }

    /// Asks the thread to stop, without waiting for it ([`Watcher::stop`] waits): the
    /// watchers of many gone provers stop together, not one after another.
    pub fn ask_to_stop(&self) {
        self.stop.store(true, Ordering::Relaxed);
    }

    /// Stops the thread after it has applied what it received.
    pub fn stop(mut self) {
        self.stop.store(true, Ordering::Relaxed);
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

impl Drop for Watcher {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

struct State {
    n: usize,
    m: Metrics,
    workers: Workers,
    cap: LabelCap,
    rule: GapRule,
    model: Model,
    owned: Owned,
    /// Each session's worker name, claimed at its Hello.
    names: HashMap<(u32, u64), ProverLabels>,
    /// Per session: its dropped reports up to this session time are counted (a reconnect
    /// replays history).
    dropped_until: HashMap<(u32, u64), u64>,
    /// How far the counting of settled proofs got in each session.
    settler: Settler,
    /// Latest energy reading counted, per GPU: (sample time, millijoules).
    energy: HashMap<u32, (u64, u64)>,
    live: Arc<AtomicBool>,
    was_live: bool,
    /// The worker's state, as the link last said it.
    state: Liveness,
    /// When this exporter started (Unix ns): a session older than that has a past.
    started_unix_ns: u64,
    /// Reading the history of a session older than this exporter ([`State::caught_up`]):
    /// its worker, whose counters are made at 0 when the history has been read.
    zero_later: Option<ProverLabels>,
    /// Its settled proofs, counted then.
    caught: Vec<Observation>,
    /// Settled proofs not counted yet: (the proof, the scrape count when it created series —
    /// none when it created none —, when), in order.
    held: VecDeque<(Observation, Option<u64>, Instant)>,
    blackbox: Option<BlackBox>,
}

/// What a link state says of the worker: running while live, stopped after a goodbye, lost
/// when the stream went without one; nothing while it is still connecting.
fn liveness(state: &LinkState) -> Option<Liveness> {
    match state {
        LinkState::Live(_) => Some(Liveness::Running),
        LinkState::Ended(_) => Some(Liveness::Stopped),
        LinkState::Disconnected(_) | LinkState::Failed(_) => Some(Liveness::Lost),
        _ => None,
    }
}

impl State {
    fn new(n: usize, shared: Shared, live: Arc<AtomicBool>) -> State {
        State {
            n,
            m: shared.metrics,
            workers: shared.workers,
            cap: shared.cap,
            rule: shared.rule,
            model: Model::new(shared.retention),
            owned: Owned::default(),
            names: HashMap::new(),
            dropped_until: HashMap::new(),
            settler: Settler::default(),
            energy: HashMap::new(),
            live,
            was_live: false,
            state: Liveness::Running,
            started_unix_ns: shared.started_unix_ns,
            zero_later: None,
            caught: Vec::new(),
            held: VecDeque::new(),
            blackbox: shared.capture.map(|c| BlackBox::new(c, shared.rule)),
        }
    }

    fn run(&mut self, path: PathBuf, stop: &AtomicBool) {
        let Ok(mut link) = Link::connect(Target::Socket(path)) else {
            return;
        };
        while !stop.load(Ordering::Relaxed) {
            match link.next(Duration::from_millis(200)) {
                Next::Msg(msg) => self.handle(msg),
                Next::Idle => {
                    self.settle(false);
                    // A stream without `LiveStart` (a recording served as a prover): the
                    // history is what came before it went quiet.
                    self.caught_up();
                }
                Next::Closed => break,
            }
        }
        // What the link had already read still counts.
        link.close();
        while let Some(msg) = link.try_next() {
            self.handle(msg);
        }
        self.settle(true);
        self.release_held(true);
        // Stopped for good: a stream that never said goodbye was lost.
        let lost = (self.state == Liveness::Running).then_some(Liveness::Lost);
        self.set_up(false, lost);
    }

    /// The prover is gone: its gauges go at once (no frozen values), its `up` stays at 0 and
    /// its counters at their totals until the fleet forgets it, or until the same worker comes
    /// back and continues them.
    fn leave(&mut self) {
        let lost = (self.state == Liveness::Running).then_some(Liveness::Lost);
        self.set_up(false, lost);
        self.owned.remove_gauges(&self.m);
        self.workers.release(self.n, &self.owned);
    }

    fn current_labels(&self) -> Option<ProverLabels> {
        let s = self.model.current()?;
        self.names.get(&s.key()).cloned()
    }

    fn handle(&mut self, msg: SourceMsg) {
        match msg {
            SourceMsg::Frame { raw, events } => {
                if let Some(b) = &mut self.blackbox {
                    b.frame(&raw, &events);
                }
                for ev in events {
                    let begins_proof = matches!(ev, Event::ProofBegin(_));
                    let dropped = match &ev {
                        Event::Dropped(d) => Some(d.clone()),
                        _ => None,
                    };
                    let hello = matches!(ev, Event::Hello(_));
                    let live_start = matches!(ev, Event::LiveStart { .. });
                    if matches!(ev, Event::HistoryGap(_)) && self.zero_later.is_some() {
                        self.history_cut();
                    }
                    self.model.ingest(ev);
                    if hello {
                        self.greet();
                    }
                    if live_start {
                        self.settle(false);
                        self.caught_up();
                    }
                    if let Some(d) = dropped {
                        self.count_dropped(&d);
                    }
                    // Before retention can evict the proof that just ended.
                    if begins_proof {
                        self.settle(false);
                    }
                }
                self.settle(false);
                self.sample();
            }
            SourceMsg::Link(state) => {
                let live = matches!(state, LinkState::Live(_));
                if !live {
                    // A stream that ended inside its history: what was read counts.
                    self.settle(matches!(state, LinkState::Ended(_)));
                    self.caught_up();
                }
                if matches!(state, LinkState::Ended(_)) {
                    self.settle(true);
                }
                if live
                    && self.was_live
                    && let Some(l) = self.current_labels()
                {
                    self.m.reconnects.get_or_create(&l).inc();
                }
                self.was_live |= live;
                self.set_up(live, liveness(&state));
            }
            SourceMsg::Notice(_) | SourceMsg::BadFrames { .. } => {}
        }
    }

    /// The stream flows (`live`) or not, and the worker's state by what the link said.
    fn set_up(&mut self, live: bool, state: Option<Liveness>) {
        self.live.store(live, Ordering::Relaxed);
        if let Some(st) = state {
            self.state = st;
        }
        self.workers.set_live(self.n, live);
        if let Some(l) = self.current_labels() {
            self.m.up.get_or_create(&l).set(i64::from(live));
            self.m.set_state(&l.worker, self.state);
        }
    }

    /// A prover said hello: it gets its worker name, and its series start at zero, so that
    /// `rate()` and comparisons between provers have data from the first scrape.
    fn greet(&mut self) {
        let Some(s) = self.model.current() else {
            return;
        };
        let Some(h) = s.hello() else {
            return;
        };
        let has_past = h.session_start_unix_ns < self.started_unix_ns;
        let l = ProverLabels {
            worker: self.workers.claim(&worker_name(h), self.n, h.pid, &self.m),
        };
        self.workers.born(&l.worker, h.session_start_unix_ns);
        let info = ProverInfoLabels {
            worker: l.worker.clone(),
            prover: h.prover_name.clone(),
            version: h.prover_version.clone(),
            pid: h.pid.to_string(),
        };
        self.names.insert(s.key(), l.clone());
        // The worker's previous process (a reconnection or a restart) is not it any more.
        for old in self.owned.info.iter().filter(|i| i.worker == l.worker) {
            self.m.prover_info.remove(old);
        }
        self.m.prover_info.get_or_create(&info).set(1);
        self.owned.info.insert(info);
        self.m
            .up
            .get_or_create(&l)
            .set(i64::from(self.live.load(Ordering::Relaxed)));
        let _ = self.m.reconnects.get_or_create(&l);
        let _ = self.m.restarts.get_or_create(&l);
        self.m.set_state(&l.worker, self.state);
        self.owned.prover.insert(l.clone());
        // A prover that was running before this exporter: its history is its past, counted
        // at its totals when the history has been read (at `LiveStart`), never from a 0 that
        // Prometheus would take for a reset (an exporter restart counted 158 proofs for 33).
        // An earlier session still being caught up is counted first.
        self.caught_up();
        if has_past {
            self.zero_later = Some(l);
        } else {
            self.born_at_zero(&l);
        }
    }

    /// The worker's counters that exist before anything counts in them, at 0 (gap kinds,
    /// release places, dropped kinds, capture results), so that `increase()` sees the first.
    fn born_at_zero(&mut self, l: &ProverLabels) {
        for k in gap_kinds() {
            let g = GapLabels {
                worker: l.worker.clone(),
                kind: k.as_str().to_owned(),
            };
            let _ = self.m.gaps_flagged.get_or_create(&g);
            self.owned.gaps.insert(g);
        }
        for place in PLACES {
            let p = PlaceLabels {
                worker: l.worker.clone(),
                place: place.to_owned(),
            };
            let _ = self.m.releases.get_or_create(&p);
            let _ = self.m.release_bytes.get_or_create(&p);
            let _ = self.m.release_seconds.get_or_create(&p);
            self.owned.places.insert(p);
        }
        // The kinds a prover thread's full ring drops (the others are the collector's own).
        for kind in [
            EventKind::SpanBegin,
            EventKind::SpanEnd,
            EventKind::Marker,
            EventKind::Alloc,
            EventKind::Release,
            EventKind::GpuSpan,
        ] {
            let k = KindLabels {
                worker: l.worker.clone(),
                kind: kind.name().to_owned(),
            };
            let _ = self.m.dropped.get_or_create(&k);
            self.owned.kinds.insert(k);
        }
        if self.blackbox.is_some() {
            for result in proofscope_engine::capture::RESULTS {
                let c = CaptureLabels {
                    worker: l.worker.clone(),
                    result: result.to_owned(),
                };
                let _ = self.m.captures.get_or_create(&c);
                self.owned.captures.insert(c);
            }
        }
    }

    /// The prover's history no longer holds its whole session: its totals cannot be had, and
    /// Prometheus will see what the history holds as a counter reset. Said once.
    fn history_cut(&self) {
        if let Some(l) = self.current_labels() {
            crate::log::log(
                crate::log::Level::Warn,
                "the prover's history has lost its oldest events: its counters restart from what the history holds (a larger PROOFSCOPE_HISTORY_BYTES keeps more)",
                &[("worker", &l.worker)],
            );
        }
    }

    /// The history has been read (`LiveStart`, or the stream ended before it): what it held
    /// is counted now, at once, and the series nothing counted in are made at 0.
    fn caught_up(&mut self) {
        let Some(l) = self.zero_later.take() else {
            return;
        };
        for o in std::mem::take(&mut self.caught) {
            let result = o.result.clone();
            self.record(o);
            self.create_results(&result);
        }
        self.born_at_zero(&l);
    }

    fn count_dropped(&mut self, d: &probe_protocol::Dropped) {
        let Some(s) = self.model.current() else {
            return;
        };
        let Some(l) = self.names.get(&s.key()).cloned() else {
            return;
        };
        let until = self.dropped_until.entry(s.key()).or_default();
        if d.ts <= *until && *until > 0 {
            return;
        }
        *until = d.ts;
        for (kind, n) in &d.counts {
            let k = KindLabels {
                worker: l.worker.clone(),
                kind: kind.name().to_owned(),
            };
            self.m.dropped.get_or_create(&k).inc_by(*n);
            self.owned.kinds.insert(k);
        }
    }

    /// Gauges at the latest samples of the current session; energy as counted differences.
    fn sample(&mut self) {
        let Some(s) = self.model.current() else {
            return;
        };
        let Some(l) = self.names.get(&s.key()).cloned() else {
            return;
        };
        if let Some(a) = s.alloc_samples().last() {
            self.m
                .heap_live
                .get_or_create(&l)
                .set(i64::try_from(a.live_bytes).unwrap_or(i64::MAX));
            if a.rss_bytes > 0 {
                self.m
                    .rss
                    .get_or_create(&l)
                    .set(i64::try_from(a.rss_bytes).unwrap_or(i64::MAX));
            }
        }
        // The probe samples the GPUs the prover can use (CUDA_VISIBLE_DEVICES), by NVML index.
        for (dev, series) in s.gpu_samples() {
            let Some(g) = series.last() else { continue };
            let known = s
                .hello()
                .and_then(|h| h.gpus.iter().find(|i| i.index == *dev));
            let gl = GpuLabels {
                worker: l.worker.clone(),
                gpu: dev.to_string(),
                gpu_uuid: known.map(|i| i.uuid.clone()).unwrap_or_default(),
            };
            let info = GpuInfoLabels {
                worker: l.worker.clone(),
                gpu: gl.gpu.clone(),
                gpu_uuid: gl.gpu_uuid.clone(),
                model: known.map(|i| i.name.clone()).unwrap_or_default(),
            };
            if !self.owned.gpu_info.contains(&info) {
                self.m.gpu_info.get_or_create(&info).set(1);
                self.owned.gpu_info.insert(info);
            }
            if let Some(u) = g.util_pct {
                self.m
                    .gpu_utilization
                    .get_or_create(&gl)
                    .set(f64::from(u) / 100.0);
            }
            if let Some(b) = g.mem_used_bytes {
                self.m
                    .gpu_memory_used
                    .get_or_create(&gl)
                    .set(i64::try_from(b).unwrap_or(i64::MAX));
            }
            if let Some(p) = g.power_mw {
                self.m
                    .gpu_power
                    .get_or_create(&gl)
                    .set(f64::from(p) / 1000.0);
            }
            if let Some(mj) = g.energy_mj {
                let c = self.m.gpu_energy.get_or_create(&gl);
                match self.energy.get(dev) {
                    Some(&(ts, last)) if g.ts > ts && mj >= last => {
                        c.inc_by((mj - last) as f64 / 1000.0);
                    }
                    _ => {}
                }
                if self.energy.get(dev).is_none_or(|&(ts, _)| g.ts > ts) {
                    self.energy.insert(*dev, (g.ts, mj));
                }
            }
            self.owned.gpus.insert(gl);
        }
    }

    /// Counts the proofs that are settled, in order, in every session the model holds.
    /// `ended`: the stream ended, so every completed proof is settled.
    fn settle(&mut self, ended: bool) {
        let mut observed = Vec::new();
        let (names, cap, blackbox) = (&self.names, &self.cap, &mut self.blackbox);
        let missed = self
            .settler
            .round(&self.model, &self.rule, ended, |s, p, report| {
                let Some(l) = names.get(&s.key()) else { return };
                let capture = blackbox
                    .as_mut()
                    .and_then(|b| b.consider(s, p, report, &l.worker));
                observed.push(observe(report, p.failed(), l, cap, capture));
            });
        self.m.proofs_missed.inc_by(missed);
        for o in observed {
            self.hold(o);
        }
        self.release_held(false);
        self.write_captures(ended);
    }

    /// Writes the black box's captures that are due, each counted and told on stderr.
    fn write_captures(&mut self, ended: bool) {
        let Some(b) = &mut self.blackbox else { return };
        for outcome in b.flush(&self.model, ended) {
            let Some(l) = self.current_labels() else {
                continue;
            };
            let c = CaptureLabels {
                worker: l.worker.clone(),
                result: outcome.result().to_owned(),
            };
            self.m.captures.get_or_create(&c).inc();
            self.owned.captures.insert(c);
            crate::log::log(
                crate::log::Level::Info,
                &outcome.describe(),
                &[("worker", &l.worker), ("result", outcome.result())],
            );
        }
    }

    /// Queues a settled proof, creating at 0 the series it is the first to count.
    fn hold(&mut self, o: Observation) {
        if self.zero_later.is_some() {
            self.caught.push(o);
            return;
        }
        let born = self.create_series(&o);
        let scrapes = born.then(|| self.m.scrapes.get());
        self.held.push_back((o, scrapes, Instant::now()));
    }

    /// Counts the held proofs whose new series a scrape has seen (all of them: `all`).
    fn release_held(&mut self, all: bool) {
        let scrapes = self.m.scrapes.get();
        while let Some((_, born, when)) = self.held.front() {
            // The scrape after the one that may have been encoding while the series were
            // made began after they were (scrapes are served one at a time, counted when done).
            let seen = born.is_none_or(|b| scrapes >= b + 2) || when.elapsed() >= BIRTH_HOLD;
            if !(all || seen || self.held.len() > MAX_HELD) {
                break;
            }
            if let Some((o, ..)) = self.held.pop_front() {
                self.record(o);
            }
        }
    }

    /// The series `o` counts in that do not exist yet, created at 0 — every result of its
    /// circuit and backend at once; whether it created any.
    fn create_series(&mut self, o: &Observation) -> bool {
        let mut born = false;
        if !self.owned.proofs.contains(&o.proof) {
            let _ = self.m.proof_duration.get_or_create(&o.proof);
            let _ = self.m.unaccounted.get_or_create(&o.proof);
            self.create_results(&o.result);
            self.owned.proofs.insert(o.proof.clone());
            born = true;
        }
        for (l, _) in &o.phases {
            if !self.owned.phases.contains(l) {
                let _ = self.m.phase_duration.get_or_create(l);
                self.owned.phases.insert(l.clone());
                born = true;
            }
        }
        born
    }

    /// Every `result` series of `r`'s circuit and backend, at 0 where new (created together:
    /// the first failure shows in `increase()`).
    fn create_results(&mut self, r: &ResultLabels) {
        for result in RESULTS {
            let r = ResultLabels {
                result: result.to_owned(),
                ..r.clone()
            };
            let _ = self.m.proofs.get_or_create(&r);
            self.owned.results.insert(r);
        }
    }

    fn record(&mut self, o: Observation) {
        self.m.proofs.get_or_create(&o.result).inc();
        self.m.proof_duration.get_or_create(&o.proof).observe(
            o.duration_s,
            o.capture.map(|capture| CaptureExemplar { capture }),
            None,
        );
        self.m
            .unaccounted
            .get_or_create(&o.proof)
            .observe(o.unaccounted_s);
        for (l, secs) in &o.phases {
            self.m.phase_duration.get_or_create(l).observe(*secs);
        }
        for g in &o.flagged {
            self.m.gaps_flagged.get_or_create(g).inc();
        }
        for (p, count, bytes, secs) in &o.releases {
            self.m.releases.get_or_create(p).inc_by(*count);
            self.m.release_bytes.get_or_create(p).inc_by(*bytes);
            self.m.release_seconds.get_or_create(p).inc_by(*secs);
        }
        self.owned.results.insert(o.result);
        self.owned.proofs.insert(o.proof);
        self.owned
            .phases
            .extend(o.phases.into_iter().map(|(l, _)| l));
        self.owned.gaps.extend(o.flagged);
        self.owned
            .places
            .extend(o.releases.into_iter().map(|(p, ..)| p));
    }
}

/// What one settled proof adds to the metrics.
struct Observation {
    result: ResultLabels,
    proof: ProofLabels,
    duration_s: f64,
    unaccounted_s: f64,
    phases: Vec<(PhaseLabels, f64)>,
    flagged: Vec<GapLabels>,
    releases: Vec<(PlaceLabels, u64, u64, f64)>,
    /// The capture's file name, when the black box keeps this proof.
    capture: Option<String>,
}

fn observe(
    r: &ProofReport,
    failed: bool,
    l: &ProverLabels,
    cap: &LabelCap,
    capture: Option<String>,
) -> Observation {
    fn known(v: &str) -> &str {
        if v.is_empty() { "unknown" } else { v }
    }
    let circuit = cap.value("circuit", known(&r.circuit));
    let backend = known(&r.backend).to_owned();
    let worker = || l.worker.clone();
    let proof = ProofLabels {
        worker: worker(),
        circuit: circuit.clone(),
        backend: backend.clone(),
    };
    let result = ResultLabels {
        worker: worker(),
        circuit: circuit.clone(),
        backend: backend.clone(),
        result: result_label(r, failed).to_owned(),
    };
    let phases = r
        .phases
        .iter()
        .map(|ph| {
            (
                PhaseLabels {
                    worker: worker(),
                    circuit: circuit.clone(),
                    backend: backend.clone(),
                    phase: cap.value("phase", &ph.name),
                },
                ph.duration_ns as f64 / 1e9,
            )
        })
        .collect();
    let flagged = r
        .gaps
        .iter()
        .filter(|g| g.flagged)
        .map(|g| GapLabels {
            worker: worker(),
            kind: g.diagnosis.kind.as_str().to_owned(),
        })
        .collect();
    let releases = places(&r.releases)
        .into_iter()
        .map(|(place, g)| {
            (
                PlaceLabels {
                    worker: worker(),
                    place: place.to_owned(),
                },
                g.count as u64,
                g.bytes,
                g.inside_ns as f64 / 1e9,
            )
        })
        .collect();
    Observation {
        result,
        proof,
        duration_s: r.duration_ns as f64 / 1e9,
        unaccounted_s: r.unaccounted_ns as f64 / 1e9,
        phases,
        flagged,
        releases,
        capture,
    }
}

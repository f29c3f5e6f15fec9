//! The collector thread: drains the thread rings, the allocator's large-block queue and the
//! slow-path queue; converts ticks to session time; encodes each batch once; keeps the flight
//! recorder; fans frames out to subscribers; welcomes new subscribers with `Hello`, the
//! definitions, the history and `LiveStart`, so nothing is missed and nothing is sent twice.
//!
//! One [`Collector::cycle`] is a fixed sequence of named steps; each appends to the cycle's
//! [`Batch`], which is then sent as definitions first (never dropped), data after.

use crate::alloc;
use crate::cadence::Cadence;
use crate::clock::Converter;
use crate::config::HEARTBEAT;
use crate::encoded::{EncodedFrame, dropped_event, encode_all};
use crate::history::History;
use crate::names;
use crate::output;
use crate::ring::{Consumer, RAW_KINDS, RawEvent, RawKind};
use crate::session::{Arrival, Session, SlowEvent, ThreadRing};
use crate::subscriber::SubQueue;
use crate::system;
use crate::thread_ids::ThreadTable;
use probe_protocol::{
    AllocSample, BlockEvent, Event, EventKind, FrameBuilder, HistoryGap, KindCounts, Marker,
    SpanBegin, SpanEnd,
};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// What a session produced, per kind.
#[derive(Debug, Clone, Default)]
pub struct CollectorStats {
    /// Events the collector put into frames for every subscriber (definitions and data; not
    /// the per-subscriber welcome frames, not `Dropped`).
    pub emitted: KindCounts,
    /// Events lost before reaching the collector (full thread rings or queues).
    pub lost: KindCounts,
    /// The session's recording (`PROOFSCOPE_RECORD`, `--record`) failed to write — a full
    /// disk — and holds only what was written before: why.
    pub recording_failed: Option<String>,
}

/// A thread's ring as the collector drains it.
#[derive(Debug)]
struct DrainedRing {
    consumer: Consumer,
    /// Wire id of the thread.
    thread: u32,
    drops_seen: [u64; RAW_KINDS],
}

/// What one cycle gathered.
#[derive(Debug, Default)]
struct Batch {
    defs: Vec<Event>,
    data: Vec<Event>,
}

/// Counters of losses before the collector, as last seen, so each cycle reports the increase.
#[derive(Debug)]
struct LossesSeen {
    alloc: (u64, u64),
    output: u64,
    /// Scheduler readings the program's threads dropped ([`crate::sched_stamp`]).
    sched: u64,
    /// Stack samples the kernel dropped or the stack table refused.
    stack_samples: u64,
    slow: KindCounts,
}

pub(crate) struct Collector {
    session: Arc<Session>,
    builder: FrameBuilder,
    threads: ThreadTable,
    names_sent: u32,
    history: History,
    subs: Vec<Arc<SubQueue>>,
    rings: Vec<DrainedRing>,
    losses_seen: LossesSeen,
    /// Reused buffers: ring records of this cycle (with their ring's thread), slow events.
    raw: Vec<(u32, RawEvent)>,
    slow: Vec<SlowEvent>,
    blocks: Vec<alloc::RawBlock>,
    /// The cycle's batch, kept between cycles for its buffers.
    batch: Batch,
    rss: system::RssReader,
    sched: crate::sched::SchedSampler,
    stacks: crate::stacks::StackTable,
    /// When the next allocator sample is due (the first cycle takes one, as a baseline).
    cadence: Cadence,
    /// Set for the session's last cycle: it takes every large block still queued.
    last_cycle: bool,
    last_send: Instant,
    last_refit: Instant,
    last_retire: Instant,
    /// Events sent in data frames before this cycle's batch: an event's position in the
    /// data stream is this plus its index in the batch. Each data frame remembers the position
    /// of its first event, each thread that of its latest, so a definition can be retired
    /// once eviction has taken every event of its thread.
    data_base: u64,
    stats: CollectorStats,
}

/// The protocol event of a ring record, on thread `thread`.
fn ring_event(e: &RawEvent, thread: u32, ts: u64) -> Event {
    match e.kind() {
        RawKind::SpanBegin => Event::SpanBegin(SpanBegin {
            ts,
            span: e.span,
            parent: (e.parent != 0).then_some(e.parent),
            proof: (e.proof() != 0).then_some(e.proof() as u64),
            name: e.name(),
            thread,
        }),
        RawKind::SpanEnd => Event::SpanEnd(SpanEnd { ts, span: e.span }),
        RawKind::Marker => Event::Marker(Box::new(Marker {
            ts,
            name: e.name(),
            thread,
            span: (e.span != 0).then_some(e.span),
            text: None,
        })),
    }
}

/// The wire kind a hot-path record kind is counted under.
fn wire_kind(k: RawKind) -> EventKind {
    match k {
        RawKind::SpanBegin => EventKind::SpanBegin,
        RawKind::SpanEnd => EventKind::SpanEnd,
        RawKind::Marker => EventKind::Marker,
    }
}

const RAW_KIND_LIST: [RawKind; RAW_KINDS] = [RawKind::SpanBegin, RawKind::SpanEnd, RawKind::Marker];

/// The longest the collector sleeps after an idle cycle (a thread's ring wakes it sooner
/// only when half full).
pub const MAX_IDLE_WAIT: Duration = Duration::from_millis(50);

/// How long the last cycle waits for a probe thread still starting (see
/// [`Collector::before_the_last_cycle`]).
const LAST_DRAIN_WAIT: Duration = Duration::from_millis(500);

impl Collector {
    pub fn new(session: Arc<Session>) -> Collector {
        let budget = session.config.history_bytes;
        let cadence = Cadence::new(session.config.alloc_sample);
        let config = &session.config;
        let stack_hz = if config.sched_sample {
            config.stack_hz
        } else {
            0
        };
        let sched = crate::sched::SchedSampler::new(config.kernel_sample, stack_hz);
        let now = Instant::now();
        Collector {
            session,
            builder: FrameBuilder::new(0),
            threads: ThreadTable::default(),
            names_sent: 0,
            history: History::new(budget),
            subs: Vec::new(),
            rings: Vec::new(),
            losses_seen: LossesSeen {
                alloc: alloc::dropped(),
                output: output::dropped(),
                sched: crate::sched_stamp::dropped(),
                stack_samples: 0,
                slow: KindCounts::ZERO,
            },
            raw: Vec::new(),
            slow: Vec::new(),
            blocks: Vec::new(),
            batch: Batch::default(),
            rss: system::RssReader::new(),
            sched,
            stacks: crate::stacks::StackTable::default(),
            cadence,
            last_cycle: false,
            last_send: now,
            last_refit: now,
            last_retire: now,
            data_base: 0,
            stats: CollectorStats::default(),
        }
    }

    /// Runs until the session stops, then sends the goodbye and closes every queue. The
    /// collector wakes when the next allocator sample is due ([`Cadence`]), and sooner only to
    /// drain again within the flush interval while events flow, or when a thread's ring is
    /// half full or a subscriber arrives (they unpark it); after an idle cycle it still wakes
    /// at least every [`MAX_IDLE_WAIT`], so that a rare sampling cadence does not hold back the
    /// events that end an idle spell. Its wake-ups are most of its cost (~40–55 µs of kernel
    /// time each on the H200 host, docs/BENCHMARKS.md): a drain that fell between two samples,
    /// 5 ms after the last, was an extra one for each burst of events.
    pub fn run(mut self) -> CollectorStats {
        loop {
            let stopping = self.session.control.stopping();
            if stopping {
                self.before_the_last_cycle();
            }
            let moved = self.cycle();
            if stopping {
                break;
            }
            let most = if moved {
                self.flush_every()
            } else {
                MAX_IDLE_WAIT
            };
            std::thread::park_timeout(self.until_next_sample().min(most));
        }
        self.finish();
        self.stats
    }

    /// The last cycle takes every large block still queued. While a probe thread is starting,
    /// a drain leaves them (they might be that thread's own, not yet known as such), and after
    /// the last one nothing would take them: under load a short session lost the program's
    /// last blocks so (`c_api.rs`, 4 runs in 30 beside two busy loops). So it waits for the
    /// thread to start, briefly, and then takes them whatever.
    fn before_the_last_cycle(&mut self) {
        crate::observer::wait_started(LAST_DRAIN_WAIT);
        self.last_cycle = true;
    }

    /// The data-stream position the next event pushed onto `batch` will have.
    fn next_pos(&self, batch: &Batch) -> u64 {
        self.data_base + batch.data.len() as u64
    }

    /// Time until the next allocator sample is due.
    fn until_next_sample(&self) -> Duration {
        self.cadence.until_due(Instant::now())
    }

    /// How soon to drain again while events flow: the configured flush interval, else the
    /// sampling cadence in effect, so that drains fall on the samples' wake-ups.
    fn flush_every(&self) -> Duration {
        self.session
            .config
            .flush_interval
            .unwrap_or(self.cadence.every())
    }

    fn now(&self) -> u64 {
        self.session.clock.now_ns()
    }

    /// One cycle: every step in order, then the batch goes out. Returns whether it moved
    /// any event from the prover (ring records, slow events, large blocks).
    pub fn cycle(&mut self) -> bool {
        self.welcome_arrivals();
        let mut batch = std::mem::take(&mut self.batch);
        let now = self.now();
        let conv = self.session.clock.converter();
        self.adopt_new_rings(&mut batch);
        self.take_ring_records();
        // Slow events go out before the ring records of the same cycle: anything a ring
        // record depends on (a ProofBegin, a name) was queued before it, so is visible now.
        self.take_slow_events(conv, &mut batch);
        self.convert_ring_records(conv, &mut batch);
        self.take_large_blocks(conv, &mut batch);
        let moved = !batch.data.is_empty();
        self.take_output_writes(&mut batch);
        self.take_sched_stamps(&mut batch);
        self.sample_allocator(now, &mut batch);
        self.report_losses(now, &mut batch);
        self.define_new_names(&mut batch);
        self.send_batch(&batch);
        batch.defs.clear();
        batch.data.clear();
        self.batch = batch;
        self.heartbeat_if_idle();
        self.housekeeping();
        self.session.control.cycle_done();
        moved
    }

    /// Threads that joined since the last cycle: their rings, and a wire id for each.
    fn adopt_new_rings(&mut self, batch: &mut Batch) {
        for ThreadRing {
            consumer,
            os_tid,
            thread_name,
        } in self.session.rings.take_new()
        {
            let thread = self
                .threads
                .id_of(os_tid, Some(&thread_name), &mut batch.defs);
            self.threads.attach_ring(thread);
            self.sched.register(thread, os_tid);
            self.rings.push(DrainedRing {
                consumer,
                thread,
                drops_seen: [0; RAW_KINDS],
            });
        }
    }

    /// Drains every ring into `raw`, tagged with its thread.
    fn take_ring_records(&mut self) {
        self.raw.clear();
        let raw = &mut self.raw;
        for r in &mut self.rings {
            let thread = r.thread;
            r.consumer.drain(|e| raw.push((thread, *e)));
        }
    }

    fn take_slow_events(&mut self, conv: Converter, batch: &mut Batch) {
        let mut slow = std::mem::take(&mut self.slow);
        self.session.slow.take_into(&mut slow);
        for s in slow.drain(..) {
            let mut ev = match s {
                SlowEvent::Ticks(t, mut ev) => {
                    ev.set_ts(conv.to_ns(t));
                    ev
                }
                SlowEvent::Session(ev) => ev,
            };
            if let Event::Marker(m) = &mut ev {
                m.thread = self.threads.id_of(m.thread, None, &mut batch.defs);
                self.threads.seen(m.thread, self.next_pos(batch));
            }
            batch.data.push(ev);
        }
        self.slow = slow;
    }

    fn convert_ring_records(&mut self, conv: Converter, batch: &mut Batch) {
        batch.data.reserve(self.raw.len());
        // Records come ring by ring: note each thread once, when its run of records ends
        // (at the position of the run's last record).
        let mut latest: Option<(u32, u64)> = None;
        for (thread, e) in &self.raw {
            let ts = conv.to_ns(e.ticks);
            let begin = match e.kind() {
                RawKind::SpanBegin => Some(true),
                RawKind::SpanEnd => Some(false),
                RawKind::Marker => None,
            };
            if let Some(begin) = begin {
                self.sched.span_edge(*thread, begin);
                self.cadence.stir();
            }
            if let Some((t, pos)) = latest
                && t != *thread
            {
                self.threads.seen(t, pos);
            }
            latest = Some((*thread, self.next_pos(batch)));
            batch.data.push(ring_event(e, *thread, ts));
        }
        if let Some((t, pos)) = latest {
            self.threads.seen(t, pos);
        }
    }

    fn take_large_blocks(&mut self, conv: Converter, batch: &mut Batch) {
        let mut blocks = std::mem::take(&mut self.blocks);
        alloc::drain(self.last_cycle, |b| blocks.push(b));
        if !blocks.is_empty() {
            self.cadence.stir();
        }
        // After the blocks: a block's stack was queued before it, so it is here now.
        let stacks = &mut self.stacks;
        alloc::drain_stacks(|s| stacks.add_pending(s));
        for b in blocks.drain(..) {
            let thread = self.threads.id_of(b.os_tid, None, &mut batch.defs);
            let (ts, end) = if b.session_ns {
                (b.ticks, b.ticks + b.inside_ticks)
            } else {
                (conv.to_ns(b.ticks), conv.to_ns(b.ticks + b.inside_ticks))
            };
            self.threads.seen(thread, self.next_pos(batch));
            let be = BlockEvent {
                ts,
                bytes: b.bytes,
                inside_ns: end.saturating_sub(ts),
                thread,
                span: (b.span != 0).then_some(b.span),
                stack: (b.stack_seq != 0)
                    .then(|| self.stacks.id_of(b.stack_seq, &mut batch.defs))
                    .flatten(),
            };
            batch.data.push(if b.release {
                Event::Release(be)
            } else {
                Event::Alloc(be)
            });
        }
        self.blocks = blocks;
    }

    /// The program's writes to stdout and stderr, on the session clock; their threads are
    /// watched by the scheduler sampler. They do not stir the cadence: a log line is not
    /// memory moving.
    fn take_output_writes(&mut self, batch: &mut Batch) {
        let mut writes = Vec::new();
        output::drain(|w| writes.push(w));
        for w in writes {
            let thread = self.threads.id_of(w.os_tid, None, &mut batch.defs);
            self.sched.watch(thread, w.os_tid);
            batch
                .data
                .push(Event::OutputWrite(probe_protocol::OutputWrite {
                    ts: self.session.clock.monotonic_to_ns(w.mono_ns),
                    thread,
                    stream: w.stream,
                    offset: w.offset,
                    bytes: w.bytes,
                }));
            self.threads.seen(thread, self.next_pos(batch));
        }
    }

    /// Scheduler counters the program's threads read as they were seen running
    /// ([`crate::sched_stamp`]), on the session clock, beside the collector's own samples.
    fn take_sched_stamps(&mut self, batch: &mut Batch) {
        let mut stamps = Vec::new();
        crate::sched_stamp::drain(|r| stamps.push(r));
        let kernel = self.session.config.kernel_sample;
        for r in stamps {
            let thread = self.threads.id_of(r.os_tid, None, &mut batch.defs);
            let ts = self.session.clock.monotonic_to_ns(r.mono_ns);
            batch
                .data
                .push(Event::ThreadSched(probe_protocol::ThreadSched {
                    ts,
                    thread,
                    cpu_ns: r.cpu_ns,
                    runq_ns: r.runq_ns,
                    timeslices: r.timeslices,
                }));
            if let (true, Some(u)) = (kernel, r.usage) {
                // Running as it read them: in no system call.
                batch
                    .data
                    .push(Event::ThreadKernel(probe_protocol::ThreadKernel {
                        ts,
                        thread,
                        minor_faults: u.minor_faults,
                        major_faults: u.major_faults,
                        user_ns: u.user_ns,
                        system_ns: u.system_ns,
                        syscall: None,
                        syscall_arg: 0,
                    }));
            }
            self.threads.seen(thread, self.next_pos(batch));
        }
    }

    fn sample_allocator(&mut self, now: u64, batch: &mut Batch) {
        let at = Instant::now();
        if !self.cadence.due(at) {
            return;
        }
        let t = alloc::totals();
        let live = t.live_bytes();
        let rss = self.rss.bytes();
        self.cadence.sampled(at, live, rss);
        batch.data.push(Event::AllocSample(AllocSample {
            ts: now,
            live_bytes: live,
            peak_bytes: alloc::peak_bytes(live),
            allocs: t.allocs,
            frees: t.frees,
            alloc_bytes: t.alloc_bytes,
            free_bytes: t.free_bytes,
            rss_bytes: rss,
        }));
        if self.session.config.sched_sample {
            let clock = &self.session.clock;
            self.sched.sample(|| clock.now_ns(), &mut batch.data);
            self.take_stack_samples(now, batch);
        }
    }

    /// The call stacks the kernel sampled on the followed threads, each defined once; and,
    /// once, why there are none where the kernel refused.
    fn take_stack_samples(&mut self, now: u64, batch: &mut Batch) {
        let mut samples = Vec::new();
        self.sched.stacks.drain(|t, s| samples.push((t, s)));
        for (thread, s) in samples {
            match self.stacks.id_of_ips(s.ips, &mut batch.defs) {
                Some(stack) => batch
                    .data
                    .push(Event::StackSample(probe_protocol::StackSample {
                        ts: self.session.clock.monotonic_to_ns(s.mono_ns),
                        thread,
                        stack,
                    })),
                // Past the stack table's bound: counted as lost.
                None => self.sched.stacks.lost += 1,
            }
        }
        if let Some(why) = self.sched.stacks.refusal() {
            let me = self.threads.id_of(
                crate::thread::os_tid(),
                Some("probe-collector"),
                &mut batch.defs,
            );
            batch
                .data
                .push(Event::Marker(Box::new(probe_protocol::Marker {
                    ts: now,
                    name: crate::names::intern(probe_protocol::markers::WARNING),
                    thread: me,
                    span: None,
                    text: Some(why),
                })));
        }
    }

    /// Losses before the collector since the last cycle (full rings, full queues), as one
    /// `Dropped` event.
    fn report_losses(&mut self, now: u64, batch: &mut Batch) {
        let mut lost = KindCounts::ZERO;
        for r in &mut self.rings {
            let dropped = r.consumer.dropped();
            for k in RAW_KIND_LIST {
                let i = k as usize;
                lost[wire_kind(k)] += dropped[i] - r.drops_seen[i];
            }
            r.drops_seen = dropped;
        }
        let (da, dr) = alloc::dropped();
        lost[EventKind::Alloc] += da - self.losses_seen.alloc.0;
        lost[EventKind::Release] += dr - self.losses_seen.alloc.1;
        self.losses_seen.alloc = (da, dr);
        let dw = output::dropped();
        lost[EventKind::OutputWrite] += dw - self.losses_seen.output;
        self.losses_seen.output = dw;
        let ds = crate::sched_stamp::dropped();
        lost[EventKind::ThreadSched] += ds - self.losses_seen.sched;
        self.losses_seen.sched = ds;
        let dk = self.sched.stacks.lost;
        lost[EventKind::StackSample] += dk - self.losses_seen.stack_samples;
        self.losses_seen.stack_samples = dk;
        let slow = self.session.slow.dropped();
        lost += &slow.since(&self.losses_seen.slow);
        self.losses_seen.slow = slow;
        self.stats.lost += &lost;
        if let Some(d) = dropped_event(now, &lost) {
            batch.data.push(d);
        }
    }

    /// Names registered since the last cycle (registered before use, so visible now).
    fn define_new_names(&mut self, batch: &mut Batch) {
        let n = names::count();
        if n > self.names_sent {
            for (id, name) in names::range(self.names_sent + 1, n) {
                batch.defs.push(Event::NameDef { id, name });
            }
            self.names_sent = n;
        }
    }

    /// Definitions first (never dropped), then data frames near the target size.
    fn send_batch(&mut self, batch: &Batch) {
        for f in encode_all(&mut self.builder, &batch.defs, true) {
            self.send(Arc::new(f), false);
        }
        for mut f in encode_all(&mut self.builder, &batch.data, false) {
            f.first_pos += self.data_base;
            self.send(Arc::new(f), true);
        }
        self.data_base += batch.data.len() as u64;
        for sub in &self.subs {
            sub.tick();
        }
    }

    fn heartbeat_if_idle(&mut self) {
        if self.last_send.elapsed() < HEARTBEAT {
            return;
        }
        let hb = Event::Heartbeat { ts: self.now() };
        let f = Arc::new(EncodedFrame::encode(&mut self.builder, &[hb], false));
        for sub in &self.subs {
            sub.push_if_idle(f.clone());
        }
        self.last_send = Instant::now();
    }

    /// Clock refits, rings of exited threads retired once drained, closed subscribers gone,
    /// definitions of threads no kept frame mentions forgotten.
    fn housekeeping(&mut self) {
        if self.last_refit.elapsed() >= Duration::from_secs(1) {
            self.session.clock.refit();
            self.last_refit = Instant::now();
        }
        let (threads, sched) = (&mut self.threads, &mut self.sched);
        self.rings.retain(|r| {
            let done = r.consumer.is_closed() && r.consumer.is_empty();
            if done {
                threads.ring_closed(r.thread);
                sched.forget(r.thread);
            }
            !done
        });
        if self.last_retire.elapsed() >= Duration::from_secs(1) {
            self.threads.retire_before(self.history.oldest_pos());
            self.last_retire = Instant::now();
        }
        self.subs.retain(|s| !s.is_closed());
    }

    fn send(&mut self, f: Arc<EncodedFrame>, to_history: bool) {
        self.stats.emitted += &f.counts;
        for sub in &self.subs {
            sub.push(f.clone());
        }
        if to_history {
            self.history.push(f);
        }
        self.last_send = Instant::now();
    }

    /// `Hello` and every definition a viewer needs to decode what follows.
    fn welcome_events(&self) -> Vec<Event> {
        probe_protocol::Welcome {
            hello: Some(self.session.hello.clone()),
            names: names::range(1, self.names_sent),
            threads: self.threads.definitions().collect(),
            stacks: self.stacks.definitions().collect(),
        }
        .into_events()
    }

    fn welcome_arrivals(&mut self) {
        let arrivals = self.session.arrivals.take();
        if arrivals.is_empty() {
            return;
        }
        // Housekeeping forgets threads about once a second, and eviction goes on in between
        // (idle cycles' samples evict too): a welcome forgets them first, so it defines only
        // threads that are alive or that a frame it carries mentions.
        self.threads.retire_before(self.history.oldest_pos());
        let events = self.welcome_events();
        let welcome: Vec<Arc<EncodedFrame>> = encode_all(&mut self.builder, &events, true)
            .into_iter()
            .map(Arc::new)
            .collect();
        for Arrival { queue, history } in arrivals {
            for f in &welcome {
                queue.push(f.clone());
            }
            let now = self.now();
            if history {
                if self.history.evicted_events > 0 {
                    let gap = Event::HistoryGap(HistoryGap {
                        ts: now,
                        evicted_events: self.history.evicted_events,
                        evicted_from: self.history.evicted_from.unwrap_or(0),
                        evicted_until: self.history.evicted_until,
                    });
                    queue.push(Arc::new(EncodedFrame::encode(
                        &mut self.builder,
                        &[gap],
                        true,
                    )));
                }
                for f in self.history.frames() {
                    queue.push_history(f.clone());
                }
            }
            let live = Event::LiveStart { ts: now };
            queue.push(Arc::new(EncodedFrame::encode(
                &mut self.builder,
                &[live],
                true,
            )));
            self.subs.push(queue);
        }
    }

    fn finish(&mut self) {
        // Anyone who arrived during the last cycle still gets a proper session.
        self.welcome_arrivals();
        let bye = Event::Goodbye {
            ts: self.now(),
            reason: self.session.control.goodbye_reason(),
        };
        let f = Arc::new(EncodedFrame::encode(&mut self.builder, &[bye], true));
        for sub in &self.subs {
            sub.push(f.clone());
            sub.close();
        }
    }
}

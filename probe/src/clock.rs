//! The session clock: nanoseconds on the monotonic clock since the session started.
//!
//! The hot path only reads a raw tick: the invariant TSC where the CPU has one (about 12 ns
//! on the build machine, against ~30 ns for `clock_gettime`), otherwise CLOCK_MONOTONIC in ns.
//! Conversion to session nanoseconds happens on the collector thread, piecewise-linearly:
//! the collector re-fits the tick rate against CLOCK_MONOTONIC as the session ages and each new
//! segment starts where the previous one ended, so converted time never jumps.

use std::sync::Mutex;
use std::time::Duration;

/// A raw timestamp as taken on the hot path. Only the [`Clock`] that produced it can convert it.
pub type Ticks = u64;

/// CLOCK_MONOTONIC in nanoseconds.
pub fn monotonic_ns() -> u64 {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: `ts` is a valid, writable timespec; CLOCK_MONOTONIC is always available on Linux.
    unsafe { libc::clock_gettime(libc::CLOCK_MONOTONIC, &mut ts) };
    ts.tv_sec as u64 * 1_000_000_000 + ts.tv_nsec as u64
}

/// Wall-clock time since the Unix epoch in nanoseconds.
pub fn unix_ns() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_nanos() as u64)
        .unwrap_or(0)
}

#[cfg(target_arch = "x86_64")]
#[inline(always)]
fn rdtsc() -> u64 {
    // SAFETY: RDTSC has no memory effects and exists on every x86_64 CPU.
    unsafe { core::arch::x86_64::_rdtsc() }
}

/// Where raw ticks come from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TickSource {
    /// The invariant TSC: a tick is one `rdtsc`; the collector converts.
    Tsc,
    /// CLOCK_MONOTONIC in nanoseconds.
    Monotonic,
}

impl TickSource {
    /// How timestamps are taken, as `Hello.clock` says it.
    pub fn description(self) -> &'static str {
        match self {
            TickSource::Tsc => "monotonic-tsc",
            TickSource::Monotonic => "monotonic",
        }
    }
}

/// Whether the hot path reads the TSC (decided once per process, before the first session).
static USE_TSC: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(false);
static TSC_DECIDED: std::sync::OnceLock<TickSource> = std::sync::OnceLock::new();

fn tsc_is_invariant() -> bool {
    #[cfg(target_arch = "x86_64")]
    {
        // Miri has no `rdtsc`: its runs tick on CLOCK_MONOTONIC.
        if cfg!(miri) || std::env::var_os("PROOFSCOPE_NO_TSC").is_some() {
            return false;
        }
        let Ok(info) = std::fs::read_to_string("/proc/cpuinfo") else {
            return false;
        };
        let flags = info.lines().find(|l| l.starts_with("flags")).unwrap_or("");
        let has = |f: &str| flags.split_whitespace().any(|x| x == f);
        has("constant_tsc") && has("nonstop_tsc")
    }
    #[cfg(not(target_arch = "x86_64"))]
    {
        false
    }
}

/// Decides the tick source; called when a session starts, before any hot-path read.
pub fn init_tick_source() -> TickSource {
    *TSC_DECIDED.get_or_init(|| {
        let source = if tsc_is_invariant() {
            TickSource::Tsc
        } else {
            TickSource::Monotonic
        };
        USE_TSC.store(
            source == TickSource::Tsc,
            std::sync::atomic::Ordering::Relaxed,
        );
        source
    })
}

/// Reads a raw tick from `source`.
#[inline(always)]
pub fn read(source: TickSource) -> Ticks {
    match source {
        TickSource::Tsc => tsc_ticks(),
        TickSource::Monotonic => monotonic_ns(),
    }
}

/// The TSC, for paths that already know the session ticks on it (the span fast path is only
/// taken then). Elsewhere, never reached; it returns CLOCK_MONOTONIC to stay defined.
#[inline(always)]
pub fn tsc_ticks() -> Ticks {
    #[cfg(target_arch = "x86_64")]
    {
        rdtsc()
    }
    #[cfg(not(target_arch = "x86_64"))]
    {
        monotonic_ns()
    }
}

/// Reads the raw tick from the process's source. One predictable branch and one RDTSC.
#[inline(always)]
pub fn ticks() -> Ticks {
    #[cfg(target_arch = "x86_64")]
    {
        if USE_TSC.load(std::sync::atomic::Ordering::Relaxed) {
            return rdtsc();
        }
    }
    monotonic_ns()
}

#[derive(Debug, Clone, Copy)]
struct Segment {
    /// First tick of the segment.
    tick0: u64,
    /// Session ns at `tick0`.
    ns0: f64,
    ns_per_tick: f64,
}

/// Converts ticks to session nanoseconds. Owned by the session; refitted by the collector.
#[derive(Debug)]
pub struct Clock {
    source: TickSource,
    /// CLOCK_MONOTONIC at session time 0.
    mono0: u64,
    unix0: u64,
    /// (tick, monotonic ns) taken together at session start, anchor of every refit.
    anchor: (u64, u64),
    segments: Mutex<(Segment, Option<Segment>)>,
}

/// Reads a tick and CLOCK_MONOTONIC as close together as possible (the pair with the shortest
/// bracketing of three tries).
fn paired_reading() -> (u64, u64) {
    let mut best = (u64::MAX, 0, 0);
    for _ in 0..3 {
        let a = ticks();
        let m = monotonic_ns();
        let b = ticks();
        if b.wrapping_sub(a) < best.0 {
            best = (b.wrapping_sub(a), a + (b.wrapping_sub(a)) / 2, m);
        }
    }
    (best.1, best.2)
}

impl Clock {
    /// Starts a session clock. With a TSC, spends ~2 ms measuring its rate; refits improve it.
    pub fn start() -> Clock {
        let source = init_tick_source();
        let unix0 = unix_ns();
        let (t0, m0) = paired_reading();
        let ns_per_tick = if source == TickSource::Tsc {
            std::thread::sleep(Duration::from_millis(2));
            let (t1, m1) = paired_reading();
            (m1 - m0) as f64 / (t1.wrapping_sub(t0)).max(1) as f64
        } else {
            1.0
        };
        Clock {
            source,
            mono0: m0,
            unix0,
            anchor: (t0, m0),
            segments: Mutex::new((
                Segment {
                    tick0: t0,
                    ns0: 0.0,
                    ns_per_tick,
                },
                None,
            )),
        }
    }

    /// Where this session's ticks come from.
    pub fn source(&self) -> TickSource {
        self.source
    }

    pub fn unix_start_ns(&self) -> u64 {
        self.unix0
    }

    /// Session nanoseconds now (slow path: for threads that do not use raw ticks).
    pub fn now_ns(&self) -> u64 {
        self.to_ns(ticks())
    }

    /// Converts a CLOCK_MONOTONIC reading to session time.
    pub fn monotonic_to_ns(&self, mono: u64) -> u64 {
        mono.saturating_sub(self.mono0)
    }

    /// Converts raw ticks to session nanoseconds (0 for ticks before the session).
    pub fn to_ns(&self, t: Ticks) -> u64 {
        self.converter().to_ns(t)
    }

    /// A lock-free snapshot of the conversion, for converting a whole batch.
    pub fn converter(&self) -> Converter {
        let segs = match self.segments.lock() {
            Ok(g) => *g,
            Err(p) => *p.into_inner(),
        };
        Converter {
            tsc: self.source == TickSource::Tsc,
            mono0: self.mono0,
            old: segs.0,
            new: segs.1,
        }
    }

    /// Refits the tick rate over the whole session so far; a new segment starts now, continuous
    /// with the current one. Called by the collector about once a second.
    pub fn refit(&self) {
        if self.source != TickSource::Tsc {
            return;
        }
        let (t, m) = paired_reading();
        let span_ticks = t.wrapping_sub(self.anchor.0);
        if span_ticks == 0 {
            return;
        }
        let rate = (m - self.anchor.1) as f64 / span_ticks as f64;
        let mut g = match self.segments.lock() {
            Ok(g) => g,
            Err(p) => p.into_inner(),
        };
        let current = g.1.unwrap_or(g.0);
        let ns_here =
            current.ns0 + (t as i128 - current.tick0 as i128) as f64 * current.ns_per_tick;
        // Keep the previous segment for late events with older ticks.
        *g = (
            current,
            Some(Segment {
                tick0: t,
                ns0: ns_here,
                ns_per_tick: rate,
            }),
        );
    }
}

/// Tick → session ns for one batch (see [`Clock::converter`]).
#[derive(Debug, Clone, Copy)]
pub struct Converter {
    tsc: bool,
    mono0: u64,
    old: Segment,
    new: Option<Segment>,
}

impl Converter {
    #[inline]
    pub fn to_ns(self, t: Ticks) -> u64 {
        if !self.tsc {
            return t.saturating_sub(self.mono0);
        }
        let seg = match self.new {
            Some(new) if t >= new.tick0 => new,
            _ => self.old,
        };
        // Ticks within ±2^63 of the segment start: exact in i64, then one multiply in f64.
        let dt = t.wrapping_sub(seg.tick0) as i64;
        let ns = seg.ns0 + dt as f64 * seg.ns_per_tick;
        if ns <= 0.0 { 0 } else { ns as u64 }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    #[cfg_attr(miri, ignore = "times a sleep; Miri runs far slower than the clock")]
    fn session_time_follows_the_monotonic_clock() {
        let c = Clock::start();
        let a = c.now_ns();
        std::thread::sleep(Duration::from_millis(30));
        c.refit();
        let b = c.now_ns();
        let mono = c.monotonic_to_ns(monotonic_ns());
        assert!(b > a);
        let elapsed = b - a;
        assert!((25_000_000..200_000_000).contains(&elapsed), "{elapsed}");
        // Within 1 ms of CLOCK_MONOTONIC after a refit.
        assert!(mono.abs_diff(b) < 1_000_000, "tsc {b} vs mono {mono}");
    }

    #[test]
    fn refit_never_moves_time_backwards() {
        let c = Clock::start();
        let mut last = 0;
        for _ in 0..50 {
            let t = c.now_ns();
            assert!(t + 2_000 >= last, "{t} < {last}");
            last = t;
            c.refit();
        }
    }
}

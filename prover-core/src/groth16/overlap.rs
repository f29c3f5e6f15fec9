//! Batches that overlap: while one batch runs its device phases, the next is synthesised
//! (`serve`, unless `--sequential`). Two workers take the batches in turn, so at most two are in
//! flight and the second is at most one batch ahead; each batch stays on one thread from its
//! synthesis to its release (its outer span opens and closes there). The order is kept by three
//! counters: batch i synthesises after batch i − 1 has, takes the devices after batch i − 1 has
//! given them back, and starts beside batch i − 1 only when the memory for a second batch's
//! proving vectors is available; the check's figures go into the proof as a marker. Synthesis
//! runs on a pool of lower-priority threads, so the batch ahead takes only the cores the
//! current batch leaves.

use super::pipeline::Stages;
use std::sync::{Condvar, Mutex, MutexGuard};

#[derive(Debug, Default)]
struct State {
    /// Batches whose synthesis is over (0..synthesized).
    synthesized: u64,
    /// Batches whose device phases are over.
    devices_done: u64,
    /// Batches that have ended.
    finished: u64,
    /// No batch at or past this one starts.
    stop_at: Option<u64>,
    /// Bytes of proving vectors the last finished batch released (the next batch's need).
    last_batch_bytes: Option<u64>,
}

/// The coordinator of the two workers.
#[derive(Debug, Default)]
pub struct Overlap {
    state: Mutex<State>,
    turn: Condvar,
}

/// How batch i was admitted.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Admission {
    /// Whether it started while batch i − 1 was still in flight.
    pub beside_previous: bool,
    /// The marker text that says why.
    pub note: String,
}

/// Where the memory check's figures come from.
#[derive(Debug, Clone, Copy)]
pub struct MemoryNeed {
    /// Bytes of proving vectors one batch holds: the last batch's, or an estimate from the shape.
    pub bytes: u64,
    pub measured: bool,
}

/// "26.8 GB" or "53 MB".
fn size(b: u64) -> String {
    if b >= 1_000_000_000 {
        format!("{:.1} GB", b as f64 / 1e9)
    } else {
        format!("{:.0} MB", b as f64 / 1e6)
    }
}

impl Overlap {
    fn lock(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }

    fn wait_until(&self, batch: u64, mut ready: impl FnMut(&State) -> bool) -> bool {
        let mut g = self.lock();
        loop {
            if g.stop_at.is_some_and(|s| batch >= s) {
                return false;
            }
            if ready(&g) {
                return true;
            }
            g = self.turn.wait(g).unwrap_or_else(|p| p.into_inner());
        }
    }

    /// The bytes one batch is expected to need: the last finished batch's release, else
    /// `estimate`.
    pub fn need(&self, estimate: u64) -> MemoryNeed {
        match self.lock().last_batch_bytes {
            Some(bytes) => MemoryNeed {
                bytes,
                measured: true,
            },
            None => MemoryNeed {
                bytes: estimate,
                measured: false,
            },
        }
    }

    /// Blocks until batch `batch` may start synthesising; `None` when the run stops first.
    /// `available` reads the memory available now (None: unknown); a batch starts beside the
    /// previous one only when that covers `need` with a tenth to spare.
    pub fn admit(
        &self,
        batch: u64,
        need: MemoryNeed,
        available: impl Fn() -> Option<u64>,
    ) -> Option<Admission> {
        if !self.wait_until(batch, |s| s.synthesized >= batch) {
            return None;
        }
        if batch == 0 || self.lock().finished >= batch {
            return Some(Admission {
                beside_previous: false,
                note: "no batch in flight: started alone".into(),
            });
        }
        let what = if need.measured {
            "the last batch released"
        } else {
            "estimated from the circuit's shape"
        };
        let want = need.bytes + need.bytes / 10;
        match available() {
            Some(avail) if avail >= want => Some(Admission {
                beside_previous: true,
                note: format!(
                    "synthesised beside the previous batch: {} of proving vectors needed ({what}), {} available",
                    size(need.bytes),
                    size(avail)
                ),
            }),
            avail => {
                let had = avail.map_or("unknown".to_owned(), size);
                if !self.wait_until(batch, |s| s.finished >= batch) {
                    return None;
                }
                Some(Admission {
                    beside_previous: false,
                    note: format!(
                        "waited for the previous batch to end before synthesising: {} of proving vectors needed ({what}), {had} available",
                        size(need.bytes)
                    ),
                })
            }
        }
    }

    /// Batch `batch` has ended (whatever happened to it): every stage it held is passed on.
    pub fn finished(&self, batch: u64, released_bytes: Option<u64>) {
        let mut g = self.lock();
        g.synthesized = g.synthesized.max(batch + 1);
        g.devices_done = g.devices_done.max(batch + 1);
        g.finished = g.finished.max(batch + 1);
        if let Some(b) = released_bytes.filter(|&b| b > 0) {
            g.last_batch_bytes = Some(b);
        }
        self.turn.notify_all();
    }

    /// No batch at or past `batch` starts; workers waiting for one give up.
    pub fn stop_at(&self, batch: u64) {
        let mut g = self.lock();
        g.stop_at = Some(g.stop_at.map_or(batch, |s| s.min(batch)));
        self.turn.notify_all();
    }

    /// The stages of batch `batch`, for [`super::pipeline::BatchRequest::stages`], with its
    /// synthesis on `pool` when given.
    pub fn turn<'o>(
        &'o self,
        batch: u64,
        note: String,
        pool: Option<&'o rayon::ThreadPool>,
    ) -> Turn<'o> {
        Turn {
            overlap: self,
            batch,
            note,
            pool,
        }
    }
}

/// One batch's place in the order.
#[derive(Debug)]
pub struct Turn<'o> {
    overlap: &'o Overlap,
    batch: u64,
    note: String,
    pool: Option<&'o rayon::ThreadPool>,
}

impl Stages for Turn<'_> {
    fn begun(&self) {
        crate::probe::marker_with_text(probe_protocol::markers::MEMORY_CHECK, self.note.clone());
    }

    fn synthesized(&self) {
        let mut g = self.overlap.lock();
        g.synthesized = g.synthesized.max(self.batch + 1);
        self.overlap.turn.notify_all();
    }

    fn take_devices(&self) {
        // A stop cannot strand this wait: the batch before this one is in flight and ends.
        self.overlap
            .wait_until(self.batch, |s| s.devices_done >= self.batch);
    }

    fn free_devices(&self) {
        let mut g = self.overlap.lock();
        g.devices_done = g.devices_done.max(self.batch + 1);
        self.overlap.turn.notify_all();
    }

    fn synthesis_pool(&self) -> Option<&rayon::ThreadPool> {
        self.pool
    }
}

/// Nice value of the synthesis threads: below the threads that feed the GPU and prepare the
/// current batch, which take the cores they need first. On the H200 host, with synthesis at the
/// same priority in rayon's global pool, the batch beside it took 16.6 s for a 1.4 s prep_msm
/// and its GPU idled (48 × SHA-256 2^22).
pub const SYNTHESIS_NICE: i32 = 10;

/// A pool for synthesis, `synth-<i>` threads at [`SYNTHESIS_NICE`], one per core.
pub fn synthesis_pool() -> Result<rayon::ThreadPool, rayon::ThreadPoolBuildError> {
    rayon::ThreadPoolBuilder::new()
        .thread_name(|i| format!("synth-{i}"))
        .start_handler(|_| lower_priority(SYNTHESIS_NICE))
        .build()
}

/// Lowers the calling thread's priority (Linux: a thread's own nice value); best effort.
fn lower_priority(nice: i32) {
    #[cfg(target_os = "linux")]
    // SAFETY: setpriority with PRIO_PROCESS and who = 0 changes the calling thread's nice
    // value on Linux (threads have their own); it reads and writes no memory of ours.
    unsafe {
        libc::setpriority(libc::PRIO_PROCESS, 0, nice);
    }
    #[cfg(not(target_os = "linux"))]
    let _ = nice;
}

/// Bytes of memory available to a new allocation now (`MemAvailable`), where the system says.
pub fn available_memory() -> Option<u64> {
    let text = std::fs::read_to_string("/proc/meminfo").ok()?;
    let line = text.lines().find(|l| l.starts_with("MemAvailable:"))?;
    let kb: u64 = line.split_whitespace().nth(1)?.parse().ok()?;
    Some(kb * 1024)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Arc;
    use std::time::Duration;

    /// A named thread running `f`.
    fn spawn<T: Send + 'static>(
        name: &str,
        f: impl FnOnce() -> T + Send + 'static,
    ) -> std::thread::JoinHandle<T> {
        std::thread::Builder::new()
            .name(name.into())
            .spawn(f)
            .unwrap()
    }

    const NEED: MemoryNeed = MemoryNeed {
        bytes: 1 << 30,
        measured: false,
    };

    #[test]
    fn the_first_batch_starts_alone_and_the_second_after_its_synthesis() {
        let o = Arc::new(Overlap::default());
        let a = o.admit(0, NEED, || Some(u64::MAX)).unwrap();
        assert!(!a.beside_previous);
        let o2 = o.clone();
        let second = spawn("batch-1", move || o2.admit(1, NEED, || Some(4 << 30)));
        std::thread::sleep(Duration::from_millis(50));
        assert!(
            !second.is_finished(),
            "batch 1 waits for batch 0's synthesis"
        );
        o.turn(0, String::new(), None).synthesized();
        let a = second.join().unwrap().unwrap();
        assert!(a.beside_previous, "{a:?}");
        assert!(
            a.note.contains("1.1 GB of proving vectors needed"),
            "{}",
            a.note
        );
    }

    #[test]
    fn without_the_memory_the_next_batch_waits_for_the_previous_to_end() {
        let o = Arc::new(Overlap::default());
        o.admit(0, NEED, || None).unwrap();
        o.turn(0, String::new(), None).synthesized();
        let o2 = o.clone();
        let second = spawn("batch-1", move || o2.admit(1, NEED, || Some(1 << 30)));
        std::thread::sleep(Duration::from_millis(50));
        assert!(!second.is_finished(), "1.0 GB does not cover 1.1 GB");
        o.finished(0, Some(2 << 30));
        let a = second.join().unwrap().unwrap();
        assert!(!a.beside_previous);
        assert!(
            a.note.contains("waited for the previous batch"),
            "{}",
            a.note
        );
        // The next need is what batch 0 released.
        let n = o.need(7);
        assert!(n.measured && n.bytes == 2 << 30);
    }

    #[test]
    fn devices_are_taken_in_batch_order_and_a_stop_releases_waiters() {
        let o = Arc::new(Overlap::default());
        let o2 = o.clone();
        let taker = spawn("batch-1", move || {
            o2.turn(1, String::new(), None).take_devices()
        });
        std::thread::sleep(Duration::from_millis(50));
        assert!(!taker.is_finished(), "batch 1 waits for batch 0's devices");
        o.turn(0, String::new(), None).free_devices();
        taker.join().unwrap();
        let o3 = o.clone();
        let waiter = spawn("batch-3", move || o3.admit(3, NEED, || Some(u64::MAX)));
        o.stop_at(3);
        assert_eq!(waiter.join().unwrap(), None);
    }
}

//! The `TIMELINE` GPU runs of a log, indexed so that filing a line costs the same at the
//! 100,000th partition as at the first: each edge (`GPU_PICKUP`, `GPU_START`, `GPU_END`)
//! finds the earliest run of its job still waiting for it, and a call claims the
//! earliest-started run nobody has claimed, by looking up sorted sets instead of scanning
//! every run (the scans took import of 20k partitions to 4.2 s, ×13 for ×4 partitions).

use super::lines::Key as Name;
use foldhash::{HashMap, HashMapExt as _};
use std::collections::BTreeSet;

/// A `TIMELINE` GPU run of one job's partition (offsets in ms from the daemon's start).
#[derive(Debug, Clone, Default)]
pub struct GpuRun {
    pub job: Name,
    pub partition: Option<Name>,
    pub queue: Option<u64>,
    pub pickup: Option<u64>,
    pub start: Option<u64>,
    pub end: Option<u64>,
    pub claimed: bool,
    pub segment: usize,
}

/// The edges of a run a `TIMELINE` line can set after its `GPU_QUEUE`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Edge {
    Pickup,
    Start,
    End,
}

impl Edge {
    const ALL: [Edge; 3] = [Edge::Pickup, Edge::Start, Edge::End];

    fn slot(self, r: &GpuRun) -> Option<u64> {
        match self {
            Edge::Pickup => r.pickup,
            Edge::Start => r.start,
            Edge::End => r.end,
        }
    }
}

/// The runs of one (session, job) — or of one (session, job, partition) — in the order they
/// were pushed, and per edge the position of the first one that edge has not reached. An
/// edge is set once and never unset, so each cursor only moves forward: filing an edge costs
/// O(1) amortised and a key costs one vector (three B-tree sets a key, allocated per
/// partition and freed at the end, were half of importing 100k partitions).
#[derive(Debug, Default)]
struct Waiting {
    runs: Vec<usize>,
    next: [usize; 3],
}

/// A key of [`Runs::waiting`]: segment, job and partition, the strings interned.
type Key = (usize, u32, Option<u32>);

/// Every run, and the indexes over them. The maps hash with foldhash, seeded per process:
/// SipHash was a seventh of reading 100k partitions, and a log's author sees no hash values
/// to aim collisions with.
#[derive(Debug)]
pub struct Runs {
    all: Vec<GpuRun>,
    /// Job and partition names, each given a number once (looked up by `&str`: no key is
    /// built per line).
    names: HashMap<String, u32>,
    /// Keyed by (segment, job, partition): `None` holds every run of the job, `Some(p)` the
    /// runs of partition `p`.
    waiting: HashMap<Key, Waiting>,
    /// (start, index) of runs started, not ended and not claimed.
    running: BTreeSet<(u64, usize)>,
    /// (start, index) of runs started and not claimed.
    started: BTreeSet<(u64, usize)>,
    /// Per segment, the runs started and not ended, claimed or not: how many calls may be
    /// open at once (two GPU workers, two calls whose lines interleave).
    in_flight: HashMap<usize, usize>,
}

impl Default for Runs {
    fn default() -> Runs {
        Runs {
            all: Vec::new(),
            names: HashMap::new(),
            waiting: HashMap::new(),
            running: BTreeSet::new(),
            started: BTreeSet::new(),
            in_flight: HashMap::new(),
        }
    }
}

impl std::ops::Index<usize> for Runs {
    type Output = GpuRun;
    fn index(&self, i: usize) -> &GpuRun {
        &self.all[i]
    }
}

impl Runs {
    /// Adds a run with no edges set yet (its `GPU_QUEUE`, or an edge without one); its index.
    pub fn push(&mut self, run: GpuRun) -> usize {
        let i = self.all.len();
        let keys = self.keys_of(&run);
        self.all.push(run);
        for key in keys.into_iter().flatten() {
            self.waiting.entry(key).or_default().runs.push(i);
            self.advance(key);
        }
        i
    }

    /// The earliest run of `job` in `segment` (of `partition`, when the line names one) that
    /// `edge` has not reached yet.
    pub fn waiting_for(
        &self,
        segment: usize,
        job: &str,
        partition: Option<&str>,
        edge: Edge,
    ) -> Option<usize> {
        let job = *self.names.get(job)?;
        let partition = match partition {
            Some(p) => Some(*self.names.get(p)?),
            None => None,
        };
        let w = self.waiting.get(&(segment, job, partition))?;
        w.runs.get(w.next[edge as usize]).copied()
    }

    /// Sets `edge` of run `i` to `t`.
    pub fn set(&mut self, i: usize, edge: Edge, t: u64) {
        let r = &mut self.all[i];
        let was_in_flight = r.start.is_some() && r.end.is_none();
        match edge {
            Edge::Pickup => r.pickup = Some(t),
            Edge::Start => r.start = Some(t),
            Edge::End => r.end = Some(t),
        }
        let in_flight = r.start.is_some() && r.end.is_none();
        let n = self.in_flight.entry(r.segment).or_default();
        match (was_in_flight, in_flight) {
            (false, true) => *n += 1,
            (true, false) => *n -= 1,
            _ => {}
        }
        for key in self.keys_of_known(i).into_iter().flatten() {
            self.advance(key);
        }
        let r = &self.all[i];
        let Some(start) = r.start else { return };
        if r.claimed {
            return;
        }
        match edge {
            Edge::Start => {
                self.started.insert((start, i));
                if r.end.is_none() {
                    self.running.insert((start, i));
                }
            }
            Edge::End => {
                self.running.remove(&(start, i));
            }
            Edge::Pickup => {}
        }
    }

    /// Moves each cursor of `key` past the runs its edge has reached.
    fn advance(&mut self, key: Key) {
        let Some(w) = self.waiting.get_mut(&key) else {
            return;
        };
        for e in Edge::ALL {
            let next = &mut w.next[e as usize];
            while let Some(&j) = w.runs.get(*next) {
                if e.slot(&self.all[j]).is_none() {
                    break;
                }
                *next += 1;
            }
        }
    }

    /// How many runs of `segment` have started and not ended.
    pub fn in_flight(&self, segment: usize) -> usize {
        self.in_flight.get(&segment).copied().unwrap_or(0)
    }

    /// Claims the earliest-started run that has not ended and no call has claimed.
    pub fn claim_running(&mut self) -> Option<usize> {
        let &(_, i) = self.running.first()?;
        self.claim(i);
        Some(i)
    }

    /// Claims the earliest-started run no call has claimed, ended or not.
    pub fn claim_started(&mut self) -> Option<usize> {
        let &(_, i) = self.started.first()?;
        self.claim(i);
        Some(i)
    }

    /// Every started run no call has claimed, claimed now, in the order they were queued.
    pub fn claim_the_rest(&mut self) -> Vec<usize> {
        let mut left: Vec<usize> = self.started.iter().map(|&(_, i)| i).collect();
        left.sort_unstable();
        for &i in &left {
            self.claim(i);
        }
        left
    }

    fn claim(&mut self, i: usize) {
        let r = &mut self.all[i];
        r.claimed = true;
        if let Some(s) = r.start {
            self.running.remove(&(s, i));
            self.started.remove(&(s, i));
        }
    }

    /// The keys a new run is filed under (its names interned now).
    fn keys_of(&mut self, r: &GpuRun) -> [Option<Key>; 2] {
        let job = self.intern(&r.job);
        let part = r.partition.as_deref().map(|p| self.intern(p));
        [
            Some((r.segment, job, None)),
            part.map(|p| (r.segment, job, Some(p))),
        ]
    }

    /// The keys run `i` was filed under.
    fn keys_of_known(&self, i: usize) -> [Option<Key>; 2] {
        let r = &self.all[i];
        let Some(&job) = self.names.get(r.job.as_str()) else {
            return [None, None];
        };
        let part = r.partition.as_deref().and_then(|p| self.names.get(p));
        [
            Some((r.segment, job, None)),
            part.map(|&p| (r.segment, job, Some(p))),
        ]
    }

    fn intern(&mut self, name: &str) -> u32 {
        if let Some(&id) = self.names.get(name) {
            return id;
        }
        let id = self.names.len() as u32;
        self.names.insert(name.to_owned(), id);
        id
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn run(job: &str, partition: Option<&str>) -> GpuRun {
        GpuRun {
            job: job.into(),
            partition: partition.map(Into::into),
            ..GpuRun::default()
        }
    }

    #[test]
    fn an_edge_goes_to_the_earliest_run_of_its_job_and_partition_still_waiting() {
        let mut r = Runs::default();
        let a = r.push(run("s1", Some("0")));
        let b = r.push(run("s1", Some("1")));
        let c = r.push(run("s2", None));
        assert_eq!(r.waiting_for(0, "s1", None, Edge::Start), Some(a));
        assert_eq!(r.waiting_for(0, "s1", Some("1"), Edge::Start), Some(b));
        assert_eq!(r.waiting_for(0, "s2", Some("1"), Edge::Start), None);
        assert_eq!(r.waiting_for(1, "s1", None, Edge::Start), None);
        r.set(a, Edge::Start, 10);
        assert_eq!(r.waiting_for(0, "s1", None, Edge::Start), Some(b));
        assert_eq!(r.waiting_for(0, "s1", Some("0"), Edge::Start), None);
        assert_eq!(r.waiting_for(0, "s1", Some("0"), Edge::End), Some(a));
        assert_eq!(r.waiting_for(0, "s2", None, Edge::Pickup), Some(c));
    }

    #[test]
    fn calls_claim_the_earliest_started_run_once() {
        let mut r = Runs::default();
        let a = r.push(run("j", Some("0")));
        let b = r.push(run("j", Some("1")));
        let c = r.push(run("j", Some("2")));
        r.set(b, Edge::Start, 5);
        r.set(a, Edge::Start, 7);
        r.set(c, Edge::Start, 9);
        r.set(b, Edge::End, 8);
        // b ended: the running one started first is a.
        assert_eq!(r.claim_running(), Some(a));
        assert_eq!(r.claim_running(), Some(c));
        assert_eq!(r.claim_running(), None);
        assert_eq!(r.claim_started(), Some(b));
        assert_eq!(r.claim_started(), None);
        assert!(r[a].claimed && r[b].claimed && r[c].claimed);
    }

    #[test]
    fn the_rest_is_claimed_in_queue_order() {
        let mut r = Runs::default();
        let a = r.push(run("j", None));
        let b = r.push(run("j", None));
        let never = r.push(run("j", None));
        r.set(b, Edge::Start, 1);
        r.set(a, Edge::Start, 2);
        assert_eq!(r.claim_the_rest(), vec![a, b]);
        assert!(!r[never].claimed);
    }
}

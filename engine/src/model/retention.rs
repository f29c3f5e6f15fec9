//! Keeping the model within [`Retention`]: when it holds too many proofs or too many bytes, it
//! evicts, oldest first — whole proofs (and the samples older than what is left), then samples
//! and spans outside proofs, then sessions that have nothing else left. Every eviction is
//! counted.

use super::ingest::{BLOCK_BYTES, SAMPLE_BYTES};
use super::proof::cost;
use super::series::{TimeSeries, Timed};
use super::{Model, Retention, Session};
use std::collections::BTreeMap;

impl Model {
    fn over(&self) -> bool {
        self.proofs_held > self.retention.max_proofs || self.approx_bytes > self.retention.max_bytes
    }

    pub(super) fn enforce_retention(&mut self) {
        while self.over() {
            if !(self.evict_oldest_proof() || self.trim_outside_proofs() || self.drop_old_session())
            {
                break;
            }
        }
    }

    fn release(&mut self, si: usize, bytes: usize) {
        self.approx_bytes = self.approx_bytes.saturating_sub(bytes);
        let s = &mut self.sessions[si];
        s.bytes = s.bytes.saturating_sub(bytes);
    }

    /// Evicts the oldest proof of the oldest session that has one (and the samples older than
    /// what is left of that session). False when no proof is left.
    fn evict_oldest_proof(&mut self) -> bool {
        let from = self.proofless.min(self.sessions.len());
        let Some(si) = self.sessions[from..]
            .iter()
            .position(|s| !s.proofs.is_empty())
            .map(|i| i + from)
        else {
            self.proofless = self.sessions.len().saturating_sub(1);
            return false;
        };
        self.proofless = si;
        let s = &mut self.sessions[si];
        let Some((id, p)) = s.proofs.pop_first() else {
            return false;
        };
        s.evicted_below = s.evicted_below.max(id.get().saturating_add(1));
        s.evicted_proofs += 1;
        self.proofs_held = self.proofs_held.saturating_sub(1);
        for sp in p.spans() {
            s.span_proof.remove(&sp.id);
        }
        let mut freed = p.approx_bytes();
        self.evicted_proofs += 1;
        let mut events = p.events();
        // Series older than the oldest proof left go too.
        if let Some(start) = s
            .proofs
            .values()
            .next()
            .and_then(|p| p.spans().iter().map(|x| x.start).min())
        {
            let n = s.trim_series_before(start);
            events += n as u64;
            freed += n * SAMPLE_BYTES;
        }
        self.evicted_events += events;
        self.release(si, freed);
        true
    }

    /// With no proof left to evict: halves the oldest session's largest store outside proofs
    /// (a time series, or the spans and markers that belong to no proof). False when there is
    /// nothing outside proofs.
    fn trim_outside_proofs(&mut self) -> bool {
        let last = self.sessions.len().saturating_sub(1);
        for si in self.bare.min(self.sessions.len())..self.sessions.len() {
            let Some((removed, each)) = self.sessions[si].trim_largest_store() else {
                if si < last {
                    self.bare = si + 1;
                }
                continue;
            };
            self.evicted_events += removed as u64;
            self.release(si, removed * each);
            return true;
        }
        false
    }

    /// Removes the oldest session when it is not the current one. False when only the current
    /// session is left.
    fn drop_old_session(&mut self) -> bool {
        if self.sessions.len() < 2 {
            return false;
        }
        let Some(s) = self.sessions.pop_front() else {
            return false;
        };
        self.proofless = self.proofless.saturating_sub(1);
        self.bare = self.bare.saturating_sub(1);
        self.proofs_held = self.proofs_held.saturating_sub(s.proofs.len());
        self.approx_bytes = self.approx_bytes.saturating_sub(s.bytes);
        self.evicted_events += s.events;
        self.evicted_sessions += 1;
        true
    }
}

/// The stores of a session outside its proofs, as retention trims them.
#[derive(Clone, Copy)]
enum Store {
    Alloc,
    Releases,
    Allocs,
    Gpu,
    Loose,
    Drops,
    Sched,
    Kernel,
    StackSamples,
    Output,
}

/// Drops the samples before `ts` of every series of a map; returns how many.
fn trim_all_before<K, T: Timed>(map: &mut BTreeMap<K, TimeSeries<T>>, ts: u64) -> usize {
    map.values_mut().map(|t| t.trim_before(ts)).sum()
}

/// The length of a map's longest series.
fn longest<K, T: Timed>(map: &BTreeMap<K, TimeSeries<T>>) -> usize {
    map.values().map(TimeSeries::len).max().unwrap_or(0)
}

/// Halves a map's longest series; returns how many samples went.
fn trim_longest_half<K, T: Timed>(map: &mut BTreeMap<K, TimeSeries<T>>) -> usize {
    map.values_mut()
        .max_by_key(|t| t.len())
        .map_or(0, |t| t.trim_half())
}

impl Session {
    /// Drops samples of every series before `ts`; returns how many.
    fn trim_series_before(&mut self, ts: u64) -> usize {
        self.alloc.trim_before(ts)
            + self.releases.trim_before(ts)
            + self.allocs.trim_before(ts)
            + trim_all_before(&mut self.gpu, ts)
            + trim_all_before(&mut self.sched, ts)
            + trim_all_before(&mut self.kernel, ts)
            + trim_all_before(&mut self.stack_samples, ts)
            + trim_all_before(&mut self.outputs, ts)
    }

    /// Halves the largest store outside proofs; (items removed, bytes each), `None` when all
    /// are empty.
    fn trim_largest_store(&mut self) -> Option<(usize, usize)> {
        let sizes = [
            (Store::Alloc, self.alloc.len()),
            (Store::Releases, self.releases.len()),
            (Store::Allocs, self.allocs.len()),
            (Store::Gpu, longest(&self.gpu)),
            (Store::Loose, self.loose.items()),
            (Store::Drops, self.drops.len()),
            (Store::Sched, longest(&self.sched)),
            (Store::Kernel, longest(&self.kernel)),
            (Store::StackSamples, longest(&self.stack_samples)),
            (Store::Output, longest(&self.outputs)),
        ];
        // Of equal sizes, the last listed goes first (`max_by_key` keeps the last maximum).
        let (store, n) = sizes.iter().copied().max_by_key(|(_, n)| *n)?;
        if n == 0 {
            return None;
        }
        Some(match store {
            Store::Alloc => (self.alloc.trim_half(), SAMPLE_BYTES),
            Store::Releases => (self.releases.trim_half(), BLOCK_BYTES),
            Store::Allocs => (self.allocs.trim_half(), BLOCK_BYTES),
            Store::Gpu => (trim_longest_half(&mut self.gpu), SAMPLE_BYTES),
            Store::Loose => {
                let (gone, n) = self.loose.trim_half();
                for sp in gone {
                    self.span_proof.remove(&sp.id);
                }
                (n, cost::SPAN)
            }
            Store::Sched => (trim_longest_half(&mut self.sched), SAMPLE_BYTES),
            Store::Kernel => (trim_longest_half(&mut self.kernel), SAMPLE_BYTES),
            Store::StackSamples => (trim_longest_half(&mut self.stack_samples), SAMPLE_BYTES),
            Store::Output => (trim_longest_half(&mut self.outputs), SAMPLE_BYTES),
            Store::Drops => {
                let n = self.drops.len().div_ceil(2);
                self.drops.drain(..n);
                (n, BLOCK_BYTES)
            }
        })
    }
}

impl Default for Retention {
    fn default() -> Self {
        Retention {
            max_proofs: 1000,
            max_bytes: 512 << 20,
        }
    }
}

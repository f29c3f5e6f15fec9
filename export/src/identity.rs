//! Who a prover is in the exporter's series: a *worker* name that stays the same across the
//! prover's restarts, so that a restarted worker continues its series and alerts can be routed
//! by it, where a pid would start new series on every restart and collide across hosts.
//!
//! The name is the prover's `PROOFSCOPE_INSTANCE` (Hello `instance`), else its prover name and
//! a short hash of its command line (`prover-1f3a9c04`): two workers started alike on one host
//! need `PROOFSCOPE_INSTANCE` to be told apart over restarts. While two live provers would
//! share a name, the later one is `<name>~2` (then `~3`, …) until the first is gone.

use super::metrics::Metrics;
use super::owned::Owned;
use std::collections::HashMap;
use std::sync::{Arc, Mutex, MutexGuard};

#[derive(Debug)]
struct Claim {
    watcher: usize,
    live: bool,
    /// The pid of the process that holds the name (a new one is a restart).
    pid: u32,
    /// The series of the name's watchers that have stopped, carried over to the next one.
    owned: Owned,
    /// When the name's series began (Unix ns): the session start of its first prover this
    /// exporter saw — before the exporter's own start for a prover already running — kept
    /// across restarts, whose series continue (OpenMetrics `_created`).
    born_unix_ns: Option<u64>,
}

/// The worker names in use, shared by every watcher of one exporter.
#[derive(Debug, Clone, Default)]
pub struct Workers {
    claims: Arc<Mutex<HashMap<String, Claim>>>,
}

impl Workers {
    fn lock(&self) -> MutexGuard<'_, HashMap<String, Claim>> {
        // A watcher that panicked holding the lock left the map whole (every update is one
        // insert or remove).
        self.claims.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// The name `watcher` takes for a prover (process `pid`) asking for `wanted`: `wanted`
    /// itself unless another live prover holds it (a gone one hands its series over: the
    /// restarted worker, whose previous process's `proofscope_prover_info` is removed from
    /// `m`). A name taken by another process than the last one is a restart, counted.
    pub fn claim(&self, wanted: &str, watcher: usize, pid: u32, m: &Metrics) -> String {
        let mut claims = self.lock();
        let free = |name: &str, claims: &HashMap<String, Claim>| {
            claims
                .get(name)
                .is_none_or(|c| c.watcher == watcher || !c.live)
        };
        let name = std::iter::once(wanted.to_owned())
            .chain((2..).map(|n| format!("{wanted}~{n}")))
            .find(|n| free(n, &claims))
            .unwrap_or_else(|| wanted.to_owned());
        if name != wanted {
            m.name_clashes.inc();
            crate::log::log(
                crate::log::Level::Warn,
                "two live provers ask for one worker name: the later has another until the first is gone (give each its own PROOFSCOPE_INSTANCE)",
                &[("wanted", wanted), ("given", &name)],
            );
        }
        let c = claims.entry(name.clone()).or_insert_with(|| Claim {
            watcher,
            live: true,
            pid,
            owned: Owned::default(),
            born_unix_ns: None,
        });
        if c.pid != pid {
            let worker = super::metrics::ProverLabels {
                worker: name.clone(),
            };
            m.restarts.get_or_create(&worker).inc();
        }
        c.pid = pid;
        if c.watcher != watcher {
            for old in c.owned.info.drain() {
                m.prover_info.remove(&old);
            }
        }
        c.watcher = watcher;
        c.live = true;
        name
    }

    /// `name`'s series began at `unix_ns` unless they began earlier (a restart continues them).
    pub fn born(&self, name: &str, unix_ns: u64) {
        if let Some(c) = self.lock().get_mut(name) {
            c.born_unix_ns.get_or_insert(unix_ns);
        }
    }

    /// When each worker's series began, in Unix seconds (OpenMetrics `_created`).
    pub fn born_s(&self) -> HashMap<String, f64> {
        self.lock()
            .iter()
            .filter_map(|(name, c)| Some((name.clone(), c.born_unix_ns? as f64 / 1e9)))
            .collect()
    }

    /// Whether `watcher`'s stream is flowing: a name whose holder's stream has ended may be
    /// taken over before the fleet has stopped it (a quick restart continues its series).
    pub fn set_live(&self, watcher: usize, live: bool) {
        for c in self.lock().values_mut().filter(|c| c.watcher == watcher) {
            c.live = live;
        }
    }

    /// `watcher` has stopped: its names may be taken over, with the series in `owned`.
    pub fn release(&self, watcher: usize, owned: &Owned) {
        for (name, c) in self.lock().iter_mut().filter(|(_, c)| c.watcher == watcher) {
            c.live = false;
            c.owned.merge(owned.of_worker(name));
        }
    }

    /// Whether `watcher` still holds `name` (no later prover has taken it over).
    #[cfg(test)]
    pub fn holds(&self, name: &str, watcher: usize) -> bool {
        self.lock().get(name).is_some_and(|c| c.watcher == watcher)
    }

    /// `watcher` is gone for good: the series of the names it still holds are removed and the
    /// names are free (a name taken over since lives on with its series).
    pub fn forget(&self, watcher: usize, m: &Metrics) {
        self.lock().retain(|_, c| {
            let gone = c.watcher == watcher && !c.live;
            if gone {
                c.owned.forget(m);
            }
            !gone
        });
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_live_name_is_not_shared_a_gone_one_is_taken_over() {
        let w = Workers::default();
        let mut registry = prometheus_client::registry::Registry::default();
        let m = Metrics::register(&mut registry);
        assert_eq!(w.claim("w", 1, 101, &m), "w");
        assert_eq!(
            w.claim("w", 1, 101, &m),
            "w",
            "the same watcher keeps its name"
        );
        assert_eq!(w.claim("w", 2, 102, &m), "w~2");
        assert_eq!(w.claim("w", 3, 103, &m), "w~3");
        w.set_live(2, false);
        assert_eq!(
            w.claim("w~2", 6, 106, &m),
            "w~2",
            "a holder whose stream ended"
        );
        w.release(1, &Owned::default());
        assert_eq!(
            w.claim("w", 4, 104, &m),
            "w",
            "a restarted worker continues"
        );
        assert!(!w.holds("w", 1) && w.holds("w", 4));
        w.forget(1, &m);
        assert!(
            w.holds("w", 4),
            "forgetting the first does not take the name from the next"
        );
        w.forget(4, &m);
        assert!(w.holds("w", 4), "a live watcher keeps its name");
        w.release(4, &Owned::default());
        w.forget(4, &m);
        assert!(!w.holds("w", 4));
        assert_eq!(w.claim("w", 5, 105, &m), "w");
        let clashes = m.name_clashes.get();
        assert_eq!(clashes, 2, "w~2 and w~3");
    }

    /// A name taken by another process is a restart; the same process greeting again (a
    /// reconnection) is not.
    #[test]
    fn a_new_process_under_a_name_is_a_restart() {
        let w = Workers::default();
        let mut registry = prometheus_client::registry::Registry::default();
        let m = Metrics::register(&mut registry);
        let restarts = || {
            m.restarts
                .get_or_create(&super::super::metrics::ProverLabels { worker: "w".into() })
                .get()
        };
        w.claim("w", 1, 100, &m);
        w.claim("w", 1, 100, &m);
        assert_eq!(restarts(), 0);
        w.release(1, &Owned::default());
        w.claim("w", 2, 200, &m);
        w.release(2, &Owned::default());
        w.claim("w", 3, 300, &m);
        assert_eq!(restarts(), 2);
    }
}

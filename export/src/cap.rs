//! Label values that come from what provers say (circuit names, phase names) are capped: the
//! first `max` distinct values of each label are exported as they are, every later one as
//! `other`, counted in `proofscope_exporter_labels_capped_total`. A prover that names a circuit
//! per sector (or a span per request) would otherwise grow the exporter and Prometheus without
//! bound.

use prometheus_client::encoding::EncodeLabelSet;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use std::collections::{HashMap, HashSet};
use std::sync::{Arc, Mutex};

/// What a value past the cap is exported as.
pub const OTHER: &str = "other";

/// The labels whose values are capped.
pub const CAPPED: [&str; 2] = ["circuit", "phase"];

#[derive(Debug, Clone, PartialEq, Eq, Hash, EncodeLabelSet)]
pub struct CappedLabels {
    pub label: String,
}

/// The capped labels' values seen so far, shared by every watcher of one exporter.
#[derive(Debug, Clone)]
pub struct LabelCap {
    max: usize,
    seen: Arc<Mutex<HashMap<&'static str, HashSet<String>>>>,
    capped: Family<CappedLabels, Counter>,
}

impl LabelCap {
    /// Each capped label's counter exists from the start, at 0 (a counter that appears only
    /// at its first increment has no `increase()` over that increment).
    pub fn new(max: usize, capped: Family<CappedLabels, Counter>) -> LabelCap {
        for label in CAPPED {
            drop(capped.get_or_create(&CappedLabels {
                label: label.to_owned(),
            }));
        }
        LabelCap {
            max,
            seen: Arc::default(),
            capped,
        }
    }

    /// The value to export for `value` of `label`.
    pub fn value(&self, label: &'static str, value: &str) -> String {
        debug_assert!(CAPPED.contains(&label), "{label} is not in CAPPED");
        // A watcher that panicked holding the lock left the sets whole (one insert at a time).
        let mut seen = self.seen.lock().unwrap_or_else(|e| e.into_inner());
        let values = seen.entry(label).or_default();
        if values.contains(value) {
            return value.to_owned();
        }
        if values.len() < self.max && value != OTHER {
            values.insert(value.to_owned());
            return value.to_owned();
        }
        drop(seen);
        self.capped
            .get_or_create(&CappedLabels {
                label: label.to_owned(),
            })
            .inc();
        OTHER.to_owned()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_first_values_pass_the_rest_are_other_and_counted() {
        let capped = Family::<CappedLabels, Counter>::default();
        let cap = LabelCap::new(3, capped.clone());
        let out: HashSet<String> = (0..1000)
            .map(|i| cap.value("circuit", &format!("c{}", i % 500)))
            .collect();
        assert_eq!(out.len(), 4, "{out:?}");
        assert!(out.contains("c0") && out.contains("c2") && out.contains(OTHER));
        let n = capped
            .get_or_create(&CappedLabels {
                label: "circuit".into(),
            })
            .get();
        assert_eq!(n, 1000 - 6, "c0..c2 pass twice each");
        // Each label has a cap of its own.
        assert_eq!(cap.value("phase", "synthesis"), "synthesis");
    }
}

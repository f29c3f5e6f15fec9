//! When a proof is anomalous enough to keep: its unaccounted time over a share *and* an
//! absolute floor (the same pair as the `ProofscopeUnaccountedTimeHigh` alert, so an alert
//! and a capture agree), or a named phase over a duration.

use crate::report::{PhaseReport, ProofReport};

/// The rule a settled proof is judged by.
#[derive(Debug, Clone, PartialEq)]
pub struct Trigger {
    /// Unaccounted time at or above this fraction of the proof …
    pub unaccounted_fraction: f64,
    /// … and at least this long.
    pub unaccounted_min_ns: u64,
    /// A phase of this name (any thread) lasting at least this long.
    pub phases: Vec<PhaseLimit>,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PhaseLimit {
    pub name: String,
    pub min_ns: u64,
}

impl Default for Trigger {
    fn default() -> Trigger {
        Trigger {
            unaccounted_fraction: 0.05,
            unaccounted_min_ns: 100_000_000,
            phases: Vec::new(),
        }
    }
}

impl Trigger {
    /// Why `r` crosses the rule, in words; `None` when it does not. Only a complete proof
    /// is judged: an unfinished one has no final figures.
    pub fn fires(&self, r: &ProofReport) -> Option<String> {
        self.judge(&Figures {
            complete: r.complete,
            duration_ns: r.duration_ns,
            unaccounted_ns: r.unaccounted_ns,
            phases: &r.phases,
        })
    }

    fn judge(&self, r: &Figures<'_>) -> Option<String> {
        if !r.complete || r.duration_ns == 0 {
            return None;
        }
        let share = r.unaccounted_ns as f64 / r.duration_ns as f64;
        if r.unaccounted_ns >= self.unaccounted_min_ns && share >= self.unaccounted_fraction {
            return Some(format!(
                "unaccounted {} ({:.1} % of {})",
                ms(r.unaccounted_ns),
                share * 100.0,
                ms(r.duration_ns)
            ));
        }
        self.phases.iter().find_map(|lim| {
            let ph = r
                .phases
                .iter()
                .filter(|p| p.name == lim.name)
                .max_by_key(|p| p.duration_ns)?;
            (ph.duration_ns >= lim.min_ns).then(|| {
                format!(
                    "phase {} took {} (limit {})",
                    ph.name,
                    ms(ph.duration_ns),
                    ms(lim.min_ns)
                )
            })
        })
    }
}

/// What the rule reads of a proof's report.
struct Figures<'a> {
    complete: bool,
    duration_ns: u64,
    unaccounted_ns: u64,
    phases: &'a [PhaseReport],
}

fn ms(ns: u64) -> String {
    format!("{:.1} ms", ns as f64 / 1e6)
}

/// `NAME=MS`: the phase limit of `--capture-phase`.
pub fn parse_phase_limit(s: &str) -> Result<PhaseLimit, String> {
    let (name, ms) = s
        .rsplit_once('=')
        .ok_or_else(|| format!("'{s}': expected NAME=MS, e.g. batch_add=200"))?;
    if name.is_empty() {
        return Err(format!("'{s}': the phase name is empty"));
    }
    let v: f64 = ms
        .trim()
        .parse()
        .map_err(|_| format!("'{ms}' is not a number of milliseconds"))?;
    if !v.is_finite() || v <= 0.0 || v > 1e9 {
        return Err(format!(
            "'{ms}': a phase limit is more than 0 and at most 10^9 ms"
        ));
    }
    Ok(PhaseLimit {
        name: name.to_owned(),
        min_ns: (v * 1e6) as u64,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A complete proof's figures (in ms), judged by `t`.
    fn judged(
        t: &Trigger,
        duration_ms: u64,
        unaccounted_ms: u64,
        phases: &[(&str, u64)],
    ) -> Option<String> {
        judged_ns(
            t,
            true,
            duration_ms * 1_000_000,
            unaccounted_ms * 1_000_000,
            phases,
        )
    }

    fn judged_ns(
        t: &Trigger,
        complete: bool,
        duration_ns: u64,
        unaccounted_ns: u64,
        phases: &[(&str, u64)],
    ) -> Option<String> {
        let phases: Vec<PhaseReport> = phases
            .iter()
            .map(|(n, d)| PhaseReport {
                name: (*n).into(),
                thread: "main".into(),
                start_offset_ns: 0,
                duration_ns: d * 1_000_000,
                memory: None,
            })
            .collect();
        t.judge(&Figures {
            complete,
            duration_ns,
            unaccounted_ns,
            phases: &phases,
        })
    }

    #[test]
    fn unaccounted_needs_both_the_share_and_the_floor() {
        let t = Trigger::default();
        // 12 % of a 2 ms proof: over the share, under the floor.
        assert_eq!(judged_ns(&t, true, 2_000_000, 240_000, &[]), None);
        // 150 ms of 10 s: over the floor, under the share.
        assert_eq!(judged(&t, 10_000, 150, &[]), None);
        let why = judged(&t, 1_000, 412, &[]).unwrap();
        assert!(why.contains("412.0 ms") && why.contains("41.2 %"), "{why}");
        assert_eq!(
            judged_ns(&t, false, 1_000_000_000, 412_000_000, &[]),
            None,
            "an unfinished proof is not judged"
        );
    }

    #[test]
    fn a_phase_limit_fires_on_the_longest_phase_of_that_name() {
        let t = Trigger {
            phases: vec![parse_phase_limit("batch_add=200").unwrap()],
            ..Trigger::default()
        };
        assert_eq!(judged(&t, 1_000, 0, &[("batch_add", 150)]), None);
        let why = judged(&t, 1_000, 0, &[("batch_add", 150), ("batch_add", 250)]).unwrap();
        assert!(why.contains("batch_add took 250.0 ms"), "{why}");
        assert_eq!(judged(&t, 1_000, 0, &[("tail_msm", 900)]), None);
    }

    #[test]
    fn phase_limits_are_parsed_strictly() {
        assert_eq!(
            parse_phase_limit("a=b=1.5").unwrap(),
            PhaseLimit {
                name: "a=b".into(),
                min_ns: 1_500_000
            }
        );
        for bad in [
            "batch_add",
            "=5",
            "x=",
            "x=abc",
            "x=-1",
            "x=0",
            "x=inf",
            "x=1e30",
        ] {
            assert!(parse_phase_limit(bad).is_err(), "{bad}");
        }
    }
}

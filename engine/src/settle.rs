//! The one settle loop: each settled proof of every session once, in order, with its report —
//! what the black box judges and the exporter counts. When a proof is settled is
//! [`crate::analysis::settled`]'s to say; this keeps, per session, how far the rounds got.

use crate::analysis::GapRule;
use crate::analysis::settled::settled;
use crate::model::{Model, Proof, Session};
use crate::report::{ProofReport, proof_report};
use std::collections::HashMap;

/// How far the rounds got in each session (by its key: pid and start).
#[derive(Debug, Default)]
pub struct Settler {
    upto: HashMap<(u32, u64), u64>,
}

impl Settler {
    /// Hands `each` every proof settled since the last round, session by session and in
    /// order, with its report by `rule`; `ended`: the stream ended, so every completed proof
    /// is settled. Returns the proofs missed: evicted before they could settle.
    pub fn round(
        &mut self,
        model: &Model,
        rule: &GapRule,
        ended: bool,
        mut each: impl FnMut(&Session, &Proof, &ProofReport),
    ) -> u64 {
        let mut missed = 0;
        for s in model.sessions() {
            if s.hello().is_none() {
                continue;
            }
            let key = s.key();
            let done = self.upto.get(&key).copied().unwrap_or(0);
            let st = settled(s, done, ended);
            missed += st.missed;
            for r in &st.ready {
                let Some(p) = s.proof(r.id) else { continue };
                if let Some(report) = proof_report(s, p, r.next_start, rule) {
                    each(s, p, &report);
                }
            }
            if st.upto > done {
                self.upto.insert(key, st.upto);
            }
        }
        missed
    }
}

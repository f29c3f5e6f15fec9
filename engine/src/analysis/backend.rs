//! Where a proof ran, as the evidence says it: the prover's own word (`ProofBegin.backend`,
//! or an importer's reading of the log), else NVML's process list — a process that held a
//! CUDA context while the proof ran was on the GPU (an unmodified prover under the preload,
//! whose log names no backend: supraseal's upstream prints only bellperson's `prover time`).
//! The same for the session as a whole.

use crate::model::{Proof, Session};

/// A backend and, when the prover did not state it, why it is believed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Backend {
    /// `"gpu"`, `"cpu"`, …; `"unknown"` when nothing says.
    pub name: String,
    /// The evidence, when not the prover's word: "a CUDA context on GPU 0, from NVML's
    /// process list".
    pub evidence: Option<String>,
}

/// Whether `name` states a backend (an importer writes "unknown" where the log names none).
fn stated(name: &str) -> bool {
    !name.is_empty() && name != "unknown"
}

/// The proof's backend.
pub fn of_proof(session: &Session, proof: &Proof) -> Backend {
    if stated(proof.backend()) {
        return Backend {
            name: proof.backend().to_owned(),
            evidence: None,
        };
    }
    let held = proof
        .range(session.now())
        .map(|(a, b)| session.gpu_contexts().during(a, b))
        .unwrap_or_default();
    from_contexts(held.iter().map(|(d, _)| *d))
}

/// The session's backend: its `Hello`'s, else whether the process ever held a context.
pub fn of_session(session: &Session) -> Backend {
    if let Some(h) = session.hello().filter(|h| stated(&h.backend)) {
        return Backend {
            name: h.backend.clone(),
            evidence: None,
        };
    }
    from_contexts(session.gpu_contexts().devices())
}

fn from_contexts(devices: impl Iterator<Item = u32>) -> Backend {
    let devices: Vec<String> = devices.map(|d| d.to_string()).collect();
    if devices.is_empty() {
        return Backend {
            name: "unknown".into(),
            evidence: None,
        };
    }
    Backend {
        name: "gpu".into(),
        evidence: Some(format!(
            "a CUDA context on GPU {}, from NVML's process list",
            devices.join(", ")
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::ProofId;
    use crate::model::fixture::{Fixture, session};
    use probe_protocol::{Event, GpuProcess};

    const MS: u64 = 1_000_000;

    #[test]
    fn a_proof_that_names_no_backend_is_on_the_gpu_when_a_context_was_held() {
        let mut f = Fixture::new();
        let main = f.thread(1, "main");
        f.proof(1, "unknown", "prove", main, 0, 100 * MS);
        f.proof(2, "unknown", "prove", main, 200 * MS, 300 * MS);
        f.proof(3, "cpu", "prove", main, 400 * MS, 500 * MS);
        f.event(Event::GpuProcess(GpuProcess {
            ts: 150 * MS,
            device: 0,
            context: true,
            used_bytes: Some(1 << 30),
        }));
        let m = f.model();
        let s = session(&m);
        let b = |id| of_proof(s, s.proof(ProofId(id)).unwrap());
        // Before the context: nothing says.
        assert_eq!(b(1).name, "unknown");
        let on_gpu = b(2);
        assert_eq!(on_gpu.name, "gpu");
        assert_eq!(
            on_gpu.evidence.as_deref(),
            Some("a CUDA context on GPU 0, from NVML's process list")
        );
        // The prover's word wins.
        assert_eq!(
            b(3),
            Backend {
                name: "cpu".into(),
                evidence: None
            }
        );
        assert_eq!(of_session(s).name, "gpu");
    }
}

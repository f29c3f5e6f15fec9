//! The black box: anomaly-triggered captures. A watched prover's recent frames are kept raw
//! (ring.rs); when a settled proof crosses the rule (trigger.rs), the window around it — the
//! proofs before it, the proof, the proofs after it — is written as a `.psrec` once the proofs
//! after it have ended (store.rs). A capture is a recording like any other: the session's
//! welcome (Hello and definitions, from the model), the frames exactly as the prover sent
//! them, and a Goodbye that says why the file ends and which proof it was kept for.
//!
//! The exporter judges the proofs it counts ([`BlackBox::consider`]: the capture's name goes
//! on the proof-duration histogram as an exemplar); the viewer (`attach`, `run`) has the box
//! judge every proof that settles ([`BlackBox::scan`]).

mod ring;
mod store;
mod trigger;

pub use store::{PREFIX, Store, Written};
pub use trigger::{PhaseLimit, Trigger, parse_phase_limit};

use crate::analysis::GapRule;
use crate::file_name::{file_word, utc_stamp};
use crate::model::{Model, Proof, ProofId, Session};
use crate::report::ProofReport;
use crate::settle::Settler;
use probe_protocol::{Event, encode_frame, encode_frames};
use ring::FrameRing;
use std::path::PathBuf;
use std::time::{Duration, Instant, SystemTime};

/// How captures are made.
#[derive(Debug, Clone)]
pub struct CaptureOpts {
    pub store: Store,
    pub trigger: Trigger,
    /// Raw frames kept per prover, in bytes.
    pub history_bytes: usize,
    /// Proofs kept on each side of the anomalous one.
    pub neighbours: u64,
}

/// A capture waits at most this much session time after its proof for the proofs after it.
const AFTER_WAIT_NS: u64 = 60_000_000_000;
/// … or this long on the wall clock, when the prover goes quiet.
const AFTER_WAIT: Duration = Duration::from_secs(90);

/// What became of a capture.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Outcome {
    Written {
        proof: u64,
        path: PathBuf,
        bytes: u64,
        reason: String,
        /// The window began before the frames held (the history budget was too small).
        late: bool,
    },
    TooLarge {
        proof: u64,
        bytes: u64,
    },
    Failed {
        proof: u64,
        error: String,
    },
}

impl Outcome {
    /// The `result` label of `proofscope_captures_total`.
    pub fn result(&self) -> &'static str {
        match self {
            Outcome::Written { .. } => "written",
            Outcome::TooLarge { .. } => "too_large",
            Outcome::Failed { .. } => "failed",
        }
    }

    /// One line for a person.
    pub fn describe(&self) -> String {
        match self {
            Outcome::Written {
                proof,
                path,
                bytes,
                reason,
                late,
            } => format!(
                "captured proof {proof} ({reason}) in {} ({bytes} bytes{})",
                path.display(),
                if *late {
                    "; its window began before the frames held, see --capture-history-mib"
                } else {
                    ""
                }
            ),
            Outcome::TooLarge { proof, bytes } => format!(
                "proof {proof} crossed the capture rule, but its window ({bytes} bytes) is larger than --capture-max-mib: not captured"
            ),
            Outcome::Failed { proof, error } => {
                format!("proof {proof} crossed the capture rule, but the capture failed: {error}")
            }
        }
    }
}

/// The `result` values of `proofscope_captures_total`, created at 0.
pub const RESULTS: [&str; 3] = ["written", "too_large", "failed"];

/// A capture decided, waiting for the proofs after it.
#[derive(Debug)]
struct Pending {
    session: (u32, u64),
    proof: u64,
    from: u64,
    proof_end: u64,
    name: String,
    reason: String,
    since: Instant,
}

/// One prover's black box.
#[derive(Debug)]
pub struct BlackBox {
    opts: CaptureOpts,
    /// The gap rule the viewer's reports use ([`BlackBox::scan`]).
    rule: GapRule,
    ring: FrameRing,
    pending: Vec<Pending>,
    /// How far the judging got in each session.
    settler: Settler,
}

impl BlackBox {
    pub fn new(opts: CaptureOpts, rule: GapRule) -> BlackBox {
        BlackBox {
            rule,
            ring: FrameRing::new(opts.history_bytes),
            opts,
            pending: Vec::new(),
            settler: Settler::default(),
        }
    }

    /// Keeps a frame as it came (before its events go to the model).
    pub fn frame(&mut self, raw: &[u8], events: &[Event]) {
        self.ring.push(raw, events);
    }

    /// Judges a settled proof of `s` by its report: the name its capture will have when it
    /// crosses the rule (the file appears once the proofs after it have ended).
    pub fn consider(
        &mut self,
        s: &Session,
        p: &Proof,
        r: &ProofReport,
        worker: &str,
    ) -> Option<String> {
        let reason = self.opts.trigger.fires(r)?;
        let outer = p.outer()?;
        let (start, end) = extent(p, s.now())?;
        let id = p.id().get();
        let from = (id.saturating_sub(self.opts.neighbours)..id)
            .filter_map(|i| extent(s.proof(ProofId(i))?, s.now()))
            .map(|(a, _)| a)
            .fold(start, u64::min);
        let name = capture_name(s, worker, id, outer.start);
        // The capture directory is the record: a proof captured before (by this process, or
        // by the exporter before a restart, which sees the prover's history again) is not
        // written twice — 133 captures were re-written after one restart.
        if self.opts.store.dir.join(&name).exists() {
            return Some(name);
        }
        self.pending.push(Pending {
            session: s.key(),
            proof: id,
            from,
            proof_end: end,
            name: name.clone(),
            reason,
            since: Instant::now(),
        });
        Some(name)
    }

    /// The viewer's round: judges every proof settled since the last, then writes the
    /// captures that are due. `ended`: the stream ended.
    pub fn scan(&mut self, model: &Model, ended: bool) -> Vec<Outcome> {
        let mut settler = std::mem::take(&mut self.settler);
        let rule = self.rule;
        settler.round(model, &rule, ended, |s, p, report| {
            let worker = s.hello().map(crate::model::worker_name).unwrap_or_default();
            self.consider(s, p, report, &worker);
        });
        self.settler = settler;
        self.flush(model, ended)
    }

    /// Writes the captures whose window is complete (all of them: `ended`).
    pub fn flush(&mut self, model: &Model, ended: bool) -> Vec<Outcome> {
        let mut out = Vec::new();
        let mut waiting = Vec::new();
        for p in std::mem::take(&mut self.pending) {
            let s = model.sessions().iter().find(|s| s.key() == p.session);
            match s.and_then(|s| self.window_end(&p, s, ended).map(|to| (s, to))) {
                Some((s, to)) => out.push(self.write(&p, s, to)),
                None if s.is_none() => out.push(Outcome::Failed {
                    proof: p.proof,
                    error: "its session left the model before the window was complete".into(),
                }),
                None => waiting.push(p),
            }
        }
        self.pending = waiting;
        out
    }

    /// Where `p`'s window ends, once it can: at the end of the last proof after it, when
    /// the session ends, or when the wait for the proofs after it is over.
    fn window_end(&self, p: &Pending, s: &Session, ended: bool) -> Option<u64> {
        if ended || s.goodbye().is_some() || self.opts.neighbours == 0 {
            return Some(s.now().max(p.proof_end));
        }
        let last = s
            .proof(ProofId(p.proof + self.opts.neighbours))
            .filter(|q| q.done() && q.outer().is_some_and(|o| o.end.is_some()))
            .and_then(|q| extent(q, s.now()))
            .map(|(_, end)| end);
        if let Some(end) = last {
            return Some(end);
        }
        let waited =
            s.now().saturating_sub(p.proof_end) >= AFTER_WAIT_NS || p.since.elapsed() >= AFTER_WAIT;
        waited.then(|| s.now())
    }

    fn write(&self, p: &Pending, s: &Session, to: u64) -> Outcome {
        let failed = |e: String| Outcome::Failed {
            proof: p.proof,
            error: e,
        };
        let welcome = match encode_frames(&s.welcome().into_events()) {
            Ok(w) => w,
            Err(e) => return failed(format!("encoding the welcome: {e}")),
        };
        let (window, late) = self.ring.window(p.from, to);
        let goodbye = (s.goodbye().is_none())
            .then(|| {
                encode_frame(
                    to,
                    &[Event::Goodbye {
                        ts: to,
                        reason: format!(
                            "proofscope capture of proof {}: {}; the window ends here",
                            p.proof, p.reason
                        ),
                    }],
                )
            })
            .transpose();
        let goodbye = match goodbye {
            Ok(g) => g,
            Err(e) => return failed(format!("encoding the goodbye: {e}")),
        };
        let frames: Vec<&[u8]> = welcome
            .iter()
            .map(Vec::as_slice)
            .chain(window.iter().map(AsRef::as_ref))
            .chain(goodbye.as_deref())
            .collect();
        match self.opts.store.write(&p.name, &frames) {
            Ok(Written::File { path, bytes, .. }) => Outcome::Written {
                proof: p.proof,
                path,
                bytes,
                reason: p.reason.clone(),
                late,
            },
            Ok(Written::TooLarge { bytes }) => Outcome::TooLarge {
                proof: p.proof,
                bytes,
            },
            Err(e) => failed(format!("{}: {e}", self.opts.store.dir.display())),
        }
    }

    /// Captures decided and not yet written.
    pub fn pending(&self) -> usize {
        self.pending.len()
    }
}

/// The session time a proof covers: its ProofBegin or its outer span's start, whichever
/// came first, to its outer span's end or its ProofEnd, whichever came last (`now` while
/// open).
fn extent(p: &Proof, now: u64) -> Option<(u64, u64)> {
    let outer = p.outer()?;
    let start = p.begin().map_or(outer.start, |b| b.ts.min(outer.start));
    let end = outer.end_or(now);
    let end = p.end().map_or(end, |e| e.ts.max(end));
    Some((start, end))
}

/// `capture-<worker>-<UTC start of the proof>-proof<id, 6 digits or more>.psrec`: unique per
/// worker and proof, sorted by worker and then time in a listing (and in rotation, where two
/// files share a coarse modification time).
fn capture_name(s: &Session, worker: &str, proof: u64, start_ns: u64) -> String {
    let start_unix = s.hello().map_or(0, |h| h.session_start_unix_ns);
    let at = SystemTime::UNIX_EPOCH + Duration::from_nanos(start_unix.saturating_add(start_ns));
    let worker = match file_word(worker).as_str() {
        "" => "prover".to_owned(),
        w => w.to_owned(),
    };
    format!("{PREFIX}{worker}-{}-proof{proof:06}.psrec", utc_stamp(at))
}

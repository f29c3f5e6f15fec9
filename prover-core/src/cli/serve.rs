//! `prover serve`: prove batches in a loop with the probe on, until N proofs or a signal. By
//! default the next batch is synthesised while the current one runs its device phases (two
//! workers, `serve-0` and `serve-1`, take the batches in turn; see `groth16::overlap`);
//! `--sequential` proves one batch at a time on the main thread.

use super::common::{ProbeArgs, ProverArgs, select_backend};
use super::signals;
use crate::groth16::backend::Backend;
use crate::groth16::overlap::{Overlap, available_memory, synthesis_pool};
use crate::groth16::params::ParamSet;
use crate::groth16::pipeline::{
    Ballast, BatchOutput, BatchRequest, ProveError, Stages, prove_batch,
};
use crate::probe::SocketChoice;
use anyhow::Result;
use clap::Args;
use rand::SeedableRng;
use std::sync::Mutex;
use std::time::Instant;

#[derive(Debug, Args)]
pub struct ServeArgs {
    #[command(flatten)]
    pub prover: ProverArgs,
    /// Stop after this many proofs (batches); 0 runs until SIGINT/SIGTERM.
    #[arg(long, value_name = "N", default_value_t = 0)]
    pub proofs: u64,
    #[command(flatten)]
    pub probe: ProbeArgs,
    /// Pause between batches, in milliseconds.
    #[arg(long, value_name = "MS", default_value_t = 0)]
    pub pause_ms: u64,
    /// One batch at a time: no synthesis beside another batch's device phases.
    #[arg(long)]
    pub sequential: bool,
}

/// What the run has done so far, shared by the workers.
#[derive(Debug, Default)]
struct Tally {
    done: u64,
    failures: u64,
    /// The first proof's span, then the last proof's end: the throughput's window.
    first: Option<(Instant, Instant)>,
    last: Option<Instant>,
    /// The earliest start of a proof that completed.
    earliest: Option<Instant>,
    stop: Option<Stop>,
}

/// Why no further batch starts. A signal's line is written at the end, with the proofs that
/// completed by then: batches already running when it came still finish (the count taken at
/// the signal said "SIGTERM after 1 proofs" when 2 completed).
#[derive(Debug, Clone)]
enum Stop {
    Signal(&'static str),
    GaveUp(String),
}

impl Stop {
    fn reason(&self, done: u64) -> String {
        match self {
            Stop::Signal(sig) => format!(
                "{sig} after {done} proof{}",
                if done == 1 { "" } else { "s" }
            ),
            Stop::GaveUp(why) => why.clone(),
        }
    }
}

impl Tally {
    /// Proofs completed per minute from the first completion to the last (the rate a pipeline
    /// keeps once full; the viewer's header and report use the same); one proof: one over its
    /// time.
    fn per_minute(&self) -> Option<f64> {
        let (start, first_end) = self.first?;
        let (intervals, secs) = if self.done < 2 {
            (1, first_end.duration_since(start).as_secs_f64())
        } else {
            (
                self.done - 1,
                self.last?.duration_since(first_end).as_secs_f64(),
            )
        };
        (secs > 0.0).then(|| intervals as f64 * 60.0 / secs)
    }

    /// Proofs per minute over the whole run, from the first start to the last end (the filling
    /// of the pipeline included).
    fn per_minute_run(&self) -> Option<f64> {
        let secs = self.last?.duration_since(self.earliest?).as_secs_f64();
        (secs > 0.0).then(|| self.done as f64 * 60.0 / secs)
    }
}

/// Everything a batch needs, shared by the workers.
struct Run<'a> {
    args: &'a ServeArgs,
    ps: &'a ParamSet,
    backend: &'a dyn Backend,
    /// Where a, b, c are written under `--dealloc reuse`.
    columns: Option<crate::groth16::column::ColumnPool>,
    tally: Mutex<Tally>,
}

impl Run<'_> {
    fn tally(&self) -> std::sync::MutexGuard<'_, Tally> {
        self.tally.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Why no batch numbered `batch` should start, if none should. A signal or giving up stops
    /// every batch not yet started; the proof count only the batches past it (a worker that
    /// reaches batch N first must not stop the one still about to run batch N − 1).
    fn stop_before(&self, batch: u64) -> Option<String> {
        let mut t = self.tally();
        if let Some(s) = &t.stop {
            return Some(s.reason(t.done));
        }
        if let Some(sig) = signals::requested() {
            let stop = Stop::Signal(sig);
            let why = stop.reason(t.done);
            t.stop = Some(stop);
            return Some(why);
        }
        (self.args.proofs > 0 && batch >= self.args.proofs)
            .then(|| format!("done: {} proofs", self.args.proofs))
    }

    fn prove(
        &self,
        rng: &mut rand_chacha::ChaCha20Rng,
        stages: Option<&dyn Stages>,
    ) -> Result<BatchOutput, ProveError> {
        let size = self
            .args
            .prover
            .size()
            .map_err(|e| ProveError::Thread(e.to_string()))?;
        let circuits = (0..self.args.prover.circuits)
            .map(|_| size.random(rng))
            .collect();
        prove_batch(BatchRequest {
            params: self.ps,
            backend: self.backend,
            circuits,
            dealloc: self.args.prover.dealloc(),
            columns: self.columns.as_ref(),
            verify: self.args.prover.verify(),
            g2_tail: self.args.prover.g2_tail(self.backend),
            stages,
            ballast: Ballast::written(self.args.prover.ballast_bytes()),
        })
    }

    /// Counts an outcome and prints its line.
    fn record(&self, r: &Result<BatchOutput, ProveError>) {
        let mut t = self.tally();
        match r {
            Ok(out) => {
                t.done += 1;
                let end = out.started + out.total;
                t.first.get_or_insert((out.started, end));
                t.earliest = Some(t.earliest.map_or(out.started, |e| e.min(out.started)));
                t.last = Some(t.last.map_or(end, |l| l.max(end)));
                let size = &self.ps.size;
                crate::errln!(
                    "proof {}: {} × {} 2^{} in {:.3} s, {}; {} done, {}",
                    out.proof_id,
                    self.args.prover.circuits,
                    size.kind.name(),
                    size.log,
                    out.total.as_secs_f64(),
                    out.verification.as_str(),
                    t.done,
                    t.per_minute().map_or("no rate yet".into(), |r| format!(
                        "{r:.2} proofs per minute"
                    ))
                );
            }
            Err(e) => {
                t.failures += 1;
                crate::errln!("proof failed: {e}");
                if t.failures >= 3 && t.done == 0 && t.stop.is_none() {
                    t.stop = Some(Stop::GaveUp(format!("giving up: {e}")));
                }
            }
        }
    }

    fn pause(&self) {
        if self.args.pause_ms > 0 {
            signals::pause(std::time::Duration::from_millis(self.args.pause_ms));
        }
    }

    /// One batch at a time, on this thread.
    fn sequential(&self) {
        let mut rng = rand_chacha::ChaCha20Rng::from_entropy();
        for batch in 0.. {
            if self.stop_before(batch).is_some() {
                break;
            }
            let r = self.prove(&mut rng, None);
            self.record(&r);
            self.pause();
        }
    }

    /// Two workers taking the batches in turn, the next synthesised beside the current one's
    /// device phases when the memory allows.
    fn overlapped(&self) -> Result<()> {
        let overlap = Overlap::default();
        let shape = &self.ps.shape;
        let domain = shape.constraints.next_power_of_two() as u64;
        // a, b, c at the domain size and the assignments, and half again for the prep split's
        // copies: replaced by the measured release once a batch has ended.
        let per_circuit = 32 * (3 * domain + (shape.inputs + shape.aux) as u64);
        let estimate = self.args.prover.circuits as u64 * per_circuit * 3 / 2;
        let pool = synthesis_pool()
            .map_err(|e| crate::errln!("warning: no synthesis pool ({e}); synthesising on rayon's"))
            .ok();
        let pool = pool.as_ref();
        std::thread::scope(|s| -> Result<()> {
            let mut workers = Vec::new();
            for w in 0..2u64 {
                let overlap = &overlap;
                let worker = std::thread::Builder::new()
                    .name(format!("serve-{w}"))
                    .spawn_scoped(s, move || {
                        let mut rng = rand_chacha::ChaCha20Rng::from_entropy();
                        let mut batch = w;
                        loop {
                            if self.stop_before(batch).is_some() {
                                overlap.stop_at(batch);
                                break;
                            }
                            let need = overlap.need(estimate);
                            let Some(admitted) = overlap.admit(batch, need, available_memory)
                            else {
                                break;
                            };
                            let turn = overlap.turn(batch, admitted.note, pool);
                            let r = self.prove(&mut rng, Some(&turn));
                            overlap.finished(batch, r.as_ref().ok().map(|o| o.released_bytes));
                            self.record(&r);
                            self.pause();
                            batch += 2;
                        }
                    })?;
                workers.push(worker);
            }
            for w in workers {
                if w.join().is_err() {
                    // The other worker must not wait for a batch that will never come.
                    overlap.stop_at(0);
                    anyhow::bail!("a serve worker panicked");
                }
            }
            Ok(())
        })
    }
}

pub fn run(args: ServeArgs) -> Result<()> {
    signals::install();
    args.prover.size()?;
    let (backend, reason) = select_backend(args.prover.backend)?;
    crate::errln!("backend: {} ({reason})", backend.name());
    let probe = args
        .probe
        .start(SocketChoice::Default, backend.name(), &reason)?;
    if let Some(p) = probe.socket_path() {
        signals::remove_on_exit(p);
        crate::errln!(
            "probe: viewers attach with `proofscope attach {}`",
            p.display()
        );
    }
    let ps = args.prover.load_params()?;
    let run = Run {
        args: &args,
        ps: &ps,
        backend: backend.as_ref(),
        columns: args.prover.column_pool(backend.as_ref()),
        tally: Mutex::new(Tally::default()),
    };
    let outcome = if args.sequential {
        run.sequential();
        Ok(())
    } else {
        run.overlapped()
    };
    // Everything handed to the dealloc thread is freed before the session ends.
    crate::groth16::dealloc::flush();
    let t = run.tally();
    let mode = if args.sequential {
        "one batch at a time"
    } else {
        "next batch synthesised beside the current one's device phases"
    };
    if let (Some(rate), Some(run)) = (t.per_minute(), t.per_minute_run()) {
        crate::errln!(
            "throughput: {rate:.2} proofs per minute between completions, {run:.2} over the whole run, {} proofs ({mode})",
            t.done
        );
    }
    let reason = match (&outcome, &t.stop) {
        (Err(e), _) => format!("error: {e}"),
        (Ok(()), Some(s)) => s.reason(t.done),
        (Ok(()), None) => format!("done: {} proofs", t.done),
    };
    crate::errln!("stopping: {reason}");
    let failed = probe.shutdown(&reason).and_then(|s| s.recording_failed);
    if let (Some(why), Ok(())) = (&failed, &outcome) {
        // The proofs were made, but what the user asked to keep of them was not: not a success.
        crate::errln!("the recording failed ({why}): it holds only what was written before");
        return Err(anyhow::anyhow!("the recording failed: {why}"));
    }
    outcome
}

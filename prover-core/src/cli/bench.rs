//! `prover bench`: the same circuits and parameters proved by this pipeline and by bellperson's
//! `create_random_proof_batch`, alternating, in one run; or the probe on against off
//! (`overhead.rs`).

use super::accounted::{Accounted, HotPath, Mark};
use super::common::{ProverArgs, select_backend};
use super::overhead::{Pairs, Side, order};
use crate::groth16::circuits::AnyCircuit;
use crate::groth16::pipeline::{Ballast, BatchRequest, VerifyMode, prove_batch, verify};
use crate::probe::{Probe, ProbeConfig, SessionInfo};
use anyhow::{Context, Result, bail};
use blstrs::Scalar;
use clap::Args;
use rand::SeedableRng;
use std::path::PathBuf;
use std::time::{Duration, Instant};

#[derive(Debug, Args)]
pub struct BenchArgs {
    #[command(flatten)]
    pub prover: ProverArgs,
    /// Rounds; each proves the batch once per contender. Medians are reported. With
    /// --probe-overhead: pairs of runs (at least 15 for a claim), in ABBA order.
    #[arg(long, default_value_t = 3, value_parser = clap::value_parser!(u32).range(1..=1000))]
    pub runs: u32,
    /// Compare this pipeline with the probe on (configured by the PROOFSCOPE_* variables) against
    /// the probe off, instead of comparing with bellperson: pairs in ABBA order, the median of
    /// the pairs' differences with a bootstrap 95 % interval.
    #[arg(long)]
    pub probe_overhead: bool,
    /// With --probe-overhead: the "off" side runs the probe too, configured from the
    /// environment with these PROOFSCOPE_* variables set over it (repeatable) — what one knob
    /// costs, e.g. `--baseline PROOFSCOPE_KERNEL=0` for the kernel counters.
    #[arg(long, value_name = "VAR=VALUE", requires = "probe_overhead", value_parser = parse_baseline)]
    pub baseline: Vec<(String, String)>,
    /// Prove nothing: pool the pairs in saved outputs of earlier --probe-overhead runs (of the
    /// same build, batch and machine) and report them as one run (bootstrap seed 7, so the same
    /// files give the same interval).
    #[arg(long, value_name = "FILE", num_args = 1.., conflicts_with = "runs")]
    pub pool: Vec<PathBuf>,
    /// With --probe-overhead: count the instructions of one proof with the probe off and on,
    /// each in a run of this bench under `valgrind --tool=callgrind` (same binary, inputs and
    /// environment; deterministic where wall time is not). Best on the CPU backend.
    #[arg(long, requires = "probe_overhead")]
    pub instructions: bool,
    /// One proof of a fixed batch with the probe on or off, instructions counted around it
    /// only (what --instructions runs under callgrind).
    #[arg(long, value_name = "SIDE", value_parser = ["on", "off"], hide = true)]
    pub one_proof: Option<String>,
}

/// `--pool`: the pairs of several saved runs, reported together.
fn pool(files: &[PathBuf]) -> Result<()> {
    let mut pairs = Pairs::default();
    for f in files {
        let text =
            std::fs::read_to_string(f).with_context(|| format!("reading {}", f.display()))?;
        let n = pairs
            .parse(&text)
            .with_context(|| format!("in {}", f.display()))?;
        if n == 0 {
            bail!(
                "{}: no pair lines (is it the output of `prover bench --probe-overhead`?)",
                f.display()
            );
        }
        crate::outln!("{}: {n} pairs", f.display());
    }
    crate::out!(
        "{}",
        pairs.report(&mut rand_chacha::ChaCha20Rng::seed_from_u64(7))
    );
    Ok(())
}

fn median(v: Vec<Duration>) -> Duration {
    let s: Vec<f64> = v.iter().map(Duration::as_secs_f64).collect();
    Duration::from_secs_f64(super::overhead::median(&s).unwrap_or(0.0))
}

/// What both benchmarks prove with: the parameters, the backend, the batch's shape.
struct Bench<'a> {
    args: &'a BenchArgs,
    ps: crate::groth16::params::ParamSet,
    backend: Box<dyn crate::groth16::backend::Backend>,
    /// Where a, b, c are written under `--dealloc reuse`.
    columns: Option<crate::groth16::column::ColumnPool>,
    size: crate::groth16::circuits::CircuitSize,
}

impl Bench<'_> {
    /// A fresh batch of random circuits.
    fn batch(&self, rng: &mut rand_chacha::ChaCha20Rng) -> Vec<(AnyCircuit, Vec<Scalar>)> {
        (0..self.args.prover.circuits)
            .map(|_| self.size.random(rng))
            .collect()
    }

    /// Proves `circuits` with this pipeline; the wall time of the proof (its verification,
    /// with real parameters, outside it).
    fn ours(&self, circuits: Vec<(AnyCircuit, Vec<Scalar>)>) -> Result<Duration> {
        let ballast = Ballast::written(self.args.prover.ballast_bytes());
        let t = Instant::now();
        let out = prove_batch(BatchRequest {
            params: &self.ps,
            backend: self.backend.as_ref(),
            circuits,
            dealloc: self.args.prover.dealloc(),
            columns: self.columns.as_ref(),
            verify: VerifyMode::Off,
            g2_tail: self.args.prover.g2_tail(self.backend.as_ref()),
            stages: None,
            ballast,
        })?;
        let el = t.elapsed();
        crate::groth16::dealloc::flush();
        if !self.ps.synthetic() {
            let v = verify(
                &self.ps,
                &out.proofs,
                &out.public_inputs,
                VerifyMode::Every,
                0,
            );
            if v != crate::probe::Verification::Valid {
                bail!("this pipeline produced a proof that does not verify");
            }
        }
        Ok(el)
    }
}

pub fn run(args: BenchArgs) -> Result<()> {
    if !args.pool.is_empty() {
        return pool(&args.pool);
    }
    let size = args.prover.size()?;
    let (backend, reason) = select_backend(args.prover.backend)?;
    let ps = args.prover.load_params()?;
    if ps.synthetic() && !args.probe_overhead {
        bail!("bellperson cannot prove against a synthetic SRS; use --srs real");
    }
    crate::outln!(
        "bench: {} × {} 2^{} ({} constraints), backend {} ({reason}), {} cores, {} runs",
        args.prover.circuits,
        size.kind.name(),
        size.log,
        ps.shape.constraints,
        backend.name(),
        rayon::current_num_threads(),
        args.runs
    );
    let bench = Bench {
        args: &args,
        ps,
        columns: args.prover.column_pool(backend.as_ref()),
        backend,
        size,
    };
    if let Some(side) = &bench.args.one_proof {
        one_proof(&bench, side == "on")
    } else if args.instructions {
        instructions()
    } else if args.probe_overhead {
        probe_overhead(&bench)
    } else {
        against_bellperson(&bench)
    }
}

/// `VAR=VALUE` of a `PROOFSCOPE_*` variable.
fn parse_baseline(s: &str) -> Result<(String, String), String> {
    match s.split_once('=') {
        Some((k, v)) if k.starts_with("PROOFSCOPE_") => Ok((k.to_owned(), v.to_owned())),
        _ => Err(format!("expected PROOFSCOPE_VAR=VALUE, not {s:?}")),
    }
}

/// The probe of a bench side: configured from the environment, as `serve` would, or off —
/// or, with `baseline` variables, the "off" side configured from the environment with them
/// set over it.
fn probe_for(on: bool, baseline: &[(String, String)]) -> Result<Probe> {
    if !on && baseline.is_empty() {
        return Ok(Probe::disabled());
    }
    let over = |k: &str| {
        let set = baseline.iter().filter(|_| !on).find(|(b, _)| b == k);
        set.map(|(_, v)| v.clone())
            .or_else(|| std::env::var(k).ok())
    };
    Ok(Probe::start(
        ProbeConfig::new("prover", env!("CARGO_PKG_VERSION")).apply_env(over)?,
        SessionInfo::default(),
    )?)
}

/// How long a pair's side waits between starting the probe (or not) and proving.
const SESSION_SETTLE: Duration = Duration::from_millis(300);

/// The probe on against off, pairs in ABBA order; one unmeasured pair first (allocator, page
/// cache and GPU modules warm).
fn probe_overhead(b: &Bench<'_>) -> Result<()> {
    let mut rng = rand_chacha::ChaCha20Rng::from_entropy();
    let mut pairs = Pairs::default();
    let hot = HotPath::calibrate()?;
    crate::outln!(
        "hot path (this machine, thread CPU time): a span's begin and end {:.0} ns, a large block's event with its stack {:.0} ns",
        hot.span_pair_ns,
        hot.block_ns
    );
    if !b.args.baseline.is_empty() {
        let set: Vec<String> = b
            .args
            .baseline
            .iter()
            .map(|(k, v)| format!("{k}={v}"))
            .collect();
        crate::outln!(
            "\"off\" is the probe with {} (--baseline); \"on\" the probe as configured",
            set.join(" ")
        );
    }
    let mut shares = (Vec::new(), Vec::new());
    for k in 0..=b.args.runs as usize {
        let circuits = b.batch(&mut rng);
        let mut t = [Duration::ZERO; 2];
        let mut accounted = None;
        for side in order(k) {
            let probe = probe_for(side == Side::On, &b.args.baseline)?;
            // Both sides wait as long before proving: a session's start (its threads, the
            // first GPU sample with its costly counters) is the session's cost, not a proof's
            // — a serving prover pays it once.
            std::thread::sleep(SESSION_SETTLE);
            let before = Mark::now();
            let el = b.ours(circuits.clone())?;
            let after = Mark::now();
            let stats = probe.shutdown("bench");
            if let Some(stats) = stats.filter(|_| side == Side::On) {
                accounted = Some(Accounted::of(&before, &after, &stats, hot, el));
            }
            t[(side == Side::On) as usize] = el;
        }
        if let Some(a) = &accounted {
            // Not a `pair` line: `--pool` reads those back.
            crate::outln!("{} [pair {k}]", a.line());
            if k > 0 {
                shares.0.push(a.of_cpu_pct());
                shares.1.push(a.of_wall_pct());
            }
        }
        if k == 0 {
            crate::outln!(
                "warm-up: off {:.3} s, on {:.3} s (not counted)",
                t[0].as_secs_f64(),
                t[1].as_secs_f64()
            );
            continue;
        }
        crate::outln!(
            "pair {k:>3} ({}): off {:.3} s, on {:.3} s, {:+.2} %",
            if order(k)[0] == Side::Off {
                "off, on"
            } else {
                "on, off"
            },
            t[0].as_secs_f64(),
            t[1].as_secs_f64(),
            (t[1].as_secs_f64() / t[0].as_secs_f64() - 1.0) * 100.0
        );
        pairs.push(t[0], t[1]);
    }
    crate::out!("{}", pairs.report(&mut rng));
    let med = |v: &[f64]| super::overhead::median(v).unwrap_or(f64::NAN);
    crate::outln!(
        "accounted (median of {} pairs): {:.3} % of the proof's CPU time, {:.3} % of its wall",
        shares.0.len(),
        med(&shares.0),
        med(&shares.1)
    );
    Ok(())
}

/// `--one-proof`: a fixed batch (seed 1), proved once, its instructions counted.
fn one_proof(b: &Bench<'_>, on: bool) -> Result<()> {
    let circuits = b.batch(&mut rand_chacha::ChaCha20Rng::seed_from_u64(1));
    let probe = probe_for(on, &[])?;
    std::thread::sleep(SESSION_SETTLE);
    super::callgrind::start();
    let el = b.ours(circuits)?;
    super::callgrind::stop();
    probe.shutdown("bench");
    crate::outln!(
        "one proof, probe {}: {:.3} s",
        if on { "on" } else { "off" },
        el.as_secs_f64()
    );
    Ok(())
}

/// `--instructions`: this bench's own arguments, run twice under callgrind, off then on.
fn instructions() -> Result<()> {
    let exe = std::env::current_exe().context("locating the prover binary")?;
    let args: Vec<String> = std::env::args()
        .skip_while(|a| a != "bench")
        .skip(1)
        .filter(|a| a != "--instructions")
        .collect();
    let dir = tempfile::tempdir().context("a directory for callgrind's output")?;
    let off = super::callgrind::count(&exe, &args, "off", dir.path())?;
    let on = super::callgrind::count(&exe, &args, "on", dir.path())?;
    crate::outln!(
        "instructions (callgrind, one proof, every thread): off {off}, on {on}: {:+.3} %",
        (on as f64 / off as f64 - 1.0) * 100.0
    );
    crate::outln!(
        "an upper bound: under valgrind the proof runs some 50× slower and the probe's periodic threads wake on the wall clock"
    );
    Ok(())
}

/// This pipeline against bellperson's `create_random_proof_batch`, alternating, medians.
fn against_bellperson(b: &Bench<'_>) -> Result<()> {
    let mut rng = rand_chacha::ChaCha20Rng::from_entropy();
    let (mut t_ours, mut t_bp) = (Vec::new(), Vec::new());
    for round in 0..b.args.runs {
        let batch = b.batch(&mut rng);
        let theirs: Vec<_> = batch.iter().map(|(c, _)| c.clone()).collect();
        let inputs: Vec<_> = batch.iter().map(|(_, i)| i.clone()).collect();
        let ours = b.ours(batch)?;
        let t = Instant::now();
        let proofs = bellperson::groth16::create_random_proof_batch(theirs, &b.ps.params, &mut rng)
            .map_err(|e| anyhow::anyhow!("bellperson: {e}"))?;
        let bp = t.elapsed();
        let refs: Vec<_> = proofs.iter().collect();
        let ok = b.ps.pvk.as_ref().is_some_and(|pvk| {
            bellperson::groth16::verify_proofs_batch(pvk, &mut rng, &refs, &inputs).unwrap_or(false)
        });
        if !ok {
            bail!("bellperson's proofs did not verify");
        }
        crate::outln!(
            "round {}: this pipeline {:.3} s, bellperson {:.3} s",
            round + 1,
            ours.as_secs_f64(),
            bp.as_secs_f64()
        );
        t_ours.push(ours);
        t_bp.push(bp);
    }
    let (a, b) = (median(t_ours), median(t_bp));
    crate::outln!("this pipeline: {:.3} s (median)", a.as_secs_f64());
    crate::outln!("bellperson:    {:.3} s (median)", b.as_secs_f64());
    crate::outln!(
        "ratio:         {:.2} (this / bellperson)",
        a.as_secs_f64() / b.as_secs_f64()
    );
    Ok(())
}

//! Flags every subcommand shares, and turning them into parameters, a backend and a probe.

use crate::groth16::backend::{Backend, CpuBackend, G2Tail};
use crate::groth16::circuits::{CircuitKind, CircuitSize};
use crate::groth16::column::ColumnPool;
use crate::groth16::dealloc::DeallocMode;
use crate::groth16::params::{self, ParamSet, SrsMode};
use crate::groth16::pipeline::VerifyMode;
use crate::probe::{Probe, ProbeConfig, SessionInfo, SocketChoice};
use anyhow::{Context, Result, bail};
use clap::{Args, ValueEnum};
use std::path::PathBuf;

/// `--g2-tail`: see [`G2Tail`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum G2TailArg {
    /// On the device thread with a GPU backend, on the prep thread otherwise.
    Auto,
    /// On the prep thread, on the CPU, beside the device phases (as supraseal's C2).
    Prep,
    /// On each device thread after tail_msm.
    Device,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum DeallocArg {
    /// Drop the proving vectors at the end of the proof, inside its outer span (the ghost).
    Sync,
    /// Hand them to the dealloc thread.
    Async,
    /// Keep a, b, c for the next proof (synthesis writes into columns of a pool, page-locked
    /// once on a GPU, so their uploads need no staging); hand the rest to the dealloc thread.
    Reuse,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum BackendChoice {
    /// The GPU backend when a usable GPU is found, else the CPU (the reason is reported).
    Auto,
    /// The CPU (rayon) backend, whatever GPU there is.
    Cpu,
    /// The CUDA backend; refuse to start without a usable GPU.
    Gpu,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum SrsArg {
    /// Parameters from a real (random) setup, generated once and cached.
    Real,
    /// Random points of the right shape: the same work, proofs cannot verify.
    Synthetic,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum VerifyArg {
    /// Verify every proof of every batch.
    Every,
    /// Verify the first proof of each batch.
    One,
    /// Verify nothing.
    Off,
}

/// What the parameters are for: the circuit, its size, the SRS and where it is cached.
#[derive(Debug, Clone, Args)]
#[command(next_help_heading = "Prover")]
pub struct ParamsArgs {
    /// Which circuit to prove.
    #[arg(long, value_enum, default_value_t = CircuitKind::Sha256)]
    pub circuit: CircuitKind,
    /// Size: log2 of the constraint count (the evaluation domain). Default: sha256 15 (its
    /// smallest), the others 12.
    #[arg(long = "log-size", value_name = "N")]
    pub log_size: Option<u32>,
    /// Where the parameters come from: a real setup (proofs verify) or random points of the
    /// same shape (no setup to wait for; proofs do not verify).
    #[arg(long, value_enum, default_value_t = SrsArg::Real)]
    pub srs: SrsArg,
    /// Parameter cache directory [default: $PROOFSCOPE_CACHE, $XDG_CACHE_HOME/proofscope or ~/.cache/proofscope].
    #[arg(long, value_name = "DIR")]
    pub cache: Option<PathBuf>,
}

fn val<T: ValueEnum>(v: &T) -> String {
    v.to_possible_value()
        .map(|p| p.get_name().to_owned())
        .unwrap_or_default()
}

impl ParamsArgs {
    /// These flags as command-line arguments.
    pub fn to_args(&self) -> Vec<String> {
        let mut a = vec![
            "--circuit".into(),
            val(&self.circuit),
            "--srs".into(),
            val(&self.srs),
        ];
        if let Some(n) = self.log_size {
            a.extend(["--log-size".into(), n.to_string()]);
        }
        if let Some(c) = &self.cache {
            a.extend(["--cache".into(), c.display().to_string()]);
        }
        a
    }

    pub fn kind(&self) -> CircuitKind {
        self.circuit
    }

    pub fn size(&self) -> Result<CircuitSize> {
        let kind = self.kind();
        let log = self.log_size.unwrap_or(kind.default_log());
        Ok(kind.size_for(log)?)
    }

    pub fn srs(&self) -> SrsMode {
        match self.srs {
            SrsArg::Real => SrsMode::Real,
            SrsArg::Synthetic => SrsMode::Synthetic,
        }
    }

    pub fn cache_dir(&self) -> PathBuf {
        self.cache.clone().unwrap_or_else(params::default_cache_dir)
    }

    pub fn load_params(&self) -> Result<ParamSet> {
        let size = self.size()?;
        params::obtain(size, self.srs(), &self.cache_dir())
            .with_context(|| format!("parameters for {} 2^{}", size.kind.name(), size.log))
    }
}

/// How a batch is proved: its parameters, its size, where, and what happens after.
#[derive(Debug, Clone, Args)]
#[command(next_help_heading = "Prover")]
pub struct ProverArgs {
    #[command(flatten)]
    pub params: ParamsArgs,
    /// Circuits per batch (one proof each).
    #[arg(long, value_name = "K", default_value_t = 2, value_parser = clap::value_parser!(u32).range(1..=1024))]
    pub circuits: u32,
    /// How the proving vectors are released at the end of a proof [default: async; sync under
    /// `proofscope demo`, whose point is the release that nobody timed]
    #[arg(long, value_enum)]
    pub dealloc: Option<DeallocArg>,
    /// Where the proof's MSMs and NTTs run.
    #[arg(long, value_enum, default_value_t = BackendChoice::Auto)]
    pub backend: BackendChoice,
    /// Where B's G2 tail MSM (`b_g2_msm`) runs: on the prep thread on the CPU, beside the
    /// device phases, or on each device thread after `tail_msm` (on a GPU: its kernels; the
    /// default there: a dense 4 × 2^22 batch proves 10× faster so on an H200)
    #[arg(long, value_enum, default_value_t = G2TailArg::Auto)]
    pub g2_tail: G2TailArg,
    /// Which proofs to verify.
    #[arg(long, value_enum, default_value_t = VerifyArg::Every)]
    pub verify: VerifyArg,
    /// MiB each batch holds beside its own vectors, written during synthesis and released
    /// with them: what C2-sized vectors add to a small circuit, so that their release takes
    /// the time it takes in C2 [default: 0; under `proofscope demo` an eighth of this
    /// machine's available memory, at most 2048]
    #[arg(long, value_name = "MIB", value_parser = clap::value_parser!(u64).range(0..=1 << 20))]
    pub ballast_mib: Option<u64>,
}

impl ProverArgs {
    /// These flags as command-line arguments (to start another prover with them).
    pub fn to_args(&self) -> Vec<String> {
        let mut a = self.params.to_args();
        a.extend([
            "--circuits".into(),
            self.circuits.to_string(),
            "--backend".into(),
            val(&self.backend),
            "--verify".into(),
            val(&self.verify),
            "--g2-tail".into(),
            val(&self.g2_tail),
        ]);
        if let Some(d) = &self.dealloc {
            a.extend(["--dealloc".into(), val(d)]);
        }
        if let Some(m) = self.ballast_mib {
            a.extend(["--ballast-mib".into(), m.to_string()]);
        }
        a
    }

    /// [`Self::ballast_mib`] in bytes.
    pub fn ballast_bytes(&self) -> u64 {
        self.ballast_mib.unwrap_or(0) << 20
    }

    pub fn size(&self) -> Result<CircuitSize> {
        self.params.size()
    }

    pub fn load_params(&self) -> Result<ParamSet> {
        self.params.load_params()
    }

    /// How the vectors that are freed are released (`reuse` frees what it does not keep as
    /// `async` does).
    pub fn dealloc(&self) -> DeallocMode {
        match self.dealloc.unwrap_or(DeallocArg::Async) {
            DeallocArg::Sync => DeallocMode::Sync,
            DeallocArg::Async | DeallocArg::Reuse => DeallocMode::Async,
        }
    }

    pub fn g2_tail(&self, backend: &dyn Backend) -> G2Tail {
        match self.g2_tail {
            G2TailArg::Auto => backend.preferred_g2_tail(),
            G2TailArg::Prep => G2Tail::Prep,
            G2TailArg::Device => G2Tail::Device,
        }
    }

    /// The pool a, b, c are written into under `--dealloc reuse`, made for `backend` (which
    /// page-locks its columns when it copies them to a device).
    pub fn column_pool(&self, backend: &dyn Backend) -> Option<ColumnPool> {
        (self.dealloc == Some(DeallocArg::Reuse)).then(|| ColumnPool::new(backend.page_locker()))
    }

    pub fn verify(&self) -> VerifyMode {
        match self.verify {
            VerifyArg::Every => VerifyMode::Every,
            VerifyArg::One => VerifyMode::OnePerBatch,
            VerifyArg::Off => VerifyMode::Off,
        }
    }
}

/// The backend to prove with, and why (for `Hello` and the log).
pub fn select_backend(choice: BackendChoice) -> Result<(Box<dyn Backend>, String)> {
    if choice == BackendChoice::Cpu {
        return Ok((Box::new(CpuBackend), "CPU backend requested".into()));
    }
    match crate::gpu::detect() {
        Ok((gpu, what)) => Ok((gpu, what)),
        Err(reason) if choice == BackendChoice::Gpu => {
            bail!("--backend gpu: the GPU backend cannot start: {reason}")
        }
        Err(reason) => Ok((Box::new(CpuBackend), format!("GPU backend off: {reason}"))),
    }
}

/// How a proving subcommand is watched: its socket and its recording.
#[derive(Debug, Clone, Args)]
pub struct ProbeArgs {
    /// Socket for viewers, or `none` for no socket [serve: $XDG_RUNTIME_DIR/proofscope/prover-<pid>.sock; prove: none].
    #[arg(long, value_name = "PATH")]
    pub socket: Option<PathBuf>,
    /// Also write the session to this recording file.
    #[arg(long, value_name = "FILE")]
    pub record: Option<PathBuf>,
    /// Replace the --record file if it exists.
    #[arg(long, requires = "record")]
    pub force: bool,
}

impl ProbeArgs {
    /// The socket asked for; `default` when none was named.
    fn socket_choice(&self, default: SocketChoice) -> SocketChoice {
        match &self.socket {
            None => default,
            Some(p) if p.as_os_str() == "none" => SocketChoice::None,
            Some(p) => SocketChoice::At(p.clone()),
        }
    }

    /// Starts the probe from the environment plus these options. A probe that cannot start is
    /// an error only when the user asked for it explicitly (a socket path or a recording).
    pub fn start(
        &self,
        default: SocketChoice,
        backend: &str,
        backend_reason: &str,
    ) -> Result<Probe> {
        if let Some(r) = &self.record
            && !self.force
            && r.exists()
        {
            return Err(anyhow::Error::new(super::Usage(format!(
                "{} exists; pass --force to replace it, or record to another file",
                r.display()
            ))));
        }
        let mut cfg = ProbeConfig::from_env("prover", env!("CARGO_PKG_VERSION"))?
            .socket(self.socket_choice(default));
        if self.record.is_some() {
            cfg = cfg.record(self.record.clone());
        }
        let info = SessionInfo {
            backend: backend.into(),
            backend_reason: backend_reason.into(),
            command_line: std::env::args().collect(),
        };
        let explicit = self.socket.is_some() || self.record.is_some();
        match Probe::start(cfg, info) {
            Ok(p) => Ok(p),
            Err(e) if explicit => Err(e).context("the probe could not start"),
            Err(e) => {
                crate::errln!("warning: proving without the probe: {e}");
                Ok(Probe::disabled())
            }
        }
    }
}

pub fn pregenerate(args: ParamsArgs) -> Result<()> {
    let size = args.size()?;
    let t = std::time::Instant::now();
    let ps = args.load_params()?;
    crate::outln!(
        "parameters for {} 2^{} ({} constraints) ready in {:.1} s{}",
        size.kind.name(),
        size.log,
        ps.shape.constraints,
        t.elapsed().as_secs_f64(),
        if ps.synthetic() { " (SYNTHETIC)" } else { "" }
    );
    Ok(())
}

//! Groth16 parameters: generated with bellperson on first use (with a progress line and an
//! estimate), cached on disk keyed by circuit and size and integrity-checked (a corrupt file is
//! regenerated with a warning); or a clearly labelled synthetic SRS of the right shape, for
//! sizes whose real parameters would take too long to generate.

use super::assignment::Shape;
use super::circuits::CircuitSize;
use crate::probe;
use bellperson::groth16::{Parameters, PreparedVerifyingKey, VerifyingKey, prepare_verifying_key};
use blstrs::{Bls12, G1Affine, G1Projective, G2Affine, G2Projective};
use group::prime::PrimeCurveAffine;
use group::{Curve, Group};
use rand::SeedableRng;
use rayon::prelude::*;
use sha2::{Digest, Sha256};
use std::io::{Read, Write};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

const MAGIC: &[u8; 8] = b"PSPARAMS";
const FORMAT: u32 = 1;

/// Where parameters come from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SrsMode {
    Real,
    /// Random points of the right shape: the same work per phase, proofs cannot verify.
    Synthetic,
}

/// Parameters ready for proving.
pub struct ParamSet {
    pub size: CircuitSize,
    pub params: Parameters<Bls12>,
    /// `None` for a synthetic SRS: nothing can be verified against it.
    pub pvk: Option<PreparedVerifyingKey<Bls12>>,
    pub shape: Shape,
}

impl std::fmt::Debug for ParamSet {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ParamSet")
            .field("size", &self.size)
            .field("h", &self.params.h.len())
            .field("l", &self.params.l.len())
            .field("a", &self.params.a.len())
            .field("b_g1", &self.params.b_g1.len())
            .field("synthetic", &self.synthetic())
            .finish()
    }
}

impl ParamSet {
    pub fn synthetic(&self) -> bool {
        self.pvk.is_none()
    }
}

#[derive(Debug, thiserror::Error)]
pub enum ParamsError {
    #[error(
        "cannot use the parameter cache at {path}: {source}; set PROOFSCOPE_CACHE or XDG_CACHE_HOME to a writable directory"
    )]
    Cache {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("parameter generation failed: {0}")]
    Generate(String),
    #[error("the circuit could not be synthesised: {0}")]
    Shape(String),
}

/// The parameter cache directory: `$PROOFSCOPE_CACHE`, else `$XDG_CACHE_HOME/proofscope`, else
/// `~/.cache/proofscope`; parameters live in its `params/`.
pub fn default_cache_dir() -> PathBuf {
    if let Some(d) = std::env::var_os("PROOFSCOPE_CACHE").filter(|v| !v.is_empty()) {
        return PathBuf::from(d);
    }
    if let Some(d) = std::env::var_os("XDG_CACHE_HOME").filter(|v| !v.is_empty()) {
        return PathBuf::from(d).join("proofscope");
    }
    let home = std::env::var_os("HOME").unwrap_or_else(|| "/tmp".into());
    PathBuf::from(home).join(".cache").join("proofscope")
}

fn file_name(size: &CircuitSize) -> String {
    format!("{}-2^{}-v{FORMAT}.params", size.kind.name(), size.log)
}

/// Progress of a long step, shown on stderr and sent to viewers as markers. With an estimate,
/// a bar and the time left; without one (a step with no model of its cost), the time so far:
/// a bar that guesses wrong is worse than none.
#[derive(Debug)]
pub struct Progress {
    what: String,
    estimate: Option<Duration>,
    started: Instant,
    tty: bool,
}

impl Progress {
    pub fn new(what: String, estimate: Option<Duration>) -> Progress {
        use std::io::IsTerminal;
        Progress {
            what,
            estimate,
            started: Instant::now(),
            tty: std::io::stderr().is_terminal(),
        }
    }

    /// Prints the progress line and tells viewers (marker `status`).
    pub fn tick(&self) {
        let el = self.started.elapsed().as_secs_f64();
        let Some(est) = self.estimate.map(|e| e.as_secs_f64().max(0.1)) else {
            self.show(format!("{}: {el:.1} s so far", self.what));
            return;
        };
        if el > est {
            // Past the estimate: say so rather than sit at 99 %.
            self.show(format!(
                "{}: {el:.1} s, longer than the {est:.0} s estimated",
                self.what
            ));
            return;
        }
        let frac = (el / est).min(0.99);
        let width = 30;
        let filled = (frac * width as f64) as usize;
        let bar: String = (0..width)
            .map(|i| {
                if i < filled {
                    '='
                } else if i == filled {
                    '>'
                } else {
                    ' '
                }
            })
            .collect();
        let eta = (est - el).max(0.0);
        self.show(format!(
            "{} [{bar}] {:>3.0}%  {el:.1} s, about {eta:.0} s left (estimated)",
            self.what,
            frac * 100.0
        ));
    }

    fn show(&self, line: String) {
        if self.tty {
            crate::err!("\r{line}\x1b[K");
        }
        probe::marker_with_text(probe_protocol::markers::STATUS, line);
    }

    pub fn finish(&self, outcome: &str) {
        let line = format!(
            "{}: {outcome} in {:.1} s{}",
            self.what,
            self.started.elapsed().as_secs_f64(),
            self.estimate.map_or(String::new(), |e| format!(
                " (estimated {:.1} s)",
                e.as_secs_f64()
            ))
        );
        if self.tty {
            crate::errln!("\r{line}\x1b[K");
        } else {
            crate::errln!("{line}");
        }
        probe::marker_with_text(probe_protocol::markers::STATUS, line);
    }
}

/// Seconds the real setup of this shape takes, from the points it computes and a quick
/// measurement of this machine's curve arithmetic. An estimate: labelled as such.
pub fn estimate_generation(shape: &Shape, log: u32) -> Duration {
    let t0 = Instant::now();
    let mut p = G1Projective::generator();
    // r − 3: a full-width scalar, like the setup's.
    let s = -blstrs::Scalar::from(3u64);
    for _ in 0..16 {
        p *= s;
    }
    std::hint::black_box(p);
    let g1_mul = t0.elapsed().as_secs_f64() / 16.0;
    let g1 = (1usize << log)
        + shape.aux
        + shape.inputs
        + shape.a_aux_density.count()
        + shape.b_input_density.count()
        + shape.b_aux_density.count();
    let g2 = shape.b_input_density.count() + shape.b_aux_density.count();
    // Fitted on the build machine (2 cores): squaring 2^12 and 2^14, sha256 2^15 and 2^16
    // took 3.1× (± 0.1) the point count × one full G1 multiplication / cores; G2 points count
    // as 3 G1 points.
    let cores = rayon::current_num_threads().max(1) as f64;
    Duration::from_secs_f64((g1 as f64 + 3.0 * g2 as f64) * g1_mul * 1.1 / cores + 0.3)
}

/// Loads cached real parameters, generating (and caching) them when missing or corrupt.
pub fn load_or_generate(size: CircuitSize, cache_dir: &Path) -> Result<ParamSet, ParamsError> {
    let _s = crate::span!("params");
    let shape = Shape::of(size.blank()).map_err(|e| ParamsError::Shape(e.to_string()))?;
    let dir = cache_dir.join("params");
    let cache_err = |source| ParamsError::Cache {
        path: dir.clone(),
        source,
    };
    std::fs::create_dir_all(&dir).map_err(cache_err)?;
    let path = dir.join(file_name(&size));
    match read_cached(&path, &size) {
        Ok(Some(params)) => {
            let pvk = prepare_verifying_key(&params.vk);
            return Ok(ParamSet {
                size,
                params,
                pvk: Some(pvk),
                shape,
            });
        }
        Ok(None) => {}
        Err(why) => crate::errln!(
            "warning: cached parameters {} are unusable ({why}); regenerating them",
            path.display()
        ),
    }
    // Check the cache is writable before spending the time.
    let probe_path = dir.join(format!(".write-test-{}", std::process::id()));
    std::fs::write(&probe_path, b"").map_err(cache_err)?;
    let _ = std::fs::remove_file(&probe_path);

    let what = format!(
        "generating parameters for {} 2^{}",
        size.kind.name(),
        size.log
    );
    let progress = std::sync::Arc::new(Progress::new(
        what,
        Some(estimate_generation(&shape, size.log)),
    ));
    let done = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    let ticker = {
        let (p, d) = (progress.clone(), done.clone());
        std::thread::Builder::new()
            .name("params-progress".into())
            .spawn(move || {
                while !d.load(std::sync::atomic::Ordering::Relaxed) {
                    p.tick();
                    std::thread::park_timeout(Duration::from_millis(250));
                }
            })
            .ok()
    };
    let mut rng = rand_chacha::ChaCha20Rng::from_entropy();
    let result =
        bellperson::groth16::generate_random_parameters::<Bls12, _, _>(size.blank(), &mut rng);
    done.store(true, std::sync::atomic::Ordering::Relaxed);
    if let Some(t) = ticker {
        t.thread().unpark();
        let _ = t.join();
    }
    let params = result.map_err(|e| ParamsError::Generate(e.to_string()))?;
    progress.finish("done");
    write_cached(&path, &size, &params).map_err(cache_err)?;
    let pvk = prepare_verifying_key(&params.vk);
    Ok(ParamSet {
        size,
        params,
        pvk: Some(pvk),
        shape,
    })
}

fn key_bytes(size: &CircuitSize) -> Vec<u8> {
    format!("{}:{}:{}", size.kind.name(), size.log, size.units).into_bytes()
}

/// `Ok(None)`: no file. `Err(reason)`: present but unusable.
fn read_cached(path: &Path, size: &CircuitSize) -> Result<Option<Parameters<Bls12>>, String> {
    let mut f = match std::fs::File::open(path) {
        Ok(f) => f,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(e.to_string()),
    };
    let mut data = Vec::new();
    f.read_to_end(&mut data).map_err(|e| e.to_string())?;
    let key = key_bytes(size);
    let header = 8 + 4 + 4 + key.len() + 32;
    if data.len() < header || &data[..8] != MAGIC {
        return Err("not a parameter file".into());
    }
    let format = u32::from_le_bytes([data[8], data[9], data[10], data[11]]);
    if format != FORMAT {
        return Err(format!("format {format}, expected {FORMAT}"));
    }
    let klen = u32::from_le_bytes([data[12], data[13], data[14], data[15]]) as usize;
    if klen != key.len() || data[16..16 + klen] != key[..] {
        return Err("made for another circuit".into());
    }
    let digest = &data[16 + klen..header];
    let body = &data[header..];
    if Sha256::digest(body).as_slice() != digest {
        return Err("checksum mismatch (corrupt or truncated)".into());
    }
    // Integrity is established by the checksum; skip the (slow) subgroup checks.
    Parameters::<Bls12>::read(body, false)
        .map(Some)
        .map_err(|e| format!("unreadable: {e}"))
}

fn write_cached(
    path: &Path,
    size: &CircuitSize,
    params: &Parameters<Bls12>,
) -> std::io::Result<()> {
    let mut body = Vec::new();
    params.write(&mut body)?;
    let key = key_bytes(size);
    let tmp = path.with_extension(format!("tmp-{}", std::process::id()));
    {
        let mut f = std::io::BufWriter::new(std::fs::File::create(&tmp)?);
        f.write_all(MAGIC)?;
        f.write_all(&FORMAT.to_le_bytes())?;
        f.write_all(&(key.len() as u32).to_le_bytes())?;
        f.write_all(&key)?;
        f.write_all(&Sha256::digest(&body))?;
        f.write_all(&body)?;
        f.into_inner().map_err(|e| e.into_error())?.sync_all()?;
    }
    std::fs::rename(&tmp, path)
}

/// `n` random-looking G1 points fast: one random start per chunk, then repeated additions of a
/// random step, normalised in batches. Not a setup: nothing proved against them verifies.
fn random_g1(n: usize, seed: u64) -> Vec<G1Affine> {
    let chunk = 8192;
    let mut out = vec![G1Affine::identity(); n];
    out.par_chunks_mut(chunk).enumerate().for_each(|(ci, dst)| {
        let mut rng = rand_chacha::ChaCha20Rng::seed_from_u64(seed ^ (ci as u64) << 20);
        let step = G1Projective::random(&mut rng);
        let mut p = G1Projective::random(&mut rng);
        let proj: Vec<G1Projective> = (0..dst.len())
            .map(|_| {
                p += step;
                p
            })
            .collect();
        G1Projective::batch_normalize(&proj, dst);
    });
    out
}

fn random_g2(n: usize, seed: u64) -> Vec<G2Affine> {
    let chunk = 4096;
    let mut out = vec![G2Affine::identity(); n];
    out.par_chunks_mut(chunk).enumerate().for_each(|(ci, dst)| {
        let mut rng = rand_chacha::ChaCha20Rng::seed_from_u64(seed ^ (ci as u64) << 20);
        let step = G2Projective::random(&mut rng);
        let mut p = G2Projective::random(&mut rng);
        let proj: Vec<G2Projective> = (0..dst.len())
            .map(|_| {
                p += step;
                p
            })
            .collect();
        G2Projective::batch_normalize(&proj, dst);
    });
    out
}

/// A synthetic SRS with exactly the shape real parameters of `size` would have.
pub fn synthetic(size: CircuitSize) -> Result<ParamSet, ParamsError> {
    let _s = crate::span!("params");
    let shape = Shape::of(size.blank()).map_err(|e| ParamsError::Shape(e.to_string()))?;
    let progress = Progress::new(
        format!(
            "building a synthetic SRS for {} 2^{}",
            size.kind.name(),
            size.log
        ),
        // Random points cost what the machine's RNG and normalisation cost: no model.
        None,
    );
    let seed = rand::random::<u64>();
    let n = 1usize << size.log;
    let a_len = shape.inputs + shape.a_aux_density.count();
    let b_len = shape.b_input_density.count() + shape.b_aux_density.count();
    let g1 = |k: u64| {
        G1Projective::random(rand_chacha::ChaCha20Rng::seed_from_u64(seed ^ k)).to_affine()
    };
    let g2 = |k: u64| {
        G2Projective::random(rand_chacha::ChaCha20Rng::seed_from_u64(seed ^ k)).to_affine()
    };
    let vk = VerifyingKey::<Bls12> {
        alpha_g1: g1(1),
        beta_g1: g1(2),
        beta_g2: g2(3),
        gamma_g2: g2(4),
        delta_g1: g1(5),
        delta_g2: g2(6),
        ic: random_g1(shape.inputs, seed ^ 7),
    };
    let params = Parameters {
        vk,
        h: std::sync::Arc::new(random_g1(n - 1, seed ^ 11)),
        l: std::sync::Arc::new(random_g1(shape.aux, seed ^ 13)),
        a: std::sync::Arc::new(random_g1(a_len, seed ^ 17)),
        b_g1: std::sync::Arc::new(random_g1(b_len, seed ^ 19)),
        b_g2: std::sync::Arc::new(random_g2(b_len, seed ^ 23)),
    };
    progress.finish("done (SYNTHETIC: proofs will not verify)");
    Ok(ParamSet {
        size,
        params,
        pvk: None,
        shape,
    })
}

/// Real or synthetic parameters for `size`.
pub fn obtain(size: CircuitSize, mode: SrsMode, cache_dir: &Path) -> Result<ParamSet, ParamsError> {
    match mode {
        SrsMode::Real => load_or_generate(size, cache_dir),
        SrsMode::Synthetic => synthetic(size),
    }
}

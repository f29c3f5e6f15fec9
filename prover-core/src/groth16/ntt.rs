//! The number-theoretic transform over the BLS12-381 scalar field on the CPU: the reference
//! every GPU kernel is compared with.
//!
//! Conventions (the same as bellperson's `EvaluationDomain`, so H matches its prover): the
//! domain of size 2^k uses ω = ROOT_OF_UNITY^(2^(S-k)); the coset is g·⟨ω⟩ with g the
//! field's multiplicative generator (7); Z(X) = X^n − 1 is the constant gⁿ − 1 on the coset.

use blstrs::Scalar;
use ff::{Field, PrimeField};
use rayon::prelude::*;

/// Below this many elements work stays on one thread.
const PAR_MIN: usize = 1 << 12;

/// An evaluation domain of size 2^log.
#[derive(Debug, Clone)]
pub struct Domain {
    pub log: u32,
    pub n: usize,
    pub omega: Scalar,
    pub omega_inv: Scalar,
    pub n_inv: Scalar,
    pub g: Scalar,
    pub g_inv: Scalar,
}

/// Why a domain cannot be built.
#[derive(Debug, Clone, thiserror::Error)]
#[error("a domain of 2^{log} elements exceeds the field's 2-adicity (2^{max})")]
pub struct DomainTooLarge {
    pub log: u32,
    pub max: u32,
}

impl Domain {
    pub fn new(log: u32) -> Result<Domain, DomainTooLarge> {
        if log > Scalar::S {
            return Err(DomainTooLarge {
                log,
                max: Scalar::S,
            });
        }
        let mut omega = Scalar::ROOT_OF_UNITY;
        for _ in log..Scalar::S {
            omega = omega.square();
        }
        let n = 1usize << log;
        let g = Scalar::MULTIPLICATIVE_GENERATOR;
        Ok(Domain {
            log,
            n,
            omega,
            omega_inv: omega.invert().unwrap_or(Scalar::ONE),
            n_inv: Scalar::from(n as u64).invert().unwrap_or(Scalar::ONE),
            g,
            g_inv: g.invert().unwrap_or(Scalar::ONE),
        })
    }

    /// The smallest domain holding `len` elements.
    pub fn for_len(len: usize) -> Result<Domain, DomainTooLarge> {
        let log = len.max(1).next_power_of_two().trailing_zeros();
        Domain::new(log)
    }

    /// 1 / Z on the coset: Z(gω^i) = gⁿ − 1 for every i.
    pub fn z_inv_on_coset(&self) -> Scalar {
        let zn = self.g.pow_vartime([self.n as u64]) - Scalar::ONE;
        zn.invert().unwrap_or(Scalar::ZERO)
    }

    /// Forward NTT in place (coefficients → evaluations at ω^i). `a.len()` must be `n`.
    pub fn ntt(&self, a: &mut [Scalar]) {
        transform(a, self.omega);
    }

    /// Inverse NTT in place (evaluations → coefficients).
    pub fn intt(&self, a: &mut [Scalar]) {
        transform(a, self.omega_inv);
        scale(a, self.n_inv);
    }

    /// Evaluations on the coset g·⟨ω⟩ from coefficients.
    pub fn coset_ntt(&self, a: &mut [Scalar]) {
        distribute_powers(a, self.g);
        transform(a, self.omega);
    }

    /// Coefficients from evaluations on the coset.
    pub fn icoset_ntt(&self, a: &mut [Scalar]) {
        self.intt(a);
        distribute_powers(a, self.g_inv);
    }
}

/// a[i] *= c for all i.
pub fn scale(a: &mut [Scalar], c: Scalar) {
    if a.len() >= PAR_MIN {
        a.par_chunks_mut(PAR_MIN)
            .for_each(|ch| ch.iter_mut().for_each(|x| *x *= c));
    } else {
        a.iter_mut().for_each(|x| *x *= c);
    }
}

/// a[i] *= g^i.
pub fn distribute_powers(a: &mut [Scalar], g: Scalar) {
    let chunk = PAR_MIN.max(a.len() / rayon::current_num_threads().max(1) / 4 + 1);
    a.par_chunks_mut(chunk).enumerate().for_each(|(ci, ch)| {
        let mut p = g.pow_vartime([(ci * chunk) as u64]);
        for x in ch {
            *x *= p;
            p *= g;
        }
    });
}

fn bit_reverse(a: &mut [Scalar]) {
    let n = a.len();
    let log = n.trailing_zeros();
    if log == 0 {
        return;
    }
    for i in 0..n {
        let j = i.reverse_bits() >> (usize::BITS - log);
        if i < j {
            a.swap(i, j);
        }
    }
}

/// Iterative radix-2 decimation-in-time transform with root `w` (n = a.len(), a power of 2).
fn transform(a: &mut [Scalar], w: Scalar) {
    let n = a.len();
    assert!(n.is_power_of_two(), "NTT length {n} is not a power of two");
    if n == 1 {
        return;
    }
    bit_reverse(a);
    // Twiddles ω^j for j < n/2, computed once.
    let half = n / 2;
    let mut tw = vec![Scalar::ONE; half];
    if half >= PAR_MIN {
        let chunk = PAR_MIN;
        tw.par_chunks_mut(chunk).enumerate().for_each(|(ci, ch)| {
            let mut p = w.pow_vartime([(ci * chunk) as u64]);
            for t in ch {
                *t = p;
                p *= w;
            }
        });
    } else {
        for j in 1..half {
            tw[j] = tw[j - 1] * w;
        }
    }
    let mut m = 1;
    while m < n {
        let step = n / (2 * m);
        let butterflies = |block: &mut [Scalar]| {
            let (lo, hi) = block.split_at_mut(m);
            for j in 0..m {
                let t = hi[j] * tw[j * step];
                hi[j] = lo[j] - t;
                lo[j] += t;
            }
        };
        if n >= PAR_MIN {
            if 2 * m <= n / 8 {
                // Many small blocks: one task per group of blocks.
                let per = (PAR_MIN / (2 * m)).max(1) * 2 * m;
                a.par_chunks_mut(per)
                    .for_each(|ch| ch.chunks_mut(2 * m).for_each(butterflies));
            } else {
                // Few large blocks: split each block's butterflies across threads.
                for block in a.chunks_mut(2 * m) {
                    let (lo, hi) = block.split_at_mut(m);
                    let part = (m / rayon::current_num_threads().max(1)).max(1024);
                    lo.par_chunks_mut(part)
                        .zip(hi.par_chunks_mut(part))
                        .enumerate()
                        .for_each(|(pi, (l, h))| {
                            for k in 0..l.len() {
                                let j = pi * part + k;
                                let t = h[k] * tw[j * step];
                                h[k] = l[k] - t;
                                l[k] += t;
                            }
                        });
                }
            }
        } else {
            a.chunks_mut(2 * m).for_each(butterflies);
        }
        m *= 2;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::SeedableRng;

    fn naive_eval(coeffs: &[Scalar], x: Scalar) -> Scalar {
        coeffs.iter().rev().fold(Scalar::ZERO, |acc, c| acc * x + c)
    }

    #[test]
    fn ntt_matches_naive_evaluation_and_inverts() {
        let mut rng = rand_chacha::ChaCha20Rng::seed_from_u64(1);
        for log in [0u32, 1, 3, 6, 13] {
            let d = Domain::new(log).unwrap();
            let coeffs: Vec<Scalar> = (0..d.n).map(|_| Scalar::random(&mut rng)).collect();
            let mut evals = coeffs.clone();
            d.ntt(&mut evals);
            for i in [0usize, 1, d.n / 2, d.n - 1]
                .into_iter()
                .filter(|&i| i < d.n)
            {
                let x = d.omega.pow_vartime([i as u64]);
                assert_eq!(evals[i], naive_eval(&coeffs, x), "log {log} i {i}");
            }
            let mut back = evals.clone();
            d.intt(&mut back);
            assert_eq!(back, coeffs);
            let mut c = coeffs.clone();
            d.coset_ntt(&mut c);
            let x = d.g * d.omega.pow_vartime([3 % d.n as u64]);
            assert_eq!(c[3 % d.n], naive_eval(&coeffs, x));
            d.icoset_ntt(&mut c);
            assert_eq!(c, coeffs);
        }
    }

    #[test]
    fn matches_bellperson_domain() {
        use bellperson::domain::EvaluationDomain;
        let mut rng = rand_chacha::ChaCha20Rng::seed_from_u64(2);
        let n = 1 << 10;
        let v: Vec<Scalar> = (0..n).map(|_| Scalar::random(&mut rng)).collect();
        let d = Domain::new(10).unwrap();
        let mut ours = v.clone();
        d.coset_ntt(&mut ours);
        let mut theirs = EvaluationDomain::from_coeffs(v).unwrap();
        theirs
            .coset_fft(&ec_gpu_gen::threadpool::Worker::new(), &mut None)
            .unwrap();
        assert_eq!(ours, theirs.into_coeffs());
    }
}

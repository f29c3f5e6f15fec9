//! The groups the device's Pippenger passes run in (the MSM and batch addition, G1 and G2):
//! their kernels, and the layout and launch bounds those kernels have.

use super::kernels::Kernels;
use super::layout::{JAC_LIMBS, JAC2_LIMBS, jac_to_g1, jac_to_g2};
use blstrs::{G1Projective, G2Projective};
use cudarc::driver::CudaFunction;
use group::Group;

/// How the first accumulation pass (from affine bases: most of an MSM's time) is launched,
/// for G1. At ptxas -O3 the pass spilled 200 B at the narrow shape (128 registers) and 24 B at
/// the wide one (168), sppark's accumulation shape (`__launch_bounds__(384)`), and wide was
/// faster (2^24, bases resident, scalars page-locked: 198.1 against 218.4 ms). With the MSM
/// module at -O1 and the field's sums as carry chains neither spills (128 and 122 registers),
/// and narrow's 16 warps an SM beat wide's 12 at every size, in both rounds of one run on the
/// H200 (145.1–145.2 against 148.4 ms at 2^24, 46.6 against 47.8 at 2^22; `bash
/// tools/gpu-ptxas.sh`, docs/BENCHMARKS.md): narrow is the default again. G2 has one shape
/// (its launch bounds already allow 255 registers).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, clap::ValueEnum)]
pub enum Accumulate {
    /// 256 threads a block, 2 blocks an SM (at most 128 registers).
    #[default]
    Narrow,
    /// 384 threads a block, 1 block an SM (at most 168 registers).
    Wide,
}

/// The name `--msm-accumulate` takes.
impl std::fmt::Display for Accumulate {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let value = clap::ValueEnum::to_possible_value(self).ok_or(std::fmt::Error)?;
        f.pad(value.get_name())
    }
}

/// A group's kernels of the Pippenger passes: the MSM's, and batch addition's, which stops
/// after the accumulation.
#[derive(Debug, Clone, Copy)]
pub struct GroupKernels<'k> {
    pub accumulate_affine: &'k CudaFunction,
    /// Threads of an `accumulate_affine` block (its launch bounds).
    pub affine_threads: u32,
    pub accumulate_xyzz: &'k CudaFunction,
    pub window_reduce: &'k CudaFunction,
    /// Each bucket's one sum as a Jacobian point (batch addition's end).
    pub sums_to_jac: &'k CudaFunction,
}

/// A group the device's Pippenger passes run in (the MSM and batch addition): its kernels,
/// and the layout and launch bounds they have.
pub trait MsmGroup: Group + Copy {
    /// u64 words of an XYZZ accumulator and of a Jacobian point on the device.
    const XYZZ_WORDS: usize;
    const JAC_WORDS: usize;
    /// Threads of an XYZZ accumulation block and of a window-reduction block (the kernels'
    /// launch bounds: a G2 accumulator is twice a G1 one).
    const ACCUMULATE_THREADS: u32;
    const REDUCE_THREADS: u32;
    /// Names of batch addition's timed passes: the first (from affine bases), the later ones.
    const SUMS_PASSES: [&'static str; 2];
    /// The kernels, the affine pass at `shape` where the group has several.
    fn kernels(k: &Kernels, shape: Accumulate) -> GroupKernels<'_>;
    /// A Jacobian point as the kernels write it.
    fn from_jac(words: &[u64]) -> Self;
}

impl MsmGroup for G1Projective {
    const XYZZ_WORDS: usize = 24;
    const JAC_WORDS: usize = JAC_LIMBS;
    const ACCUMULATE_THREADS: u32 = 256;
    /// MSM_REDUCE_THREADS in msm.cu.
    const REDUCE_THREADS: u32 = 128;
    const SUMS_PASSES: [&'static str; 2] = ["g1_sums", "g1_sums_xyzz"];
    fn kernels(k: &Kernels, shape: Accumulate) -> GroupKernels<'_> {
        let (accumulate_affine, affine_threads) = match shape {
            Accumulate::Narrow => (&k.msm_accumulate_affine, 256),
            Accumulate::Wide => (&k.msm_accumulate_affine_wide, 384),
        };
        GroupKernels {
            accumulate_affine,
            affine_threads,
            accumulate_xyzz: &k.msm_accumulate_xyzz,
            window_reduce: &k.msm_window_reduce,
            sums_to_jac: &k.g1_sums_to_jac,
        }
    }
    fn from_jac(words: &[u64]) -> Self {
        jac_to_g1(words.try_into().expect("JAC_LIMBS words"))
    }
}

impl MsmGroup for G2Projective {
    const XYZZ_WORDS: usize = 48;
    const JAC_WORDS: usize = JAC2_LIMBS;
    const ACCUMULATE_THREADS: u32 = 128;
    /// G2_REDUCE_THREADS in msm.cu.
    const REDUCE_THREADS: u32 = 64;
    const SUMS_PASSES: [&'static str; 2] = ["g2_sums", "g2_sums_xyzz"];
    fn kernels(k: &Kernels, _: Accumulate) -> GroupKernels<'_> {
        GroupKernels {
            accumulate_affine: &k.g2_accumulate_affine,
            affine_threads: Self::ACCUMULATE_THREADS,
            accumulate_xyzz: &k.g2_accumulate_xyzz,
            window_reduce: &k.g2_window_reduce,
            sums_to_jac: &k.g2_sums_to_jac,
        }
    }
    fn from_jac(words: &[u64]) -> Self {
        jac_to_g2(words.try_into().expect("JAC2_LIMBS words"))
    }
}

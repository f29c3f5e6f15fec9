//! The CUDA kernel headers (`cuda/fr.cuh`, `fp.cuh`, `fp2.cuh`, `curve.cuh`, `g1.cuh`, `g2.cuh`,
//! `msm.cuh`), compiled for the host and
//! wrapped for tests against blst: the arithmetic the GPU runs is checked on every CI machine,
//! none of which has a GPU. Points cross as the raw words both sides use: Montgomery-form
//! field elements of 12 × u32, affine points as blst stores them, XYZZ accumulators, and
//! Jacobian points laid out as blst's `blst_p1`.

use blst::{blst_fp, blst_p1_affine};
use blstrs::{G1Affine, G1Projective, Scalar};
use ff::PrimeField;

pub type Fr = [u32; 8];
pub type Fp = [u32; 12];
pub type Affine = [u32; 24];
pub type Xyzz = [u32; 48];
pub type Jac = [u32; 36];

mod ffi {
    unsafe extern "C" {
        pub fn ps_fr_op(op: i32, a: *const u32, b: *const u32, out: *mut u32);
        pub fn ps_fp_op(op: i32, a: *const u32, b: *const u32, out: *mut u32);
        pub fn ps_g1_from_affine(a: *const u32, out: *mut u32);
        pub fn ps_g1_add_affine(p: *const u32, q: *const u32, out: *mut u32);
        pub fn ps_g1_add(p: *const u32, q: *const u32, out: *mut u32);
        pub fn ps_g1_dbl(p: *const u32, out: *mut u32);
        pub fn ps_g1_mul_small(p: *const u32, k: u32, bits: i32, out: *mut u32);
        pub fn ps_g1_to_jac(p: *const u32, out: *mut u32);
        pub fn ps_fp2_op(op: i32, a: *const u32, b: *const u32, out: *mut u32);
        pub fn ps_g2_op(op: i32, p: *const u32, q: *const u32, out: *mut u32);
        pub fn ps_msm_digits(s: *const u32, c: u32, out: *mut u32);
        pub fn ps_msm_reference(
            bases: *const u32,
            scalars: *const u32,
            n: u64,
            c: u32,
            k: u32,
            run: u32,
            out: *mut u32,
        );
        pub fn ps_msm_reference_g2(
            bases: *const u32,
            scalars: *const u32,
            n: u64,
            c: u32,
            k: u32,
            run: u32,
            out: *mut u32,
        );
    }
}

/// Field operations of `fr.cuh`.
#[derive(Debug, Clone, Copy)]
pub enum FrOp {
    Add = 0,
    Sub = 1,
    Mul = 2,
}

pub fn fr_op(op: FrOp, a: &Fr, b: &Fr) -> Fr {
    let mut out = [0u32; 8];
    // SAFETY: the C side reads 8 words from each input and writes 8 to `out`.
    unsafe { ffi::ps_fr_op(op as i32, a.as_ptr(), b.as_ptr(), out.as_mut_ptr()) };
    out
}

/// A scalar's words as it holds them (Montgomery form), as the device reads them.
pub fn fr_words(s: &Scalar) -> Fr {
    // SAFETY: Scalar is `#[repr(transparent)]` over blst_fr, four u64 limbs.
    let raw: blst::blst_fr = unsafe { std::mem::transmute::<Scalar, blst::blst_fr>(*s) };
    words::<8>(&raw.l)
}

/// Field operations of `fp.cuh`.
#[derive(Debug, Clone, Copy)]
pub enum FpOp {
    Add = 0,
    Sub = 1,
    Mul = 2,
    Neg = 3,
    Sqr = 4,
    One = 5,
}

pub fn fp_op(op: FpOp, a: &Fp, b: &Fp) -> Fp {
    let mut out = [0u32; 12];
    // SAFETY: the C side reads 12 words from each input and writes 12 to `out`.
    unsafe { ffi::ps_fp_op(op as i32, a.as_ptr(), b.as_ptr(), out.as_mut_ptr()) };
    out
}

pub fn from_affine(a: &Affine) -> Xyzz {
    let mut out = [0u32; 48];
    // SAFETY: reads 24 words, writes 48.
    unsafe { ffi::ps_g1_from_affine(a.as_ptr(), out.as_mut_ptr()) };
    out
}

pub fn add_affine(p: &Xyzz, q: &Affine) -> Xyzz {
    let mut out = [0u32; 48];
    // SAFETY: reads 48 and 24 words, writes 48.
    unsafe { ffi::ps_g1_add_affine(p.as_ptr(), q.as_ptr(), out.as_mut_ptr()) };
    out
}

pub fn add(p: &Xyzz, q: &Xyzz) -> Xyzz {
    let mut out = [0u32; 48];
    // SAFETY: reads 48 words from each input, writes 48.
    unsafe { ffi::ps_g1_add(p.as_ptr(), q.as_ptr(), out.as_mut_ptr()) };
    out
}

pub fn dbl(p: &Xyzz) -> Xyzz {
    let mut out = [0u32; 48];
    // SAFETY: reads 48 words, writes 48.
    unsafe { ffi::ps_g1_dbl(p.as_ptr(), out.as_mut_ptr()) };
    out
}

pub fn mul_small(p: &Xyzz, k: u32, bits: i32) -> Xyzz {
    let mut out = [0u32; 48];
    // SAFETY: reads 48 words, writes 48.
    unsafe { ffi::ps_g1_mul_small(p.as_ptr(), k, bits, out.as_mut_ptr()) };
    out
}

pub fn to_jac(p: &Xyzz) -> Jac {
    let mut out = [0u32; 36];
    // SAFETY: reads 48 words, writes 36.
    unsafe { ffi::ps_g1_to_jac(p.as_ptr(), out.as_mut_ptr()) };
    out
}

/// An element of Fp2 (`fp2.cuh`): c0 then c1, 12 words each, as blst's `blst_fp2`.
pub type Fp2 = [u32; 24];
/// A G2 point in blst's affine layout, an XYZZ accumulator and a Jacobian point (`g2.cuh`).
pub type Affine2 = [u32; 48];
pub type Xyzz2 = [u32; 96];
pub type Jac2 = [u32; 72];

pub fn fp2_op(op: FpOp, a: &Fp2, b: &Fp2) -> Fp2 {
    let mut out = [0u32; 24];
    // SAFETY: the C side reads 24 words from each input and writes 24 to `out`.
    unsafe { ffi::ps_fp2_op(op as i32, a.as_ptr(), b.as_ptr(), out.as_mut_ptr()) };
    out
}

/// The G2 point operations of `curve.cuh` over fp2.
#[derive(Debug, Clone, Copy)]
pub enum G2Op {
    FromAffine = 0,
    AddAffine = 1,
    Add = 2,
    Dbl = 3,
}

/// `op` on `p` (and `q`: an affine point for FromAffine and AddAffine, XYZZ for Add).
pub fn g2_op(op: G2Op, p: &Xyzz2, q: &[u32]) -> Xyzz2 {
    let need = match op {
        G2Op::Add => 96,
        G2Op::FromAffine | G2Op::AddAffine => 48,
        G2Op::Dbl => 0,
    };
    assert!(q.len() >= need, "{op:?} reads {need} words of q");
    let mut out = [0u32; 96];
    // SAFETY: reads 96 words of p and `need` of q (checked above), writes 96.
    unsafe { ffi::ps_g2_op(op as i32, p.as_ptr(), q.as_ptr(), out.as_mut_ptr()) };
    out
}

pub fn g2_to_jac(p: &Xyzz2) -> Jac2 {
    let mut out = [0u32; 72];
    // SAFETY: reads 96 words of p (q unused by op 4), writes 72.
    unsafe { ffi::ps_g2_op(4, p.as_ptr(), p.as_ptr(), out.as_mut_ptr()) };
    out
}

/// An XYZZ accumulator as a blstrs G2 point, through the device's Jacobian conversion.
pub fn xyzz2_point(p: &Xyzz2) -> blstrs::G2Projective {
    jac2_point(&g2_to_jac(p))
}

/// The words of a G2 affine point as blst holds it in memory.
pub fn affine2_words(p: &blstrs::G2Affine) -> Affine2 {
    // SAFETY: G2Affine is `#[repr(transparent)]` over blst_p2_affine, `#[repr(C)]` of two
    // blst_fp2, each two blst_fp: 24 u64.
    let raw: [u64; 24] = unsafe { std::mem::transmute::<blstrs::G2Affine, [u64; 24]>(*p) };
    words::<48>(&raw)
}

/// The Jacobian words as a blstrs G2 point, through the conversion the device's results take.
pub fn jac2_point(j: &Jac2) -> blstrs::G2Projective {
    prover_core::gpu::jac_to_g2(&jac2_limbs(j))
}

/// The signed window digits of a canonical scalar, as `msm_digits` computes them.
pub fn digits(s: &[u32; 8], c: u32) -> Vec<u32> {
    assert!((2..=31).contains(&c));
    let mut out = vec![0u32; 256usize.div_ceil(c as usize)];
    // SAFETY: reads 8 words; writes msm_windows(c) = ⌈256/c⌉ words, the length of `out`.
    unsafe { ffi::ps_msm_digits(s.as_ptr(), c, out.as_mut_ptr()) };
    out
}

/// The C reference's signature: bases, scalars, n, c, k, run, out.
type ReferenceFn = unsafe extern "C" fn(*const u32, *const u32, u64, u32, u32, u32, *mut u32);

/// Runs a C reference of the kernels' MSM over `bases` (their words, `affine` a point) and
/// `scalars`: `jac` words per window out.
fn run_reference(
    reference: ReferenceFn,
    bases: Vec<u32>,
    affine: usize,
    scalars: &[Scalar],
    (c, k, run): (u32, u32, u32),
    jac: usize,
) -> Vec<u32> {
    let n = bases.len() / affine;
    assert_eq!(n, scalars.len());
    assert!((2..=20).contains(&c) && k >= 2 && run >= 1);
    let s: Vec<u32> = scalars.iter().flat_map(canonical_words).collect();
    let windows = 256usize.div_ceil(c as usize);
    let mut out = vec![0u32; jac * windows];
    // SAFETY: `bases` holds `affine` words per point and `s` 8 per scalar for n points, the
    // layout `reference` reads; `out` has the `jac` words per window it writes.
    unsafe {
        reference(
            bases.as_ptr(),
            s.as_ptr(),
            n as u64,
            c,
            k,
            run,
            out.as_mut_ptr(),
        )
    };
    out
}

/// Σ scalars[i]·bases[i] by the kernels' algorithm, run sequentially on the host; one
/// Jacobian point per window (Σ magnitude·bucket), to be combined like the device's.
pub fn msm_reference(bases: &[G1Affine], scalars: &[Scalar], c: u32, k: u32, run: u32) -> Vec<Jac> {
    let b: Vec<u32> = bases.iter().flat_map(affine_words).collect();
    run_reference(ffi::ps_msm_reference, b, 24, scalars, (c, k, run), 36)
        .chunks_exact(36)
        .map(|w| w.try_into().expect("36 words"))
        .collect()
}

/// [`msm_reference`] in G2: the same passes over `g2.cuh`'s formulas, one Jacobian point per
/// window.
pub fn msm_reference_g2(
    bases: &[blstrs::G2Affine],
    scalars: &[Scalar],
    c: u32,
    k: u32,
    run: u32,
) -> Vec<Jac2> {
    let b: Vec<u32> = bases.iter().flat_map(affine2_words).collect();
    run_reference(ffi::ps_msm_reference_g2, b, 48, scalars, (c, k, run), 72)
        .chunks_exact(72)
        .map(|w| w.try_into().expect("72 words"))
        .collect()
}

/// The Jacobian words of a G2 point as the u64 limbs the device hands the host.
pub fn jac2_limbs(j: &Jac2) -> [u64; 36] {
    let mut l = [0u64; 36];
    for (i, x) in l.iter_mut().enumerate() {
        *x = j[2 * i] as u64 | (j[2 * i + 1] as u64) << 32;
    }
    l
}

fn words<const N: usize>(l: &[u64]) -> [u32; N] {
    let mut out = [0u32; N];
    for (i, x) in l.iter().enumerate() {
        out[2 * i] = *x as u32;
        out[2 * i + 1] = (*x >> 32) as u32;
    }
    out
}

fn limbs(w: &[u32]) -> [u64; 6] {
    let mut l = [0u64; 6];
    for (i, x) in l.iter_mut().enumerate() {
        *x = w[2 * i] as u64 | (w[2 * i + 1] as u64) << 32;
    }
    l
}

/// The words of an affine point as blst holds it in memory.
pub fn affine_words(p: &G1Affine) -> Affine {
    // SAFETY: G1Affine is `#[repr(transparent)]` over blst_p1_affine.
    let raw: blst_p1_affine = unsafe { std::mem::transmute::<G1Affine, blst_p1_affine>(*p) };
    let mut out = [0u32; 24];
    out[..12].copy_from_slice(&words::<12>(&raw.x.l));
    out[12..].copy_from_slice(&words::<12>(&raw.y.l));
    out
}

/// The canonical (not Montgomery) little-endian words of a scalar.
pub fn canonical_words(s: &Scalar) -> [u32; 8] {
    let r = s.to_repr();
    let mut out = [0u32; 8];
    for (i, w) in out.iter_mut().enumerate() {
        *w = u32::from_le_bytes(r.as_ref()[4 * i..4 * i + 4].try_into().expect("4 bytes"));
    }
    out
}

/// The Jacobian words as a blstrs point, through the conversion the device's results take.
pub fn jac_point(j: &Jac) -> G1Projective {
    prover_core::gpu::jac_to_g1(&jac_limbs(j))
}

/// The Jacobian words as the u64 limbs the device hands the host.
pub fn jac_limbs(j: &Jac) -> [u64; 18] {
    let mut l = [0u64; 18];
    for (i, x) in l.iter_mut().enumerate() {
        *x = j[2 * i] as u64 | (j[2 * i + 1] as u64) << 32;
    }
    l
}

/// A field element's words (Montgomery form) as blst's limbs.
pub fn fp_limbs(w: &Fp) -> blst_fp {
    blst_fp { l: limbs(w) }
}

/// blst's limbs as words.
pub fn fp_words(f: &blst_fp) -> Fp {
    words::<12>(&f.l)
}

pub fn xyzz_point(p: &Xyzz) -> G1Projective {
    jac_point(&to_jac(p))
}

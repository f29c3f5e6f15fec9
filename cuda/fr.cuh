// BLS12-381 scalar field Fr, Montgomery form with R = 2^256: the same 32 bytes (4 × u64
// little-endian limbs) blstrs' `Scalar` holds, so vectors go to the device without conversion.
// Arithmetic on 8 × 32-bit limbs in carry chains (carry.cuh); every result is fully reduced
// (< r), so results compare byte for byte with the CPU backend. Compiles for the host too:
// the `cuda-check` crate tests it against blst.
#pragma once
#include "carry.cuh"

struct fr { u32 l[8]; };

// r = 0x73eda753299d7d483339d80809a1d80553bda402fffe5bfeffffffff00000001. As immediates (a
// local constexpr array, indexed by unrolled constants), not a __constant__ table: the limbs
// then sit in the instructions.
#define FR_LIMBS {0x00000001u, 0xffffffffu, 0xfffe5bfeu, 0x53bda402u, \
                  0x09a1d805u, 0x3339d808u, 0x299d7d48u, 0x73eda753u}
// -r^-1 mod 2^32 (r is 1 mod 2^32).
#define FR_MINV 0xffffffffu

// c = a − r if that does not borrow, else a (a < 2r).
PS_FN fr fr_reduce_once(const fr &a) {
    constexpr u32 R[8] = FR_LIMBS;
    fr d;
    u32 borrow;
    CC_SUB(d.l[0], a.l[0], R[0]);
    PS_UNROLL
    for (int i = 1; i < 8; i++) CC_SUBC(d.l[i], a.l[i], R[i]);
    CC_SUBC_END(borrow, 0u, 0u);
    PS_UNROLL
    for (int i = 0; i < 8; i++) d.l[i] = borrow ? a.l[i] : d.l[i];
    return d;
}

// c = a + b mod r, branch-free. a, b < r < 2^255: the sum has no carry out.
PS_FN fr fr_add(const fr &a, const fr &b) {
    fr c;
    CC_ADD(c.l[0], a.l[0], b.l[0]);
    PS_UNROLL
    for (int i = 1; i < 7; i++) CC_ADDC(c.l[i], a.l[i], b.l[i]);
    CC_ADDC_END(c.l[7], a.l[7], b.l[7]);
    return fr_reduce_once(c);
}

// c = a − b mod r, branch-free: on a borrow, r is added back.
PS_FN fr fr_sub(const fr &a, const fr &b) {
    constexpr u32 R[8] = FR_LIMBS;
    fr c, d;
    u32 borrow;
    CC_SUB(c.l[0], a.l[0], b.l[0]);
    PS_UNROLL
    for (int i = 1; i < 8; i++) CC_SUBC(c.l[i], a.l[i], b.l[i]);
    CC_SUBC_END(borrow, 0u, 0u);
    const u32 m = borrow; // all ones on a borrow
    CC_ADD(d.l[0], c.l[0], R[0] & m);
    PS_UNROLL
    for (int i = 1; i < 7; i++) CC_ADDC(d.l[i], c.l[i], R[i] & m);
    CC_ADDC_END(d.l[7], c.l[7], R[7] & m);
    return d;
}

// Montgomery product, CIOS with the limb products split by parity (as sppark does): products
// a_j·b_i with j even land on word pairs (j, j+1) of `even`, those with j odd on pairs of
// `odd`, which sits one word higher. Every chain then covers aligned register pairs, so each
// limb product is one IMAD.WIDE.U32.X. After a row's reduction the low word is zero and the
// two arrays swap roles (the division by 2^32 moves `odd` down to where `even` was); the word
// they then share is added at the start of the next row, its carry riding the next chain.
// Bounds: r < 2^255, so a row's total stays below 2r·2^32 < 2^288 and no chain carries out of
// its top word.

// acc[j], acc[j+1] = a[j]·bi for even j.
PS_FN void fr_mul_n(u32 *acc, const u32 *a, u32 bi) {
    PS_UNROLL
    for (int j = 0; j < 8; j += 2) {
        acc[j] = MUL_LO(a[j], bi);
        acc[j + 1] = MUL_HI(a[j], bi);
    }
}

// acc += a[j]·bi at (j, j+1) for even j, in one chain; its carry out of acc[7] stays in CC.
PS_FN void fr_cmad_n(u32 *acc, const u32 *a, u32 bi) {
    CC_MAD_LO(acc[0], a[0], bi, acc[0]);
    CC_MADC_HI(acc[1], a[0], bi, acc[1]);
    PS_UNROLL
    for (int j = 2; j < 8; j += 2) {
        CC_MADC_LO(acc[j], a[j], bi, acc[j]);
        CC_MADC_HI(acc[j + 1], a[j], bi, acc[j + 1]);
    }
}

// odd[j], odd[j+1] = a[j]·bi + odd[j+2], odd[j+3] + CC for even j: the product row added while
// the array moves down two words (the top pair has nothing above it).
PS_FN void fr_madc_n_rshift(u32 *odd, const u32 *a, u32 bi) {
    PS_UNROLL
    for (int j = 0; j < 6; j += 2) {
        CC_MADC_LO(odd[j], a[j], bi, odd[j + 2]);
        CC_MADC_HI(odd[j + 1], a[j], bi, odd[j + 3]);
    }
    CC_MADC_LO(odd[6], a[6], bi, 0u);
    CC_MADC_HI_END(odd[7], a[6], bi, 0u);
}

// One CIOS row: (even, odd) += a·bi, then += m·r with m making the low word zero.
PS_FN void fr_mad_n_redc(u32 *even, u32 *odd, const u32 *a, u32 bi, bool first) {
    constexpr u32 R[8] = FR_LIMBS;
    if (first) {
        fr_mul_n(odd, a + 1, bi);
        fr_mul_n(even, a, bi);
    } else {
        CC_ADD(even[0], even[0], odd[1]);
        fr_madc_n_rshift(odd, a + 1, bi);
        fr_cmad_n(even, a, bi);
        CC_ADDC_END(odd[7], odd[7], 0u);
    }
    const u32 m = MUL_LO(even[0], FR_MINV);
    fr_cmad_n(odd, R + 1, m);
    fr_cmad_n(even, R, m);
    CC_ADDC_END(odd[7], odd[7], 0u);
}

PS_FN fr fr_mul(const fr &a, const fr &b) {
    u32 even[8], odd[8];
    PS_UNROLL
    for (int i = 0; i < 8; i += 2) {
        fr_mad_n_redc(even, odd, a.l, b.l[i], i == 0);
        fr_mad_n_redc(odd, even, a.l, b.l[i + 1], false);
    }
    fr c;
    CC_ADD(c.l[0], even[0], odd[1]);
    PS_UNROLL
    for (int k = 1; k < 7; k++) CC_ADDC(c.l[k], even[k], odd[k + 1]);
    CC_ADDC_END(c.l[7], even[7], 0u);
    return fr_reduce_once(c);
}

PS_FN fr fr_sqr(const fr &a) { return fr_mul(a, a); }

#ifdef PS_DEVICE
PS_FN fr fr_load(const fr *p, u64 i) {
    const uint4 *q = reinterpret_cast<const uint4 *>(p + i);
    uint4 x = q[0], y = q[1];
    fr r;
    r.l[0] = x.x; r.l[1] = x.y; r.l[2] = x.z; r.l[3] = x.w;
    r.l[4] = y.x; r.l[5] = y.y; r.l[6] = y.z; r.l[7] = y.w;
    return r;
}

PS_FN void fr_store(fr *p, u64 i, const fr &v) {
    uint4 *q = reinterpret_cast<uint4 *>(p + i);
    q[0] = make_uint4(v.l[0], v.l[1], v.l[2], v.l[3]);
    q[1] = make_uint4(v.l[4], v.l[5], v.l[6], v.l[7]);
}
#endif

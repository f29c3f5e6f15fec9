// BLS12-381 base field Fp, Montgomery form with R = 2^384: the same 48 bytes (6 × u64
// little-endian limbs) blst's `blst_fp` holds, so SRS points go to the device as they lie in
// memory. 12 × 32-bit limbs; every result is fully reduced (< p). Compiles for the host too
// (the product's carry chains through carry.cuh) and is tested there against blst (crate
// `cuda-check`).
#pragma once
#include "mont.cuh"

#define FP_N 12

struct fp { u32 l[FP_N]; };

// p = 0x1a0111ea397fe69a4b1ba7b6434bacd764774b84f38512bf6730d2a0f6b0f6241eabfffeb153ffffb9feffffffffaaab
PS_CONST u32 FP_P[FP_N] = {
    0xffffaaabu, 0xb9feffffu, 0xb153ffffu, 0x1eabfffeu, 0xf6b0f624u, 0x6730d2a0u,
    0xf38512bfu, 0x64774b84u, 0x434bacd7u, 0x4b1ba7b6u, 0x397fe69au, 0x1a0111eau};
// R mod p: one in Montgomery form.
PS_CONST u32 FP_ONE[FP_N] = {
    0x0002fffdu, 0x76090000u, 0xc40c0002u, 0xebf4000bu, 0x53c758bau, 0x5f489857u,
    0x70525745u, 0x77ce5853u, 0xa256ec6du, 0x5c071a97u, 0xfa80e493u, 0x15f65ec3u};
// -p^-1 mod 2^32.
#define FP_MINV 0xfffcfffdu

PS_FN fp fp_zero() {
    fp r;
    PS_UNROLL
    for (int i = 0; i < FP_N; i++) r.l[i] = 0;
    return r;
}

PS_FN fp fp_one() {
    fp r;
    PS_UNROLL
    for (int i = 0; i < FP_N; i++) r.l[i] = FP_ONE[i];
    return r;
}

PS_FN bool fp_is_zero(const fp &a) {
    u32 x = 0;
    PS_UNROLL
    for (int i = 0; i < FP_N; i++) x |= a.l[i];
    return x == 0;
}

PS_FN bool fp_eq(const fp &a, const fp &b) {
    u32 x = 0;
    PS_UNROLL
    for (int i = 0; i < FP_N; i++) x |= a.l[i] ^ b.l[i];
    return x == 0;
}

// The modulus as immediates (FP_P's limbs), for the chains below and the product.
#define FP_LIMBS {0xffffaaabu, 0xb9feffffu, 0xb153ffffu, 0x1eabfffeu, 0xf6b0f624u, 0x6730d2a0u, \
                  0xf38512bfu, 0x64774b84u, 0x434bacd7u, 0x4b1ba7b6u, 0x397fe69au, 0x1a0111eau}

// t − p when t ≥ p (t < 2p): one borrow chain, then a select — no data-dependent branch
// inside a warp. As carry chains (carry.cuh) rather than 64-bit sums: 64-bit sums cost four
// SASS instructions a limb (IADD3, IADD3.X, two shifts) where a chain costs one.
PS_FN void fp_reduce_once(fp &t) {
    constexpr u32 P[FP_N] = FP_LIMBS;
    fp d;
    u32 borrow;
    CC_SUB(d.l[0], t.l[0], P[0]);
    PS_UNROLL
    for (int i = 1; i < FP_N; i++) CC_SUBC(d.l[i], t.l[i], P[i]);
    CC_SUBC_END(borrow, 0u, 0u); // all ones on a borrow
    PS_UNROLL
    for (int i = 0; i < FP_N; i++) t.l[i] = borrow ? t.l[i] : d.l[i];
}

// a + b: p < 2^381, so the sum of two reduced values fits 12 limbs and one subtraction reduces it.
PS_FN fp fp_add(const fp &a, const fp &b) {
    fp s;
    CC_ADD(s.l[0], a.l[0], b.l[0]);
    PS_UNROLL
    for (int i = 1; i < FP_N - 1; i++) CC_ADDC(s.l[i], a.l[i], b.l[i]);
    CC_ADDC_END(s.l[FP_N - 1], a.l[FP_N - 1], b.l[FP_N - 1]);
    fp_reduce_once(s);
    return s;
}

PS_FN fp fp_dbl(const fp &a) { return fp_add(a, a); }

// a − b, adding p back on a borrow.
PS_FN fp fp_sub(const fp &a, const fp &b) {
    constexpr u32 P[FP_N] = FP_LIMBS;
    fp c, d;
    u32 borrow;
    CC_SUB(c.l[0], a.l[0], b.l[0]);
    PS_UNROLL
    for (int i = 1; i < FP_N; i++) CC_SUBC(c.l[i], a.l[i], b.l[i]);
    CC_SUBC_END(borrow, 0u, 0u); // all ones on a borrow
    CC_ADD(d.l[0], c.l[0], P[0] & borrow);
    PS_UNROLL
    for (int i = 1; i < FP_N - 1; i++) CC_ADDC(d.l[i], c.l[i], P[i] & borrow);
    CC_ADDC_END(d.l[FP_N - 1], c.l[FP_N - 1], P[FP_N - 1] & borrow);
    return d;
}

PS_FN fp fp_neg(const fp &a) {
    if (fp_is_zero(a)) return a;
    fp d;
    u64 borrow = 0;
    PS_UNROLL
    for (int i = 0; i < FP_N; i++) {
        u64 x = (u64)FP_P[i] - a.l[i] - borrow;
        d.l[i] = (u32)x;
        borrow = (x >> 63) & 1;
    }
    return d;
}

// Montgomery product a·b·R^-1 mod p (mont.cuh: carry chains over aligned register pairs; p as
// immediates), below 2p, reduced once.
PS_FN fp fp_mul(const fp &a, const fp &b) {
    constexpr u32 P[FP_N] = FP_LIMBS;
    fp r;
    mont_mul<FP_N>(r.l, a.l, b.l, P, FP_MINV);
    fp_reduce_once(r);
    return r;
}

PS_FN fp fp_sqr(const fp &a) { return fp_mul(a, a); }

// The field under the names curve.cuh's formulas use.
PS_FN fp f_add(const fp &a, const fp &b) { return fp_add(a, b); }
PS_FN fp f_sub(const fp &a, const fp &b) { return fp_sub(a, b); }
PS_FN fp f_dbl(const fp &a) { return fp_dbl(a); }
PS_FN fp f_mul(const fp &a, const fp &b) { return fp_mul(a, b); }
PS_FN fp f_sqr(const fp &a) { return fp_sqr(a); }
PS_FN fp f_neg(const fp &a) { return fp_neg(a); }
PS_FN bool f_is_zero(const fp &a) { return fp_is_zero(a); }
PS_FN void f_zero(fp &r) { r = fp_zero(); }
PS_FN void f_one(fp &r) { r = fp_one(); }

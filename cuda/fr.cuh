// BLS12-381 scalar field Fr, Montgomery form with R = 2^256: the same 32 bytes (4 × u64
// little-endian limbs) blstrs' `Scalar` holds, so vectors go to the device without conversion.
// Arithmetic on 8 × 32-bit limbs in carry chains (carry.cuh); every result is fully reduced
// (< r), so results compare byte for byte with the CPU backend. Compiles for the host too:
// the `cuda-check` crate tests it against blst.
#pragma once
#include "mont.cuh"

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

// Montgomery product (mont.cuh: carry chains over aligned register pairs), reduced once.
PS_FN fr fr_mul(const fr &a, const fr &b) {
    constexpr u32 R[8] = FR_LIMBS;
    fr c;
    mont_mul<8>(c.l, a.l, b.l, R, FR_MINV);
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

// BLS12-381 scalar field Fr, Montgomery form with R = 2^256: the same 32 bytes (4 × u64
// little-endian limbs) blstrs' `Scalar` holds, so vectors go to the device without conversion.
// Arithmetic on 8 × 32-bit limbs; every result is fully reduced (< r), so results compare
// byte for byte with the CPU backend.
#pragma once
#include "common.cuh"

struct fr { u32 l[8]; };

// r = 0x73eda753299d7d483339d80809a1d80553bda402fffe5bfeffffffff00000001
__device__ __constant__ u32 FR_R[8] = {
    0x00000001u, 0xffffffffu, 0xfffe5bfeu, 0x53bda402u,
    0x09a1d805u, 0x3339d808u, 0x299d7d48u, 0x73eda753u};
// -r^-1 mod 2^32 (r is 1 mod 2^32).
#define FR_MINV 0xffffffffu

__device__ __forceinline__ bool fr_geq_r(const u32 t[8]) {
#pragma unroll
    for (int i = 7; i >= 0; i--) {
        if (t[i] > FR_R[i]) return true;
        if (t[i] < FR_R[i]) return false;
    }
    return true;
}

__device__ __forceinline__ void fr_sub_r(u32 t[8]) {
    u64 borrow = 0;
#pragma unroll
    for (int i = 0; i < 8; i++) {
        u64 d = (u64)t[i] - FR_R[i] - borrow;
        t[i] = (u32)d;
        borrow = (d >> 63) & 1;
    }
}

// c = a + b mod r, branch-free: the sum and the sum minus r, then a select.
__device__ __forceinline__ fr fr_add(const fr &a, const fr &b) {
    fr c, d;
    u32 borrow;
    asm("add.cc.u32  %0, %8, %16;\n\t"
        "addc.cc.u32 %1, %9, %17;\n\t"
        "addc.cc.u32 %2, %10, %18;\n\t"
        "addc.cc.u32 %3, %11, %19;\n\t"
        "addc.cc.u32 %4, %12, %20;\n\t"
        "addc.cc.u32 %5, %13, %21;\n\t"
        "addc.cc.u32 %6, %14, %22;\n\t"
        "addc.u32    %7, %15, %23;\n\t"
        : "=r"(c.l[0]), "=r"(c.l[1]), "=r"(c.l[2]), "=r"(c.l[3]), "=r"(c.l[4]), "=r"(c.l[5]), "=r"(c.l[6]), "=r"(c.l[7])
        : "r"(a.l[0]), "r"(a.l[1]), "r"(a.l[2]), "r"(a.l[3]), "r"(a.l[4]), "r"(a.l[5]), "r"(a.l[6]), "r"(a.l[7]),
          "r"(b.l[0]), "r"(b.l[1]), "r"(b.l[2]), "r"(b.l[3]), "r"(b.l[4]), "r"(b.l[5]), "r"(b.l[6]), "r"(b.l[7]));
    asm("sub.cc.u32  %0, %9, 0x00000001;\n\t"
        "subc.cc.u32 %1, %10, 0xffffffff;\n\t"
        "subc.cc.u32 %2, %11, 0xfffe5bfe;\n\t"
        "subc.cc.u32 %3, %12, 0x53bda402;\n\t"
        "subc.cc.u32 %4, %13, 0x09a1d805;\n\t"
        "subc.cc.u32 %5, %14, 0x3339d808;\n\t"
        "subc.cc.u32 %6, %15, 0x299d7d48;\n\t"
        "subc.cc.u32 %7, %16, 0x73eda753;\n\t"
        "subc.u32    %8, 0, 0;\n\t"
        : "=r"(d.l[0]), "=r"(d.l[1]), "=r"(d.l[2]), "=r"(d.l[3]), "=r"(d.l[4]), "=r"(d.l[5]), "=r"(d.l[6]), "=r"(d.l[7]), "=r"(borrow)
        : "r"(c.l[0]), "r"(c.l[1]), "r"(c.l[2]), "r"(c.l[3]), "r"(c.l[4]), "r"(c.l[5]), "r"(c.l[6]), "r"(c.l[7]));
    // a, b < r < 2^255: the sum has no carry out; borrow set means sum < r.
#pragma unroll
    for (int i = 0; i < 8; i++) c.l[i] = borrow ? c.l[i] : d.l[i];
    return c;
}

// c = a − b mod r, branch-free.
__device__ __forceinline__ fr fr_sub(const fr &a, const fr &b) {
    fr c, d;
    u32 borrow;
    asm("sub.cc.u32  %0, %9, %17;\n\t"
        "subc.cc.u32 %1, %10, %18;\n\t"
        "subc.cc.u32 %2, %11, %19;\n\t"
        "subc.cc.u32 %3, %12, %20;\n\t"
        "subc.cc.u32 %4, %13, %21;\n\t"
        "subc.cc.u32 %5, %14, %22;\n\t"
        "subc.cc.u32 %6, %15, %23;\n\t"
        "subc.cc.u32 %7, %16, %24;\n\t"
        "subc.u32    %8, 0, 0;\n\t"
        : "=r"(c.l[0]), "=r"(c.l[1]), "=r"(c.l[2]), "=r"(c.l[3]), "=r"(c.l[4]), "=r"(c.l[5]), "=r"(c.l[6]), "=r"(c.l[7]), "=r"(borrow)
        : "r"(a.l[0]), "r"(a.l[1]), "r"(a.l[2]), "r"(a.l[3]), "r"(a.l[4]), "r"(a.l[5]), "r"(a.l[6]), "r"(a.l[7]),
          "r"(b.l[0]), "r"(b.l[1]), "r"(b.l[2]), "r"(b.l[3]), "r"(b.l[4]), "r"(b.l[5]), "r"(b.l[6]), "r"(b.l[7]));
    asm("add.cc.u32  %0, %8, 0x00000001;\n\t"
        "addc.cc.u32 %1, %9, 0xffffffff;\n\t"
        "addc.cc.u32 %2, %10, 0xfffe5bfe;\n\t"
        "addc.cc.u32 %3, %11, 0x53bda402;\n\t"
        "addc.cc.u32 %4, %12, 0x09a1d805;\n\t"
        "addc.cc.u32 %5, %13, 0x3339d808;\n\t"
        "addc.cc.u32 %6, %14, 0x299d7d48;\n\t"
        "addc.u32    %7, %15, 0x73eda753;\n\t"
        : "=r"(d.l[0]), "=r"(d.l[1]), "=r"(d.l[2]), "=r"(d.l[3]), "=r"(d.l[4]), "=r"(d.l[5]), "=r"(d.l[6]), "=r"(d.l[7])
        : "r"(c.l[0]), "r"(c.l[1]), "r"(c.l[2]), "r"(c.l[3]), "r"(c.l[4]), "r"(c.l[5]), "r"(c.l[6]), "r"(c.l[7]));
    // A borrow (0xffffffff) means a < b: add r back.
#pragma unroll
    for (int i = 0; i < 8; i++) c.l[i] = borrow ? d.l[i] : c.l[i];
    return c;
}

// Montgomery product a·b·R^-1 mod r: CIOS over 32-bit limbs with 64-bit accumulation, so each
// step is one IMAD.WIDE.U32 (a_j·b_i + t_j) plus the previous step's carry word. Counted in SASS
// (sm_90): 588 instructions per product, against 710 for explicit PTX carry chains — Hopper's
// IMAD has no carry-out, so `madc.cc` costs extra adds.
__device__ __forceinline__ fr fr_mul(const fr &a, const fr &b) {
    u32 t[10];
#pragma unroll
    for (int i = 0; i < 10; i++) t[i] = 0;
#pragma unroll
    for (int i = 0; i < 8; i++) {
        u64 c = 0;
#pragma unroll
        for (int j = 0; j < 8; j++) {
            c = (u64)a.l[j] * b.l[i] + t[j] + (c >> 32);
            t[j] = (u32)c;
        }
        u64 s = (u64)t[8] + (c >> 32);
        t[8] = (u32)s;
        t[9] = (u32)(s >> 32);
        const u32 m = t[0] * FR_MINV;
        // r0 = 1: m·r0 + t0 = m + t0 (≡ 0 mod 2^32); keep its carry.
        c = (u64)m + t[0];
#pragma unroll
        for (int j = 1; j < 8; j++) {
            c = (u64)m * FR_R[j] + t[j] + (c >> 32);
            t[j - 1] = (u32)c;
        }
        s = (u64)t[8] + (c >> 32);
        t[7] = (u32)s;
        t[8] = t[9] + (u32)(s >> 32);
    }
    fr r;
#pragma unroll
    for (int i = 0; i < 8; i++) r.l[i] = t[i];
    if (t[8] != 0 || fr_geq_r(r.l)) fr_sub_r(r.l);
    return r;
}

__device__ __forceinline__ fr fr_sqr(const fr &a) { return fr_mul(a, a); }

__device__ __forceinline__ fr fr_load(const fr *p, u64 i) {
    const uint4 *q = reinterpret_cast<const uint4 *>(p + i);
    uint4 x = q[0], y = q[1];
    fr r;
    r.l[0] = x.x; r.l[1] = x.y; r.l[2] = x.z; r.l[3] = x.w;
    r.l[4] = y.x; r.l[5] = y.y; r.l[6] = y.z; r.l[7] = y.w;
    return r;
}

__device__ __forceinline__ void fr_store(fr *p, u64 i, const fr &v) {
    uint4 *q = reinterpret_cast<uint4 *>(p + i);
    q[0] = make_uint4(v.l[0], v.l[1], v.l[2], v.l[3]);
    q[1] = make_uint4(v.l[4], v.l[5], v.l[6], v.l[7]);
}

// BLS12-381 scalar field Fr, Montgomery form with R = 2^256: the same 32 bytes (4 × u64
// little-endian limbs) blstrs' `Scalar` holds, so vectors go to the device without conversion.
// Arithmetic on 8 × 32-bit limbs; every result is fully reduced (< r), so results compare
// byte for byte with the CPU backend.
#pragma once

typedef unsigned int u32;
typedef unsigned long long u64;

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

__device__ __forceinline__ fr fr_add(const fr &a, const fr &b) {
    fr c;
    u64 carry = 0;
#pragma unroll
    for (int i = 0; i < 8; i++) {
        u64 s = (u64)a.l[i] + b.l[i] + carry;
        c.l[i] = (u32)s;
        carry = s >> 32;
    }
    // a, b < r < 2^255: no carry out of the top limb.
    if (fr_geq_r(c.l)) fr_sub_r(c.l);
    return c;
}

__device__ __forceinline__ fr fr_sub(const fr &a, const fr &b) {
    fr c;
    u64 borrow = 0;
#pragma unroll
    for (int i = 0; i < 8; i++) {
        u64 d = (u64)a.l[i] - b.l[i] - borrow;
        c.l[i] = (u32)d;
        borrow = (d >> 63) & 1;
    }
    if (borrow) {
        u64 carry = 0;
#pragma unroll
        for (int i = 0; i < 8; i++) {
            u64 s = (u64)c.l[i] + FR_R[i] + carry;
            c.l[i] = (u32)s;
            carry = s >> 32;
        }
    }
    return c;
}

// Montgomery product a·b·R^-1 mod r (CIOS).
__device__ __forceinline__ fr fr_mul(const fr &a, const fr &b) {
    u32 t[10];
#pragma unroll
    for (int i = 0; i < 10; i++) t[i] = 0;
#pragma unroll
    for (int i = 0; i < 8; i++) {
        u64 carry = 0;
#pragma unroll
        for (int j = 0; j < 8; j++) {
            u64 p = (u64)a.l[j] * b.l[i] + t[j] + carry;
            t[j] = (u32)p;
            carry = p >> 32;
        }
        u64 s = (u64)t[8] + carry;
        t[8] = (u32)s;
        t[9] = (u32)(s >> 32);
        u32 m = t[0] * FR_MINV;
        u64 p = (u64)m * FR_R[0] + t[0];
        carry = p >> 32;
#pragma unroll
        for (int j = 1; j < 8; j++) {
            p = (u64)m * FR_R[j] + t[j] + carry;
            t[j - 1] = (u32)p;
            carry = p >> 32;
        }
        s = (u64)t[8] + carry;
        t[7] = (u32)s;
        t[8] = t[9] + (u32)(s >> 32);
    }
    fr c;
#pragma unroll
    for (int i = 0; i < 8; i++) c.l[i] = t[i];
    if (t[8] != 0 || fr_geq_r(c.l)) fr_sub_r(c.l);
    return c;
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

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

// Montgomery product a·b·R^-1 mod r: CIOS over 32-bit limbs. Each row is one asm block, so the
// carry flag lives only inside it: t += a·b[i] (low words, then high words), m = t0·(−r^-1),
// t += m·r (low, then high; r's lowest limb is 1, so m·r0 is an add and has no high word),
// then the shift by one limb.
__device__ __forceinline__ fr fr_mul(const fr &a, const fr &b) {
    u32 t0 = 0, t1 = 0, t2 = 0, t3 = 0, t4 = 0, t5 = 0, t6 = 0, t7 = 0, t8 = 0, t9 = 0;
#pragma unroll
    for (int i = 0; i < 8; i++) {
        asm("{\n\t"
        ".reg .u32 m;\n\t"
        "mad.lo.cc.u32 %0, %10, %18, %0;\n"
        "madc.lo.cc.u32 %1, %11, %18, %1;\n"
        "madc.lo.cc.u32 %2, %12, %18, %2;\n"
        "madc.lo.cc.u32 %3, %13, %18, %3;\n"
        "madc.lo.cc.u32 %4, %14, %18, %4;\n"
        "madc.lo.cc.u32 %5, %15, %18, %5;\n"
        "madc.lo.cc.u32 %6, %16, %18, %6;\n"
        "madc.lo.cc.u32 %7, %17, %18, %7;\n"
        "addc.cc.u32 %8, %8, 0;\n\t"
        "addc.u32 %9, 0, 0;\n\t"
        "mad.hi.cc.u32 %1, %10, %18, %1;\n"
        "madc.hi.cc.u32 %2, %11, %18, %2;\n"
        "madc.hi.cc.u32 %3, %12, %18, %3;\n"
        "madc.hi.cc.u32 %4, %13, %18, %4;\n"
        "madc.hi.cc.u32 %5, %14, %18, %5;\n"
        "madc.hi.cc.u32 %6, %15, %18, %6;\n"
        "madc.hi.cc.u32 %7, %16, %18, %7;\n"
        "madc.hi.cc.u32 %8, %17, %18, %8;\n"
        "addc.u32 %9, %9, 0;\n\t"
        "mul.lo.u32 m, %0, 0xffffffff;\n\t"
        "add.cc.u32 %0, %0, m;\n"
        "madc.lo.cc.u32 %1, m, 0xffffffff, %1;\n"
        "madc.lo.cc.u32 %2, m, 0xfffe5bfe, %2;\n"
        "madc.lo.cc.u32 %3, m, 0x53bda402, %3;\n"
        "madc.lo.cc.u32 %4, m, 0x09a1d805, %4;\n"
        "madc.lo.cc.u32 %5, m, 0x3339d808, %5;\n"
        "madc.lo.cc.u32 %6, m, 0x299d7d48, %6;\n"
        "madc.lo.cc.u32 %7, m, 0x73eda753, %7;\n"
        "addc.cc.u32 %8, %8, 0;\n\t"
        "addc.u32 %9, %9, 0;\n\t"
        "mad.hi.cc.u32 %2, m, 0xffffffff, %2;\n"
        "madc.hi.cc.u32 %3, m, 0xfffe5bfe, %3;\n"
        "madc.hi.cc.u32 %4, m, 0x53bda402, %4;\n"
        "madc.hi.cc.u32 %5, m, 0x09a1d805, %5;\n"
        "madc.hi.cc.u32 %6, m, 0x3339d808, %6;\n"
        "madc.hi.cc.u32 %7, m, 0x299d7d48, %7;\n"
        "madc.hi.cc.u32 %8, m, 0x73eda753, %8;\n"
        "addc.u32 %9, %9, 0;\n\t"
        "}"
            : "+r"(t0), "+r"(t1), "+r"(t2), "+r"(t3), "+r"(t4), "+r"(t5), "+r"(t6), "+r"(t7), "+r"(t8), "+r"(t9)
            : "r"(a.l[0]), "r"(a.l[1]), "r"(a.l[2]), "r"(a.l[3]), "r"(a.l[4]), "r"(a.l[5]), "r"(a.l[6]), "r"(a.l[7]), "r"(b.l[i]));
        // t0 is now 0: shift down by one limb.
        t0 = t1; t1 = t2; t2 = t3; t3 = t4; t4 = t5; t5 = t6; t6 = t7; t7 = t8; t8 = t9; t9 = 0;
    }
    fr c;
    c.l[0] = t0; c.l[1] = t1; c.l[2] = t2; c.l[3] = t3; c.l[4] = t4; c.l[5] = t5; c.l[6] = t6; c.l[7] = t7;
    if (t8 != 0 || fr_geq_r(c.l)) fr_sub_r(c.l);
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

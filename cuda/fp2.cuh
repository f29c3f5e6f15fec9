// BLS12-381's quadratic extension Fp2 = Fp[u]/(u² + 1), the field G2 lies over: c0 + c1·u,
// the 96 bytes of blst's `blst_fp2` (c0 then c1, each a Montgomery `blst_fp`). Products by
// Karatsuba (3 Fp products), squares by (c0 + c1)(c0 − c1) + 2·c0·c1·u (2 products); every
// result fully reduced, as fp's. Compiles for the host too and is tested there against blst.
#pragma once
#include "fp.cuh"

struct fp2 { fp c0, c1; };

PS_FN fp2 fp2_add(const fp2 &a, const fp2 &b) { return fp2{fp_add(a.c0, b.c0), fp_add(a.c1, b.c1)}; }
PS_FN fp2 fp2_sub(const fp2 &a, const fp2 &b) { return fp2{fp_sub(a.c0, b.c0), fp_sub(a.c1, b.c1)}; }
PS_FN fp2 fp2_dbl(const fp2 &a) { return fp2_add(a, a); }
PS_FN fp2 fp2_neg(const fp2 &a) { return fp2{fp_neg(a.c0), fp_neg(a.c1)}; }
PS_FN bool fp2_is_zero(const fp2 &a) { return fp_is_zero(a.c0) && fp_is_zero(a.c1); }

// (a0 + a1·u)(b0 + b1·u) = (a0·b0 − a1·b1) + ((a0 + a1)(b0 + b1) − a0·b0 − a1·b1)·u.
PS_FN fp2 fp2_mul(const fp2 &a, const fp2 &b) {
    const fp t0 = fp_mul(a.c0, b.c0);
    const fp t1 = fp_mul(a.c1, b.c1);
    const fp t2 = fp_mul(fp_add(a.c0, a.c1), fp_add(b.c0, b.c1));
    return fp2{fp_sub(t0, t1), fp_sub(fp_sub(t2, t0), t1)};
}

PS_FN fp2 fp2_sqr(const fp2 &a) {
    const fp t = fp_mul(a.c0, a.c1);
    return fp2{fp_mul(fp_add(a.c0, a.c1), fp_sub(a.c0, a.c1)), fp_dbl(t)};
}

// The field under the names curve.cuh's formulas use.
PS_FN fp2 f_add(const fp2 &a, const fp2 &b) { return fp2_add(a, b); }
PS_FN fp2 f_sub(const fp2 &a, const fp2 &b) { return fp2_sub(a, b); }
PS_FN fp2 f_dbl(const fp2 &a) { return fp2_dbl(a); }
PS_FN fp2 f_mul(const fp2 &a, const fp2 &b) { return fp2_mul(a, b); }
PS_FN fp2 f_sqr(const fp2 &a) { return fp2_sqr(a); }
PS_FN fp2 f_neg(const fp2 &a) { return fp2_neg(a); }
PS_FN bool f_is_zero(const fp2 &a) { return fp2_is_zero(a); }
PS_FN void f_zero(fp2 &r) { r = fp2{fp_zero(), fp_zero()}; }
PS_FN void f_one(fp2 &r) { r = fp2{fp_one(), fp_zero()}; }

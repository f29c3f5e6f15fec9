// BLS12-381 G1 (y² = x³ + 4 over Fp): curve.cuh's formulas over fp, under the names the MSM
// kernels and the host checks use.
#pragma once
#include "fp.cuh"
#include "curve.cuh"

typedef affine_t<fp> g1_affine;
typedef xyzz_t<fp> g1_xyzz;
typedef jac_t<fp> g1_jac;

PS_FN bool g1_affine_is_identity(const g1_affine &a) { return affine_is_identity(a); }
PS_FN g1_xyzz g1_xyzz_identity() { return xyzz_identity<fp>(); }
PS_FN bool g1_xyzz_is_identity(const g1_xyzz &p) { return xyzz_is_identity(p); }
PS_FN g1_xyzz g1_xyzz_from_affine(const g1_affine &a) { return xyzz_from_affine(a); }
PS_FN void g1_xyzz_dbl(g1_xyzz &p) { xyzz_dbl(p); }
PS_FN void g1_xyzz_add_affine(g1_xyzz &p, const g1_affine &q) { xyzz_add_affine(p, q); }
PS_FN void g1_xyzz_add(g1_xyzz &p, const g1_xyzz &q) { xyzz_add(p, q); }
PS_FN g1_xyzz g1_xyzz_mul_small(const g1_xyzz &p, u32 k, int bits) {
    return xyzz_mul_small(p, k, bits);
}
PS_FN g1_jac g1_xyzz_to_jac(const g1_xyzz &p) { return xyzz_to_jac(p); }
PS_FN g1_affine g1_affine_neg(const g1_affine &a) { return affine_neg(a); }

// BLS12-381 G2 (y² = x³ + 4(1 + u) over Fp2): curve.cuh's formulas over fp2, for the batch
// addition of B's G2 query. Points as blst stores them: `blst_p2_affine` (192 bytes) in,
// `blst_p2` (Jacobian, 288 bytes) out.
#pragma once
#include "fp2.cuh"
#include "curve.cuh"

typedef affine_t<fp2> g2_affine;
typedef xyzz_t<fp2> g2_xyzz;
typedef jac_t<fp2> g2_jac;

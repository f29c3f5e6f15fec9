// Montgomery multiplication over N 32-bit limbs (N even) in carry chains, for any modulus m
// with m < 2^(32N − 1) (both BLS12-381 fields: r < 2^255, p < 2^381).
//
// CIOS with the limb products split by parity (the even/odd layout of sppark's `mont_t`):
// products a_j·b_i with j even land on word pairs (j, j+1) of `even`, those with j odd on pairs
// of `odd`, which sits one word higher. Every chain then covers aligned register pairs, so on
// sm_90 ptxas turns each `mad.lo.cc`/`madc.hi.cc` pair into one IMAD.WIDE.U32.X (carry in and
// out): the 8-limb product fell from 584 to ~240 SASS instructions. After a row's reduction the
// low word is zero and the two arrays swap roles (dividing by 2^32 moves `odd` down to where
// `even` was); the word they then share is added at the start of the next row, its carry riding
// the next chain. Bound: a row's total stays below 2m·2^32 < 2^(32N + 32), so no chain carries
// out of its top word. The result is below 2m; the caller reduces it once.
#pragma once
#include "carry.cuh"

// acc[j], acc[j+1] = a[j]·bi for even j < N.
template <int N>
PS_FN void mont_mul_n(u32 *acc, const u32 *a, u32 bi) {
    PS_UNROLL
    for (int j = 0; j < N; j += 2) {
        acc[j] = MUL_LO(a[j], bi);
        acc[j + 1] = MUL_HI(a[j], bi);
    }
}

// acc += a[j]·bi at (j, j+1) for even j, in one chain; its carry out of acc[N−1] stays in CC.
template <int N>
PS_FN void mont_cmad_n(u32 *acc, const u32 *a, u32 bi) {
    CC_MAD_WIDE(acc[0], acc[1], a[0], bi);
    PS_UNROLL
    for (int j = 2; j < N; j += 2) CC_MADC_WIDE(acc[j], acc[j + 1], a[j], bi);
}

// odd[j], odd[j+1] = a[j]·bi + odd[j+2], odd[j+3] + CC for even j: the product row added while
// the array moves down two words (the top pair has nothing above it).
template <int N>
PS_FN void mont_madc_n_rshift(u32 *odd, const u32 *a, u32 bi) {
    PS_UNROLL
    for (int j = 0; j < N - 2; j += 2) {
        CC_MADC_WIDE_TO(odd[j], odd[j + 1], a[j], bi, odd[j + 2], odd[j + 3]);
    }
    CC_MADC_LO(odd[N - 2], a[N - 2], bi, 0u);
    CC_MADC_HI_END(odd[N - 1], a[N - 2], bi, 0u);
}

// One CIOS row: (even, odd) += a·bi, then += q·m with q making the low word zero.
template <int N>
PS_FN void mont_row(u32 *even, u32 *odd, const u32 *a, u32 bi, const u32 *m, u32 minv,
                    bool first) {
    if (first) {
        mont_mul_n<N>(odd, a + 1, bi);
        mont_mul_n<N>(even, a, bi);
    } else {
        CC_ADD(even[0], even[0], odd[1]);
        mont_madc_n_rshift<N>(odd, a + 1, bi);
        mont_cmad_n<N>(even, a, bi);
        CC_ADDC_END(odd[N - 1], odd[N - 1], 0u);
    }
    const u32 q = MUL_LO(even[0], minv);
    mont_cmad_n<N>(odd, m + 1, q);
    mont_cmad_n<N>(even, m, q);
    CC_ADDC_END(odd[N - 1], odd[N - 1], 0u);
}

// out = a·b·2^(−32N) mod m, below 2m.
template <int N>
PS_FN void mont_mul(u32 *out, const u32 *a, const u32 *b, const u32 *m, u32 minv) {
    u32 even[N], odd[N];
    PS_UNROLL
    for (int i = 0; i < N; i += 2) {
        mont_row<N>(even, odd, a, b[i], m, minv, i == 0);
        mont_row<N>(odd, even, a, b[i + 1], m, minv, false);
    }
    CC_ADD(out[0], even[0], odd[1]);
    PS_UNROLL
    for (int k = 1; k < N - 1; k++) CC_ADDC(out[k], even[k], odd[k + 1]);
    CC_ADDC_END(out[N - 1], even[N - 1], 0u);
}

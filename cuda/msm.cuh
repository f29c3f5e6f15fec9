// The per-thread pieces of the Pippenger MSM, shared by the kernels (msm.cu) and by the host
// reference the `cuda-check` crate tests against blst: signed window digits, the encoding of
// sorted entries, the runs each accumulation level sums, and the weighted sum of a run of
// buckets.
#pragma once
#include "g1.cuh"

// An entry of the sorted list and a digit share one encoding: the low 31 bits are a point
// index (or a digit's magnitude), the top bit says "negate".
#define MSM_NEG 0x80000000u

// The windows of c bits needed for signed digits of a 255-bit scalar: the top window must
// absorb the last carry without producing another (see msm_digit).
PS_FN u32 msm_windows(u32 c) { return (256 + c - 1) / c; }

// Bits [pos, pos + c) of a canonical scalar (8 × 32-bit limbs, little-endian); c ≤ 31.
PS_FN u32 msm_bits(const u32 s[8], u32 pos, u32 c) {
    const u32 word = pos >> 5, shift = pos & 31;
    if (word >= 8) return 0;
    u64 v = s[word] >> shift;
    if (shift + c > 32 && word + 1 < 8) v |= (u64)s[word + 1] << (32 - shift);
    return (u32)v & ((1u << c) - 1);
}

// Window w's signed digit of s, with the carry from window w − 1 in and window w's carry out:
// a digit above 2^(c−1) becomes digit − 2^c (magnitude 2^c − digit, negated) and carries one.
// Magnitudes run 0 … 2^(c−1), so a window has 2^(c−1) buckets (magnitude 0 has none).
PS_FN u32 msm_digit(const u32 s[8], u32 w, u32 c, u32 &carry) {
    const u32 v = msm_bits(s, w * c, c) + carry;
    const u32 half = 1u << (c - 1);
    if (v > half) {
        carry = 1;
        return ((1u << c) - v) | MSM_NEG;
    }
    carry = 0;
    return v;
}

// The entries [start, end) that item t of the next accumulation level sums: run number
// t − out[b] of bucket b, at most K of the bucket's current entries in[b] … in[b + 1].
PS_FN void msm_item_run(const u32 *in, const u32 *out, u32 b, u32 t, u32 K, u32 &start,
                        u32 &end) {
    start = in[b] + (t - out[b]) * K;
    end = in[b + 1] < start + K ? in[b + 1] : start + K;
}

// Σ j·bucket(j) for j in [lo, hi] (lo ≥ 1): a running sum from the top, added up once per step,
// gives Σ (j − lo + 1)·bucket(j); (lo − 1)·Σ bucket(j) makes up the rest. `bucket` maps a
// magnitude to its XYZZ sum over field F (fp: G1, fp2: G2); `bits` bounds lo − 1.
template <class F, typename Bucket>
PS_FN xyzz_t<F> msm_bucket_run(u32 lo, u32 hi, int bits, Bucket bucket) {
    xyzz_t<F> running = xyzz_identity<F>();
    xyzz_t<F> acc = xyzz_identity<F>();
    if (lo > hi) return acc;
    for (u32 j = hi + 1; j-- > lo;) {
        xyzz_add(running, bucket(j));
        xyzz_add(acc, running);
    }
    if (lo > 1) xyzz_add(acc, xyzz_mul_small(running, lo - 1, bits));
    return acc;
}

// Pippenger MSM, Σ s_i·P_i in G1 or G2, in passes that need no host round trip:
//   msm_digits      scalars (Montgomery) → canonical → signed window digits; bucket counts
//   msm_scan        counts → offsets (exclusive prefix sums; also ⌈count/K⌉ per bucket)
//   msm_scatter     (point, sign) entries sorted by bucket (a counting sort)
//   msm_accumulate_affine / msm_accumulate_xyzz (G1), g2_accumulate_affine / g2_accumulate_xyzz
//                   runs of at most K entries of one bucket summed per thread; repeated until
//                   every bucket holds one sum, so a bucket that holds every point (all scalars
//                   equal) costs log_K(n) passes, not one thread adding n points
//   g1_sums_to_jac / g2_sums_to_jac
//                   batch addition (sums of index lists, one bucket per list) stops after the
//                   accumulation: each bucket's one sum leaves as a Jacobian point
//   msm_window_reduce / g2_window_reduce
//                   per window, Σ magnitude·bucket by runs of buckets, then a block-wide tree;
//                   one Jacobian point per block leaves for the host, which adds the blocks
//                   and combines the windows (c doublings each) with blst.
// Buckets of all windows live in one flat array: bucket (w, mag) is w·(B+1) + mag, B = 2^(c−1).
#include "fr.cuh"
#include "msm.cuh"
#include "g2.cuh"

extern "C" __global__ void msm_digits(const fr *scalars, u64 n, u32 c, u32 windows,
                                      u32 *digits, u32 *counts) {
    const u32 stride_b = (1u << (c - 1)) + 1;
    for (u64 i = blockIdx.x * (u64)blockDim.x + threadIdx.x; i < n;
         i += (u64)gridDim.x * blockDim.x) {
        fr one;
        one.l[0] = 1;
        for (int k = 1; k < 8; k++) one.l[k] = 0;
        const fr s = fr_mul(fr_load(scalars, i), one); // ·R^-1: canonical
        u32 carry = 0;
        for (u32 w = 0; w < windows; w++) {
            const u32 d = msm_digit(s.l, w, c, carry);
            digits[w * n + i] = d;
            const u32 mag = d & ~MSM_NEG;
            if (mag) atomicAdd(&counts[w * stride_b + mag], 1u);
        }
    }
}

// One block of 1024 threads. out[0..m) = exclusive prefix sums of v(b), out[m] = Σ v,
// out[m+1] = max v, where v(b) = ⌈x(b)/div⌉ and x(b) = in[b] or, with from_offsets,
// in[b+1] − in[b] (the counts behind a previous scan's offsets).
extern "C" __global__ void __launch_bounds__(1024) msm_scan(const u32 *in, u32 *out, u32 m,
                                                           u32 div, u32 from_offsets) {
    __shared__ u32 sums[1024];
    __shared__ u32 maxs[1024];
    const u32 t = threadIdx.x;
    const u32 chunk = (m + 1023) / 1024;
    const u32 lo = min(m, t * chunk), hi = min(m, lo + chunk);
    u32 sum = 0, mx = 0;
    for (u32 b = lo; b < hi; b++) {
        const u32 x = from_offsets ? in[b + 1] - in[b] : in[b];
        const u32 v = (x + div - 1) / div;
        sum += v;
        mx = max(mx, v);
    }
    sums[t] = sum;
    maxs[t] = mx;
    __syncthreads();
    // Hillis–Steele inclusive scan of the per-thread sums; a tree for the maximum.
    for (u32 d = 1; d < 1024; d <<= 1) {
        const u32 add = t >= d ? sums[t - d] : 0;
        __syncthreads();
        sums[t] += add;
        __syncthreads();
    }
    for (u32 d = 512; d > 0; d >>= 1) {
        if (t < d) maxs[t] = max(maxs[t], maxs[t + d]);
        __syncthreads();
    }
    u32 run = sums[t] - sum;
    for (u32 b = lo; b < hi; b++) {
        const u32 x = from_offsets ? in[b + 1] - in[b] : in[b];
        out[b] = run;
        run += (x + div - 1) / div;
    }
    if (t == 1023) out[m] = sums[1023];
    if (t == 0) out[m + 1] = maxs[0];
}

extern "C" __global__ void msm_scatter(const u32 *digits, u64 n, u32 c, u32 windows,
                                       u32 *cursor, u32 *sorted) {
    const u32 stride_b = (1u << (c - 1)) + 1;
    for (u64 i = blockIdx.x * (u64)blockDim.x + threadIdx.x; i < n;
         i += (u64)gridDim.x * blockDim.x) {
        for (u32 w = 0; w < windows; w++) {
            const u32 d = digits[w * n + i];
            const u32 mag = d & ~MSM_NEG;
            if (mag) {
                const u32 pos = atomicAdd(&cursor[w * stride_b + mag], 1u);
                sorted[pos] = (u32)i | (d & MSM_NEG);
            }
        }
    }
}

// The bucket b whose output range [off[b], off[b+1]) holds item t: the last b with off[b] ≤ t.
__device__ __forceinline__ u32 msm_owner(const u32 *off, u32 m, u32 t) {
    u32 lo = 0, hi = m; // invariant: off[lo] ≤ t < off[hi]
    while (hi - lo > 1) {
        const u32 mid = (lo + hi) >> 1;
        if (off[mid] <= t) lo = mid; else hi = mid;
    }
    return lo;
}

// A point of any curve read as 16-byte vectors (6 for G1's 96 bytes, 12 for G2's 192).
template <class A> __device__ __forceinline__ A msm_load_affine(const A *bases, u32 i) {
    static_assert(sizeof(A) % 16 == 0, "a point is whole 16-byte vectors");
    const uint4 *q = reinterpret_cast<const uint4 *>(bases + i);
    A a;
    uint4 *dst = reinterpret_cast<uint4 *>(&a);
#pragma unroll
    for (int k = 0; k < (int)(sizeof(A) / 16); k++) dst[k] = q[k];
    return a;
}

// Item t of the next level: the sum of entries [off_in[b] + k·K, …) of its bucket b, at most K.
template <class F>
__device__ __forceinline__ void accumulate_affine(const affine_t<F> *bases, const u32 *sorted,
                                                  const u32 *off_in, const u32 *off_out, u32 m,
                                                  u32 K, xyzz_t<F> *out) {
    const u32 total = off_out[m];
    for (u32 t = blockIdx.x * blockDim.x + threadIdx.x; t < total; t += gridDim.x * blockDim.x) {
        u32 start, end;
        msm_item_run(off_in, off_out, msm_owner(off_out, m, t), t, K, start, end);
        xyzz_t<F> acc = xyzz_identity<F>();
        for (u32 e = start; e < end; e++) {
            const u32 code = sorted[e];
            affine_t<F> q = msm_load_affine(bases, code & ~MSM_NEG);
            if (affine_is_identity(q)) continue;
            if (code & MSM_NEG) q.y = f_neg(q.y);
            xyzz_add_affine(acc, q);
        }
        out[t] = acc;
    }
}

template <class F>
__device__ __forceinline__ void accumulate_xyzz(const xyzz_t<F> *in, const u32 *off_in,
                                                const u32 *off_out, u32 m, u32 K,
                                                xyzz_t<F> *out) {
    const u32 total = off_out[m];
    for (u32 t = blockIdx.x * blockDim.x + threadIdx.x; t < total; t += gridDim.x * blockDim.x) {
        u32 start, end;
        msm_item_run(off_in, off_out, msm_owner(off_out, m, t), t, K, start, end);
        xyzz_t<F> acc = xyzz_identity<F>();
        for (u32 e = start; e < end; e++) xyzz_add(acc, in[e]);
        out[t] = acc;
    }
}

// Bucket b's one sum (accumulation left at most one item per bucket) as a Jacobian point; an
// empty bucket is the identity. The sums of index lists (batch addition) leave this way.
template <class F>
__device__ __forceinline__ void sums_to_jac(const xyzz_t<F> *items, const u32 *off, u32 m,
                                            jac_t<F> *out) {
    for (u32 b = blockIdx.x * blockDim.x + threadIdx.x; b < m; b += gridDim.x * blockDim.x)
        out[b] = xyzz_to_jac(off[b + 1] > off[b] ? items[off[b]] : xyzz_identity<F>());
}

// Two blocks of 256 per SM (128 registers) with the addition inlined: 254 ms at 2^24 on the
// H200, against 368 ms for a called addition and 385 ms for 170 registers, one block of 256
// per SM (version 3, before the carry-chain product).
extern "C" __global__ void __launch_bounds__(256, 2) msm_accumulate_affine(
    const g1_affine *bases, const u32 *sorted, const u32 *off_in, const u32 *off_out, u32 m,
    u32 K, g1_xyzz *out) {
    accumulate_affine(bases, sorted, off_in, off_out, m, K, out);
}

// The same pass at sppark's shape: one block of 384 per SM, so 168 registers (ptxas spills
// 24 B here against 200 B at 128) and 12 warps an SM rather than 16. Launched with 384
// threads (`Accumulate::Wide` in prover-core's gpu/msm.rs).
extern "C" __global__ void __launch_bounds__(384, 1) msm_accumulate_affine_wide(
    const g1_affine *bases, const u32 *sorted, const u32 *off_in, const u32 *off_out, u32 m,
    u32 K, g1_xyzz *out) {
    accumulate_affine(bases, sorted, off_in, off_out, m, K, out);
}

extern "C" __global__ void __launch_bounds__(256) msm_accumulate_xyzz(
    const g1_xyzz *in, const u32 *off_in, const u32 *off_out, u32 m, u32 K, g1_xyzz *out) {
    accumulate_xyzz(in, off_in, off_out, m, K, out);
}

extern "C" __global__ void g1_sums_to_jac(const g1_xyzz *items, const u32 *off, u32 m,
                                          g1_jac *out) {
    sums_to_jac(items, off, m, out);
}

// G2's accumulator is twice G1's: a block of 128 keeps it in registers.
extern "C" __global__ void __launch_bounds__(128) g2_accumulate_affine(
    const g2_affine *bases, const u32 *sorted, const u32 *off_in, const u32 *off_out, u32 m,
    u32 K, g2_xyzz *out) {
    accumulate_affine(bases, sorted, off_in, off_out, m, K, out);
}

extern "C" __global__ void __launch_bounds__(128) g2_accumulate_xyzz(
    const g2_xyzz *in, const u32 *off_in, const u32 *off_out, u32 m, u32 K, g2_xyzz *out) {
    accumulate_xyzz(in, off_in, off_out, m, K, out);
}

extern "C" __global__ void g2_sums_to_jac(const g2_xyzz *items, const u32 *off, u32 m,
                                          g2_jac *out) {
    sums_to_jac(items, off, m, out);
}

// Grid (G, windows), T threads a block: thread k of the window's G·T takes a run of
// ⌈B/(G·T)⌉ magnitudes; the block's runs are added in a tree in shared memory (`part`, T
// accumulators).
template <class F, u32 T>
__device__ __forceinline__ void window_reduce(const xyzz_t<F> *items, const u32 *off, u32 c,
                                              jac_t<F> *out, xyzz_t<F> *part) {
    const u32 B = 1u << (c - 1);
    const u32 w = blockIdx.y;
    const u32 per_window = gridDim.x * T;
    const u32 k = blockIdx.x * T + threadIdx.x;
    const u32 run = (B + per_window - 1) / per_window;
    const u32 lo = 1 + k * run;
    const u32 hi = min(B, lo + run - 1);
    const u32 base = w * (B + 1);
    part[threadIdx.x] = msm_bucket_run<F>(lo, hi, (int)c, [&](u32 j) {
        const u32 i = base + j;
        return off[i + 1] > off[i] ? items[off[i]] : xyzz_identity<F>();
    });
    __syncthreads();
    for (u32 d = T / 2; d > 0; d >>= 1) {
        if (threadIdx.x < d) xyzz_add(part[threadIdx.x], part[threadIdx.x + d]);
        __syncthreads();
    }
    if (threadIdx.x == 0) out[w * gridDim.x + blockIdx.x] = xyzz_to_jac(part[0]);
}

#define MSM_REDUCE_THREADS 128

extern "C" __global__ void __launch_bounds__(MSM_REDUCE_THREADS) msm_window_reduce(
    const g1_xyzz *items, const u32 *off, u32 c, g1_jac *out) {
    __shared__ g1_xyzz part[MSM_REDUCE_THREADS];
    window_reduce<fp, MSM_REDUCE_THREADS>(items, off, c, out, part);
}

// A G2 accumulator is 384 bytes: 64 of them a block (24 KiB of shared memory).
#define G2_REDUCE_THREADS 64

extern "C" __global__ void __launch_bounds__(G2_REDUCE_THREADS) g2_window_reduce(
    const g2_xyzz *items, const u32 *off, u32 c, g2_jac *out) {
    __shared__ g2_xyzz part[G2_REDUCE_THREADS];
    window_reduce<fp2, G2_REDUCE_THREADS>(items, off, c, out, part);
}

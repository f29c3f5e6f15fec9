// NTT over Fr and the element-wise steps of the H computation.
//
// A transform of 2^log_n elements runs in passes of up to K_MAX radix-2 stages each, every
// pass one kernel launch: a block loads one group of 2^k elements (stride 2^s0) into shared
// memory, runs k stages there, and writes it back, so a 2^24 transform reads and writes the
// data 3 times instead of 24. DIF passes (stages descending) take natural order to
// bit-reversed order; DIT passes (ascending) take bit-reversed order to natural order. The H
// computation chains DIF → DIT → element-wise → DIF and bit-reverses once at the end.
//
// Twiddles: stage s uses w_{2^(s+1)}^j with j the index bits below s. In a pass, j splits into
// the group's fixed low bits `lo` (below s0) and the in-group bits t: w^j = w_{2^(s+1)}^lo ·
// w_{2^(l+1)}^t with l = s - s0. The second factor comes from one fixed table L
// (L[h + t] = w_{2h}^t); the first is one value per block and stage, from
// w_n^e = TW_LO[e & 4095] · TW_HI[e >> 12]. A block builds all its twiddles once per pass.
// With a full table (TW_FULL[e] = w_n^e, e < n/2: 16 bytes per element of the domain, built
// once per size) a block reads its twiddles instead: the one product per element that the
// two-level form costs in every pass but the first was 1/5 of a pass's products.
#include "fr.cuh"

#define K_MAX 9

// Shared memory is limb-major: limb j of element i at [j·size + i]. A warp reading consecutive
// elements then reads consecutive words (no bank conflict). It is sized for the pass at launch
// (dynamic shared memory: 64·2^k + 32·K_MAX bytes), so short passes keep occupancy up.
__device__ __forceinline__ fr sm_get(const u32 *m, u32 size, u32 i) {
    fr r;
#pragma unroll
    for (int j = 0; j < 8; j++) r.l[j] = m[j * size + i];
    return r;
}

__device__ __forceinline__ void sm_put(u32 *m, u32 size, u32 i, const fr &v) {
#pragma unroll
    for (int j = 0; j < 8; j++) m[j * size + i] = v.l[j];
}

// One pass; RADIX4 picks the stage loop (a template, so each kernel gets its own register
// budget: the radix-4 body needs ~100 registers, the radix-2 one far fewer).
template <bool RADIX4>
__device__ __forceinline__ void ntt_pass_body(fr *a, u32 log_n, u32 s0, u32 k, u32 dif,
                                              const fr *L, const fr *tw_full,
                                              const fr *tw_lo, const fr *tw_hi) {
    extern __shared__ u32 smem[];
    const u32 size = 1u << k;
    const u32 half = size >> 1;
    u32 *s = smem;
    // tw[h + t]: this block's twiddle for in-group stage l (h = 2^l), t < h.
    u32 *tw = smem + 8 * size;
    fr *base = reinterpret_cast<fr *>(smem + 16 * size);
    const u64 b = (u64)blockIdx.x + (u64)blockIdx.y * gridDim.x;
    const u64 lo = b & ((1ull << s0) - 1);
    const u64 hi = b >> s0;
    const u64 first = (hi << (s0 + k)) | lo;
    for (u32 t = threadIdx.x; t < size; t += blockDim.x)
        sm_put(s, size, t, fr_load(a, first + ((u64)t << s0)));
    // base[l] = w_{2^(s0+l+1)}^lo = w_n^(lo << (log_n - s0 - l - 1)): one product per stage,
    // one stage per thread.
    if (s0 > 0 && tw_full == nullptr && threadIdx.x < k) {
        const u32 l = threadIdx.x;
        const u64 e = lo << (log_n - s0 - l - 1);
        base[l] = fr_mul(tw_lo[e & 4095], tw_hi[e >> 12]);
    }
    __syncthreads();
    for (u32 x = threadIdx.x + 1; x < size; x += blockDim.x) {
        const u32 l = 31 - __clz(x);
        fr w;
        if (s0 == 0) {
            w = L[x];
        } else if (tw_full != nullptr) {
            // w_{2^(s0+l+1)}^(lo + t·2^s0) = w_n^((lo + t·2^s0) · 2^(log_n − s0 − l − 1)).
            const u64 t = x - (1u << l);
            w = fr_load(tw_full, (lo + (t << s0)) << (log_n - s0 - l - 1));
        } else {
            w = fr_mul(base[l], L[x]);
        }
        sm_put(tw, size, x, w);
    }
    __syncthreads();
    // With RADIX4, stages two at a time, four elements per thread in registers (a radix-4
    // unit of two radix-2 stages): one shared-memory round trip and one barrier per two
    // stages. The host sets it for passes of 8 stages and more, where it measured faster
    // (2^24: 4.87 → 4.66 ms); on 6- and 7-stage passes one thread per radix-2 butterfly was.
    const u32 quarter = size >> 2;
    u32 step = 0;
    for (; RADIX4 && step + 1 < k; step += 2) {
        if (dif) {
            // Stage la (higher) then lb = la − 1: pairs (x0, x2), (x1, x3), then (x0, x1), (x2, x3).
            const u32 lb = k - 2 - step;
            const u32 hb = 1u << lb, ha = hb << 1;
            for (u32 q = threadIdx.x; q < quarter; q += blockDim.x) {
                const u32 t = q & (hb - 1);
                const u32 i0 = ((q >> lb) << (lb + 2)) | t;
                const fr x0 = sm_get(s, size, i0), x1 = sm_get(s, size, i0 + hb);
                const fr x2 = sm_get(s, size, i0 + ha), x3 = sm_get(s, size, i0 + ha + hb);
                const fr y0 = fr_add(x0, x2), y1 = fr_add(x1, x3);
                const fr y2 = fr_mul(fr_sub(x0, x2), sm_get(tw, size, ha + t));
                const fr y3 = fr_mul(fr_sub(x1, x3), sm_get(tw, size, ha + t + hb));
                const fr wb = sm_get(tw, size, hb + t);
                sm_put(s, size, i0, fr_add(y0, y1));
                sm_put(s, size, i0 + hb, fr_mul(fr_sub(y0, y1), wb));
                sm_put(s, size, i0 + ha, fr_add(y2, y3));
                sm_put(s, size, i0 + ha + hb, fr_mul(fr_sub(y2, y3), wb));
            }
        } else {
            // Stage l (lower) then l + 1: pairs (x0, x1), (x2, x3), then (x0, x2), (x1, x3).
            const u32 l = step;
            const u32 h = 1u << l, H = h << 1;
            for (u32 q = threadIdx.x; q < quarter; q += blockDim.x) {
                const u32 t = q & (h - 1);
                const u32 i0 = ((q >> l) << (l + 2)) | t;
                const fr wl = sm_get(tw, size, h + t);
                const fr v1 = fr_mul(sm_get(s, size, i0 + h), wl);
                const fr v3 = fr_mul(sm_get(s, size, i0 + H + h), wl);
                const fr x0 = sm_get(s, size, i0), x2 = sm_get(s, size, i0 + H);
                const fr y0 = fr_add(x0, v1), y1 = fr_sub(x0, v1);
                const fr y2 = fr_mul(fr_add(x2, v3), sm_get(tw, size, H + t));
                const fr y3 = fr_mul(fr_sub(x2, v3), sm_get(tw, size, H + t + h));
                sm_put(s, size, i0, fr_add(y0, y2));
                sm_put(s, size, i0 + H, fr_sub(y0, y2));
                sm_put(s, size, i0 + h, fr_add(y1, y3));
                sm_put(s, size, i0 + H + h, fr_sub(y1, y3));
            }
        }
        __syncthreads();
    }
    // Radix-2 stages: all of them, or the one an odd count leaves after the radix-4 units.
    for (; step < k; step++) {
        const u32 l = dif ? (k - 1 - step) : step;
        const u32 h = 1u << l;
        for (u32 p = threadIdx.x; p < half; p += blockDim.x) {
            const u32 t_lo = p & (h - 1);
            const u32 i0 = ((p >> l) << (l + 1)) | t_lo;
            const u32 i1 = i0 + h;
            const fr w = sm_get(tw, size, h + t_lo);
            fr u = sm_get(s, size, i0), v = sm_get(s, size, i1);
            if (dif) {
                sm_put(s, size, i0, fr_add(u, v));
                sm_put(s, size, i1, fr_mul(fr_sub(u, v), w));
            } else {
                v = fr_mul(v, w);
                sm_put(s, size, i0, fr_add(u, v));
                sm_put(s, size, i1, fr_sub(u, v));
            }
        }
        __syncthreads();
    }
    for (u32 t = threadIdx.x; t < size; t += blockDim.x)
        fr_store(a, first + ((u64)t << s0), sm_get(s, size, t));
}

// One thread per radix-2 butterfly.
extern "C" __global__ void ntt_pass(fr *a, u32 log_n, u32 s0, u32 k, u32 dif, const fr *L,
                                    const fr *tw_lo, const fr *tw_hi, const fr *tw_full) {
    ntt_pass_body<false>(a, log_n, s0, k, dif, L, tw_full, tw_lo, tw_hi);
}

// One thread per radix-4 unit (two stages at a time).
extern "C" __global__ void ntt_pass4(fr *a, u32 log_n, u32 s0, u32 k, u32 dif, const fr *L,
                                     const fr *tw_lo, const fr *tw_hi, const fr *tw_full) {
    ntt_pass_body<true>(a, log_n, s0, k, dif, L, tw_full, tw_lo, tw_hi);
}

// out[e] = p_lo[e & 4095] · p_hi[e >> 12] for e < count: a power table in full, from its two
// levels.
extern "C" __global__ void pow_fill(fr *out, u64 count, const fr *p_lo, const fr *p_hi) {
    for (u64 e = (u64)blockIdx.x * blockDim.x + threadIdx.x; e < count;
         e += (u64)gridDim.x * blockDim.x) {
        fr_store(out, e, fr_mul(p_lo[e & 4095], p_hi[e >> 12]));
    }
}

__device__ __forceinline__ u64 bitrev(u64 i, u32 log_n) {
    return log_n == 0 ? 0 : (__brevll(i) >> (64 - log_n));
}

// a[i] *= P(e) with e = i (or bit-reversed i) and P(e) = p_lo[e & 4095] · p_hi[e >> 12]: the
// coset shift g^i, its inverse, and 1/n folded into p_hi by the host.
extern "C" __global__ void scale_powers(fr *a, u32 log_n, u32 bitrev_index,
                                        const fr *p_lo, const fr *p_hi) {
    const u64 n = 1ull << log_n;
    for (u64 i = (u64)blockIdx.x * blockDim.x + threadIdx.x; i < n;
         i += (u64)gridDim.x * blockDim.x) {
        const u64 e = bitrev_index ? bitrev(i, log_n) : i;
        fr f = fr_mul(p_lo[e & 4095], p_hi[e >> 12]);
        fr_store(a, i, fr_mul(fr_load(a, i), f));
    }
}

// a = (a·b − c)·z, with z = 1/Z on the coset.
extern "C" __global__ void mul_sub_scale(fr *a, const fr *b, const fr *c, const fr *z, u64 n) {
    const fr zz = z[0];
    for (u64 i = (u64)blockIdx.x * blockDim.x + threadIdx.x; i < n;
         i += (u64)gridDim.x * blockDim.x) {
        fr x = fr_mul(fr_load(a, i), fr_load(b, i));
        fr_store(a, i, fr_mul(fr_sub(x, fr_load(c, i)), zz));
    }
}

// out[bitrev(i)] = in[i].
extern "C" __global__ void bitrev_copy(const fr *in, fr *out, u32 log_n) {
    const u64 n = 1ull << log_n;
    for (u64 i = (u64)blockIdx.x * blockDim.x + threadIdx.x; i < n;
         i += (u64)gridDim.x * blockDim.x) {
        fr_store(out, bitrev(i, log_n), fr_load(in, i));
    }
}

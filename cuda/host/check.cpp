// The kernel headers compiled for the host, behind a C interface the `cuda-check` crate tests
// against blst: field and curve arithmetic, signed digits, and a sequential run of the MSM
// algorithm the kernels implement (same digits, same counting sort, same K-entry runs, same
// bucket runs), so a wrong formula or index shows on a machine without a GPU.
#include "../fr.cuh"
#include "../msm.cuh"
#include "../g2.cuh"

#include <algorithm>
#include <cstring>
#include <vector>

static fp load_fp(const u32 *p) {
    fp r;
    std::memcpy(r.l, p, sizeof r.l);
    return r;
}
static void store_fp(u32 *p, const fp &a) { std::memcpy(p, a.l, sizeof a.l); }
static g1_affine load_affine(const u32 *p) { return g1_affine{load_fp(p), load_fp(p + 12)}; }
static g1_xyzz load_xyzz(const u32 *p) {
    return g1_xyzz{load_fp(p), load_fp(p + 12), load_fp(p + 24), load_fp(p + 36)};
}
static void store_xyzz(u32 *p, const g1_xyzz &a) {
    store_fp(p, a.x);
    store_fp(p + 12, a.y);
    store_fp(p + 24, a.zz);
    store_fp(p + 36, a.zzz);
}
static void store_jac(u32 *p, const g1_jac &a) {
    store_fp(p, a.x);
    store_fp(p + 12, a.y);
    store_fp(p + 24, a.z);
}

static fp2 load_fp2(const u32 *p) { return fp2{load_fp(p), load_fp(p + 12)}; }
static void store_fp2(u32 *p, const fp2 &a) {
    store_fp(p, a.c0);
    store_fp(p + 12, a.c1);
}
static g2_affine load_affine2(const u32 *p) { return g2_affine{load_fp2(p), load_fp2(p + 24)}; }
static g2_xyzz load_xyzz2(const u32 *p) {
    return g2_xyzz{load_fp2(p), load_fp2(p + 24), load_fp2(p + 48), load_fp2(p + 72)};
}
static void store_xyzz2(u32 *p, const g2_xyzz &a) {
    store_fp2(p, a.x);
    store_fp2(p + 24, a.y);
    store_fp2(p + 48, a.zz);
    store_fp2(p + 72, a.zzz);
}

extern "C" {

void ps_fp2_op(int op, const u32 *a, const u32 *b, u32 *out) {
    const fp2 x = load_fp2(a), y = load_fp2(b);
    fp2 r;
    switch (op) {
    case 0: r = fp2_add(x, y); break;
    case 1: r = fp2_sub(x, y); break;
    case 2: r = fp2_mul(x, y); break;
    case 3: r = fp2_neg(x); break;
    case 4: r = fp2_sqr(x); break;
    default: f_one(r); break;
    }
    store_fp2(out, r);
}

// G2 in XYZZ (96 words), affine points as blst stores them (48 words): op 0 from affine (q),
// 1 p + affine q, 2 p + q (q XYZZ), 3 2p; 4 p as Jacobian (72 words out).
void ps_g2_op(int op, const u32 *p, const u32 *q, u32 *out) {
    g2_xyzz r = op == 0 ? xyzz_from_affine(load_affine2(q)) : load_xyzz2(p);
    switch (op) {
    case 1: xyzz_add_affine(r, load_affine2(q)); break;
    case 2: xyzz_add(r, load_xyzz2(q)); break;
    case 3: xyzz_dbl(r); break;
    case 4: {
        const g2_jac j = xyzz_to_jac(r);
        store_fp2(out, j.x);
        store_fp2(out + 24, j.y);
        store_fp2(out + 48, j.z);
        return;
    }
    default: break;
    }
    store_xyzz2(out, r);
}

void ps_fp_op(int op, const u32 *a, const u32 *b, u32 *out) {
    const fp x = load_fp(a), y = load_fp(b);
    fp r;
    switch (op) {
    case 0: r = fp_add(x, y); break;
    case 1: r = fp_sub(x, y); break;
    case 2: r = fp_mul(x, y); break;
    case 3: r = fp_neg(x); break;
    case 4: r = fp_sqr(x); break;
    default: r = fp_one(); break;
    }
    store_fp(out, r);
}

void ps_fr_op(int op, const u32 *a, const u32 *b, u32 *out) {
    fr x, y;
    std::memcpy(x.l, a, sizeof x.l);
    std::memcpy(y.l, b, sizeof y.l);
    const fr r = op == 0 ? fr_add(x, y) : op == 1 ? fr_sub(x, y) : fr_mul(x, y);
    std::memcpy(out, r.l, sizeof r.l);
}

void ps_g1_from_affine(const u32 *a, u32 *out) { store_xyzz(out, g1_xyzz_from_affine(load_affine(a))); }

void ps_g1_add_affine(const u32 *p, const u32 *q, u32 *out) {
    g1_xyzz r = load_xyzz(p);
    g1_xyzz_add_affine(r, load_affine(q));
    store_xyzz(out, r);
}

void ps_g1_add(const u32 *p, const u32 *q, u32 *out) {
    g1_xyzz r = load_xyzz(p);
    g1_xyzz_add(r, load_xyzz(q));
    store_xyzz(out, r);
}

void ps_g1_dbl(const u32 *p, u32 *out) {
    g1_xyzz r = load_xyzz(p);
    g1_xyzz_dbl(r);
    store_xyzz(out, r);
}

void ps_g1_mul_small(const u32 *p, u32 k, int bits, u32 *out) {
    store_xyzz(out, g1_xyzz_mul_small(load_xyzz(p), k, bits));
}

void ps_g1_to_jac(const u32 *p, u32 *out) { store_jac(out, g1_xyzz_to_jac(load_xyzz(p))); }

// Signed digits of one canonical scalar: `windows` codes (magnitude | MSM_NEG).
void ps_msm_digits(const u32 *s, u32 c, u32 *out) {
    u32 carry = 0;
    for (u32 w = 0; w < msm_windows(c); w++) out[w] = msm_digit(s, w, c, carry);
}

} // extern "C"

// What the reference needs of a curve: its points' layout in the u32 words the tests pass.
struct G1Words {
    typedef fp F;
    static const u32 affine = 24, jac = 36;
    static g1_affine load(const u32 *p) { return load_affine(p); }
    static void store(u32 *p, const g1_jac &a) { store_jac(p, a); }
};
struct G2Words {
    typedef fp2 F;
    static const u32 affine = 48, jac = 72;
    static g2_affine load(const u32 *p) { return load_affine2(p); }
    static void store(u32 *p, const g2_jac &a) {
        store_fp2(p, a.x);
        store_fp2(p + 24, a.y);
        store_fp2(p + 48, a.z);
    }
};

// Σ s_i·P_i as the kernels compute it, sequentially: bases as blst affine points (C::affine
// words each), scalars canonical (8 words each); `run` magnitudes per bucket run. Writes one
// Jacobian point (C::jac words) per window, each Σ mag·bucket, for the host to combine.
template <class C>
static void msm_reference(const u32 *bases, const u32 *scalars, u64 n, u32 c, u32 K, u32 run,
                          u32 *out) {
    typedef typename C::F F;
    const u32 windows = msm_windows(c), B = 1u << (c - 1), m = windows * (B + 1);
    std::vector<u32> digits(windows * n), counts(m, 0);
    for (u64 i = 0; i < n; i++) {
        u32 carry = 0;
        for (u32 w = 0; w < windows; w++) {
            const u32 d = msm_digit(scalars + 8 * i, w, c, carry);
            digits[w * n + i] = d;
            if (d & ~MSM_NEG) counts[w * (B + 1) + (d & ~MSM_NEG)]++;
        }
    }
    std::vector<u32> off(m + 1, 0);
    for (u32 b = 0; b < m; b++) off[b + 1] = off[b] + counts[b];
    std::vector<u32> cursor(off.begin(), off.end() - 1), sorted(off[m]);
    for (u64 i = 0; i < n; i++)
        for (u32 w = 0; w < windows; w++) {
            const u32 d = digits[w * n + i];
            if (d & ~MSM_NEG) sorted[cursor[w * (B + 1) + (d & ~MSM_NEG)]++] = (u32)i | (d & MSM_NEG);
        }
    // Level 1: runs of K entries; later levels: runs of K sums, until one sum per bucket.
    auto next_offsets = [&](const std::vector<u32> &o) {
        std::vector<u32> r(m + 1, 0);
        for (u32 b = 0; b < m; b++) r[b + 1] = r[b] + (o[b + 1] - o[b] + K - 1) / K;
        return r;
    };
    std::vector<u32> off1 = next_offsets(off);
    std::vector<xyzz_t<F>> items(off1[m]);
    for (u32 b = 0; b < m; b++)
        for (u32 t = off1[b]; t < off1[b + 1]; t++) {
            u32 start, end;
            msm_item_run(off.data(), off1.data(), b, t, K, start, end);
            xyzz_t<F> acc = xyzz_identity<F>();
            for (u32 e = start; e < end; e++) {
                affine_t<F> q = C::load(bases + C::affine * (sorted[e] & ~MSM_NEG));
                if (affine_is_identity(q)) continue;
                if (sorted[e] & MSM_NEG) q.y = f_neg(q.y);
                xyzz_add_affine(acc, q);
            }
            items[t] = acc;
        }
    off = off1;
    for (;;) {
        u32 most = 0;
        for (u32 b = 0; b < m; b++) most = std::max(most, off[b + 1] - off[b]);
        if (most <= 1) break;
        std::vector<u32> o2 = next_offsets(off);
        std::vector<xyzz_t<F>> next(o2[m]);
        for (u32 b = 0; b < m; b++)
            for (u32 t = o2[b]; t < o2[b + 1]; t++) {
                u32 start, end;
                msm_item_run(off.data(), o2.data(), b, t, K, start, end);
                xyzz_t<F> acc = xyzz_identity<F>();
                for (u32 e = start; e < end; e++) xyzz_add(acc, items[e]);
                next[t] = acc;
            }
        items.swap(next);
        off = o2;
    }
    for (u32 w = 0; w < windows; w++) {
        xyzz_t<F> total = xyzz_identity<F>();
        for (u32 lo = 1; lo <= B; lo += run) {
            const u32 hi = std::min(B, lo + run - 1);
            xyzz_add(total, msm_bucket_run<F>(lo, hi, (int)c, [&](u32 j) {
                const u32 i = w * (B + 1) + j;
                return off[i + 1] > off[i] ? items[off[i]] : xyzz_identity<F>();
            }));
        }
        C::store(out + C::jac * w, xyzz_to_jac(total));
    }
}


extern "C" {

void ps_msm_reference(const u32 *bases, const u32 *scalars, u64 n, u32 c, u32 K, u32 run,
                      u32 *out) {
    msm_reference<G1Words>(bases, scalars, n, c, K, run, out);
}

// The same for G2: bases 48 words each, one Jacobian point (72 words) per window out.
void ps_msm_reference_g2(const u32 *bases, const u32 *scalars, u64 n, u32 c, u32 K, u32 run,
                         u32 *out) {
    msm_reference<G2Words>(bases, scalars, n, c, K, run, out);
}

} // extern "C"

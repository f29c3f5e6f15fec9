// BLS12-381 G1 (y² = x³ + 4 over Fp) in the coordinates an MSM wants: affine points as blst
// stores them (x then y, Montgomery form, all-zero bytes for the identity) and XYZZ
// accumulators (x = X/ZZ, y = Y/ZZZ; ZZ = 0 is the identity), whose mixed addition costs
// 8M + 2S and needs no inversion. Results leave as Jacobian (x = X/Z², y = Y/Z³), blst's
// `blst_p1`, so the host adds them with blst. Formulas: hyperelliptic.org/EFD, "xyzz".
#pragma once
#include "fp.cuh"

struct g1_affine { fp x, y; };
struct g1_xyzz { fp x, y, zz, zzz; };
struct g1_jac { fp x, y, z; };

PS_FN bool g1_affine_is_identity(const g1_affine &a) { return fp_is_zero(a.x) && fp_is_zero(a.y); }

PS_FN g1_xyzz g1_xyzz_identity() {
    g1_xyzz r;
    r.x = fp_zero();
    r.y = fp_zero();
    r.zz = fp_zero();
    r.zzz = fp_zero();
    return r;
}

PS_FN bool g1_xyzz_is_identity(const g1_xyzz &p) { return fp_is_zero(p.zz); }

PS_FN g1_xyzz g1_xyzz_from_affine(const g1_affine &a) {
    if (g1_affine_is_identity(a)) return g1_xyzz_identity();
    g1_xyzz r;
    r.x = a.x;
    r.y = a.y;
    r.zz = fp_one();
    r.zzz = fp_one();
    return r;
}

// 2·(x, y) for an affine point ("mdbl-2008-s-1"). G1 has no point of order 2, so y ≠ 0.
PS_BIG g1_xyzz g1_xyzz_dbl_affine(const g1_affine &a) {
    const fp u = fp_dbl(a.y);
    const fp v = fp_sqr(u);
    const fp w = fp_mul(u, v);
    const fp s = fp_mul(a.x, v);
    const fp x2 = fp_sqr(a.x);
    const fp m = fp_add(fp_dbl(x2), x2);
    g1_xyzz r;
    r.x = fp_sub(fp_sqr(m), fp_dbl(s));
    r.y = fp_sub(fp_mul(m, fp_sub(s, r.x)), fp_mul(w, a.y));
    r.zz = v;
    r.zzz = w;
    return r;
}

// p ← 2p ("dbl-2008-s-1").
PS_BIG void g1_xyzz_dbl(g1_xyzz &p) {
    if (g1_xyzz_is_identity(p)) return;
    const fp u = fp_dbl(p.y);
    const fp v = fp_sqr(u);
    const fp w = fp_mul(u, v);
    const fp s = fp_mul(p.x, v);
    const fp x2 = fp_sqr(p.x);
    const fp m = fp_add(fp_dbl(x2), x2);
    const fp x3 = fp_sub(fp_sqr(m), fp_dbl(s));
    p.y = fp_sub(fp_mul(m, fp_sub(s, x3)), fp_mul(w, p.y));
    p.x = x3;
    p.zz = fp_mul(v, p.zz);
    p.zzz = fp_mul(w, p.zzz);
}

// p ← p + q for an affine q that is not the identity ("madd-2008-s"), with the cases the
// formula excludes: p the identity, q = p (a doubling), q = −p (the identity). Inlined: it is
// the bucket accumulation's inner loop (measured on the H200 at 2^24: 368 ms called, 254 ms
// inlined within 128 registers, 385 ms inlined with 170).
PS_FN void g1_xyzz_add_affine(g1_xyzz &p, const g1_affine &q) {
    if (g1_xyzz_is_identity(p)) {
        p = g1_xyzz_from_affine(q);
        return;
    }
    const fp u2 = fp_mul(q.x, p.zz);
    const fp s2 = fp_mul(q.y, p.zzz);
    const fp pp_ = fp_sub(u2, p.x);
    const fp r = fp_sub(s2, p.y);
    if (fp_is_zero(pp_)) {
        if (fp_is_zero(r)) {
            p = g1_xyzz_dbl_affine(q);
        } else {
            p = g1_xyzz_identity();
        }
        return;
    }
    const fp pp = fp_sqr(pp_);
    const fp ppp = fp_mul(pp_, pp);
    const fp qq = fp_mul(p.x, pp);
    const fp x3 = fp_sub(fp_sub(fp_sqr(r), ppp), fp_dbl(qq));
    p.y = fp_sub(fp_mul(r, fp_sub(qq, x3)), fp_mul(p.y, ppp));
    p.x = x3;
    p.zz = fp_mul(p.zz, pp);
    p.zzz = fp_mul(p.zzz, ppp);
}

// p ← p + q, both XYZZ ("add-2008-s"), every case handled.
PS_BIG void g1_xyzz_add(g1_xyzz &p, const g1_xyzz &q) {
    if (g1_xyzz_is_identity(q)) return;
    if (g1_xyzz_is_identity(p)) {
        p = q;
        return;
    }
    const fp u1 = fp_mul(p.x, q.zz);
    const fp u2 = fp_mul(q.x, p.zz);
    const fp s1 = fp_mul(p.y, q.zzz);
    const fp s2 = fp_mul(q.y, p.zzz);
    const fp pp_ = fp_sub(u2, u1);
    const fp r = fp_sub(s2, s1);
    if (fp_is_zero(pp_)) {
        if (fp_is_zero(r)) {
            g1_xyzz_dbl(p);
        } else {
            p = g1_xyzz_identity();
        }
        return;
    }
    const fp pp = fp_sqr(pp_);
    const fp ppp = fp_mul(pp_, pp);
    const fp qq = fp_mul(u1, pp);
    const fp x3 = fp_sub(fp_sub(fp_sqr(r), ppp), fp_dbl(qq));
    p.y = fp_sub(fp_mul(r, fp_sub(qq, x3)), fp_mul(s1, ppp));
    p.x = x3;
    p.zz = fp_mul(fp_mul(p.zz, q.zz), pp);
    p.zzz = fp_mul(fp_mul(p.zzz, q.zzz), ppp);
}

// k·p for a small k (below 2^bits), most significant bit first.
PS_FN g1_xyzz g1_xyzz_mul_small(const g1_xyzz &p, u32 k, int bits) {
    g1_xyzz r = g1_xyzz_identity();
    for (int i = bits - 1; i >= 0; i--) {
        g1_xyzz_dbl(r);
        if ((k >> i) & 1) g1_xyzz_add(r, p);
    }
    return r;
}

// Jacobian without an inversion: Z = ZZ·ZZZ, X = X·ZZ·ZZZ², Y = Y·ZZ³·ZZZ² (then X/Z² = X/ZZ
// and Y/Z³ = Y/ZZZ). The identity (ZZ = 0) gives Z = 0, which is blst's identity.
PS_BIG g1_jac g1_xyzz_to_jac(const g1_xyzz &p) {
    g1_jac r;
    const fp zzz2 = fp_sqr(p.zzz);
    const fp zz2 = fp_sqr(p.zz);
    r.z = fp_mul(p.zz, p.zzz);
    r.x = fp_mul(fp_mul(p.x, p.zz), zzz2);
    r.y = fp_mul(fp_mul(p.y, fp_mul(zz2, p.zz)), zzz2);
    return r;
}

PS_FN g1_affine g1_affine_neg(const g1_affine &a) {
    g1_affine r;
    r.x = a.x;
    r.y = fp_neg(a.y);
    return r;
}

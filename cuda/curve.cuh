// Short Weierstrass curves y² = x³ + b (a = 0) in the coordinates an MSM wants, over any field
// F that names its operations as below (f_add, f_sub, f_dbl, f_mul, f_sqr, f_neg, f_is_zero,
// f_zero, f_one): G1 over fp (g1.cuh) and G2 over fp2 (g2.cuh) share one copy of the
// formulas. Affine points as blst stores them (x then y, Montgomery form, all-zero bytes for
// the identity); XYZZ accumulators (x = X/ZZ, y = Y/ZZZ; ZZ = 0 is the identity), whose mixed
// addition costs 8M + 2S and needs no inversion; results leave as Jacobian (x = X/Z²,
// y = Y/Z³), blst's `blst_p1`/`blst_p2`, so the host adds them with blst. The formulas use
// neither a nor b. Formulas: hyperelliptic.org/EFD, "xyzz".
#pragma once
#include "common.cuh"

template <class F> struct affine_t { F x, y; };
template <class F> struct xyzz_t { F x, y, zz, zzz; };
template <class F> struct jac_t { F x, y, z; };

template <class F> PS_FN bool affine_is_identity(const affine_t<F> &a) {
    return f_is_zero(a.x) && f_is_zero(a.y);
}

template <class F> PS_FN xyzz_t<F> xyzz_identity() {
    xyzz_t<F> r;
    f_zero(r.x);
    f_zero(r.y);
    f_zero(r.zz);
    f_zero(r.zzz);
    return r;
}

template <class F> PS_FN bool xyzz_is_identity(const xyzz_t<F> &p) { return f_is_zero(p.zz); }

template <class F> PS_FN xyzz_t<F> xyzz_from_affine(const affine_t<F> &a) {
    if (affine_is_identity(a)) return xyzz_identity<F>();
    xyzz_t<F> r;
    r.x = a.x;
    r.y = a.y;
    f_one(r.zz);
    f_one(r.zzz);
    return r;
}

// 2·(x, y) for an affine point ("mdbl-2008-s-1"). Neither group has a point of order 2 (the
// prime-order subgroups the SRS lies in), so y ≠ 0.
template <class F> PS_BIG xyzz_t<F> xyzz_dbl_affine(const affine_t<F> &a) {
    const F u = f_dbl(a.y);
    const F v = f_sqr(u);
    const F w = f_mul(u, v);
    const F s = f_mul(a.x, v);
    const F x2 = f_sqr(a.x);
    const F m = f_add(f_dbl(x2), x2);
    xyzz_t<F> r;
    r.x = f_sub(f_sqr(m), f_dbl(s));
    r.y = f_sub(f_mul(m, f_sub(s, r.x)), f_mul(w, a.y));
    r.zz = v;
    r.zzz = w;
    return r;
}

// p ← 2p ("dbl-2008-s-1").
template <class F> PS_BIG void xyzz_dbl(xyzz_t<F> &p) {
    if (xyzz_is_identity(p)) return;
    const F u = f_dbl(p.y);
    const F v = f_sqr(u);
    const F w = f_mul(u, v);
    const F s = f_mul(p.x, v);
    const F x2 = f_sqr(p.x);
    const F m = f_add(f_dbl(x2), x2);
    const F x3 = f_sub(f_sqr(m), f_dbl(s));
    p.y = f_sub(f_mul(m, f_sub(s, x3)), f_mul(w, p.y));
    p.x = x3;
    p.zz = f_mul(v, p.zz);
    p.zzz = f_mul(w, p.zzz);
}

// p ← p + q for an affine q that is not the identity ("madd-2008-s"), with the cases the
// formula excludes: p the identity, q = p (a doubling), q = −p (the identity). Inlined: it is
// the bucket accumulation's inner loop (measured on the H200 at 2^24, G1: 368 ms called,
// 254 ms inlined within 128 registers, 385 ms inlined with 170).
template <class F> PS_FN void xyzz_add_affine(xyzz_t<F> &p, const affine_t<F> &q) {
    if (xyzz_is_identity(p)) {
        p = xyzz_from_affine(q);
        return;
    }
    const F u2 = f_mul(q.x, p.zz);
    const F s2 = f_mul(q.y, p.zzz);
    const F pp_ = f_sub(u2, p.x);
    const F r = f_sub(s2, p.y);
    if (f_is_zero(pp_)) {
        if (f_is_zero(r)) {
            p = xyzz_dbl_affine(q);
        } else {
            p = xyzz_identity<F>();
        }
        return;
    }
    // Ordered so that each input dies as soon as it can (p.x and PP after ZZ3 and Q, p.y and
    // PPP after ZZZ3 and Y1·PPP): at most seven field elements live at once, not eight.
    const F pp = f_sqr(pp_);
    const F ppp = f_mul(pp_, pp);
    p.zz = f_mul(p.zz, pp);
    const F qq = f_mul(p.x, pp);
    p.x = f_sub(f_sub(f_sqr(r), ppp), f_dbl(qq));
    p.zzz = f_mul(p.zzz, ppp);
    const F y1ppp = f_mul(p.y, ppp);
    p.y = f_sub(f_mul(r, f_sub(qq, p.x)), y1ppp);
}

// p ← p + q, both XYZZ ("add-2008-s"), every case handled.
template <class F> PS_BIG void xyzz_add(xyzz_t<F> &p, const xyzz_t<F> &q) {
    if (xyzz_is_identity(q)) return;
    if (xyzz_is_identity(p)) {
        p = q;
        return;
    }
    const F u1 = f_mul(p.x, q.zz);
    const F u2 = f_mul(q.x, p.zz);
    const F s1 = f_mul(p.y, q.zzz);
    const F s2 = f_mul(q.y, p.zzz);
    const F pp_ = f_sub(u2, u1);
    const F r = f_sub(s2, s1);
    if (f_is_zero(pp_)) {
        if (f_is_zero(r)) {
            xyzz_dbl(p);
        } else {
            p = xyzz_identity<F>();
        }
        return;
    }
    const F pp = f_sqr(pp_);
    const F ppp = f_mul(pp_, pp);
    const F qq = f_mul(u1, pp);
    const F x3 = f_sub(f_sub(f_sqr(r), ppp), f_dbl(qq));
    p.y = f_sub(f_mul(r, f_sub(qq, x3)), f_mul(s1, ppp));
    p.x = x3;
    p.zz = f_mul(f_mul(p.zz, q.zz), pp);
    p.zzz = f_mul(f_mul(p.zzz, q.zzz), ppp);
}

// k·p for a small k (below 2^bits), most significant bit first.
template <class F> PS_FN xyzz_t<F> xyzz_mul_small(const xyzz_t<F> &p, u32 k, int bits) {
    xyzz_t<F> r = xyzz_identity<F>();
    for (int i = bits - 1; i >= 0; i--) {
        xyzz_dbl(r);
        if ((k >> i) & 1) xyzz_add(r, p);
    }
    return r;
}

// Jacobian without an inversion: Z = ZZ·ZZZ, X = X·ZZ·ZZZ², Y = Y·ZZ³·ZZZ² (then X/Z² = X/ZZ
// and Y/Z³ = Y/ZZZ). The identity (ZZ = 0) gives Z = 0, which is blst's identity.
template <class F> PS_BIG jac_t<F> xyzz_to_jac(const xyzz_t<F> &p) {
    jac_t<F> r;
    const F zzz2 = f_sqr(p.zzz);
    const F zz2 = f_sqr(p.zz);
    r.z = f_mul(p.zz, p.zzz);
    r.x = f_mul(f_mul(p.x, p.zz), zzz2);
    r.y = f_mul(f_mul(p.y, f_mul(zz2, p.zz)), zzz2);
    return r;
}

template <class F> PS_FN affine_t<F> affine_neg(const affine_t<F> &a) {
    affine_t<F> r;
    r.x = a.x;
    r.y = f_neg(a.y);
    return r;
}

#include "fgt/fgt_kernels.h"

#include <math.h>
#include <string.h>

#include "core/simd.h"

/* The machine's double vectors (core/simd.h: SIMD_W lanes; wider GCC vectors are split and
   spilled). The data stay padded to blocks of 8 doubles (P8, the source and target arrays), which
   SIMD_W divides. */
typedef simd_d vd;
typedef simd_l vl;
#define W SIMD_W

static inline vd vset(double x) { return simd_set1(x); }
static inline vd vload(const double *p) { return simd_load(p); }
static inline double vsum(vd v) { return simd_sum(v); }
/* mask lanes >= n (n in 0..W) to zero */
static inline vd vhead(vd v, long n) {
    vl iota;
    for (int k = 0; k < W; ++k) iota[k] = k;
    return simd_select0(iota < n, v);
}

/* exp(x) for x <= 0, about 1 ulp: x = n ln2 + r, |r| <= ln2/2, degree-12 Taylor polynomial,
 * 2^n through the exponent bits; 0 below -708 (exp(-708) = 3e-308). */
static inline vd vexp_neg(vd x) {
    const vd lim = vset(-708.0);
    vl under = (vl)(x < lim);
    x = (vd)(((vl)x & ~under) | ((vl)lim & under));
    const vd magic = vset(6755399441055744.0); /* 1.5 * 2^52: round to nearest integer */
    vd t = x * vset(1.4426950408889634) + magic;
    vd n = t - magic;
    vd r = x - n * vset(6.93147180369123816490e-01);
    r = r - n * vset(1.90821492927058770002e-10);
    vd p = vset(1.0 / 479001600.0);
    p = p * r + vset(1.0 / 39916800.0);
    p = p * r + vset(1.0 / 3628800.0);
    p = p * r + vset(1.0 / 362880.0);
    p = p * r + vset(1.0 / 40320.0);
    p = p * r + vset(1.0 / 5040.0);
    p = p * r + vset(1.0 / 720.0);
    p = p * r + vset(1.0 / 120.0);
    p = p * r + vset(1.0 / 24.0);
    p = p * r + vset(1.0 / 6.0);
    p = p * r + vset(0.5);
    p = p * r + vset(1.0);
    p = p * r + vset(1.0);
    vl ni = (vl)t - (vl)magic; /* the integer n from the low mantissa bits */
    vd scale = (vd)((ni + 1023) << 52);
    p = p * scale;
    return (vd)((vl)p & ~under);
}

void fgt_k_direct(long t0, long t1, double *const tu[3], long s0, long s1, double *const su[3],
                  const double *q, double *g) {
    const double *s_0 = su[0], *s_1 = su[1], *s_2 = su[2];
    long i = t0;
    /* two targets per pass: each source load serves both */
    for (; i + 1 < t1; i += 2) {
        const vd a0 = vset(tu[0][i]), a1 = vset(tu[1][i]), a2 = vset(tu[2][i]);
        const vd b0 = vset(tu[0][i + 1]), b1 = vset(tu[1][i + 1]), b2 = vset(tu[2][i + 1]);
        vd acc_a = vset(0), acc_b = vset(0);
        for (long j = s0; j < s1; j += W) {
            vd x0 = vload(s_0 + j), x1 = vload(s_1 + j), x2 = vload(s_2 + j);
            vd qj = vload(q + j);
            if (s1 - j < W) qj = vhead(qj, s1 - j);
            vd d0 = a0 - x0, d1 = a1 - x1, d2 = a2 - x2;
            vd e0 = b0 - x0, e1 = b1 - x1, e2 = b2 - x2;
            acc_a += qj * vexp_neg(-(d0 * d0 + d1 * d1 + d2 * d2));
            acc_b += qj * vexp_neg(-(e0 * e0 + e1 * e1 + e2 * e2));
        }
        g[i - t0] += vsum(acc_a);
        g[i + 1 - t0] += vsum(acc_b);
    }
    for (; i < t1; ++i) {
        const vd a0 = vset(tu[0][i]), a1 = vset(tu[1][i]), a2 = vset(tu[2][i]);
        vd acc = vset(0);
        for (long j = s0; j < s1; j += W) {
            vd qj = vload(q + j);
            if (s1 - j < W) qj = vhead(qj, s1 - j);
            vd d0 = a0 - vload(s_0 + j), d1 = a1 - vload(s_1 + j), d2 = a2 - vload(s_2 + j);
            acc += qj * vexp_neg(-(d0 * d0 + d1 * d1 + d2 * d2));
        }
        g[i - t0] += vsum(acc);
    }
}

/* f[n] = x^n / n! (kind 0) or h_n(x) / n! (kind 1), n < p */
static inline void fun_build(int kind, vd x, int p, vd *f) {
    if (kind == 0) {
        f[0] = vset(1.0);
        for (int n = 1; n < p; ++n) f[n] = f[n - 1] * x * vset(1.0 / n);
    } else {
        f[0] = vexp_neg(-x * x);
        if (p > 1) f[1] = vset(2.0) * x * f[0];
        for (int n = 1; n + 1 < p; ++n)
            f[n + 1] = (vset(2.0) * x * f[n] - vset(2.0) * f[n - 1]) * vset(1.0 / (n + 1));
    }
}

/* f[n] = h_n(x) (kind 0) or x^n (kind 1), n < p */
static inline void fun_eval(int kind, vd x, int p, vd *f) {
    if (kind == 0) {
        f[0] = vexp_neg(-x * x);
        if (p > 1) f[1] = vset(2.0) * x * f[0];
        for (int n = 1; n + 1 < p; ++n) f[n + 1] = vset(2.0) * x * f[n] - vset(2.0 * n) * f[n - 1];
    } else {
        f[0] = vset(1.0);
        for (int n = 1; n < p; ++n) f[n] = f[n - 1] * x;
    }
}

void fgt_k_moments(int kind, long s0, long s1, double *const su[3], const double *q,
                   const double c[3], const int pe[3], const int st[3], double *out, double *acc) {
    const int p0 = pe[0], p1 = pe[1], p2 = pe[2];
    const long nc = (long)p0 * p1 * p2;
    vd *va = (vd *)acc;
    for (long k = 0; k < nc; ++k) va[k] = vset(0);
    vd f0[32], f1[32], f2[32];
    for (long j = s0; j < s1; j += W) {
        vd qj = vload(q + j);
        if (s1 - j < W) qj = vhead(qj, s1 - j);
        fun_build(kind, vload(su[0] + j) - vset(c[0]), p0, f0);
        fun_build(kind, vload(su[1] + j) - vset(c[1]), p1, f1);
        fun_build(kind, vload(su[2] + j) - vset(c[2]), p2, f2);
        vd *a = va;
        for (int i0 = 0; i0 < p0; ++i0) {
            vd w0 = qj * f0[i0];
            for (int i1 = 0; i1 < p1; ++i1) {
                vd w1 = w0 * f1[i1];
                for (int i2 = 0; i2 < p2; ++i2) a[i2] += w1 * f2[i2];
                a += p2;
            }
        }
    }
    long k = 0;
    for (int i0 = 0; i0 < p0; ++i0)
        for (int i1 = 0; i1 < p1; ++i1)
            for (int i2 = 0; i2 < p2; ++i2) out[((long)i0 * st[1] + i1) * st[2] + i2] += vsum(va[k++]);
}

void fgt_k_eval(int kind, long t0, long t1, double *const tu[3], const double c[3], const int pe[3],
                const int st[3], const double *C, double *g) {
    const int p0 = pe[0], p1 = pe[1], p2 = pe[2];
    vd f0[32], f1[32], f2[32];
    for (long i = t0; i < t1; i += W) {
        fun_eval(kind, vload(tu[0] + i) - vset(c[0]), p0, f0);
        fun_eval(kind, vload(tu[1] + i) - vset(c[1]), p1, f1);
        fun_eval(kind, vload(tu[2] + i) - vset(c[2]), p2, f2);
        vd s0 = vset(0);
        for (int i0 = 0; i0 < p0; ++i0) {
            vd s1 = vset(0);
            for (int i1 = 0; i1 < p1; ++i1) {
                const double *cc = C + ((long)i0 * st[1] + i1) * st[2];
                /* Horner-free: two partial sums for latency */
                vd sa = vset(0), sb = vset(0);
                int i2 = 0;
                for (; i2 + 1 < p2; i2 += 2) {
                    sa += vset(cc[i2]) * f2[i2];
                    sb += vset(cc[i2 + 1]) * f2[i2 + 1];
                }
                if (i2 < p2) sa += vset(cc[i2]) * f2[i2];
                s1 += (sa + sb) * f1[i1];
            }
            s0 += s1 * f0[i0];
        }
        long m = t1 - i < W ? t1 - i : W;
        for (long l = 0; l < m; ++l) g[i - t0 + l] += s0[l];
    }
}

static inline __attribute__((always_inline)) void h2t_nv(const double *A, double *B, const double *const MT[3], int P8,
                                                        const int pe[3], const int st[3], double *tmp, const int nv) {
    /* Rows of width nv vectors along axis 2 (the b2 lanes; lanes >= p2 are never stored); nv <=
       32 / W, so the accumulators fit in registers. */
    const int p0 = pe[0], p1 = pe[1], p2 = pe[2];
    vd *T1 = (vd *)tmp, *T2 = T1 + (long)p0 * p1 * nv;
    const double *M2 = MT[2], *M1 = MT[1], *M0 = MT[0];
    /* axis 2: T1[i0][i1][:] = sum_a2 A[i0][i1][a2] M2T[a2][:] */
    for (int i0 = 0; i0 < p0; ++i0)
        for (int i1 = 0; i1 < p1; ++i1) {
            const double *a = A + ((long)i0 * st[1] + i1) * st[2];
            vd *t = T1 + ((long)i0 * p1 + i1) * nv;
            vd acc[32 / W] = {{0}};
            for (int a2 = 0; a2 < p2; ++a2) {
                const vd x = vset(a[a2]);
                const double *m = M2 + (long)a2 * P8;
                for (int v = 0; v < nv; ++v) acc[v] += x * vload(m + W * v);
            }
            for (int v = 0; v < nv; ++v) t[v] = acc[v];
        }
    /* axis 1: T2[i0][b1][:] = sum_a1 M1[b1][a1] T1[i0][a1][:]  (M1T[a1][b1]) */
    for (int i0 = 0; i0 < p0; ++i0)
        for (int b1 = 0; b1 < p1; ++b1) {
            vd acc[32 / W] = {{0}};
            const vd *u = T1 + (long)i0 * p1 * nv;
            for (int a1 = 0; a1 < p1; ++a1) {
                const vd m = vset(M1[(long)a1 * P8 + b1]);
                for (int v = 0; v < nv; ++v) acc[v] += m * u[a1 * nv + v];
            }
            vd *t = T2 + ((long)i0 * p1 + b1) * nv;
            for (int v = 0; v < nv; ++v) t[v] = acc[v];
        }
    /* axis 0: B[b0][b1][b2] += sum_a0 M0[b0][a0] T2[a0][b1][b2] */
    for (int b0 = 0; b0 < p0; ++b0)
        for (int b1 = 0; b1 < p1; ++b1) {
            vd acc[32 / W] = {{0}};
            for (int a0 = 0; a0 < p0; ++a0) {
                const vd m = vset(M0[(long)a0 * P8 + b0]);
                const vd *u = T2 + ((long)a0 * p1 + b1) * nv;
                for (int v = 0; v < nv; ++v) acc[v] += m * u[v];
            }
            double *bb = B + ((long)b0 * st[1] + b1) * st[2];
            for (int b2 = 0; b2 < p2; ++b2) bb[b2] += acc[b2 / W][b2 % W];
        }
}

void fgt_k_h2t(const double *A, double *B, const double *const MT[3], int P8, const int pe[3],
               const int st[3], double *tmp) {
    /* blocks of 8 lanes along axis 2, 8 / W vectors each */
    switch ((pe[2] + 7) / 8) {
    case 1: h2t_nv(A, B, MT, P8, pe, st, tmp, 8 / W); break;
    case 2: h2t_nv(A, B, MT, P8, pe, st, tmp, 16 / W); break;
    case 3: h2t_nv(A, B, MT, P8, pe, st, tmp, 24 / W); break;
    default: h2t_nv(A, B, MT, P8, pe, st, tmp, 32 / W); break;
    }
}

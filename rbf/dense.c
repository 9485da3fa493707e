/* The dense fallback of the RBF fit (rbf/fit.c): the saddle-point system
 *     A [lambda; alpha] = [Phi 1; 1^T 0] [lambda; alpha] = [f; 0]
 * of order N = n + 1, factored by LU with partial pivoting, solved, and refined against a
 * residual summed in long double until max|r| meets the tolerance (the result is checked,
 * never assumed; the best iterate is kept).
 *
 * Why LU of the whole system: where the FGP iteration fails (a cluster far tighter than c, the
 * local systems singular), the reduced matrix -Z^T Phi Z that the local solves factor by Cholesky
 * (rbf/local.c) is positive definite only in exact arithmetic: computed in double, its Cholesky
 * factorisation met a non-positive pivot on the clustered sets of RbfDense.FitWhereFgpFails,
 * while LU with partial pivoting, backward stable whatever the conditioning, solved them. The
 * multipliers are quotients, not products with the pivot's reciprocal: on three 1500-centre sets
 * where the reciprocal's extra rounding left residuals of 1.2-2.9e-8, quotients gave 0.8-5.8e-9.
 *
 * Why GMRES for the refinement: these systems have cond(A) u near 1 or above, where plain
 * refinement x += M^-1 r (M the LU factors) made the residual grow (2e-8 to 4e-8 after one step
 * on a 1500-centre set of RbfDense.FitWhereFgpFails' kind); flexible GMRES on A M^-1, with A's
 * products in long double, minimises the residual over its Krylov space and took the same set
 * to 2.6e-9 in one step (Carson & Higham's GMRES-based refinement).
 *
 * The factorisation is blocked and right-looking: a panel of RBF_LU_PANEL columns is factored
 * column by column (pivot search, row swap across the whole row, the panel's columns updated),
 * the panel's rows of U are solved for, and the trailing matrix is updated by rows in parallel, 4
 * rows by 2 SIMD vectors of columns at a time. Every entry is updated in a fixed order, so the
 * factors do not depend on the thread count. Rows are padded with zero columns to whole pairs of
 * vectors (updates leave the padding zero). */
#include <float.h>
#include <math.h>
#include <omp.h>
#include <stdlib.h>
#include <string.h>

#include "core/simd.h"
#include "rbf/rbf_internal.h"

#define RBF_LU_PANEL 64 /* columns per panel (a multiple of 2 SIMD_W) */
#define RBF_LU_CTILE                                                                               \
    256 /* columns per tile of the trailing update: the panel's rows of U over                     \
           these stay in L2 (128 KiB) while the rows stream past */
/* refinement steps after the first solve, each one GMRES correction (below) */
#define RBF_DENSE_STEPS 3

struct rbf_dense {
    long N, ld; /* order n + 1, row length (padded) */
    double *a;  /* LU factors, row-major; L unit lower (below the diagonal), U on and above */
    long *piv;  /* row j was swapped with row piv[j] (j = 0 .. N-1, in this order) */
};

void rbf_dense_destroy(rbf_dense *d) {
    if (!d) return;
    free(d->a), free(d->piv), free(d);
}

/* rows [i, i + R) (R <= 4) of the trailing matrix, columns [c0, c1) (multiples of 2 SIMD_W):
   A[i][c] -= sum_{t in [k0, k1)} A[i][t] A[t][c] */
static inline __attribute__((always_inline)) void lu_update(int R, double *a, long ld, long i,
                                                            long k0, long k1, long c0, long c1) {
    for (long c = c0; c < c1; c += 2 * SIMD_W) {
        simd_d acc[4][2];
        for (int r = 0; r < R; ++r)
            acc[r][0] = simd_load(a + (i + r) * ld + c),
            acc[r][1] = simd_load(a + (i + r) * ld + c + SIMD_W);
        for (long t = k0; t < k1; ++t) {
            const simd_d u0 = simd_load(a + t * ld + c), u1 = simd_load(a + t * ld + c + SIMD_W);
            for (int r = 0; r < R; ++r) {
                const simd_d l = simd_set1(a[(i + r) * ld + t]);
                acc[r][0] -= l * u0, acc[r][1] -= l * u1;
            }
        }
        for (int r = 0; r < R; ++r)
            simd_store(a + (i + r) * ld + c, acc[r][0]),
                simd_store(a + (i + r) * ld + c + SIMD_W, acc[r][1]);
    }
}

/* LU with partial pivoting in place; FMM_ERR_NOCONVERGE if a pivot column is zero (or not
   finite) */
static int lu_factor(rbf_dense *d, int threads) {
    const long N = d->N, ld = d->ld;
    double *a = d->a;
    for (long k0 = 0; k0 < N; k0 += RBF_LU_PANEL) {
        const long k1 = k0 + RBF_LU_PANEL < N ? k0 + RBF_LU_PANEL : N;
        for (long j = k0; j < k1; ++j) {
            long p = j; /* the first of the largest: the same pivot whatever the threads */
            for (long i = j + 1; i < N; ++i)
                if (fabs(a[i * ld + j]) > fabs(a[p * ld + j])) p = i;
            if (!(fabs(a[p * ld + j]) > 0) || !isfinite(a[p * ld + j])) return FMM_ERR_NOCONVERGE;
            d->piv[j] = p;
            if (p != j)
                for (long c = 0; c < ld; ++c) {
                    const double t = a[j * ld + c];
                    a[j * ld + c] = a[p * ld + c], a[p * ld + c] = t;
                }
            const double piv = a[j * ld + j];
            const double *rj = a + j * ld;
#pragma omp parallel for schedule(static) num_threads(threads) if (N - j > 256)
            for (long i = j + 1; i < N; ++i) {
                double *ri = a + i * ld;
                const double l = ri[j] /= piv;
                for (long c = j + 1; c < k1; ++c) ri[c] -= l * rj[c];
            }
        }
        if (k1 == N) break;
            /* k1 is a multiple of RBF_LU_PANEL, so the columns from k1 on are whole vector pairs */
#pragma omp parallel num_threads(threads)
        {
            /* the panel's rows of U right of it: forward substitution with the unit L11 */
#pragma omp for schedule(static)
            for (long c = k1; c < ld; c += RBF_LU_CTILE) {
                const long ce = c + RBF_LU_CTILE < ld ? c + RBF_LU_CTILE : ld;
                for (long j = k0 + 1; j < k1; ++j)
                    for (long t = k0; t < j; ++t) {
                        const double l = a[j * ld + t];
                        for (long cc = c; cc < ce; ++cc) a[j * ld + cc] -= l * a[t * ld + cc];
                    }
            }
            /* the trailing matrix, a column tile at a time */
            for (long c = k1; c < ld; c += RBF_LU_CTILE) {
                const long ce = c + RBF_LU_CTILE < ld ? c + RBF_LU_CTILE : ld;
#pragma omp for schedule(static) nowait
                for (long i = k1; i < N; i += 4) {
                    const int R = N - i < 4 ? (int)(N - i) : 4;
                    if (R == 4)
                        lu_update(4, a, ld, i, k0, k1, c, ce);
                    else
                        for (int r = 0; r < R; ++r) lu_update(1, a, ld, i + r, k0, k1, c, ce);
                }
            }
        }
    }
    return 0;
}

/* b (N) = A^-1 b with the factors */
static void lu_solve(const rbf_dense *d, double *b) {
    const long N = d->N, ld = d->ld;
    const double *a = d->a;
    for (long j = 0; j < N; ++j)
        if (d->piv[j] != j) {
            const double t = b[j];
            b[j] = b[d->piv[j]], b[d->piv[j]] = t;
        }
    for (long i = 1; i < N; ++i) {
        double s = b[i];
        for (long k = 0; k < i; ++k) s -= a[i * ld + k] * b[k];
        b[i] = s;
    }
    for (long i = N - 1; i >= 0; --i) {
        double s = b[i];
        for (long k = i + 1; k < N; ++k) s -= a[i * ld + k] * b[k];
        b[i] = s / a[i * ld + i];
    }
}

/* the saddle-point matrix of the plan's centres, factored */
static int dense_build(const fmm_rbf_plan *p, rbf_dense **out) {
    const long n = p->n, N = n + 1, ld = (N + 2 * SIMD_W - 1) / (2 * SIMD_W) * (2 * SIMD_W);
    rbf_dense *d = calloc(1, sizeof *d);
    if (!d) return FMM_ERR_NOMEM;
    d->N = N, d->ld = ld;
    d->a = aligned_alloc(64, (sizeof(double) * N * ld + 63) / 64 * 64);
    d->piv = malloc(sizeof(long) * N);
    if (!d->a || !d->piv) {
        rbf_dense_destroy(d);
        return FMM_ERR_NOMEM;
    }
    double *a = d->a;
#pragma omp parallel for schedule(static) num_threads(p->threads)
    for (long i = 0; i < N; ++i) {
        double *ri = a + i * ld;
        for (long j = 0; j < n; ++j) {
            if (i == n) {
                ri[j] = 1;
                continue;
            }
            const double dx = p->x[i] - p->x[j], dy = p->y[i] - p->y[j], dz = p->z[i] - p->z[j];
            ri[j] = sqrt(dx * dx + dy * dy + dz * dz + p->c2);
        }
        ri[n] = i == n ? 0 : 1;
        for (long j = N; j < ld; ++j) ri[j] = 0;
    }
    int rc = lu_factor(d, p->threads);
    if (rc) {
        rbf_dense_destroy(d);
        return rc;
    }
    *out = d;
    return 0;
}

/* out = A z for the saddle-point matrix A (order n + 1), GMRES's operator: the kernel values in
 * double, as every mat-vec of the library computes them, their products summed in long double
 * (in double the rounding of such a sum, some u sum_j |lambda_j phi_ij|, is of the tolerance's
 * order where the fallback is needed: sum |lambda| ~ 1e8 - 1e9 max|f| on the clustered sets of
 * RbfDense.FitWhereFgpFails). */
static void matvec_ld(const fmm_rbf_plan *p, const double *z, double *out) {
    const long n = p->n;
#pragma omp parallel for schedule(static) num_threads(p->threads)
    for (long i = 0; i <= n; ++i) {
        long double acc = 0;
        if (i == n)
            for (long j = 0; j < n; ++j) acc += z[j];
        else {
            for (long j = 0; j < n; ++j) {
                const double dx = p->x[i] - p->x[j], dy = p->y[i] - p->y[j], dz = p->z[i] - p->z[j];
                acc += (long double)z[j] * sqrt(dx * dx + dy * dy + dz * dz + p->c2);
            }
            acc += z[n];
        }
        out[i] = (double)acc;
    }
}

/* The residual r = b - A z that the fit is judged by, rows 0 .. n-1, and for each a bound e_i on
 * |r_i - exact r_i|. Kernel values, products and sums in long double (unit v), the sums in blocks
 * of RBF_RES_BLOCK terms: e_i = (RBF_RES_BLOCK + n / RBF_RES_BLOCK + 8) v sum_j |z_j phi_ij|
 * + u |r_i|. Why long double kernel values: where the fallback is needed, sum |z_j phi_ij| is
 * large enough that kernel values rounded to double (4u each) move the residual by about the
 * tolerance, so a check in double could pass a fit that another evaluation finds above it
 * (docs/rbf.md, Limits). */
#define RBF_RES_BLOCK 64
static void residual_checked(const fmm_rbf_plan *p, const double *b, const double *z, double *r,
                             double *e) {
    const long n = p->n;
    const long double c = ldexp(p->o.shape, -p->lexp), c2 = c * c;
    const double v = LDBL_EPSILON / 2, k = (RBF_RES_BLOCK + (double)n / RBF_RES_BLOCK + 8) * v;
#pragma omp parallel for schedule(static) num_threads(p->threads)
    for (long i = 0; i < n; ++i) {
        long double acc = z[n];
        double mag = fabs(z[n]);
        for (long j0 = 0; j0 < n; j0 += RBF_RES_BLOCK) {
            const long j1 = j0 + RBF_RES_BLOCK < n ? j0 + RBF_RES_BLOCK : n;
            long double blk = 0;
            for (long j = j0; j < j1; ++j) {
                const long double dx = (long double)p->x[i] - p->x[j],
                                  dy = (long double)p->y[i] - p->y[j],
                                  dz = (long double)p->z[i] - p->z[j];
                const long double t = z[j] * sqrtl(dx * dx + dy * dy + dz * dz + c2);
                blk += t;
                mag += fabsl(t);
            }
            acc += blk;
        }
        r[i] = (double)((long double)b[i] - acc);
        e[i] = k * mag + 0x1p-53 * fabs(r[i]);
    }
    long double side = 0; /* row n: b_n - sum_j z_j, for the refinement */
    for (long j = 0; j < n; ++j) side += z[j];
    r[n] = (double)((long double)b[n] - side), e[n] = 0;
}

/* Flexible GMRES, RBF_GMRES_M steps, on A M^-1 y = r (M = the LU factors), y from 0: the
   correction d = Z y with z_k = M^-1 v_k as applied (M^-1 in floating point is far from linear
   on these systems, so d is built from the same z_k as the Arnoldi relation A Z = V H). d
   minimises |r - A d| over the space, so where M^-1 alone is too inaccurate to refine with
   (cond(A) u near 1 or above), the residual still falls. work: (2 RBF_GMRES_M + 2) N. */
#define RBF_GMRES_M 20
static void gmres(const fmm_rbf_plan *p, const double *r, double *d, double *work) {
    const long N = p->n + 1;
    double *V = work, *Z = V + (long)(RBF_GMRES_M + 1) * N, *w = Z + (long)RBF_GMRES_M * N;
    double H[RBF_GMRES_M + 1][RBF_GMRES_M], cs[RBF_GMRES_M], sn[RBF_GMRES_M],
        g[RBF_GMRES_M + 1] = {0}, y[RBF_GMRES_M];
    double beta = 0;
    for (long i = 0; i < N; ++i) beta += r[i] * r[i];
    beta = sqrt(beta);
    memset(d, 0, sizeof(double) * N);
    if (!(beta > 0) || !isfinite(beta)) return;
    for (long i = 0; i < N; ++i) V[i] = r[i] / beta;
    g[0] = beta;
    int m = 0;
    for (int j = 0; j < RBF_GMRES_M; ++j) {
        double *z = Z + j * N;
        memcpy(z, V + j * N, sizeof(double) * N);
        lu_solve(p->dense, z);
        matvec_ld(p, z, w);
        for (int k = 0; k <= j; ++k) { /* modified Gram-Schmidt */
            double h = 0;
            for (long i = 0; i < N; ++i) h += w[i] * V[k * N + i];
            H[k][j] = h;
            for (long i = 0; i < N; ++i) w[i] -= h * V[k * N + i];
        }
        double h = 0;
        for (long i = 0; i < N; ++i) h += w[i] * w[i];
        H[j + 1][j] = h = sqrt(h);
        for (int k = 0; k < j; ++k) { /* the earlier rotations, then this column's */
            const double t = cs[k] * H[k][j] + sn[k] * H[k + 1][j];
            H[k + 1][j] = -sn[k] * H[k][j] + cs[k] * H[k + 1][j], H[k][j] = t;
        }
        const double rr = hypot(H[j][j], H[j + 1][j]);
        if (!(rr > 0) || !isfinite(rr)) break;
        cs[j] = H[j][j] / rr, sn[j] = H[j + 1][j] / rr;
        H[j][j] = rr, H[j + 1][j] = 0;
        g[j + 1] = -sn[j] * g[j], g[j] *= cs[j];
        m = j + 1;
        /* the residual estimate |g[j+1]| down by 1e-10: further steps gain less than the long
           double residual shows */
        if (!(h > 0) || fabs(g[j + 1]) <= 1e-10 * beta) break;
        for (long i = 0; i < N; ++i) V[(j + 1) * N + i] = w[i] / h;
    }
    for (int k = m - 1; k >= 0; --k) {
        double t = g[k];
        for (int l = k + 1; l < m; ++l) t -= H[k][l] * y[l];
        y[k] = t / H[k][k];
    }
    for (int k = 0; k < m; ++k)
        for (long i = 0; i < N; ++i) d[i] += y[k] * Z[k * N + i];
}

int rbf_dense_fit(fmm_rbf_plan *p, int nw, const double *f, const double *thr, double *lambda,
                  double *alpha, double *rmax) {
    const long n = p->n, N = n + 1;
    if (!p->dense) {
        int rc = dense_build(p, &p->dense);
        if (rc) return rc;
    }
    /* x = [lambda; alpha], b = [f; 0], the residual r and its rounding bound e, the correction
       d, GMRES's vectors */
    double *buf = malloc(sizeof(double) * N * (5 + 2 * RBF_GMRES_M + 2));
    if (!buf) return FMM_ERR_NOMEM;
    double *x = buf, *b = x + N, *r = b + N, *e = r + N, *d = e + N, *work = d + N;
    int rc = 0;
    for (int k = 0; k < nw; ++k) {
        memcpy(b, f + k * n, sizeof(double) * n);
        b[n] = 0;
        memcpy(x, b, sizeof(double) * N);
        lu_solve(p->dense, x);
        rmax[k] = INFINITY;
        /* refine while the residual's bound is above the tolerance and falls: each step one
           GMRES correction from the residual in long double */
        for (int step = 0; step <= RBF_DENSE_STEPS; ++step) {
            residual_checked(p, b, x, r, e);
            double lo = INFINITY, hi = -INFINITY, m = 0;
            for (long i = 0; i < n; ++i) lo = r[i] < lo ? r[i] : lo, hi = r[i] > hi ? r[i] : hi;
            /* alpha shifted so that max|r| is least, as in the FGP iteration; m bounds the exact
               residual: |r_i| and e_i, and the roundings of the shift, u (|alpha| + |r_i|) */
            const double om = 0.5 * (lo + hi);
            x[n] += om;
            for (long i = 0; i < n; ++i) {
                r[i] -= om;
                const double ri = fabs(r[i]) + e[i] + 0x1p-53 * (fabs(x[n]) + fabs(r[i]));
                m = ri > m ? ri : m;
            }
            if (!(m < rmax[k])) break; /* no better (or NaN): keep the best */
            rmax[k] = m;
            memcpy(lambda + k * n, x, sizeof(double) * n);
            alpha[k] = x[n];
            if (m <= thr[k] || step == RBF_DENSE_STEPS) break;
            gmres(p, r, d, work);
            for (long i = 0; i < N; ++i) x[i] += d[i];
        }
        if (!(rmax[k] <= thr[k])) rc = FMM_ERR_NOCONVERGE;
    }
    free(buf);
    return rc;
}

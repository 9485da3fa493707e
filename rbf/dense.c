/* The dense fallback of the RBF fit (rbf/rbf.c): the saddle-point system
 *     [Phi 1; 1^T 0] [lambda; alpha] = [f; 0]
 * of order N = n + 1, factored by LU with partial pivoting, solved, and refined against the exact
 * direct mat-vec until the residual meets the tolerance (the result is checked, never assumed).
 *
 * Why LU of the whole system: where the FGP iteration fails (a cluster far tighter than c, the
 * local systems singular), the reduced matrix -Z^T Phi Z that the local solves factor by Cholesky
 * (rbf/local.c) is positive definite only in exact arithmetic: computed in double, its Cholesky
 * factorisation met a non-positive pivot on the systems of RbfDense.FitWhereFgpFails, while LU with
 * partial pivoting, backward stable whatever the conditioning, solved them to 1e-9 or better.
 *
 * The factorisation is blocked and right-looking: a panel of RBF_LU_PANEL columns is factored
 * column by column (pivot search, row swap across the whole row, the panel's columns updated),
 * the panel's rows of U are solved for, and the trailing matrix is updated by rows in parallel, 4
 * rows by 2 SIMD vectors of columns at a time. Every entry is updated in a fixed order, so the
 * factors do not depend on the thread count. Rows are padded with zero columns to whole pairs of
 * vectors (updates leave the padding zero). */
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
/* refinement steps after the first solve; each takes one direct mat-vec */
#define RBF_DENSE_STEPS 4

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
            const double inv = 1 / a[j * ld + j];
            const double *rj = a + j * ld;
#pragma omp parallel for schedule(static) num_threads(threads) if (N - j > 256)
            for (long i = j + 1; i < N; ++i) {
                double *ri = a + i * ld;
                const double l = ri[j] *= inv;
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

/* r_k = f_k - Phi lambda_k - a_k for the na sides act[]: the kernel values in double, as every
 * mat-vec of the library computes them, their products with lambda summed in long double. The
 * rounding of a double sum, some u sum_j |lambda_j phi_ij| (1e-8 max|f| where sum |lambda| is
 * 1e8 max|f|, as on the clustered sets of RbfDense.FitWhereFgpFails), would hide the residual
 * that the refinement is to remove; x87's 64-bit significand takes it 2^11 lower (on machines
 * where long double is double the refinement gains less, and the check is still true to the
 * sum's precision). */
static void residuals(const fmm_rbf_plan *p, int na, const int *act, double *buf, long side,
                      const double *f, const double *a) {
    const long n = p->n;
#pragma omp parallel for schedule(static) num_threads(p->threads)
    for (long i = 0; i < n; ++i) {
        long double acc[RBF_MAXW] = {0};
        for (long j = 0; j < n; ++j) {
            const double dx = p->x[i] - p->x[j], dy = p->y[i] - p->y[j], dz = p->z[i] - p->z[j];
            const double phi = sqrt(dx * dx + dy * dy + dz * dz + p->c2);
            for (int q = 0; q < na; ++q) acc[q] += (long double)buf[act[q] * side + j] * phi;
        }
        for (int q = 0; q < na; ++q)
            buf[act[q] * side + n + i] =
                (double)(((long double)f[act[q] * n + i] - a[act[q]]) - acc[q]);
    }
}

int rbf_dense_fit(fmm_rbf_plan *p, int nw, const double *f, const double *thr, double *lambda,
                  double *alpha, double *rmax) {
    const long n = p->n, N = n + 1, side = 3 * n + N;
    if (!p->dense) {
        int rc = dense_build(p, &p->dense);
        if (rc) return rc;
    }
    /* per side: the iterate lambda, its residual r, the best iterate so far, the solve's b */
    double *buf = malloc(sizeof(double) * nw * side);
    if (!buf) return FMM_ERR_NOMEM;
    double a[RBF_MAXW], best[RBF_MAXW], besta[RBF_MAXW];
    int act[RBF_MAXW], na = nw, rc = 0;
    for (int k = 0; k < nw; ++k) {
        double *lam = buf + k * side, *r = lam + n;
        memset(lam, 0, sizeof(double) * n);
        memcpy(r, f + k * n, sizeof(double) * n);
        a[k] = 0, best[k] = INFINITY, besta[k] = 0, act[k] = k;
    }
    for (int step = 0; step <= RBF_DENSE_STEPS && na > 0; ++step) {
        /* each active side: solve for the correction of its residual (and of sum lambda = 0) */
        for (int q = 0; q < na; ++q) {
            const int k = act[q];
            double *lam = buf + k * side, *r = lam + n, *b = r + 2 * n, sl = 0;
            for (long i = 0; i < n; ++i) sl += lam[i];
            memcpy(b, r, sizeof(double) * n);
            b[n] = -sl;
            lu_solve(p->dense, b);
            for (long i = 0; i < n; ++i) lam[i] += b[i];
            a[k] += b[n];
        }
        residuals(p, na, act, buf, side, f, a);
        int nn = 0;
        for (int q = 0; q < na; ++q) {
            const int k = act[q];
            double *lam = buf + k * side, *r = lam + n, *lb = r + n, lo = INFINITY, hi = -INFINITY,
                   m = 0;
            for (long i = 0; i < n; ++i) lo = r[i] < lo ? r[i] : lo, hi = r[i] > hi ? r[i] : hi;
            /* alpha shifted so that max|r| is least, as in the FGP iteration */
            const double om = 0.5 * (lo + hi);
            a[k] += om;
            for (long i = 0; i < n; ++i) {
                r[i] -= om;
                m = fabs(r[i]) > m ? fabs(r[i]) : m;
            }
            const int better = m < best[k]; /* false for NaN */
            if (better) {
                best[k] = m, besta[k] = a[k];
                memcpy(lb, lam, sizeof(double) * n);
            }
            /* refine while the residual is above the tolerance and still falls */
            if (better && m > thr[k]) act[nn++] = k;
        }
        na = nn;
    }
    for (int k = 0; k < nw; ++k) {
        const double *lb = buf + k * side + 2 * n;
        if (isfinite(best[k])) memcpy(lambda + k * n, lb, sizeof(double) * n), alpha[k] = besta[k];
        rmax[k] = best[k];
        if (!(best[k] <= thr[k])) rc = FMM_ERR_NOCONVERGE;
    }
    free(buf);
    return rc;
}

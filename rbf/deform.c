/* RBF mesh deformation: one multiquadric interpolant per displacement component, all three
 * fitted with one plan (shared k-d tree, L-sets and local cardinal functions). */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "rbf/rbf_internal.h"

int fmm_rbf_mean_spacing(long n, const double *xyz, double *h) {
    if (!xyz || !h) return FMM_ERR_ARG;
    if (n < 2) return FMM_ERR_NPTS;
    for (long i = 0; i < 3 * n; ++i)
        if (!isfinite(xyz[i])) return FMM_ERR_NONFINITE;
    /* in units of the set's extent (rbf_length_unit): squared distances neither underflow nor
       overflow */
    double ctr[3];
    int e;
    if (rbf_length_unit(n, xyz, ctr, &e)) { /* all points at one position */
        *h = 0;
        return 0;
    }
    long *rank = calloc(n, sizeof(long));
    double *d = malloc(sizeof(double) * n), *u = malloc(sizeof(double) * 3 * n);
    rbf_kdtree t;
    int rc = rank && d && u ? 0 : FMM_ERR_NOMEM;
    for (long i = 0; i < 3 * n && !rc; ++i) u[i] = ldexp(xyz[i] - ctr[i % 3], -e);
    if (!rc) rc = rbf_kd_build(&t, n, u, rank, 16);
    free(rank);
    if (!rc) {
        /* each point's distance, then their sum in index order: the same bits whatever the
           threads (core/reduce.h) */
#pragma omp parallel for
        for (long i = 0; i < n; ++i) {
            long nb[2];
            double d2[2];
            int c = rbf_kd_knn_rank(&t, u + 3 * i, 0, 2, nb, d2);
            d[i] = c == 2 ? sqrt(d2[0] > d2[1] ? d2[0] : d2[1]) : 0; /* one is the point */
        }
        rbf_kd_free(&t);
        double s = 0;
        for (long i = 0; i < n; ++i) s += d[i];
        *h = ldexp(s / n, e);
    }
    free(d), free(u);
    return rc;
}

int fmm_rbf_deform(const fmm_rbf_opts *opts, long nb, const double *bxyz, const double *disp,
                   long m, double *xyz, fmm_rbf_result *result) {
    if (!opts || !bxyz || !disp || m < 0 || (m > 0 && !xyz)) return FMM_ERR_ARG;
    if (nb < 2) return FMM_ERR_NPTS;
    for (long i = 0; i < 3 * nb; ++i)
        if (!isfinite(disp[i])) return FMM_ERR_NONFINITE;
    for (long i = 0; i < 3 * m; ++i)
        if (!isfinite(xyz[i])) return FMM_ERR_NONFINITE;
    fmm_rbf_plan *p;
    int rc = fmm_rbf_makeplan(opts, &p);
    if (rc) return rc;
    rc = fmm_rbf_setpts(p, nb, bxyz);
    double *f = malloc(sizeof(double) * 3 * nb), *lam = malloc(sizeof(double) * 3 * nb), alpha[3];
    double *s = malloc(sizeof(double) * 3 * (m > 0 ? m : 1));
    long *hit = malloc(sizeof(long) * (m > 0 ? m : 1));
    fmm_rbf_result worst;
    memset(&worst, 0, sizeof worst);
    if (!rc && (!f || !lam || !s || !hit)) rc = FMM_ERR_NOMEM;
    if (!rc) { /* the three components side by side: their mat-vecs share passes */
        for (int d = 0; d < 3; ++d)
            for (long i = 0; i < nb; ++i) f[d * nb + i] = disp[3 * i + d];
        rc = rbf_fit(p, 3, f, lam, alpha, &worst);
    }
    if (!rc) rc = rbf_eval(p, 3, lam, alpha, m, xyz, s); /* the three components in one pass */
    if (!rc && m > 0) {
        /* nodes on a boundary point take its displacement exactly: the nearest boundary point
           in the plan's units (where distances do not underflow), if equal */
        long *rank = calloc(nb, sizeof(long));
        double *u = malloc(sizeof(double) * 3 * nb);
        rbf_kdtree t;
        if (!rank || !u) rc = FMM_ERR_NOMEM;
        for (long i = 0; i < nb && !rc; ++i)
            u[3 * i] = p->x[i], u[3 * i + 1] = p->y[i], u[3 * i + 2] = p->z[i];
        if (!rc) rc = rbf_kd_build(&t, nb, u, rank, 16);
        free(rank), free(u);
        if (!rc) {
#pragma omp parallel for
            for (long i = 0; i < m; ++i) {
                long k;
                double d2, v[3];
                for (int d = 0; d < 3; ++d) v[d] = ldexp(xyz[3 * i + d] - p->ctr[d], -p->lexp);
                hit[i] = rbf_kd_knn_rank(&t, v, 0, 1, &k, &d2) == 1 && xyz[3 * i] == bxyz[3 * k] &&
                                 xyz[3 * i + 1] == bxyz[3 * k + 1] &&
                                 xyz[3 * i + 2] == bxyz[3 * k + 2]
                             ? k
                             : -1;
            }
            rbf_kd_free(&t);
            for (long i = 0; i < m; ++i)
                for (int d = 0; d < 3; ++d)
                    xyz[3 * i + d] += hit[i] >= 0 ? disp[3 * hit[i] + d] : s[d * m + i];
        }
    }
    if (result) *result = worst;
    free(f), free(lam), free(s), free(hit);
    fmm_rbf_destroy(p);
    return rc;
}

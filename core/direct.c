/* O(N^2) direct sum, the reference for the tests and the CLI's --reference. */
#include <math.h>
#include <omp.h>
#include <stdlib.h>
#include <string.h>

#include "core/p2p.h"
#include "fmm.h"

static int cmp_point(const void *a, const void *b) {
    const double *p = a, *q = b;
    for (int d = 0; d < 3; ++d)
        if (p[d] != q[d]) return p[d] < q[d] ? -1 : 1;
    return 0;
}

/* the kernel skips pairs at distance 0, so coincident particles must be caught here */
static int has_coincident(long n, const double *xyz) {
    double *s = malloc(sizeof(double) * 3 * (size_t)n);
    if (!s) return FMM_ERR_NOMEM;
    memcpy(s, xyz, sizeof(double) * 3 * (size_t)n);
    qsort(s, (size_t)n, 3 * sizeof(double), cmp_point);
    int bad = 0;
    for (long i = 1; i < n && !bad; ++i) bad = cmp_point(s + 3 * i, s + 3 * (i - 1)) == 0;
    free(s);
    return bad ? FMM_ERR_COINCIDENT : FMM_OK;
}

int fmm_direct(long n, const double *xyz, const double *q, double *phi, double *field,
               double *energy, double *virial, int threads) {
    if (n < 1) return FMM_ERR_NPTS;
    if (!xyz || !q) return FMM_ERR_ARG;
    if (threads < 0 || threads > FMM_THREADS_MAX) return FMM_ERR_THREADS;
    for (long i = 0; i < 3 * n; ++i)
        if (!isfinite(xyz[i])) return FMM_ERR_NONFINITE;
    for (long i = 0; i < n; ++i)
        if (!isfinite(q[i])) return FMM_ERR_NONFINITE;
    int rc = has_coincident(n, xyz);
    if (rc != FMM_OK) return rc;
    double *buf = malloc(sizeof(double) * 8 * (size_t)n);
    if (!buf) return FMM_ERR_NOMEM;
    double *x = buf, *y = x + n, *z = y + n, *qq = z + n, *p = qq + n, *ex = p + n, *ey = ex + n,
           *ez = ey + n;
    for (long i = 0; i < n; ++i) {
        x[i] = xyz[3 * i], y[i] = xyz[3 * i + 1], z[i] = xyz[3 * i + 2], qq[i] = q[i];
    }
    memset(p, 0, sizeof(double) * 4 * (size_t)n);
    const double zero[3] = {0, 0, 0};
    int nt = threads > 0 ? threads : omp_get_max_threads();
#pragma omp parallel for schedule(dynamic, 16) num_threads(nt)
    for (long i0 = 0; i0 < n; i0 += 64) {
        long m = n - i0 < 64 ? n - i0 : 64;
        p2p(m, x + i0, y + i0, z + i0, n, x, y, z, qq, zero, p + i0, ex + i0, ey + i0, ez + i0);
    }
    double U = 0.0, W[9] = {0};
    for (long i = 0; i < n; ++i) {
        U += 0.5 * q[i] * p[i];
        const double r[3] = {x[i], y[i], z[i]}, E[3] = {ex[i], ey[i], ez[i]};
        for (int a = 0; a < 3; ++a)
            for (int b = 0; b < 3; ++b) W[3 * a + b] += q[i] * E[a] * r[b];
    }
    if (phi) memcpy(phi, p, sizeof(double) * (size_t)n);
    if (field)
        for (long i = 0; i < n; ++i) {
            field[3 * i] = ex[i], field[3 * i + 1] = ey[i], field[3 * i + 2] = ez[i];
        }
    if (energy) *energy = U;
    if (virial) {
        /* symmetrise: W_ab = 1/2 sum_ij q_i q_j r_a r_b / r^3 is symmetric */
        for (int a = 0; a < 3; ++a)
            for (int b = 0; b < 3; ++b) virial[3 * a + b] = 0.5 * (W[3 * a + b] + W[3 * b + a]);
    }
    free(buf);
    return FMM_OK;
}

int fmm_direct_targets(long n, const double *xyz, const double *q, long m, const long *targets,
                       double *phi, double *field, int threads) {
    if (n < 1 || m < 0) return FMM_ERR_NPTS;
    if (!xyz || !q || (m > 0 && !targets)) return FMM_ERR_ARG;
    if (threads < 0 || threads > FMM_THREADS_MAX) return FMM_ERR_THREADS;
    for (long i = 0; i < m; ++i)
        if (targets[i] < 0 || targets[i] >= n) return FMM_ERR_ARG;
    for (long i = 0; i < 3 * n; ++i)
        if (!isfinite(xyz[i])) return FMM_ERR_NONFINITE;
    for (long i = 0; i < n; ++i)
        if (!isfinite(q[i])) return FMM_ERR_NONFINITE;
    double *buf = malloc(sizeof(double) * 4 * (size_t)n);
    if (!buf) return FMM_ERR_NOMEM;
    double *x = buf, *y = x + n, *z = y + n, *qq = z + n;
    for (long i = 0; i < n; ++i) {
        x[i] = xyz[3 * i], y[i] = xyz[3 * i + 1], z[i] = xyz[3 * i + 2], qq[i] = q[i];
    }
    const double zero[3] = {0, 0, 0};
    int nt = threads > 0 ? threads : omp_get_max_threads();
#pragma omp parallel for schedule(dynamic, 1) num_threads(nt)
    for (long k = 0; k < m; ++k) {
        long i = targets[k];
        double p = 0, e[3] = {0, 0, 0};
        p2p(1, x + i, y + i, z + i, n, x, y, z, qq, zero, &p, e, e + 1, e + 2);
        if (phi) phi[k] = p;
        if (field) field[3 * k] = e[0], field[3 * k + 1] = e[1], field[3 * k + 2] = e[2];
    }
    free(buf);
    return FMM_OK;
}

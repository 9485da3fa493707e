/* O(N^2) direct sum, the reference for the tests and the CLI's --reference. */
#include <math.h>
#include <omp.h>
#include <stdlib.h>
#include <string.h>

#include "core/p2p.h"
#include "core/scale.h"
#include "fmm_reference.h"

static int cmp_point(const void *a, const void *b) {
    const double *p = a, *q = b;
    for (int d = 0; d < 3; ++d)
        if (p[d] != q[d]) return p[d] < q[d] ? -1 : 1;
    return 0;
}

/* the kernel skips pairs at distance 0, so coincident particles (in the sums' units, x, y, z)
 * must be caught here */
static int has_coincident(long n, const double *x, const double *y, const double *z) {
    double *s = malloc(sizeof(double) * 3 * (size_t)n);
    if (!s) return FMM_ERR_NOMEM;
    for (long i = 0; i < n; ++i) s[3 * i] = x[i], s[3 * i + 1] = y[i], s[3 * i + 2] = z[i];
    qsort(s, (size_t)n, 3 * sizeof(double), cmp_point);
    int bad = 0;
    for (long i = 1; i < n && !bad; ++i) bad = cmp_point(s + 3 * i, s + 3 * (i - 1)) == 0;
    free(s);
    return bad ? FMM_ERR_COINCIDENT : FMM_OK;
}

/* Checks the inputs and copies them into buf (x, y, z, q: n each) in the sums' units
 * (core/scale.h): lengths in 2^el, charges in 2^eq, el from the set's extent and its largest
 * |coordinate|. */
static int prepare(long n, const double *xyz, const double *q, double *buf, int *el, int *eq) {
    double lo[3] = {INFINITY, INFINITY, INFINITY}, hi[3] = {-INFINITY, -INFINITY, -INFINITY};
    double amax = 0, qmax = 0, ext = 0;
    for (long i = 0; i < 3 * n; ++i) {
        if (!isfinite(xyz[i])) return FMM_ERR_NONFINITE;
        lo[i % 3] = fmin(lo[i % 3], xyz[i]), hi[i % 3] = fmax(hi[i % 3], xyz[i]);
        amax = fmax(amax, fabs(xyz[i]));
    }
    for (long i = 0; i < n; ++i) {
        if (!isfinite(q[i])) return FMM_ERR_NONFINITE;
        qmax = fmax(qmax, fabs(q[i]));
    }
    for (int d = 0; d < 3; ++d) ext = fmax(ext, 0.5 * hi[d] - 0.5 * lo[d]);
    *el = fmm_length_exponent(ext, amax), *eq = fmm_scale_exponent(qmax);
    const double fl = ldexp(1.0, -*el), fq = ldexp(1.0, -*eq);
    double *x = buf, *y = x + n, *z = y + n, *qq = z + n;
    for (long i = 0; i < n; ++i) {
        x[i] = fmm_pow2(xyz[3 * i], fl, -*el), y[i] = fmm_pow2(xyz[3 * i + 1], fl, -*el);
        z[i] = fmm_pow2(xyz[3 * i + 2], fl, -*el), qq[i] = fmm_pow2(q[i], fq, -*eq);
    }
    return FMM_OK;
}

int fmm_direct(long n, const double *xyz, const double *q, double *phi, double *field,
               double *energy, double *virial, int threads) {
    if (n < 1) return FMM_ERR_NPTS;
    if (!xyz || !q) return FMM_ERR_ARG;
    if (threads < 0 || threads > FMM_THREADS_MAX) return FMM_ERR_THREADS;
    double *buf = malloc(sizeof(double) * 8 * (size_t)n);
    if (!buf) return FMM_ERR_NOMEM;
    double *x = buf, *y = x + n, *z = y + n, *qq = z + n, *p = qq + n, *ex = p + n, *ey = ex + n,
           *ez = ey + n;
    int el, eq, rc = prepare(n, xyz, q, buf, &el, &eq);
    if (rc == FMM_OK) rc = has_coincident(n, x, y, z);
    if (rc != FMM_OK) {
        free(buf);
        return rc;
    }
    memset(p, 0, sizeof(double) * 4 * (size_t)n);
    const double zero[3] = {0, 0, 0};
    int nt = threads > 0 ? threads : omp_get_max_threads();
#pragma omp parallel for schedule(dynamic, 16) num_threads(nt)
    for (long i0 = 0; i0 < n; i0 += 64) {
        long m = n - i0 < 64 ? n - i0 : 64;
        p2p(m, x + i0, y + i0, z + i0, n, x, y, z, qq, zero, p + i0, ex + i0, ey + i0, ez + i0);
    }
    /* W_ab = sum_i q_i E_i,a (x_i - c)_b for any c (the forces add up to 0): about the middle of
       the set, where the terms do not cancel digits away as they do about a far origin */
    double c[3] = {0, 0, 0}, U = 0.0, W[9] = {0};
    const double *xs[3] = {x, y, z};
    for (int d = 0; d < 3; ++d) {
        double lo = xs[d][0], hi = xs[d][0];
        for (long i = 1; i < n; ++i) lo = fmin(lo, xs[d][i]), hi = fmax(hi, xs[d][i]);
        c[d] = 0.5 * (lo + hi);
    }
    for (long i = 0; i < n; ++i) {
        U += 0.5 * qq[i] * p[i];
        const double r[3] = {x[i] - c[0], y[i] - c[1], z[i] - c[2]}, E[3] = {ex[i], ey[i], ez[i]};
        for (int a = 0; a < 3; ++a)
            for (int b = 0; b < 3; ++b) W[3 * a + b] += qq[i] * E[a] * r[b];
    }
    /* outputs in the caller's units: phi x 2^(eq-el), E x 2^(eq-2el), U and W x 2^(2eq-el) */
    if (phi) {
        memcpy(phi, p, sizeof(double) * (size_t)n);
        rc = fmm_scale_output(n, phi, 0, phi, 0, eq - el, threads);
    }
    if (field && !rc) {
        for (long i = 0; i < n; ++i)
            field[3 * i] = ex[i], field[3 * i + 1] = ey[i], field[3 * i + 2] = ez[i];
        rc = fmm_scale_output(3 * n, field, 0, field, 0, eq - 2 * el, threads);
    }
    if (energy && !rc) {
        *energy = U;
        rc = fmm_scale_output(1, energy, 0, energy, 0, 2 * eq - el, threads);
    }
    if (virial && !rc) {
        /* symmetrise: W_ab = 1/2 sum_ij q_i q_j r_a r_b / r^3 is symmetric */
        for (int a = 0; a < 3; ++a)
            for (int b = 0; b < 3; ++b) virial[3 * a + b] = 0.5 * (W[3 * a + b] + W[3 * b + a]);
        rc = fmm_scale_output(9, virial, 0, virial, 0, 2 * eq - el, threads);
    }
    free(buf);
    return rc;
}

int fmm_direct_targets(long n, const double *xyz, const double *q, long m, const long *targets,
                       double *phi, double *field, int threads) {
    if (n < 1 || m < 0) return FMM_ERR_NPTS;
    if (!xyz || !q || (m > 0 && !targets)) return FMM_ERR_ARG;
    if (threads < 0 || threads > FMM_THREADS_MAX) return FMM_ERR_THREADS;
    for (long i = 0; i < m; ++i)
        if (targets[i] < 0 || targets[i] >= n) return FMM_ERR_ARG;
    double *buf = malloc(sizeof(double) * 4 * (size_t)n);
    if (!buf) return FMM_ERR_NOMEM;
    double *x = buf, *y = x + n, *z = y + n, *qq = z + n;
    int el, eq, rc = prepare(n, xyz, q, buf, &el, &eq);
    if (rc) {
        free(buf);
        return rc;
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
    if (phi) rc = fmm_scale_output(m, phi, 0, phi, 0, eq - el, threads);
    if (field && !rc) rc = fmm_scale_output(3 * m, field, 0, field, 0, eq - 2 * el, threads);
    return rc;
}

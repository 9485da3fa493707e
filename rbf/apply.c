/* rbf/apply.c - the mat-vec s = Phi w by the plan's method (direct on the CPU or GPU, series,
 * BLDTT), in the plan's units and in the caller's (scaled, range-checked), and the evaluation of
 * a fitted interpolant at new points. */
#include <float.h>
#include <limits.h>
#include <math.h>
#include <omp.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "fmm_bldtt.h"
#include "rbf/rbf_internal.h"

/* one weight vector through the series or BLDTT mat-vec */
static int apply_approx(fmm_rbf_plan *p, const double *w, long m, const double *tx,
                        const double *ty, const double *tz, double *out) {
    if (p->matvec == FMM_RBF_MATVEC_SERIES) {
        if (!tx) return rbf_series_apply_self(p->ser, w, out, p->threads);
        return rbf_series_apply(p->ser, w, m, tx, ty, tz, out, p->threads);
    }
    if (p->matvec == FMM_RBF_MATVEC_BLDTT) {
        /* BLDTT leaves out the self term G(0) w_i = c w_i: added here */
        if (!tx) {
            int rc = bldtt_execute(p->bl, w, out, NULL);
            if (rc) return rc;
            for (long i = 0; i < p->n; ++i) out[i] += p->c * w[i];
            return 0;
        }
        bldtt_opts bo;
        rbf_bldtt_opts(p, &bo);
        bldtt_plan *b = NULL;
        double *t = malloc(sizeof(double) * 3 * m), *src = malloc(sizeof(double) * 3 * p->n);
        int rc = (!t || !src) ? FMM_ERR_NOMEM : 0;
        if (!rc) {
            for (long i = 0; i < m; ++i)
                t[3 * i] = tx[i], t[3 * i + 1] = ty[i], t[3 * i + 2] = tz[i];
            for (long i = 0; i < p->n; ++i)
                src[3 * i] = p->x[i], src[3 * i + 1] = p->y[i], src[3 * i + 2] = p->z[i];
            rc = bldtt_makeplan(&bo, &b);
        }
        if (!rc) rc = bldtt_setpts(b, p->n, src, m, t);
        if (!rc) rc = bldtt_execute(b, w, out, NULL);
        bldtt_destroy(b);
        free(t), free(src);
        return rc;
    }
    return FMM_ERR_PARAM;
}

int rbf_plan_apply(fmm_rbf_plan *p, int nw, const double *w, long m, const double *tx,
                   const double *ty, const double *tz, double *out) {
    const long mm = tx ? m : p->n;
    if (p->matvec != FMM_RBF_MATVEC_DIRECT) {
        int rc = 0;
        for (int k = 0; k < nw && !rc; ++k)
            rc = apply_approx(p, w + k * p->n, m, tx, ty, tz, out + k * mm);
        return rc;
    }
    /* the direct sums: one kernel value serves all nw vectors */
#ifdef FMM_HAVE_CUDA
    if (p->gpu) return rbf_cuda_matvec(p->gpu, p->c2, nw, w, mm, tx, ty, tz, out);
#endif
    if (!tx) return rbf_direct_self_cpu(p->n, p->x, p->y, p->z, nw, w, p->c2, 0, out, p->threads);
    return rbf_direct_cpu(p->n, p->x, p->y, p->z, nw, w, p->c2, m, tx, ty, tz, out, p->threads);
}

double rbf_max_abs(long n, const double *v) {
    double m = 0;
    for (long i = 0; i < n; ++i)
        if (fabs(v[i]) > m) m = fabs(v[i]);
    return m;
}

/* rbf_plan_apply for weights w and results out in the caller's units (targets in the plan's):
 * each w + k n in units of 2^ew, its largest magnitude in [1/2, 1), the sums scaled back by
 * 2^(lexp + ew), all exact but where an output leaves double's range: FMM_ERR_RANGE for one that
 * overflows */
static int apply_scaled(fmm_rbf_plan *p, int nw, const double *w, long m, const double *tx,
                        const double *ty, const double *tz, double *out) {
    const long n = p->n, mm = tx ? m : n;
    double *ws = calloc((size_t)nw * n, sizeof(double));
    if (!ws) return FMM_ERR_NOMEM;
    int ew[RBF_MAXW];
    for (int k = 0; k < nw; ++k) {
        const double wm = rbf_max_abs(n, w + k * n);
        ew[k] = 0;
        if (wm > 0) frexp(wm, &ew[k]);
        for (long i = 0; i < n; ++i) ws[k * n + i] = ldexp(w[k * n + i], -ew[k]);
    }
    int rc = rbf_plan_apply(p, nw, ws, m, tx, ty, tz, out);
    free(ws);
    for (int k = 0; k < nw && !rc; ++k)
        for (long i = 0; i < mm; ++i) {
            out[k * mm + i] = ldexp(out[k * mm + i], p->lexp + ew[k]);
            if (!isfinite(out[k * mm + i])) rc = FMM_ERR_RANGE;
        }
    return rc;
}

int fmm_rbf_matvec(fmm_rbf_plan *p, const double *w, double *out, double *ms) {
    if (!p || !w || !out) return FMM_ERR_ARG;
    if (p->n == 0) return FMM_ERR_NOPTS;
    for (long i = 0; i < p->n; ++i)
        if (!isfinite(w[i])) return FMM_ERR_NONFINITE;
    double t0 = omp_get_wtime();
    int rc = apply_scaled(p, 1, w, 0, NULL, NULL, NULL, out);
    if (ms) *ms = 1e3 * (omp_get_wtime() - t0);
    return rc;
}

int rbf_eval(fmm_rbf_plan *p, int nw, const double *lambda, const double *alpha, long m,
             const double *xyz, double *s) {
    if (!p || !lambda || !alpha || m < 0 || (m > 0 && (!xyz || !s))) return FMM_ERR_ARG;
    if (p->n == 0) return FMM_ERR_NOPTS;
    for (int k = 0; k < nw; ++k)
        if (!isfinite(alpha[k])) return FMM_ERR_NONFINITE;
    for (long i = 0; i < nw * p->n; ++i)
        if (!isfinite(lambda[i])) return FMM_ERR_NONFINITE;
    for (long i = 0; i < 3 * m; ++i)
        if (!isfinite(xyz[i])) return FMM_ERR_NONFINITE;
    if (m == 0) return 0;
    double *t = malloc(sizeof(double) * 3 * m);
    if (!t) return FMM_ERR_NOMEM;
    for (long i = 0; i < m; ++i) /* the points in the plan's units */
        for (int d = 0; d < 3; ++d) t[d * m + i] = ldexp(xyz[3 * i + d] - p->ctr[d], -p->lexp);
    int rc = apply_scaled(p, nw, lambda, m, t, t + m, t + 2 * m, s);
    free(t);
    for (int k = 0; k < nw && !rc; ++k)
        for (long i = 0; i < m; ++i) {
            s[k * m + i] += alpha[k];
            if (!isfinite(s[k * m + i])) rc = FMM_ERR_RANGE;
        }
    return rc;
}

int fmm_rbf_eval(fmm_rbf_plan *p, const double *lambda, double alpha, long m, const double *xyz,
                 double *s) {
    return rbf_eval(p, 1, lambda, &alpha, m, xyz, s);
}

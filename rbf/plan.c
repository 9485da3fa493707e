/* rbf/plan.c - the FGP-RBF plan: options and their checks, makeplan, destroy, the plan's unit of
 * length and its BLDTT options, method and status queries. The stages: setpts.c (L-sets and
 * local cardinal functions), fit.c (the FGP iteration), apply.c (mat-vec and evaluation); the
 * API is include/fmm_rbf.h, the algorithm docs/rbf.md. */
#include <float.h>
#include <limits.h>
#include <math.h>
#include <omp.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "fmm_bldtt.h"
#include "rbf/rbf_internal.h"

void fmm_rbf_default_opts(fmm_rbf_opts *o) {
    if (!o) return;
    memset(o, 0, sizeof *o);
    o->shape = 1.0;
    o->tolerance = 1e-8;
    o->lset_size = 0;
    o->max_iter = 500;
    o->matvec = FMM_RBF_MATVEC_AUTO;
    o->series_tol = 0;
    o->device = FMM_DEVICE_CPU;
    o->threads = 0;
    o->seed = 1;
    o->mixed_precision = 1;
    o->dense_max = FMM_RBF_DENSE_MAX;
}

static int check_opts(const fmm_rbf_opts *o) {
    if (!(isfinite(o->shape) && o->shape > 0)) return FMM_ERR_PARAM;
    if (!(o->tolerance >= FMM_RBF_TOL_MIN && o->tolerance <= FMM_RBF_TOL_MAX))
        return FMM_ERR_TOLERANCE;
    if (o->lset_size != 0 && (o->lset_size < FMM_RBF_Q_MIN || o->lset_size > FMM_RBF_Q_MAX))
        return FMM_ERR_PARAM;
    if (o->max_iter < 1) return FMM_ERR_PARAM;
    if (o->matvec < FMM_RBF_MATVEC_AUTO || o->matvec > FMM_RBF_MATVEC_BLDTT) return FMM_ERR_PARAM;
    if (!(o->series_tol == 0 || (o->series_tol > 0 && o->series_tol <= 1e-2))) return FMM_ERR_PARAM;
    if (o->mixed_precision != 0 && o->mixed_precision != 1) return FMM_ERR_PARAM;
    if (o->dense_max < 0 || o->dense_max > FMM_RBF_DENSE_LIMIT) return FMM_ERR_PARAM;
    if (o->threads < 0 || o->threads > FMM_THREADS_MAX) return FMM_ERR_THREADS;
    if (o->device != FMM_DEVICE_CPU && o->device != FMM_DEVICE_CUDA) return FMM_ERR_DEVICE;
    if (o->device == FMM_DEVICE_CUDA) {
#ifdef FMM_HAVE_CUDA
        if (fmm_cuda_device_count() == 0) return FMM_ERR_DEVICE;
        if (o->matvec == FMM_RBF_MATVEC_SERIES) return FMM_ERR_UNSUPPORTED; /* CPU only */
#else
        return FMM_ERR_DEVICE;
#endif
    }
    return 0;
}

int fmm_rbf_makeplan(const fmm_rbf_opts *opts, fmm_rbf_plan **plan) {
    if (!plan) return FMM_ERR_ARG;
    *plan = NULL;
    if (!opts) return FMM_ERR_ARG;
    int rc = check_opts(opts);
    if (rc) return rc;
    fmm_rbf_plan *p = calloc(1, sizeof *p);
    if (!p) return FMM_ERR_NOMEM;
    p->o = *opts;
    p->threads = opts->threads > 0 ? opts->threads : omp_get_max_threads();
    *plan = p;
    return 0;
}

void rbf_free_centres(fmm_rbf_plan *p) {
    free(p->x), free(p->y), free(p->z), free(p->perm), free(p->lcnt), free(p->lidx), free(p->lzeta);
    rbf_series_destroy(p->ser);
    bldtt_destroy(p->bl);
    rbf_dense_destroy(p->dense);
    p->bl = NULL, p->dense = NULL, p->fgp_off = 0;
#ifdef FMM_HAVE_CUDA
    rbf_cuda_destroy(p->gpu);
#endif
    p->x = p->y = p->z = NULL, p->perm = NULL, p->lcnt = NULL, p->lidx = NULL, p->lzeta = NULL;
    p->ser = NULL, p->gpu = NULL, p->n = 0;
}

void fmm_rbf_destroy(fmm_rbf_plan *p) {
    if (!p) return;
    rbf_free_centres(p);
    free(p);
}

/* BLDTT options for the plan's accuracy: a (theta, degree) ladder, from about
 * 1e-8 relative (0.7, 8) to 1e-10 (0.5, 10) for the Coulomb kernel (docs/bldtt.md). */
void rbf_bldtt_opts(const fmm_rbf_plan *p, bldtt_opts *bo) {
    bldtt_default_opts(bo);
    bo->kernel = BLDTT_MULTIQUADRIC;
    bo->param = p->c;
    /* tolerance / 1000 by default: BLDTT's error per max|f| runs some 50x its nominal relative
       accuracy (sum |lambda| is tens of max|f|); with tolerance / 100, (0.7, 8) at tolerance
       1e-6 and N = 8000 left operator errors of 0.01-0.9 of the tolerance (11 seeds) */
    double t = p->o.series_tol > 0 ? p->o.series_tol : p->o.tolerance / 1000;
    if (t >= 1e-5)
        bo->theta = 0.7, bo->degree = 5;
    else if (t >= 1e-8)
        bo->theta = 0.7, bo->degree = 8;
    else
        bo->theta = 0.5, bo->degree = 10;
    bo->device = p->o.device;
    bo->threads = p->o.threads;
}

int rbf_length_unit(long n, const double *xyz, double ctr[3], int *e) {
    int emax = INT_MIN; /* the exponent of the largest extent */
    for (int d = 0; d < 3; ++d) {
        double lo = xyz[d], hi = lo;
        for (long i = 1; i < n; ++i) {
            lo = xyz[3 * i + d] < lo ? xyz[3 * i + d] : lo;
            hi = xyz[3 * i + d] > hi ? xyz[3 * i + d] : hi;
        }
        ctr[d] = lo == hi ? lo : 0;
        if (lo == hi) continue;
        int ed;
        if (isfinite(hi - lo))
            frexp(hi - lo, &ed);
        else
            frexp(0.5 * hi - 0.5 * lo, &ed), ++ed; /* hi - lo overflows, half of it does not */
        emax = ed > emax ? ed : emax;
    }
    *e = emax == INT_MIN ? 0 : emax;
    return emax == INT_MIN ? FMM_ERR_COINCIDENT : 0;
}

int fmm_rbf_get_method(const fmm_rbf_plan *p, int *matvec, int *lset_size) {
    if (!p) return FMM_ERR_ARG;
    if (p->n == 0) return FMM_ERR_NOPTS;
    if (matvec) *matvec = p->matvec;
    if (lset_size) *lset_size = p->q;
    return 0;
}
const char *fmm_rbf_strerror(int status) {
    switch (status) {
    case FMM_ERR_NPTS:
        return "rbf: at least 2 centres are needed";
    case FMM_ERR_NONFINITE:
        return "rbf: non-finite (NaN or Inf) coordinate, value or coefficient";
    case FMM_ERR_TOLERANCE:
        return "rbf: tolerance out of range [1e-13, 0.5]";
    case FMM_ERR_PARAM:
        return "rbf: parameter out of range (shape c must be finite and > 0; L-set size 0 or "
               "2..200; max_iter >= 1; series_tol 0 or (0, 1e-2]; mixed_precision 0 or 1; "
               "dense_max 0..20000)";
    case FMM_ERR_COINCIDENT:
        return "rbf: two centres at the same position (duplicate centres), or too close to tell "
               "apart in double precision relative to the extent of the set";
    case FMM_ERR_NOPTS:
        return "rbf: no centres set: call fmm_rbf_setpts first";
    case FMM_ERR_NOCONVERGE:
        return "rbf: the fit did not reach the tolerance: the FGP iteration stopped (max_iter, a "
               "breakdown, or local systems singular), and the dense LU fallback (up to dense_max "
               "centres) was not taken or could not solve the system either (shape c far too large "
               "for the spacing of the centres, or centres nearly coincident)";
    case FMM_ERR_RANGE:
        return "rbf: a result beyond the range of double precision (coefficients lambda for "
               "coordinates far larger or smaller than the values f, or s or Phi w overflowing): "
               "change the units of the input";
    case FMM_ERR_UNSUPPORTED:
        return "rbf: mat-vec not available (the series mat-vec runs on the CPU only)";
    default:
        return fmm_strerror(status);
    }
}

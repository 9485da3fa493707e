/* fgt/execute.c - fgt_execute: the CPU evaluation (the box pairs of each target box by
 * fgt_traverse, each in the mode the tables chose; fgt_kernels.c), or the CUDA one
 * (fgt_cuda_passes.cu); and the direct sum fgt_direct. */
#include <math.h>
#include <omp.h>
#include <stdlib.h>
#include <string.h>

#include "core/scale.h"
#include "fgt/fgt_internal.h"
#include "fgt/fgt_kernels.h"

/* ---------------------------------------------------------------------------------------
 * CPU evaluation */
typedef struct eval_ctx {
    const fgt_plan *p;
    long tb, t0, t1;
    double c[3];   /* target box centre */
    double *g;     /* gs + t0 */
    double *B;     /* Taylor coefficients of the target box (stride P) */
    int pB;        /* largest order accumulated into B */
    long ds0, ds1; /* pending direct span of sources */
    double *acc, *tmp;
} eval_ctx;

static void flush_direct(eval_ctx *e) {
    if (e->ds1 > e->ds0)
        fgt_k_direct(e->t0, e->t1, e->p->tu, e->ds0, e->ds1, e->p->su, e->p->sq, e->g);
    e->ds0 = e->ds1 = 0;
}

static void eval_visit(void *vc, long sb, const long k[3], int mode, int order) {
    eval_ctx *e = vc;
    const fgt_plan *p = e->p;
    long s0 = p->sstart[sb], s1 = p->sstart[sb + 1];
    if (mode == FGT_MODE_DIRECT) {
        if (e->ds1 == s0 && e->ds1 > e->ds0)
            e->ds1 = s1;
        else {
            flush_direct(e);
            e->ds0 = s0, e->ds1 = s1;
        }
        return;
    }
    int pe[3], st[3] = {p->pe[0], p->pe[1], p->pe[2]};
    for (int a = 0; a < 3; ++a) pe[a] = p->pe[a] > 1 ? order : 1;
    double cs[3];
    for (int a = 0; a < 3; ++a) cs[a] = e->c[a] - k[a] * p->b; /* source box centre */
    if (mode == FGT_MODE_HERMITE) {
        fgt_k_eval(0, e->t0, e->t1, p->tu, cs, pe, st, p->A + p->aidx[sb] * p->ncoef, e->g);
    } else if (mode == FGT_MODE_TAYLOR) {
        fgt_k_moments(1, s0, s1, p->su, p->sq, e->c, pe, st, e->B, e->acc);
        if (order > e->pB) e->pB = order;
    } else {
        const double *M[3];
        const int P8 = (p->P + 7) / 8 * 8;
        for (int a = 0; a < 3; ++a) M[a] = p->M + (size_t)(k[a] + p->R) * p->P * P8;
        fgt_k_h2t(p->A + p->aidx[sb] * p->ncoef, e->B, M, P8, pe, st, e->tmp);
        if (order > e->pB) e->pB = order;
    }
}

static int execute_cpu(fgt_plan *p) {
    const int nth = p->o.threads > 0 ? p->o.threads : omp_get_max_threads();
    int fail = 0;
    const size_t ncoef = (size_t)p->ncoef;
#pragma omp parallel num_threads(nth)
    {
        double *acc = aligned_alloc(64, sizeof(double) * 8 * ncoef);
        double *B = malloc(sizeof(double) * ncoef);
        const size_t P8 = (size_t)(p->P + 7) / 8 * 8;
        double *tmp = aligned_alloc(64, sizeof(double) * 2 * (size_t)p->pe[0] * p->pe[1] * P8);
        if (!acc || !B || !tmp) {
#pragma omp atomic write
            fail = 1;
        }
#pragma omp barrier
        if (!fail) {
            const int st[3] = {p->pe[0], p->pe[1], p->pe[2]};
#pragma omp for schedule(dynamic, 4)
            for (long sb = 0; sb < p->nsb; ++sb) {
                if (p->aidx[sb] < 0) continue;
                long i[3];
                fgt_box_index(p, p->skey[sb], i);
                double c[3];
                for (int a = 0; a < 3; ++a) c[a] = (i[a] + 0.5) * p->b;
                double *A = p->A + p->aidx[sb] * p->ncoef;
                memset(A, 0, sizeof(double) * ncoef);
                fgt_k_moments(0, p->sstart[sb], p->sstart[sb + 1], p->su, p->sq, c, p->pe, st, A,
                              acc);
            }
#pragma omp for schedule(dynamic, 1)
            for (long tb = 0; tb < p->ntb; ++tb) {
                eval_ctx e = {.p = p,
                              .tb = tb,
                              .t0 = p->tstart[tb],
                              .t1 = p->tstart[tb + 1],
                              .B = B,
                              .pB = 0,
                              .ds0 = 0,
                              .ds1 = 0,
                              .acc = acc,
                              .tmp = tmp};
                long i[3];
                fgt_box_index(p, p->tkey[tb], i);
                for (int a = 0; a < 3; ++a) e.c[a] = (i[a] + 0.5) * p->b;
                e.g = p->gs + e.t0;
                for (long j = e.t0; j < e.t1; ++j) p->gs[j] = 0;
                memset(B, 0, sizeof(double) * ncoef);
                fgt_traverse(p, tb, eval_visit, &e);
                flush_direct(&e);
                if (e.pB > 0) {
                    int pe[3];
                    for (int a = 0; a < 3; ++a) pe[a] = p->pe[a] > 1 ? e.pB : 1;
                    fgt_k_eval(1, e.t0, e.t1, p->tu, e.c, pe, st, B, e.g);
                }
            }
        }
        free(acc), free(B), free(tmp);
    }
    return fail ? FMM_ERR_NOMEM : FMM_OK;
}

int fgt_execute(fgt_plan *p, const double *q, double *g) {
    if (!p || !q || !g) return FMM_ERR_ARG;
    if (!p->have_pts) return FMM_ERR_NOPTS;
    const int nth = p->o.threads > 0 ? p->o.threads : omp_get_max_threads();
    /* weights divided by a power of two near the largest (core/scale.h), G scaled back at the
     * end: no overflow inside the sums for weights near 1e308, no subnormal products near 1e-308 */
    double qmax = 0;
    int rc = fmm_check_max_abs(p->ns, q, &qmax, nth);
    if (rc) return rc;
    const int eq = fmm_scale_exponent(qmax);
    const double f = ldexp(1.0, -eq);
    /* the permutations are random accesses over the whole arrays: threads hide their latency */
#pragma omp parallel for schedule(static) num_threads(nth)
    for (long i = 0; i < p->ns; ++i) p->sq[i] = fmm_pow2(q[p->sperm[i]], f, -eq);
    for (long i = p->ns; i < p->ns + 8; ++i) p->sq[i] = 0;
#ifdef FMM_HAVE_CUDA
    if (p->o.device == FMM_DEVICE_CUDA)
        rc = fgt_cuda_execute(p, p->sq, p->gs);
    else
#endif
        rc = execute_cpu(p);
    if (!rc) rc = fmm_scale_output(p->nt, p->gs, 0, p->gs, 0, eq, nth);
    if (rc) return rc;
#pragma omp parallel for schedule(static) num_threads(nth)
    for (long i = 0; i < p->nt; ++i) g[p->tperm[i]] = p->gs[i];
    return FMM_OK;
}

int fgt_direct(int dim, double h, long ns, const double *src, const double *q, long nt,
               const double *trg, double *g, int threads) {
    if (dim < 1 || dim > 3 || !(h > 0) || !isfinite(h)) return FMM_ERR_PARAM;
    if (!src || !q || !g) return FMM_ERR_ARG;
    if (!trg) trg = src, nt = ns;
    if (ns < 1 || nt < 1) return FMM_ERR_NPTS;
    if (threads < 0 || threads > FMM_THREADS_MAX) return FMM_ERR_THREADS;
    int nth = threads > 0 ? threads : omp_get_max_threads();
    /* the plan's units (fgt_internal.h): coordinates and h divided by 2^elen, the scale of the
     * larger of h and every |coordinate|, weights by a power of two near the largest; then t - s
     * cannot overflow and (t - s) / h is one correctly rounded division, whatever the scale of h */
    double amax = h, qmax = 0;
    int rc = fmm_check_max_abs(ns * dim, src, &amax, nth);
    if (!rc) rc = fmm_check_max_abs(nt * dim, trg, &amax, nth);
    if (!rc) rc = fmm_check_max_abs(ns, q, &qmax, nth);
    if (rc) return rc;
    const int elen = fmm_scale_exponent(amax), eq = fmm_scale_exponent(qmax);
    double *buf = malloc(sizeof(double) * (size_t)((ns + nt) * dim + ns));
    if (!buf) return FMM_ERR_NOMEM;
    double *s = buf, *t = s + ns * dim, *qs = t + nt * dim;
    const double fl = ldexp(1.0, -elen), fq = ldexp(1.0, -eq), hs = fmm_pow2(h, fl, -elen);
#pragma omp parallel for schedule(static) num_threads(nth)
    for (long i = 0; i < ns * dim; ++i) s[i] = fmm_pow2(src[i], fl, -elen);
#pragma omp parallel for schedule(static) num_threads(nth)
    for (long i = 0; i < nt * dim; ++i) t[i] = fmm_pow2(trg[i], fl, -elen);
#pragma omp parallel for schedule(static) num_threads(nth)
    for (long i = 0; i < ns; ++i) qs[i] = fmm_pow2(q[i], fq, -eq);
#pragma omp parallel for schedule(dynamic, 64) num_threads(nth)
    for (long j = 0; j < nt; ++j) {
        double sum = 0;
        for (long i = 0; i < ns; ++i) {
            double r2 = 0;
            for (int d = 0; d < dim; ++d) {
                double u = (t[j * dim + d] - s[i * dim + d]) / hs;
                r2 += u * u;
            }
            sum += qs[i] * exp(-r2);
        }
        g[j] = sum;
    }
    free(buf);
    return fmm_scale_output(nt, g, 0, g, 0, eq, nth);
}

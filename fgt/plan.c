/* fgt/plan.c - the FGT plan: options, makeplan, destroy, info, and the CUDA timing entry points
 * (which say FMM_ERR_DEVICE without CUDA). The stages: tables.c (error control, box side),
 * setpts.c (points in boxes, interaction counts), execute.c (evaluation, direct sum); the API is
 * include/fmm_fgt.h, the algorithm docs/fgt.md. */
#include <math.h>
#include <omp.h>
#include <stdlib.h>
#include <string.h>

#include "fgt/fgt_internal.h"

void fgt_default_opts(fgt_opts *o) {
    if (!o) return;
    memset(o, 0, sizeof *o);
    o->tolerance = 1e-6;
    o->device = FMM_DEVICE_CPU;
}

const char *fgt_strerror(int status) {
    return fmm_strerror(status);
}

static int check_opts(const fgt_opts *o) {
    if (!(o->tolerance >= FGT_TOL_MIN && o->tolerance <= FGT_TOL_MAX)) return FMM_ERR_TOLERANCE;
    if (o->threads < 0 || o->threads > FMM_THREADS_MAX) return FMM_ERR_THREADS;
    if (o->device != FMM_DEVICE_CPU && o->device != FMM_DEVICE_CUDA) return FMM_ERR_ARG;
    if (!(o->box_side == 0 || (o->box_side >= 0.125 && o->box_side <= 8))) return FMM_ERR_PARAM;
    if (o->force_mode < FGT_MODE_AUTO || o->force_mode > FGT_MODE_H2T) return FMM_ERR_PARAM;
    return FMM_OK;
}

int fgt_makeplan(int dim, double h, const fgt_opts *opts, fgt_plan **plan) {
    if (!plan) return FMM_ERR_ARG;
    *plan = NULL;
    if (dim < 1 || dim > 3) return FMM_ERR_PARAM;
    if (!(h > 0) || !isfinite(h)) return FMM_ERR_PARAM;
    fgt_opts o;
    if (opts)
        o = *opts;
    else
        fgt_default_opts(&o);
    int rc = check_opts(&o);
    if (rc) return rc;
    if (o.device == FMM_DEVICE_CUDA) {
#ifdef FMM_HAVE_CUDA
        if (fmm_cuda_device_count() == 0) return FMM_ERR_DEVICE;
#else
        return FMM_ERR_DEVICE;
#endif
    }
    fgt_plan *p = calloc(1, sizeof *p);
    if (!p) return FMM_ERR_NOMEM;
    p->dim = dim;
    p->h = h;
    p->o = o;
    p->order_dims = 3 - dim;
    *plan = p;
    return FMM_OK;
}

void fgt_free_geometry(fgt_plan *p) {
#ifdef FMM_HAVE_CUDA
    if (p->cuda) fgt_cuda_free(p);
#endif
    p->cuda = NULL;
    free(p->off), free(p->colR), free(p->M);
    for (int a = 0; a < 3; ++a) free(p->su[a]), free(p->tu[a]);
    free(p->sperm), free(p->tperm), free(p->skey), free(p->tkey), free(p->sstart), free(p->tstart);
    free(p->aidx), free(p->sq), free(p->A), free(p->gs);
    p->off = NULL, p->colR = NULL, p->M = NULL;
    for (int a = 0; a < 3; ++a) p->su[a] = p->tu[a] = NULL;
    p->sperm = p->tperm = NULL, p->skey = p->tkey = NULL, p->sstart = p->tstart = NULL;
    p->aidx = NULL, p->sq = p->A = p->gs = NULL;
    p->have_pts = 0;
}

void fgt_destroy(fgt_plan *p) {
    if (!p) return;
    fgt_free_geometry(p);
    free(p);
}

int fgt_get_info(const fgt_plan *p, fgt_info *info) {
    if (!p || !info) return FMM_ERR_ARG;
    memset(info, 0, sizeof *info);
    info->dim = p->dim;
    if (!p->have_pts) return FMM_ERR_NOPTS;
    info->box_side = p->b;
    info->order = p->P;
    info->radius = p->R;
    info->source_boxes = p->nsb;
    info->target_boxes = p->ntb;
    memcpy(info->pairs, p->pairs, sizeof p->pairs);
    return FMM_OK;
}

#ifndef FMM_HAVE_CUDA
int fgt_cuda_stage_times(const fgt_plan *p, double ms[4]) {
    (void)p, (void)ms;
    return FMM_ERR_DEVICE;
}
int fgt_cuda_hermite_bench(long n, int p, int nclusters, double side, double *ms) {
    (void)n, (void)p, (void)nclusters, (void)side, (void)ms;
    return FMM_ERR_DEVICE;
}
#else
int fgt_cuda_stage_times(const fgt_plan *p, double ms[4]) {
    if (!p || !ms) return FMM_ERR_ARG;
    if (p->o.device != FMM_DEVICE_CUDA) return FMM_ERR_DEVICE;
    return fgt_cuda_stage_times_impl(p, ms);
}
int fgt_cuda_hermite_bench(long n, int p, int nclusters, double side, double *ms) {
    if (!ms) return FMM_ERR_ARG;
    if (n < 1 || nclusters < 1) return FMM_ERR_NPTS;
    if (p < 1 || p > FGT_ORDER_MAX || !(side > 0)) return FMM_ERR_PARAM;
    if (fmm_cuda_device_count() == 0) return FMM_ERR_DEVICE;
    return fgt_cuda_hermite_bench_impl(n, p, nclusters, side, ms);
}
#endif

// fgt/fgt_cuda.cu - a CUDA FGT plan's device memory: fgt_setpts uploads the plan's sorted points,
// box keys and ranges, offset tables and H2T matrices once, with the job lists of the moments and
// the evaluation, and allocates the coefficient buffers the passes (fgt/fgt_cuda_passes.cu) fill;
// fgt_destroy frees them. Every CUDA call is checked; failures are FMM_ERR_CUDA or FMM_ERR_NOMEM.
#include <stdlib.h>
#include <string.h>

#include "fgt/fgt_cuda_plan.cuh"

using namespace fgt_gpu;

namespace {

void state_free(State *s) {
    if (!s) return;
    for (int i = 0; i < s->nbuf; ++i) cudaFree(s->buf[i]);
    if (s->have_events)
        for (int i = 0; i < 5; ++i) cudaEventDestroy(s->ev[i]);
    free(s);
}

template <typename T> int upload(State *s, T **dst, const T *src, size_t n) {
    void *p = nullptr;
    int rc = fmm_cuda_status(cudaMalloc(&p, n * sizeof(T) > 0 ? n * sizeof(T) : 1));
    if (rc) return rc;
    s->buf[s->nbuf++] = p;
    *dst = (T *)p;
    if (src) return fmm_cuda_status(cudaMemcpy(p, src, n * sizeof(T), cudaMemcpyHostToDevice));
    return FMM_OK;
}

} // namespace

extern "C" void fgt_cuda_free(fgt_plan *p) {
    state_free((State *)p->cuda);
    p->cuda = nullptr;
}

extern "C" int fgt_cuda_setpts(fgt_plan *p) {
    State *s = (State *)calloc(1, sizeof(State));
    if (!s) return FMM_ERR_NOMEM;
    Dev &d = s->d;
    d.dim = p->dim, d.R = p->R, d.P = p->P, d.P8 = (p->P + 7) / 8 * 8, d.force = p->o.force_mode;
    for (int a = 0; a < 3; ++a) d.n[a] = p->n[a], d.pe[a] = p->pe[a];
    d.ncoef = p->ncoef, d.nsb = p->nsb, d.ntb = p->ntb, d.b = p->b, d.cost = p->cost;
    const size_t R21 = 2 * (size_t)p->R + 1, R1 = (size_t)p->R + 1;
    // job lists: source-box chunks needing A, target chunks of EVAL_THREADS
    long njm = 0, nje = 0;
    for (long sb = 0; sb < p->nsb; ++sb)
        if (p->aidx[sb] >= 0) njm += (p->sstart[sb + 1] - p->sstart[sb] + 8191) / 8192;
    for (long tb = 0; tb < p->ntb; ++tb)
        nje += (p->tstart[tb + 1] - p->tstart[tb] + EVAL_THREADS - 1) / EVAL_THREADS;
    Job *jm = (Job *)malloc(sizeof(Job) * (njm > 0 ? njm : 1)),
        *je = (Job *)malloc(sizeof(Job) * nje);
    int rc = (!jm || !je) ? FMM_ERR_NOMEM : FMM_OK;
    if (!rc) {
        long m = 0;
        for (long sb = 0; sb < p->nsb; ++sb)
            if (p->aidx[sb] >= 0)
                for (long j = p->sstart[sb]; j < p->sstart[sb + 1]; j += 8192)
                    jm[m++] =
                        Job{sb, j, j + 8192 < p->sstart[sb + 1] ? j + 8192 : p->sstart[sb + 1]};
        m = 0;
        for (long tb = 0; tb < p->ntb; ++tb)
            for (long j = p->tstart[tb]; j < p->tstart[tb + 1]; j += EVAL_THREADS)
                je[m++] = Job{tb, j,
                              j + EVAL_THREADS < p->tstart[tb + 1] ? j + EVAL_THREADS
                                                                   : p->tstart[tb + 1]};
    }
    s->njm = njm, s->nje = nje;
    const size_t ns8 = (size_t)p->ns + 8, nt8 = (size_t)p->nt + 8;
    double *q = nullptr;
    if (!rc) rc = upload(s, (double **)&d.su0, (const double *)p->su[0], ns8);
    if (!rc) rc = upload(s, (double **)&d.su1, (const double *)p->su[1], ns8);
    if (!rc) rc = upload(s, (double **)&d.su2, (const double *)p->su[2], ns8);
    if (!rc) rc = upload(s, (double **)&d.tu0, (const double *)p->tu[0], nt8);
    if (!rc) rc = upload(s, (double **)&d.tu1, (const double *)p->tu[1], nt8);
    if (!rc) rc = upload(s, (double **)&d.tu2, (const double *)p->tu[2], nt8);
    if (!rc) rc = upload(s, &q, (const double *)nullptr, ns8);
    d.q = q;
    if (!rc) rc = upload(s, (int64_t **)&d.skey, (const int64_t *)p->skey, (size_t)p->nsb);
    if (!rc) rc = upload(s, (int64_t **)&d.tkey, (const int64_t *)p->tkey, (size_t)p->ntb);
    if (!rc) rc = upload(s, (long **)&d.sstart, (const long *)p->sstart, (size_t)p->nsb + 1);
    if (!rc) rc = upload(s, (long **)&d.tstart, (const long *)p->tstart, (size_t)p->ntb + 1);
    if (!rc) rc = upload(s, (long **)&d.aidx, (const long *)p->aidx, (size_t)p->nsb);
    if (!rc) rc = upload(s, (fgt_offset **)&d.off, (const fgt_offset *)p->off, R1 * R1 * R1);
    if (!rc) rc = upload(s, (int **)&d.colR, (const int *)p->colR, R21 * R21);
    if (!rc) rc = upload(s, (double **)&d.M, (const double *)p->M, R21 * p->P * d.P8);
    if (!rc) rc = upload(s, &d.g, (const double *)nullptr, nt8);
    if (!rc && p->na > 0) rc = upload(s, &d.A, (const double *)nullptr, (size_t)p->na * p->ncoef);
    d.hasB = nullptr;
    if (!rc && p->pairs[FGT_MODE_TAYLOR] + p->pairs[FGT_MODE_H2T] > 0) {
        long grid = p->ntb < 1024 ? p->ntb : 1024;
        long cap = (256L << 20) / (16 * p->ncoef); // scratch <= 256 MB
        if (grid > cap) grid = cap > 1 ? cap : 1;
        s->grid_build = (int)grid;
        rc = upload(s, &d.B, (const double *)nullptr, (size_t)p->ntb * p->ncoef);
        if (!rc) rc = upload(s, &d.scratch, (const double *)nullptr, (size_t)grid * 2 * p->ncoef);
        if (!rc) rc = upload(s, &d.hasB, (const int *)nullptr, (size_t)p->ntb);
    }
    if (!rc) rc = upload(s, &s->jobs_moments, jm, njm > 0 ? njm : 1);
    if (!rc) rc = upload(s, &s->jobs_eval, je, nje);
    free(jm), free(je);
    if (!rc) {
        for (int i = 0; i < 5 && !rc; ++i) rc = fmm_cuda_status(cudaEventCreate(&s->ev[i]));
        s->have_events = !rc;
    }
    if (rc) {
        state_free(s);
        return rc;
    }
    p->cuda = s;
    return FMM_OK;
}

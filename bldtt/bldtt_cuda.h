/* bldtt/bldtt_cuda.h - CUDA entry points of the BLDTT solver (bldtt_cuda.cu, bldtt_cuda_passes.cu,
 * bldtt_cuda_direct.cu); called from
 * bldtt/setpts.c and bldtt/execute.c only when FMM_HAVE_CUDA is defined. Every function returns an
 * fmm_status. */
#ifndef FMM_BLDTT_CUDA_H
#define FMM_BLDTT_CUDA_H

#include "bldtt/bldtt_internal.h"

#ifdef __cplusplus
extern "C" {
#endif

/* uploads the trees and lists of a plan whose geometry has just been built (p->cuda set) */
int bt_cuda_setpts(bldtt_plan *p);
/* qs: source weights in tree order; out: nt potentials then 3 nt gradients (caller's order) */
int bt_cuda_execute(bldtt_plan *p, const double *qs, double *out, int grad);
void bt_cuda_free(bldtt_plan *p);
/* direct sum at the m targets tc[idx[k]] (self = 1: tc are the sources, j == idx[k] left out) */
int bt_cuda_direct(int kernel, double param, long ns, const double *sx, const double *sy,
                   const double *sz, const double *q, const double *tc, int self, long m,
                   const long *idx, double *phi, double *grad);

#ifdef __cplusplus
}
#endif

#endif

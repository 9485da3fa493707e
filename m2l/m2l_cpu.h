/*
 * CPU M2L: all V-list translations of one tree level, batched as matrix products.
 * Targets are processed in chunks owned by one thread each (no write conflicts); inside a
 * chunk the translations are grouped by the 56 symmetry classes, the sources gathered with
 * the sign pattern of their reflection, multiplied by the class's reference operator in
 * one GEMM, and scattered back with the same signs.
 */
#ifndef FMM_M2L_CPU_H
#define FMM_M2L_CPU_H

#include "core/octree.h"
#include "m2l/operators.h"

#ifdef __cplusplus
extern "C" {
#endif

/* U[b] += sum_{s in V(b)} T(s - b) W[s] for every box b of the given level.
 * W, U: [nbox][ops->npad] scaled multipoles / locals, 64-byte aligned, zero padding.
 * fshift (periodic virial, may be NULL): [27][3] += total force that sources in each periodic
 * image exert, through these translations, on the charges of the cell.
 * Returns 0 or FMM_ERR_NOMEM. */
int m2l_cpu_level(const m2l_operators *ops, const octree *t, int level, const double *W,
                  double *U, double *fshift);

#ifdef __cplusplus
}
#endif

#endif

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

/* The virial's terms of the translations (m2l_cpu_level_virial); each pointer may be NULL.
 * fshift (periodic): [27][3] += total force that sources in each periodic image exert, through
 * these translations, on the charges of the cell.
 * pairs (with its origin g): [9] += sum over the translations A <- C of F (x) ((c_A + c_C)/2 - g),
 * F the net force of C's multipole on A's charges (m2l_pair_virial): the part of the virial's
 * sum F_i (x) (x_i - g) that the pair would cancel if its forces obeyed Newton's third law
 * exactly; fmm/periodic.c explains its use. */
typedef struct m2l_virial {
    double *fshift;
    double *pairs;
    const double *g;
} m2l_virial;

/* U[b] += sum_{s in V(b)} T(s - b) W[s] for every box b of the given level.
 * W, U: [nbox][ops->npad] scaled multipoles / locals, 64-byte aligned, zero padding.
 * v (may be NULL): the virial's terms above. Returns 0 or FMM_ERR_NOMEM. */
int m2l_cpu_level_virial(const m2l_operators *ops, const octree *t, int level, const double *W,
                         double *U, const m2l_virial *v);

/* The same with the periodic image forces fshift (may be NULL) only */
int m2l_cpu_level(const m2l_operators *ops, const octree *t, int level, const double *W, double *U,
                  double *fshift);

/* v[3a + b] += F_a ((cA + cC)/2 - g)_b: a far pair's term in m2l_virial's pairs, for the net
 * force F on the charges of the box at cA from the box at cC (centres in the cell, without a
 * periodic image's shift) */
void m2l_pair_virial(const double cA[3], const double cC[3], const double g[3], const double F[3],
                     double v[9]);

#ifdef __cplusplus
}
#endif

#endif

/*
 * Excluded pairs (fmm_set_exclusions): the direct term q_i q_j / r_ij of each listed pair is
 * taken out of the FMM's outputs after the evaluation. The lists are kept per atom in both
 * directions, so that one thread (CPU) or one CUDA thread corrects one atom without races;
 * excl_term is the one formula both use.
 */
#ifndef FMM_EXCLUSIONS_H
#define FMM_EXCLUSIONS_H

#include <math.h>

#include "pbc/cell.h"

#ifdef __CUDACC__
#define EXCL_HD static __host__ __device__ inline
#else
#define EXCL_HD static inline
#endif

#ifdef __cplusplus
extern "C" {
#endif

typedef struct excl_list {
    long natoms; /* 1 + the largest index listed (0: no exclusions) */
    long npairs;
    int *start;   /* [natoms + 1]: atom i's partners are partner[start[i] .. start[i+1]) */
    int *partner; /* [2 npairs] */
} excl_list;

/* FMM_ERR_ARG for npairs < 0, pairs NULL with npairs > 0, i == j, a negative index or a pair
 * listed twice; FMM_ERR_NOMEM. On failure *x is left as it was. */
int excl_build(long npairs, const int *pairs, excl_list *x);
void excl_free(excl_list *x);

/* Subtract the excluded pairs' terms from phi (n), field (3n), energy and virial (each may be
 * NULL), all in the caller's order. Atom i's position and charge are X/Y/Z/q[at[i]] (at NULL:
 * [i]); L > 0: periodic cube of edge L (minimum image), L = 0: open; mi (not NULL, L then 0):
 * the minimum image in a periodic cell. The same input and thread count give bitwise the same
 * sums. FMM_OK, or FMM_ERR_NOMEM (nothing subtracted then). */
int excl_apply(const excl_list *x, const double *X, const double *Y, const double *Z,
               const double *q, const int *at, double L, const pbc_min_image *mi, int threads,
               double *phi, double *field, double *energy, double *virial);

enum { EXCL_PHI = 0, EXCL_E = 1, EXCL_ENERGY = 4, EXCL_VIR = 5, EXCL_N = 14 };

/* Adds to acc the term of source j (charge qj) at target i (charge qi), d = x_i - x_j:
 * acc[EXCL_PHI] += qj / r, acc[EXCL_E + a] += qj d_a / r^3, and the pair's share seen from i:
 * acc[EXCL_ENERGY] += qi qj / (2 r), acc[EXCL_VIR + 3a + b] += qi qj d_a d_b / (2 r^3)
 * (W_ab = -dU/d eps_ab of the pair is qi qj d_a d_b / r^3). */
EXCL_HD void excl_term(double dx, double dy, double dz, double L, double qi, double qj,
                       double *acc) {
    double d[3] = {dx, dy, dz};
    if (L > 0)
        for (int a = 0; a < 3; ++a) d[a] -= L * floor(d[a] / L + 0.5);
    const double r2 = d[0] * d[0] + d[1] * d[1] + d[2] * d[2];
    const double ir = 1.0 / sqrt(r2), ir3 = ir * ir * ir;
    acc[EXCL_PHI] += qj * ir;
    acc[EXCL_ENERGY] += 0.5 * qi * qj * ir;
    for (int a = 0; a < 3; ++a) {
        acc[EXCL_E + a] += qj * d[a] * ir3;
        for (int b = 0; b < 3; ++b) acc[EXCL_VIR + 3 * a + b] += 0.5 * qi * qj * d[a] * d[b] * ir3;
    }
}

#ifdef __cplusplus
}
#endif

#endif

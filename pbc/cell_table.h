/* pbc/cell_table.h - the far-field table of a periodic cell of any shape (docs/periodic-cells.md,
 * sections 2 to 4): the lattice operator that carries the images beyond the near set to the root,
 * and its strain derivatives for the virial.
 *
 * The far pair potential of a unit charge, psi_far(r) = psi(r) - sum_{n in N} 1/|r + n h| with psi
 * the zero-mean tin-foil Ewald potential (neutralising background included), is
 *     psi_far(r) = c0 + (2 pi / 3V)|r|^2 + sum_{L >= 2} A_LM R_LM(r)
 * near r = 0 (R_LM: core/harmonics.h). The table holds A_LM with A_00 = c0; A_2M is the traceless
 * tin-foil far Hessian, and odd L are exactly zero (N is inversion-symmetric). Applied as one M2L
 * to the root multipole (charge included, harm_m2l_matrix_table) plus the isotropic quadratic per
 * particle, it gives Ewald's tin-foil result for any net charge. */
#ifndef FMM_PBC_CELL_TABLE_H
#define FMM_PBC_CELL_TABLE_H

#include "pbc/cell.h"

#ifdef __cplusplus
extern "C" {
#endif

/* A_LM, L <= lmax (full complex index harm_full, (lmax+1)^2 entries each in are and aim), for the
 * lattice of cell and the near set N: nnear integer triples near[3k + d], n = 0 included,
 * inversion-symmetric, no repeats (pbc_cell_near_set gives one). With vre and vim (both or
 * neither), also the strain tables V^ab_LM = dA_LM / d eps_ab for the symmetric strain
 * x -> (I + eps) x, h -> h (I + eps)^T with N fixed as integer triples: [9][(lmax+1)^2] each,
 * (a, b) row-major and symmetric, every even L including L = 0 (dc0/d eps) and L = 2.
 * Only cell->h, cell->g and cell->volume are read: any basis of rows works, also one outside
 * GROMACS's form (a sheared cell). Computed by the Ewald-type formula of the docs with
 * incomplete gamma functions, accurate to about 1e-14 of each degree's largest entry (at most
 * 1e-13 in tests/test_cell_table.cpp and against 32-digit evaluations, lmax <= 2 FMM_ORDER_MAX).
 * Cost: about 1 ms (lmax 14) to 10 ms (lmax 40) for compact cells, 2-3x that with the strain
 * tables and for elongated ones (bench/results/cell_table_cost.txt).
 * Returns FMM_OK; FMM_ERR_ARG for a NULL cell or table, lmax outside [0, 2 FMM_ORDER_MAX], or a
 * near set that lacks 0, repeats a triple or is not inversion-symmetric (or has an entry beyond
 * 2^20); FMM_ERR_NOMEM; FMM_ERR_RANGE where an entry is beyond double's range (a cell of
 * extreme scale: pass it in units near its own size and scale by lambda^-(L+1)). */
int pbc_cell_far_table(const pbc_cell *cell, const int *near, int nnear, int lmax, double *are,
                       double *aim, double *vre, double *vim);

/* The Ewald splitting behind pbc_cell_far_table: alpha = alpha_v / V^(1/3), lowered where needed
 * (at most 4-fold) to alpha^2 |R|^2 <= near_x at every image R of N; the real and reciprocal sums
 * run over the lattice vectors whose terms' tails are above eps (relative), every R of N
 * included. */
typedef struct pbc_far_split {
    double alpha_v, near_x, eps;
} pbc_far_split;

/* The default splitting of pbc_cell_far_table. */
extern const pbc_far_split pbc_far_split_default;

/* pbc_cell_far_table with a given splitting (for tests: the table must not depend on it).
 * FMM_ERR_ARG also for a split whose entries are not finite and positive, or eps >= 1. */
int pbc_cell_far_table_split(const pbc_cell *cell, const int *near, int nnear, int lmax,
                             const pbc_far_split *split, double *are, double *aim, double *vre,
                             double *vim);

#ifdef __cplusplus
}
#endif

#endif /* FMM_PBC_CELL_TABLE_H */

/*
 * fmm_reference.h - the reference sums of the Coulomb problem of fmm.h, which the tests and the
 * `--reference` option of the command-line tool compare the FMM with: the O(N^2) direct sum on
 * the CPU (core/direct.c) and the GPU (core/direct_cuda.cu), and the Ewald sums of periodic cells
 * (pbc/ewald.c). Conventions (units, scales, FMM_ERR_RANGE, repeatability) are those of fmm.h,
 * which includes this header.
 */
#ifndef FMM_REFERENCE_H
#define FMM_REFERENCE_H

#include "fmm_common.h"

#ifdef __cplusplus
extern "C" {
#endif

/* All-pairs direct sum (open boundary) on the GPU, double precision: phi (n) and field (3n)
 * may be NULL; ms (may be NULL) receives the kernel time from CUDA events. FMM_ERR_DEVICE
 * without a usable CUDA device. */
int fmm_direct_cuda(long n, const double *xyz, const double *q, double *phi, double *field,
                    double *ms);

/* O(N^2) direct sum (open boundary), OpenMP-parallel; the reference for tests.
 * Same outputs and conventions as fmm_execute (scales, FMM_ERR_RANGE, bitwise repeatable; the
 * virial about the middle of the set, so a set far from the origin keeps its digits);
 * threads = 0 for the OpenMP default. */
int fmm_direct(long n, const double *xyz, const double *q, double *phi, double *field,
               double *energy, double *virial, int threads);

/* The direct sum at m selected targets only (indices into the n particles), each against
 * all n sources: phi (m) and field (3m) may be NULL. For error estimates at large n. Scales and
 * FMM_ERR_RANGE as fmm_direct (the extent is that of all n points). */
int fmm_direct_targets(long n, const double *xyz, const double *q, long m, const long *targets,
                       double *phi, double *field, int threads);

/* Ewald sum for a periodic cubic or rectangular box [0,Lx)x[0,Ly)x[0,Lz) with tin-foil
 * (conducting) boundary and, for a net charge Q, the uniform neutralising background
 * (-pi Q / (V alpha^2) in every phi_i), the convention of GROMACS's PME. Particles are
 * wrapped into the box. The splitting and cut-offs are chosen so that the truncation error
 * of each sum is below `tolerance` (relative, 1e-3 .. 1e-12). The real-space sum is O(N^2)
 * (minimum image and neighbouring images within the cut-off), the k-space sum O(N K): a
 * reference for tests and --reference, not a production solver. Outputs as fmm_execute (scales
 * and FMM_ERR_RANGE too; the outputs are bitwise the same for any thread count); virial
 * W_ab = -dU/d eps_ab (9, row-major). */
int fmm_ewald(long n, const double *xyz, const double *q, const double box[3], double tolerance,
              double *phi, double *field, double *energy, double *virial, int threads);

/* The Ewald sum of fmm_ewald in any periodic cell that GROMACS allows: cell holds the lattice
 * vectors as rows a = (ax, 0, 0), b = (bx, by, 0), c = (cx, cy, cz), row-major, with ax, by, cz > 0
 * and |bx| <= ax/2, |cx| <= ax/2, |cy| <= by/2 (GROMACS's margin of 1.005 allowed;
 * FMM_ERR_BOX otherwise, or for an entry that is not finite). Particles are wrapped into the brick
 * [0,ax) x [0,by) x [0,cz). Same conventions, error control, outputs, scales and repeatability as
 * fmm_ewald, which is this function with the rectangular cell diag(box): tin-foil boundary, the
 * neutralising background for a net charge, the full virial W_ab = -dU/d eps_ab (9, row-major,
 * symmetric; shear included) for positions and cell strained together (x -> (I + eps) x). The
 * real-space cut-off is just below half the shortest lattice vector, its images found by a search
 * over the lattice shifts; the reciprocal range per index follows from the reciprocal basis. The
 * outputs are bitwise the same for any thread count, and the caller's arrays are left untouched
 * by a call that fails. FMM_ERR_NOMEM also for a cell so thin (its shortest lattice vector so far
 * below its rows) that the reciprocal sum would scan more than 2^28 wave vectors; FMM_ERR_RANGE
 * also for a particle so many cell lengths away (~2^1023) that its place in the cell is lost. */
int fmm_ewald_cell(long n, const double *xyz, const double *q, const double cell[9],
                   double tolerance, double *phi, double *field, double *energy, double *virial,
                   int threads);

#ifdef __cplusplus
}
#endif

#endif /* FMM_REFERENCE_H */

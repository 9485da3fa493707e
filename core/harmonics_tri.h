/* core/harmonics_tri.h - the triangle storage of the solid harmonics (m >= 0 of each degree l,
 * real and imaginary parts apart) that the files of core/harmonics*.c share, its bound, and the
 * regular harmonics in it (core/harmonics.c), which the rotations' quadrature evaluates
 * (core/harmonics_rotations.c). Internal to core/. */
#ifndef FMM_CORE_HARMONICS_TRI_H
#define FMM_CORE_HARMONICS_TRI_H

#include "fmm_common.h"

#define TRI(l, m) ((l) * ((l) + 1) / 2 + (m))
/* internal limit of the stack tables: the lattice sums reach order 2 p + 40 (pbc/lattice.c) */
#define HARM_PMAX (2 * FMM_ORDER_MAX + 44)
#define TRI_MAX (HARM_PMAX + 2) * (HARM_PMAX + 3) / 2

/* Regular harmonics R_lm(v), m >= 0, triangle storage, split real/imaginary parts. */
void harm_regular_tri(int p, double x, double y, double z, double *re, double *im);

#endif

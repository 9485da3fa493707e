/*
 * Solid harmonics and the particle-level expansion operators.
 *
 * Conventions (tests/test_operators.cpp checks them against closed forms and 1/|x-y|):
 *   regular   R_lm(x) = |x|^l/(l+m)! P_lm(cos t) e^{-i m phi}      ("omega bar")
 *   irregular I_lm(x) = (l-m)!/|x|^{l+1} P_lm(cos t) e^{+i m phi}  ("mu")
 * with the Condon-Shortley phase, so that 1/|x-y| = sum_lm R_lm(x) I_lm(y) for |x|<|y|,
 * and X_{l,-m} = (-1)^m conj(X_lm) for both.
 *
 * Expansions are stored as real vectors of (p+1)^2 doubles ("real layout"): for each l,
 *   [Re X_l0, Re X_l1, Im X_l1, Re X_l2, Im X_l2, ..., Re X_ll, Im X_ll]
 * (Im X_l0 is zero for real charges and is not stored). Expansions of a box of side h are
 * scaled, multipole w~_lm = w_lm / h^l and local u~_lm = u_lm h^{l+1}, which makes every
 * translation operator independent of the tree level.
 */
#ifndef FMM_CORE_HARMONICS_H
#define FMM_CORE_HARMONICS_H

#include <stddef.h>

#include "fmm_common.h"

#ifdef __cplusplus
extern "C" {
#endif

static inline int harm_ncoef(int p) { return (p + 1) * (p + 1); }
/* coefficients of one expansion at the highest order, padded to 8: bound of stack buffers */
#define HARM_NPAD_MAX (((FMM_ORDER_MAX + 1) * (FMM_ORDER_MAX + 1) + 7) / 8 * 8)
/* real-layout position of Re X_lm (m >= 0) and of Im X_lm (m >= 1) */
static inline int harm_re(int l, int m) { return l * l + (m == 0 ? 0 : 2 * m - 1); }
static inline int harm_im(int l, int m) { return l * l + 2 * m; }
/* full complex index for m = -l..l */
static inline int harm_full(int l, int m) { return l * l + l + m; }

/* Full tables X_lm = re + i im, l <= p, m = -l..l, at v (index harm_full). */
void harm_regular_full(int p, const double v[3], double *re, double *im);
void harm_irregular_full(int p, const double v[3], double *re, double *im);
/* The full table (index harm_full, m = -l..l) of an expansion x in the real layout, by
 * X_{l,-m} = (-1)^m conj X_lm. */
void harm_real_to_full(int p, const double *x, double *re, double *im);

/* Multipole of charges about a centre, scaled by 1/h^l: w += sum q R((x - c)/h).
 * x, y, z, q: n particles (structure of arrays). */
void harm_p2m(int p, double h, const double c[3], long n, const double *x, const double *y,
              const double *z, const double *q, double *w);

/* Local expansion from charges (scaled): u += sum q I((x - c)/h). */
void harm_p2l(int p, double h, const double c[3], long n, const double *x, const double *y,
              const double *z, const double *q, double *u);

/* Evaluate a scaled local expansion u about c at n points: phi += ..., E -= grad ... */
void harm_l2p(int p, double h, const double c[3], const double *u, long n, const double *x,
              const double *y, const double *z, double *phi, double *ex, double *ey, double *ez);

/* Total force sum_i q_i E(x_i) that a scaled local expansion u (coefficient k at
 * u[k * ustride]) exerts on the charges whose scaled multipole about the same centre, in the
 * same box of side h, is w: the L2P gradient contracted with the multipole. */
void harm_local_force(int p, double h, const double *u, long ustride, const double *w, double F[3]);

/* Evaluate a scaled multipole w about c at n points (they must be well outside). */
void harm_m2p(int p, double h, const double c[3], const double *w, long n, const double *x,
              const double *y, const double *z, double *phi, double *ex, double *ey, double *ez);

/* Translation matrices, dense in the real layout, row-major [(p+1)^2][(p+1)^2],  of scaled expansions between a parent box (side h) and its child
 * (side h/2) whose centre is at parent + s*h, s in {-1/4, 1/4}^3: */
void harm_m2m_matrix(int p, const double s[3], double *A); /* child multipole -> parent */
void harm_l2l_matrix(int p, const double s[3], double *A); /* parent local -> child */
/* M2L between equal boxes of side h, source centre - target centre = d*h (|d|_inf >= 2). */
void harm_m2l_matrix(int p, const double d[3], double *A);
/* The same along +z, d = (0, 0, dz), kept as the only entries it has: for each order m and
 * l, j = m..p, the entries (Re u_lm, Re w_jm) in zre and (Im u_lm, Im w_jm) in zim, one after
 * the other (m, then l, then j: core/panel.h's z blocks, O(p^3) instead of the dense O(p^4)). */
void harm_m2l_zblocks(int p, double dz, double *zre, double *zim);

/* M2L with a given table G of irregular harmonics (full index, order >= 2p) in place of
 * I(d): u_lm = sum_jk (-1)^j G_{l+j,m+k} w_jk. Used with lattice sums for periodic images. */
void harm_m2l_matrix_table(int p, const double *gre, const double *gim, double *A);

/* Gauss-Legendre nodes and weights on [-1, 1] (Newton on P_n), n <= 64. */
void harm_gauss_legendre(int n, double *t, double *w);

/* Rotations of expansions into the frames x' = Q_q x (Q_q = Q + 9q, q < nq, proper rotations,
 * row-major 3x3): per degree l a real (2l+1)x(2l+1) block in the real layout, blocks stored one
 * after the other (sum_l (2l+1)^2 doubles), frame q's at Aw + q stride and Au + q stride.
 * Multipoles: w'_l = Aw_l w_l; locals: u_l = Au_l u'_l. Returns 0, or 1 when out of memory or
 * when a Q_q is not a proper rotation. */
int harm_rotation_matrices(int p, int nq, const double *Q, double *Aw, double *Au, size_t stride);

#ifdef __cplusplus
}
#endif

#endif

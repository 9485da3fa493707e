/*
 * Periodic far field of the spherical-harmonic FMM for a cubic cell
 * (the recipe summarised in docs/design.md; checked against Ewald by tests/test_periodic.cpp):
 *  - the lattice sums A_LM = sum_{R, |n|_inf >= 2} I_LM(R) over the images beyond the 27
 *    nearest, summed cube by cube (renormalisation, recipe 1.4 and 1.6); with them the far
 *    images act on the root multipole as one M2L, u += Lambda^A w;
 *  - the multipole of a uniform neutralising background (recipe 1.5);
 *  - the potential of a uniformly charged cube (recipe 2), for the background of the 27 near
 *    cells;
 *  - the exact corrections from the cube-ordered sum to Ewald's tin-foil result (recipe 4).
 * Everything is for the unit cube; powers of L scale it.
 */
#ifndef FMM_PBC_LATTICE_H
#define FMM_PBC_LATTICE_H

#ifdef __cplusplus
extern "C" {
#endif

/* A_LM for L <= lmax (full complex index l^2+l+m), unit cube, A_00 = 0.
 * Returns 0, or 1 if out of memory. */
int pbc_lattice_sums(int lmax, double *are, double *aim);

/* Strain derivatives of the lattice sums, V^{ab}_LM = dA_LM/d eps_(ab) (symmetric strain of
 * the unit cube), L <= lmax: degree >= 4 from strained lattice sums, degree 2 from the
 * tin-foil Ewald far Hessian, central differences (recipe 5; 4-point there). Output [9][(lmax+1)^2] full
 * complex index, row-major in (a,b). Returns 0, or 1 if out of memory. */
int pbc_virial_tables(int lmax, double *vre, double *vim);

/* c0 = lim_{r->0} [psi(r) - 1/r] - sum_{0 < |n|_inf <= 1} 1/|n| for the unit cube: the
 * constant term of the far pair potential, psi the zero-mean (tin-foil, neutralising
 * background) Ewald potential of a unit charge; -21.94... The periodic virial of a charged
 * cell needs it. */
double pbc_far_self_potential(void);

/* The 26 nearest images' irregular sums N_LM = sum_{0 < |n|_inf <= 1} I_LM(n), unit cube, L <= lmax
 * (full complex index, cubic zeros exact): the M2L of a compact cell's root multipole from its
 * 26 nearest images is harm_m2l_matrix_table with N (pbc/cluster.h). Returns 0, or 1 if out of
 * memory. */
int pbc_near_sums(int lmax, double *nre, double *nim);

/* fshift[3 code + a] += the total force that image `code` (0..26 but 13, core/octree.h) exerts
 * on a cell of side L through the M2L of its scaled root multipole w (order p; scaled by L):
 * the periodic virial's image forces where the 26 nearest images act by M2L. Returns 0, or 1
 * if out of memory. */
int pbc_near_image_forces(int p, double L, const double *w, double fshift[81]);

/* b_lm = integral over the unit cube [-1/2,1/2]^3 of R_lm(y) d^3y, real layout (p+1)^2 */
void pbc_background_multipole(int p, double *b);

/* Potential of the uniform unit-density cube [-h,h]^3 at Y (inside, |Y|_inf < h), and its
 * gradient. */
void pbc_cube_potential(double h, const double Y[3], double *phi, double grad[3]);

/* Whether a cell of net charge Q (sum of |q|: Qabs) is charged: |Q| above the rounding of the
 * charge sum. Below it the neutralising background is rounding noise (1e-12 relative at most),
 * and skipping it saves a uniform-cube potential per particle (0.42 ms of a 1M-atom water
 * evaluation on an H100, whose charges sum to ~1e-12 instead of 0). Host and device code. */
#define PBC_CHARGED(Q, Qabs) (fabs(Q) > 1e-12 * (Qabs))

#ifdef __cplusplus
}
#endif

#endif

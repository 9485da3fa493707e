/* The virial's per-translation forces (m2l/m2l_cpu.h m2l_virial): the total force of a local
 * expansion on the charges of a box as a linear map of the expansion, built once per target box
 * and applied to each of its translations. */
#ifndef FMM_M2L_VIRIAL_TERMS_H
#define FMM_M2L_VIRIAL_TERMS_H

#ifdef __cplusplus
extern "C" {
#endif

/* G such that harm_local_force(p, h, u, 1, w, F) is F_a = sum_k G[a * stride + k] u_k for every
 * scaled local u (k < (p+1)^2; the rest of G's rows is left alone): the L2P gradient contracted
 * with the multipole w of the box of side h, as a map of u. */
void m2l_force_map(int p, double h, const double *w, long stride, double *G);

#ifdef __cplusplus
}
#endif

#endif

/* Particle-particle Coulomb kernel: phi_i += sum_j q_j/r_ij, E_i += sum_j q_j r_ij/r_ij^3,
 * r_ij = x_i - (x_j + shift); pairs at distance 0 (a particle with itself) are skipped. */
#ifndef FMM_CORE_P2P_H
#define FMM_CORE_P2P_H

#ifdef __cplusplus
extern "C" {
#endif

void p2p(long nt, const double *tx, const double *ty, const double *tz, long ns,
         const double *sx, const double *sy, const double *sz, const double *sq,
         const double shift[3], double *phi, double *ex, double *ey, double *ez);

#ifdef __cplusplus
}
#endif

#endif

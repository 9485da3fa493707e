/* pbc/ewald.h - the Ewald sum behind fmm_ewald and fmm_ewald_cell (include/fmm_reference.h), with
 * its splitting open to the tests: the sum does not depend on it, up to the truncation errors. */
#ifndef FMM_PBC_EWALD_H
#define FMM_PBC_EWALD_H

#ifdef __cplusplus
extern "C" {
#endif

/* fmm_ewald_cell with the real-space cut-off at `split` (0 < split <= 1; FMM_ERR_ARG otherwise)
 * times its largest value, half the shortest lattice vector: the splitting parameter alpha grows
 * as 1 / split and the reciprocal sum's range with it. fmm_ewald_cell is split = 1. */
int pbc_ewald(long n, const double *xyz, const double *q, const double cell[9], double tolerance,
              double split, double *phi, double *field, double *energy, double *virial,
              int threads);

#ifdef __cplusplus
}
#endif

#endif /* FMM_PBC_EWALD_H */

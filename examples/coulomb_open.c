/* Coulomb potentials, fields and energy of N random charges in open space by the FMM, checked
 * against the direct sum.
 *
 * Units: the library computes phi_i = sum_j q_j / |x_i - x_j| with no prefactor (Gaussian
 * units). With positions in nm and charges in e, multiply phi by 138.935458 for kJ/(mol e),
 * the field by the same for kJ/(mol nm e), and the energy for kJ/mol. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#include "fmm.h"

int main(void) {
    const long n = 5000;
    double *xyz = malloc(sizeof(double) * 3 * n), *q = malloc(sizeof(double) * n);
    double *phi = malloc(sizeof(double) * n), *ref = malloc(sizeof(double) * n);
    if (!xyz || !q || !phi || !ref) return 1;
    srand(1);
    for (long i = 0; i < n; ++i) { /* uniform in the unit cube, charges +-1 */
        for (int d = 0; d < 3; ++d) xyz[3 * i + d] = rand() / (RAND_MAX + 1.0);
        q[i] = i % 2 ? 1.0 : -1.0;
    }

    fmm_opts opts;
    fmm_default_opts(&opts);
    opts.tolerance = 1e-6; /* relative L2 error of phi */
    fmm_plan *plan;
    double energy, eref;
    int rc = fmm_makeplan(&opts, NULL, &plan); /* NULL box: open boundary */
    if (!rc) rc = fmm_setpts(plan, n, xyz);    /* builds the tree */
    if (!rc) rc = fmm_execute(plan, q, phi, NULL, &energy, NULL);
    fmm_destroy(plan);
    if (!rc) rc = fmm_direct(n, xyz, q, ref, NULL, &eref, NULL, 0);
    if (rc) {
        fprintf(stderr, "coulomb_open: %s\n", fmm_strerror(rc));
        return 1;
    }

    double e2 = 0, r2 = 0;
    for (long i = 0; i < n; ++i) e2 += (phi[i] - ref[i]) * (phi[i] - ref[i]), r2 += ref[i] * ref[i];
    const double err = sqrt(e2 / r2);
    printf("energy %.12g (direct %.12g), relative L2 error of phi %.2e\n", energy, eref, err);
    free(xyz), free(q), free(phi), free(ref);
    return err <= 1e-6 ? 0 : 1;
}

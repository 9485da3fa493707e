/* Screened Coulomb (Yukawa) sums phi_i = sum_{j != i} q_j exp(-kappa r_ij) / r_ij and their
 * gradients by the barycentric Lagrange dual tree traversal, checked against the direct sum.
 *
 * Units: kappa in 1/length of the coordinates; phi in units of q / length, no prefactor. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#include "fmm_bldtt.h"

int main(void) {
    const long n = 8000;
    double *xyz = malloc(sizeof(double) * 3 * n), *q = malloc(sizeof(double) * n);
    double *phi = malloc(sizeof(double) * n), *ref = malloc(sizeof(double) * n);
    if (!xyz || !q || !phi || !ref) return 1;
    srand(3);
    for (long i = 0; i < n; ++i) {
        for (int d = 0; d < 3; ++d) xyz[3 * i + d] = rand() / (RAND_MAX + 1.0);
        q[i] = 2.0 * rand() / RAND_MAX - 1.0;
    }

    bldtt_opts opts;
    bldtt_default_opts(&opts);
    opts.kernel = BLDTT_YUKAWA;
    opts.param = 5.0; /* kappa */
    opts.theta = 0.7; /* smaller theta or larger degree: more accurate (docs/bldtt.md) */
    opts.degree = 8;
    bldtt_plan *plan;
    int rc = bldtt_makeplan(&opts, &plan);
    if (!rc) rc = bldtt_setpts(plan, n, xyz, 0, NULL); /* targets = sources, self term left out */
    if (!rc) rc = bldtt_execute(plan, q, phi, NULL);
    bldtt_destroy(plan);
    if (!rc) rc = bldtt_direct(&opts, n, xyz, q, 0, NULL, ref, NULL);
    if (rc) {
        fprintf(stderr, "bldtt_yukawa: %s\n", bldtt_strerror(rc));
        return 1;
    }

    double e2 = 0, r2 = 0;
    for (long i = 0; i < n; ++i) e2 += (phi[i] - ref[i]) * (phi[i] - ref[i]), r2 += ref[i] * ref[i];
    const double err = sqrt(e2 / r2);
    printf("Yukawa kappa %g: relative L2 error of phi %.2e\n", opts.param, err);
    free(xyz), free(q), free(phi), free(ref);
    return err <= 1e-6 ? 0 : 1;
}

/* Periodic Coulomb sum (Ewald conventions: tin-foil boundary) of a neutral set of random
 * charges in a cubic box by the FMM, checked against the Ewald sum.
 *
 * Units: no prefactor (Gaussian units). With positions in nm and charges in e, the energy
 * times 138.935458 is in kJ/mol, as GROMACS reports its Coulomb (PME) energy. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#include "fmm.h"

int main(void) {
    const long n = 3000;
    const double box[3] = {3.0, 3.0, 3.0}; /* edge lengths (nm); particles are wrapped in */
    double *xyz = malloc(sizeof(double) * 3 * n), *q = malloc(sizeof(double) * n);
    double *field = malloc(sizeof(double) * 3 * n), *ref = malloc(sizeof(double) * 3 * n);
    if (!xyz || !q || !field || !ref) return 1;
    srand(2);
    for (long i = 0; i < n; ++i) {
        for (int d = 0; d < 3; ++d) xyz[3 * i + d] = box[d] * rand() / (RAND_MAX + 1.0);
        q[i] = i % 2 ? 0.5 : -0.5; /* neutral */
    }

    fmm_opts opts;
    fmm_default_opts(&opts);
    opts.periodic = 1;
    opts.tolerance = 1e-6;
    fmm_plan *plan;
    double energy, eref, virial[9];
    int rc = fmm_makeplan(&opts, box, &plan);
    if (!rc) rc = fmm_setpts(plan, n, xyz);
    if (!rc) rc = fmm_execute(plan, q, NULL, field, &energy, virial); /* E = -grad phi */
    fmm_destroy(plan);
    if (!rc) rc = fmm_ewald(n, xyz, q, box, 1e-10, NULL, ref, &eref, NULL, 0);
    if (rc) {
        fprintf(stderr, "coulomb_periodic: %s\n", fmm_strerror(rc));
        return 1;
    }

    const double err = fabs(energy - eref) / fabs(eref);
    printf("energy %.10g kJ/mol (Ewald %.10g), relative error %.2e, virial trace %.6g\n",
           138.935458 * energy, 138.935458 * eref, err, virial[0] + virial[4] + virial[8]);
    free(xyz), free(q), free(field), free(ref);
    return err <= 1e-5 ? 0 : 1;
}

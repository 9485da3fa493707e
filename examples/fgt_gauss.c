/* Fast Gauss transform G(y_j) = sum_i q_i exp(-|y_j - x_i|^2 / h^2) in 3-D, sources and
 * separate targets, checked against the direct sum.
 *
 * Units: coordinates and the bandwidth h in one length unit; G in the unit of q. A Gaussian of
 * standard deviation sigma has h = sqrt(2) sigma. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#include "fmm_fgt.h"

int main(void) {
    const long ns = 10000, nt = 4000;
    const double h = 0.05;
    double *src = malloc(sizeof(double) * 3 * ns), *q = malloc(sizeof(double) * ns);
    double *trg = malloc(sizeof(double) * 3 * nt);
    double *g = malloc(sizeof(double) * nt), *ref = malloc(sizeof(double) * nt);
    if (!src || !q || !trg || !g || !ref) return 1;
    srand(4);
    double qsum = 0;
    for (long i = 0; i < ns; ++i) {
        for (int d = 0; d < 3; ++d) src[3 * i + d] = rand() / (RAND_MAX + 1.0);
        q[i] = rand() / (RAND_MAX + 1.0);
        qsum += fabs(q[i]);
    }
    for (long j = 0; j < 3 * nt; ++j) trg[j] = rand() / (RAND_MAX + 1.0);

    fgt_opts opts;
    fgt_default_opts(&opts);
    opts.tolerance = 1e-8; /* max |G - G_exact| <= tolerance * sum |q| */
    fgt_plan *plan;
    int rc = fgt_makeplan(3, h, &opts, &plan);
    if (!rc) rc = fgt_setpts(plan, ns, src, nt, trg);
    if (!rc) rc = fgt_execute(plan, q, g);
    fgt_destroy(plan);
    if (!rc) rc = fgt_direct(3, h, ns, src, q, nt, trg, ref, 0);
    if (rc) {
        fprintf(stderr, "fgt_gauss: %s\n", fgt_strerror(rc));
        return 1;
    }

    double worst = 0;
    for (long j = 0; j < nt; ++j) worst = fmax(worst, fabs(g[j] - ref[j]));
    printf("FGT h %g: max error %.2e of sum |q| (tolerance %g)\n", h, worst / qsum, opts.tolerance);
    free(src), free(q), free(trg), free(g), free(ref);
    return worst <= opts.tolerance * qsum ? 0 : 1;
}

/* Multiquadric RBF interpolation: fit s(x) = sum_i lambda_i sqrt(|x - x_i|^2 + c^2) + alpha
 * to a smooth function at N scattered centres, then evaluate it at new points.
 *
 * Units: the shape c in the unit of the coordinates; s in the unit of the data f. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#include "fmm_rbf.h"

static double f_exact(const double *x) {
    return sin(2 * x[0]) * cos(x[1]) + x[2] * x[2];
}

int main(void) {
    const long n = 4000, m = 1000;
    double *xyz = malloc(sizeof(double) * 3 * n), *f = malloc(sizeof(double) * n);
    double *lambda = malloc(sizeof(double) * n), *pts = malloc(sizeof(double) * 3 * m);
    double *s = malloc(sizeof(double) * m);
    if (!xyz || !f || !lambda || !pts || !s) return 1;
    srand(5);
    for (long i = 0; i < n; ++i) {
        for (int d = 0; d < 3; ++d) xyz[3 * i + d] = rand() / (RAND_MAX + 1.0);
        f[i] = f_exact(xyz + 3 * i);
    }
    for (long k = 0; k < 3 * m; ++k) pts[k] = 0.1 + 0.8 * rand() / (RAND_MAX + 1.0);

    fmm_rbf_opts opts;
    fmm_rbf_default_opts(&opts);
    opts.shape = 0.1;      /* c */
    opts.tolerance = 1e-8; /* max |f_i - s(x_i)| <= tolerance * max |f| */
    fmm_rbf_plan *plan;
    fmm_rbf_result res;
    double alpha;
    int rc = fmm_rbf_makeplan(&opts, &plan);
    if (!rc) rc = fmm_rbf_setpts(plan, n, xyz);
    if (!rc) rc = fmm_rbf_execute(plan, f, lambda, &alpha, &res);
    if (!rc) rc = fmm_rbf_eval(plan, lambda, alpha, m, pts, s);
    fmm_rbf_destroy(plan);
    if (rc) {
        fprintf(stderr, "rbf_interp: %s\n", fmm_rbf_strerror(rc));
        return 1;
    }

    double worst = 0; /* interpolation error at the new points (not the fit's residual) */
    for (long k = 0; k < m; ++k) worst = fmax(worst, fabs(s[k] - f_exact(pts + 3 * k)));
    printf("RBF fit: %d iterations, residual %.2e; max error at %ld new points %.2e\n",
           res.iterations, res.max_residual, m, worst);
    free(xyz), free(f), free(lambda), free(pts), free(s);
    return res.max_residual <= opts.tolerance && worst < 1e-2 ? 0 : 1;
}

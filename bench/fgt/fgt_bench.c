/* fgt_bench: the FGT against the direct sum on uniform points in the unit cube.
 *
 * usage: fgt_bench N M DIM TOL THREADS DEVICE(cpu|cuda) NREF DIRECT(0|1) h1 [h2 ...]
 * For each h: plan + setpts + execute time (median of 3 runs after the first), the CUDA stage
 * times, the error max_j |G - G_exact| / sum|q| over NREF evenly spaced targets (direct sum
 * with libm exp), and, with DIRECT=1, the full direct sum time (fgt_direct, all M targets,
 * measured once; it does not depend on h). One line per h: key=value pairs. */
#include <math.h>
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fmm_fgt.h"

static double rnd(unsigned long long *s) {
    *s ^= *s << 13, *s ^= *s >> 7, *s ^= *s << 17;
    return (double)(*s >> 11) / 9007199254740992.0;
}

static int cmp(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

int main(int argc, char **argv) {
    if (argc < 10) {
        fprintf(stderr, "usage: fgt_bench N M DIM TOL THREADS cpu|cuda NREF DIRECT h...\n");
        return 2;
    }
    long n = atol(argv[1]), m = atol(argv[2]), nref = atol(argv[7]);
    int dim = atoi(argv[3]), threads = atoi(argv[5]), direct = atoi(argv[8]);
    double tol = atof(argv[4]);
    int dev = !strcmp(argv[6], "cuda") ? FMM_DEVICE_CUDA : FMM_DEVICE_CPU;
    double *x = malloc(sizeof(double) * n * dim), *y = malloc(sizeof(double) * m * dim);
    double *q = malloc(sizeof(double) * n), *g = malloc(sizeof(double) * m);
    double *yr = malloc(sizeof(double) * nref * dim), *gr = malloc(sizeof(double) * nref);
    if (!x || !y || !q || !g || !yr || !gr) return 1;
    unsigned long long s = 88172645463325252ull;
    for (long i = 0; i < n * dim; ++i) x[i] = rnd(&s);
    for (long i = 0; i < m * dim; ++i) y[i] = rnd(&s);
    double sq = 0;
    for (long i = 0; i < n; ++i) q[i] = rnd(&s), sq += q[i];
    for (long k = 0; k < nref; ++k)
        for (int d = 0; d < dim; ++d) yr[k * dim + d] = y[(long)((double)k * m / nref) * dim + d];
    if (direct) {
        double *gd = malloc(sizeof(double) * m);
        double t0 = omp_get_wtime();
        int rc = fgt_direct(dim, 0.2, n, x, q, m, y, gd, threads);
        double t1 = omp_get_wtime();
        if (rc) return 1;
        printf("direct n=%ld m=%ld threads=%d time_s=%.3f\n", n, m, threads, t1 - t0);
        fflush(stdout);
        free(gd);
    }
    for (int a = 9; a < argc; ++a) {
        double h = atof(argv[a]);
        fgt_opts o;
        fgt_default_opts(&o);
        o.tolerance = tol, o.threads = threads, o.device = dev;
        double ts[4], tset = 0, texe = 0, stage[4] = {0, 0, 0, 0};
        fgt_info info;
        int rc = 0;
        for (int r = 0; r < 4 && !rc; ++r) {
            fgt_plan *p;
            double t0 = omp_get_wtime();
            rc = fgt_makeplan(dim, h, &o, &p);
            if (!rc) rc = fgt_setpts(p, n, x, m, y);
            double t1 = omp_get_wtime();
            if (!rc) rc = fgt_execute(p, q, g);
            double t2 = omp_get_wtime();
            if (!rc) fgt_get_info(p, &info);
            if (!rc && dev == FMM_DEVICE_CUDA) fgt_cuda_stage_times(p, stage);
            fgt_destroy(p);
            if (r > 0) ts[r] = t2 - t0, tset += (t1 - t0) / 3, texe += (t2 - t1) / 3;
        }
        if (rc) {
            printf("h=%g error=%s\n", h, fgt_strerror(rc));
            continue;
        }
        qsort(ts + 1, 3, sizeof(double), cmp);
        double r0 = omp_get_wtime();
        fgt_direct(dim, h, n, x, q, nref, yr, gr, threads);
        double r1 = omp_get_wtime(), e = 0;
        for (long k = 0; k < nref; ++k) {
            double d = fabs(g[(long)((double)k * m / nref)] - gr[k]);
            if (d > e) e = d;
        }
        printf("fgt device=%s n=%ld m=%ld dim=%d h=%g tol=%g threads=%d time_s=%.4f setpts_s=%.4f "
               "execute_s=%.4f box_side=%.2f order=%d pairs_direct=%ld pairs_hermite=%ld "
               "pairs_taylor=%ld pairs_h2t=%ld max_abs_error_over_sum_q=%.3e ref_targets=%ld ref_s=%.2f",
               argv[6], n, m, dim, h, tol, threads, ts[2], tset, texe, info.box_side, info.order,
               info.pairs[1], info.pairs[2], info.pairs[3], info.pairs[4], e / sq, nref, r1 - r0);
        if (dev == FMM_DEVICE_CUDA)
            printf(" gpu_ms_moments=%.3f gpu_ms_build=%.3f gpu_ms_eval_copy=%.3f gpu_ms_total=%.3f", stage[0],
                   stage[1], stage[2], stage[3]);
        printf("\n");
        fflush(stdout);
    }
    return 0;
}

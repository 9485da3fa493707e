/* bench/bldtt/bldtt_bench.c - BLDTT timing and accuracy on the paper's test (WVK Table 2):
 * N points uniform in [-1,1]^3, charges uniform in [-1,1], targets = sources, relative L2
 * error of the potential on a random sample of targets against the direct sum.
 *
 * usage: bldtt_bench --n N [--device cpu|cuda] [--theta T] [--degree D] [--leaf L]
 *                    [--method bldtt|bltc] [--kernel K] [--threads T] [--sample M] [--reps R]
 *                    [--seed S] [--ref-device cpu|cuda]
 * prints one CSV line:
 *   n,device,method,kernel,theta,degree,leaf,setup_s,execute_s,total_s,rel_l2_error,sample,
 *   pairs_pp,pairs_pc,pairs_cp,pairs_cc,evals,warmup_s,setup_device_s,total_max_s
 * R solves, each on a fresh plan (bldtt_makeplan, then timed: bldtt_setpts and the first
 * bldtt_execute): setup_s, setup_device_s (its allocations and uploads on the GPU) and total_s
 * (setup + first execute) are their medians, total_max_s the slowest; execute_s is the median
 * of R more executions of the last plan. Each solve's times also go to stderr.
 * warmup_s: the same options on min(N, 1e5) points (CPU: 4000), set up and executed once before
 * the timed solves; on a GPU it pays the process's one-time CUDA context creation and kernel
 * loading, which the timed solves then no longer contain. Report both.
 */
#include <math.h>
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fmm_bldtt.h"
#include "pointsets.h"

static int cmpd(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

int main(int argc, char **argv) {
    long n = 100000, sample = 1000;
    int reps = 3, refdev = -1;
    unsigned long long seed = 1;
    bldtt_opts o;
    bldtt_default_opts(&o);
    for (int i = 1; i + 1 < argc; i += 2) {
        const char *a = argv[i], *v = argv[i + 1];
        if (!strcmp(a, "--n")) n = (long)atof(v);
        else if (!strcmp(a, "--device")) o.device = !strcmp(v, "cuda") ? FMM_DEVICE_CUDA : FMM_DEVICE_CPU;
        else if (!strcmp(a, "--ref-device")) refdev = !strcmp(v, "cuda") ? FMM_DEVICE_CUDA : FMM_DEVICE_CPU;
        else if (!strcmp(a, "--theta")) o.theta = atof(v);
        else if (!strcmp(a, "--degree")) o.degree = atoi(v);
        else if (!strcmp(a, "--leaf")) o.leaf_size = atoi(v);
        else if (!strcmp(a, "--threads")) o.threads = atoi(v);
        else if (!strcmp(a, "--sample")) sample = atol(v);
        else if (!strcmp(a, "--reps")) reps = atoi(v);
        else if (!strcmp(a, "--seed")) seed = strtoull(v, NULL, 10);
        else if (!strcmp(a, "--method")) o.method = !strcmp(v, "bltc") ? BLDTT_METHOD_BLTC : BLDTT_METHOD_DTT;
        else if (!strcmp(a, "--kernel")) {
            if (bldtt_kernel_from_name(v, &o.kernel)) {
                fprintf(stderr, "unknown kernel %s\n", v);
                return 2;
            }
            o.param = bldtt_kernel_default_param(o.kernel);
        } else {
            fprintf(stderr, "unknown option %s\n", a);
            return 2;
        }
    }
    if (reps < 1) reps = 1;
    if (sample > n) sample = n;
    double *xyz = malloc(sizeof(double) * 3 * n), *q = malloc(sizeof(double) * n);
    double *phi = malloc(sizeof(double) * n), *ref = malloc(sizeof(double) * sample);
    long *idx = malloc(sizeof(long) * sample);
    double *ts = malloc(sizeof(double) * 4 * reps), *tsetup = ts + reps, *tdev = ts + 2 * reps,
           *ttot = ts + 3 * reps;
    if (!xyz || !q || !phi || !ref || !idx || !ts) {
        fprintf(stderr, "out of memory\n");
        return 1;
    }
    pts_uniform(n, seed, xyz, q);
    for (long i = 0; i < 3 * n; ++i) xyz[i] = 2 * xyz[i] - 1;
    bldtt_plan *p;
    /* warm-up: the same options on min(N, 1e5) points on a GPU, so that the process's CUDA
     * context creation and the loading of the kernels (CUDA loads each at its first launch; 1e5
     * points reach every interaction type) stay out of the timed solves; 4000 on the CPU (the
     * OpenMP threads) */
    long nw = o.device == FMM_DEVICE_CUDA ? 100000 : 4000;
    double w0 = omp_get_wtime();
    int rc = bldtt_makeplan(&o, &p);
    if (!rc) rc = bldtt_setpts(p, n < nw ? n : nw, xyz, 0, NULL);
    if (!rc) rc = bldtt_execute(p, q, phi, NULL);
    double warmup = omp_get_wtime() - w0;
    if (!rc) bldtt_destroy(p);
    /* R solves, each on a fresh plan: setup, then the first execute */
    for (int r = 0; r < reps && !rc; ++r) {
        rc = bldtt_makeplan(&o, &p);
        double t0 = omp_get_wtime();
        if (!rc) rc = bldtt_setpts(p, n, xyz, 0, NULL);
        double t1 = omp_get_wtime();
        if (!rc) rc = bldtt_execute(p, q, phi, NULL);
        double t2 = omp_get_wtime();
        if (rc) break;
        bldtt_info I;
        bldtt_get_info(p, &I);
        tsetup[r] = t1 - t0, tdev[r] = I.time_setup_device_s, ttot[r] = t2 - t0;
        fprintf(stderr, "# n %ld solve %d: setup %.4f s (device %.4f), first execute %.4f s\n", n,
                r, t1 - t0, I.time_setup_device_s, t2 - t1);
        if (r + 1 < reps) bldtt_destroy(p);
    }
    /* R more executions of the last plan */
    for (int r = 0; r < reps && !rc; ++r) {
        double a = omp_get_wtime();
        rc = bldtt_execute(p, q, phi, NULL);
        ts[r] = omp_get_wtime() - a;
    }
    if (rc) {
        fprintf(stderr, "bldtt: %s\n", bldtt_strerror(rc));
        return 1;
    }
    double tmax = ttot[0];
    for (int r = 1; r < reps; ++r) tmax = ttot[r] > tmax ? ttot[r] : tmax;
    qsort(tsetup, reps, sizeof(double), cmpd);
    qsort(tdev, reps, sizeof(double), cmpd);
    qsort(ttot, reps, sizeof(double), cmpd);
    qsort(ts, reps, sizeof(double), cmpd);
    bldtt_info I;
    bldtt_get_info(p, &I);
    /* random sample of targets (0.1% in the paper), reference on the requested device */
    unsigned long long s = seed * 6364136223846793005ULL + 1442695040888963407ULL;
    for (long k = 0; k < sample; ++k) {
        s = s * 6364136223846793005ULL + 1442695040888963407ULL;
        idx[k] = (long)((s >> 11) % (unsigned long long)n);
    }
    bldtt_opts ro = o;
    if (refdev >= 0) ro.device = refdev;
    rc = bldtt_direct_subset(&ro, n, xyz, q, 0, NULL, sample, idx, ref, NULL);
    if (rc) {
        fprintf(stderr, "reference: %s\n", bldtt_strerror(rc));
        return 1;
    }
    double e = 0, nr = 0;
    for (long k = 0; k < sample; ++k) e += (phi[idx[k]] - ref[k]) * (phi[idx[k]] - ref[k]), nr += ref[k] * ref[k];
    double ev = I.evals[0] + I.evals[1] + I.evals[2] + I.evals[3];
    printf("%ld,%s,%s,%s,%g,%d,%d,%.4f,%.4f,%.4f,%.3e,%ld,%ld,%ld,%ld,%ld,%.3e,%.4f,%.4f,%.4f\n", n,
           o.device == FMM_DEVICE_CUDA ? "cuda" : "cpu",
           o.method == BLDTT_METHOD_BLTC ? "bltc" : "bldtt", bldtt_kernel_name(o.kernel), o.theta,
           o.degree, I.leaf_size, tsetup[reps / 2], ts[reps / 2], ttot[reps / 2], sqrt(e / nr),
           sample, I.pairs[0], I.pairs[1], I.pairs[2], I.pairs[3], ev, warmup, tdev[reps / 2],
           tmax);
    bldtt_destroy(p);
    free(xyz), free(q), free(phi), free(ref), free(idx), free(ts);
    return 0;
}

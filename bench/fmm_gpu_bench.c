/*
 * fmm-gpu-bench: the whole FMM on the GPU against the CPU FMM (same order and depth) in one
 * run, with the error against an independent reference and, for open boundaries, the GPU
 * all-pairs direct sum. One CSV row per run on stdout (header with --header).
 *
 *   fmm-gpu-bench (--in FILE.xyzq [--tile K] | --uniform N) [--periodic] [--tolerance T]
 *                 [--order P] [--depth D] [--precision double|mixed] [--reps R]
 *                 [--cpu-threads T] [--no-cpu] [--reference ewald|tile-ewald|direct|sample|none]
 *                 [--sample M] [--label NAME] [--header]
 *   fmm-gpu-bench --largest N0 [--tolerance T] [--precision double|mixed] [--sample M]
 *
 * --in reads "x y z q" with a "# box L L L" line (SPC/E boxes of systems/water); --tile K
 * replicates the box K times per axis (an exactly periodic system whose reference is the
 * tile's Ewald sum: tile-ewald). GPU time: median and minimum over R replays of the
 * evaluation graph (binning included; CUDA events). CPU time: one setpts + execute on
 * T threads (always double precision: "vs cpu" columns of a mixed run measure the float near
 * field). Force error: relative RMS of q E over all atoms.
 * Periodic runs also time whole calls that wait for the device, wall time per call, median of
 * min(R, 20): energy and forces on the device-resident route (fmm_cuda_forcesf, forces to a device
 * buffer), the same with the virial (which comes from parts of the evaluation summed on the host;
 * an MD code asks for it on some steps only), and energy, virial, potential and field on the host
 * route (fmm_execute: copied to the host); the virial is compared with the CPU FMM's. And the
 * device route of an MD step (gpu_route_ms): fmm_cuda_setptsf from float positions on the device,
 * then fmm_cuda_forcesf without energy, on a stream of the caller, timed by CUDA events around the
 * two calls (the GPU's time from the step's start to its forces, launch gaps included: what an MD
 * step waits for), median of R, and the host's time in the two calls (route_host_ms: the launch,
 * which in an MD step delays the short-range work queued after it), after one call with the
 * energy (which lets the plan pick its depth for device positions).
 * --largest N0: the largest uniform open set (in the unit cube) that one CUDA plan takes, from N0
 * down in steps of 10% while fmm_setpts or fmm_execute says FMM_ERR_NOMEM; prints that N, the
 * last N that did not fit, the times of its setpts + execute and of a second execute, and its
 * potential error at M sampled targets against the direct sum.
 */
#include <math.h>
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#ifdef FMM_HAVE_CUDA
#include <cuda_runtime_api.h>
#endif

#include "fmm.h"
#include "pointsets.h"

static double now(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec + 1e-9 * t.tv_nsec;
}

static int cmp(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

static double rel(long n, const double *a, const double *b) {
    double e = 0, m = 0;
    for (long i = 0; i < n; ++i) e += (a[i] - b[i]) * (a[i] - b[i]), m += b[i] * b[i];
    return sqrt(e / m);
}

/* relative RMS force error: sum |q (E - Eref)|^2 / sum |q Eref|^2 */
static double force_err(long n, const double *q, const double *E, const double *Er) {
    double e = 0, m = 0;
    for (long i = 0; i < n; ++i)
        for (int d = 0; d < 3; ++d) {
            double a = q[i] * E[3 * i + d], b = q[i] * Er[3 * i + d];
            e += (a - b) * (a - b), m += b * b;
        }
    return sqrt(e / m);
}

static void die(const char *what, int rc);

static int largest(fmm_opts o, long n0, long sample) {
    double *xyz = malloc(sizeof(double) * 3 * n0), *q = malloc(sizeof(double) * n0);
    double *phi = malloc(sizeof(double) * n0);
    if (!xyz || !q || !phi || pts_uniform(n0, 12345, xyz, q)) die("uniform set", FMM_ERR_NOMEM);
    o.device = FMM_DEVICE_CUDA;
    fmm_plan *p;
    int rc = fmm_makeplan(&o, NULL, &p);
    if (rc) die("GPU plan", rc);
    long n = n0, failed = 0;
    double t0 = 0, t1 = 0, energy = 0;
    for (;;) {
        fprintf(stderr, "largest: n %ld: setpts + execute...\n", n);
        t0 = now();
        rc = fmm_setpts(p, n, xyz);
        if (!rc) rc = fmm_execute(p, q, phi, NULL, &energy, NULL);
        t1 = now();
        if (rc != FMM_ERR_NOMEM) break;
        failed = n, n = (long)(0.9 * n);
    }
    if (rc) die("GPU setpts/execute", rc);
    double t2 = now();
    if ((rc = fmm_execute(p, q, phi, NULL, &energy, NULL))) die("GPU execute", rc);
    double t3 = now();
    fmm_info info;
    fmm_get_info(p, &info);
    fmm_destroy(p);
    long m = sample < n ? sample : n, *idx = malloc(sizeof(long) * m);
    double *sp = malloc(sizeof(double) * m), *gp = malloc(sizeof(double) * m);
    if (!idx || !sp || !gp) die("sample", FMM_ERR_NOMEM);
    for (long i = 0; i < m; ++i) idx[i] = (long)((double)i * n / m), gp[i] = phi[idx[i]];
    fprintf(stderr, "largest: reference at %ld targets...\n", m);
    if ((rc = fmm_direct_targets(n, xyz, q, m, idx, sp, NULL, 0))) die("sampled direct sum", rc);
    printf("largest_n,first_failed_n,order,depth,precision,setpts_execute_s,execute_s,"
           "rel_phi_sample,sample\n");
    printf("%ld,%ld,%d,%d,%s,%.3f,%.3f,%.3e,%ld\n", n, failed, info.order, info.depth,
           o.precision == FMM_PRECISION_MIXED ? "mixed" : "double", t1 - t0, t3 - t2,
           rel(m, gp, sp), m);
    free(xyz), free(q), free(phi), free(idx), free(sp), free(gp);
    return 0;
}

static double read_box(const char *path) {
    FILE *f = fopen(path, "r");
    char line[512];
    double L = 0;
    while (f && fgets(line, sizeof line, f))
        if (sscanf(line, "# box %lf", &L) == 1) break;
    if (f) fclose(f);
    return L;
}

static void die(const char *what, int rc) {
    fprintf(stderr, "fmm-gpu-bench: %s: %s\n", what, fmm_strerror(rc));
    exit(1);
}

#ifdef FMM_HAVE_CUDA
/* the device route of an MD step, ms (see the head comment), and in *host_ms the host's time in
 * the two calls (what an MD step's thread spends on launching it); NAN where a CUDA call fails */
static double device_route_ms(fmm_plan *gp, long n, const double *xyz, float *d_f, int reps,
                              double *host_ms) {
    const int nr = reps > 0 ? reps : 1;
    float *xf = malloc(sizeof(float) * 3 * n), *d_x = NULL;
    double *t = malloc(sizeof(double) * nr), *th = malloc(sizeof(double) * nr), e = 0, ms = NAN;
    *host_ms = NAN;
    cudaStream_t st = NULL;
    cudaEvent_t e0 = NULL, e1 = NULL;
    int ok = xf && t && th && cudaMalloc((void **)&d_x, sizeof(float) * 3 * n) == cudaSuccess &&
             cudaStreamCreate(&st) == cudaSuccess && cudaEventCreate(&e0) == cudaSuccess &&
             cudaEventCreate(&e1) == cudaSuccess;
    if (ok) {
        for (long i = 0; i < 3 * n; ++i) xf[i] = (float)xyz[i];
        ok = cudaMemcpy(d_x, xf, sizeof(float) * 3 * n, cudaMemcpyHostToDevice) == cudaSuccess &&
             !fmm_cuda_setptsf(gp, n, d_x, st) &&
             !fmm_cuda_forcesf(gp, NULL, d_f, 1.0, &e, NULL, st);
    }
    fprintf(stderr, "[route] device route of an MD step...\n");
    for (int r = -3; r < nr && ok; ++r) { /* r < 0 warm up */
        float v = 0;
        ok = cudaEventRecord(e0, st) == cudaSuccess;
        const double h0 = now();
        ok = ok && !fmm_cuda_setptsf(gp, n, d_x, st) &&
             !fmm_cuda_forcesf(gp, NULL, d_f, 1.0, NULL, NULL, st);
        const double h1 = now();
        ok = ok && cudaEventRecord(e1, st) == cudaSuccess &&
             cudaEventSynchronize(e1) == cudaSuccess &&
             cudaEventElapsedTime(&v, e0, e1) == cudaSuccess;
        if (r >= 0) t[r] = v, th[r] = 1e3 * (h1 - h0);
    }
    if (ok) {
        qsort(t, nr, sizeof(double), cmp);
        qsort(th, nr, sizeof(double), cmp);
        ms = t[nr / 2], *host_ms = th[nr / 2];
    }
    if (e0) cudaEventDestroy(e0);
    if (e1) cudaEventDestroy(e1);
    if (st) cudaStreamDestroy(st);
    cudaFree(d_x);
    free(xf), free(t), free(th);
    return ms;
}
#endif

int main(int argc, char **argv) {
    const char *in = NULL, *label = "run", *refkind = NULL;
    long nuni = 0, nlargest = 0;
    int nlargest_arg = 0;
    int tile = 1, periodic = 0, reps = 50, cpu_threads = 0, no_cpu = 0, header = 0;
    long sample = 2000;
    fmm_opts o;
    fmm_default_opts(&o);
    for (int i = 1; i < argc; ++i) {
        const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        if (!strcmp(a, "--periodic")) periodic = 1;
        else if (!strcmp(a, "--no-cpu")) no_cpu = 1;
        else if (!strcmp(a, "--header")) header = 1;
        else if (!v) {
            fprintf(stderr, "fmm-gpu-bench: %s needs a value (see the comment at the top of bench/fmm_gpu_bench.c)\n", a);
            return 2;
        } else {
            ++i;
            if (!strcmp(a, "--in")) in = v;
            else if (!strcmp(a, "--uniform")) nuni = atol(v);
            else if (!strcmp(a, "--largest")) {
                double d = atof(v); /* NaN, Inf and values past 4e18 count as invalid below */
                nlargest = isfinite(d) && d >= 1 && d < 4e18 ? (long)d : 0, nlargest_arg = 1;
            } else if (!strcmp(a, "--tile"))
                tile = atoi(v);
            else if (!strcmp(a, "--tolerance")) o.tolerance = atof(v);
            else if (!strcmp(a, "--order")) o.order = atoi(v);
            else if (!strcmp(a, "--depth")) o.depth = atoi(v);
            else if (!strcmp(a, "--precision") && (!strcmp(v, "double") || !strcmp(v, "mixed")))
                o.precision = strcmp(v, "mixed") ? FMM_PRECISION_DOUBLE : FMM_PRECISION_MIXED;
            else if (!strcmp(a, "--reps")) reps = atoi(v);
            else if (!strcmp(a, "--cpu-threads")) cpu_threads = atoi(v);
            else if (!strcmp(a, "--reference")) refkind = v;
            else if (!strcmp(a, "--sample")) sample = atol(v);
            else if (!strcmp(a, "--label")) label = v;
            else {
                fprintf(stderr, "fmm-gpu-bench: unknown option %s\n", a);
                return 2;
            }
        }
    }
    if (nlargest_arg) {
        if (nlargest < 1 || in || nuni > 0 || periodic) {
            fprintf(stderr, "fmm-gpu-bench: --largest takes N0 >= 1 and no --in, --uniform or "
                            "--periodic (it searches uniform open sets)\n");
            return 2;
        }
        return largest(o, nlargest, sample);
    }
    if (header)
        printf("label,n,periodic,order,depth,precision,gpu_ms_median,gpu_ms_min,gpu_mpart_per_s,"
               "cpu_s,cpu_threads,rel_phi_gpu_vs_cpu,rel_field_gpu_vs_cpu,rel_energy_gpu_vs_cpu,"
               "reference,rel_phi_ref,rel_force_rms_ref,energy,direct_gpu_ms,"
               "stage_ms_bin_p2p_p2m_m2m_m2l_l2l_l2p_final,rel_virial_gpu_vs_cpu,"
               "gpu_energy_device_ms,gpu_virial_device_ms,gpu_virial_host_ms,gpu_route_ms,"
               "route_host_ms\n");
    if (!in && nuni < 1) return header ? 0 : 2;
    /* the system */
    long n0 = 0;
    double *x0 = NULL, *q0 = NULL, L0 = 1.0;
    if (in) {
        char err[256];
        if (pts_read_xyzq(in, &n0, &x0, &q0, err, sizeof err)) {
            fprintf(stderr, "fmm-gpu-bench: %s\n", err);
            return 1;
        }
        L0 = read_box(in);
        if (periodic && !(L0 > 0)) {
            fprintf(stderr, "fmm-gpu-bench: %s has no '# box L' line\n", in);
            return 1;
        }
    } else {
        n0 = nuni;
        x0 = malloc(sizeof(double) * 3 * n0), q0 = malloc(sizeof(double) * n0);
        if (!x0 || !q0 || pts_uniform(n0, 12345, x0, q0)) die("uniform set", FMM_ERR_NOMEM);
    }
    const long n = n0 * tile * tile * tile;
    const double L = L0 * tile;
    double *xyz = malloc(sizeof(double) * 3 * n), *q = malloc(sizeof(double) * n);
    if (!xyz || !q) die("allocation", FMM_ERR_NOMEM);
    long k = 0;
    for (int a = 0; a < tile; ++a)
        for (int b = 0; b < tile; ++b)
            for (int c = 0; c < tile; ++c)
                for (long i = 0; i < n0; ++i, ++k) {
                    xyz[3 * k] = x0[3 * i] + a * L0, xyz[3 * k + 1] = x0[3 * i + 1] + b * L0;
                    xyz[3 * k + 2] = x0[3 * i + 2] + c * L0, q[k] = q0[i];
                }
    const double box[3] = {L, L, L};
    o.periodic = periodic;
    /* GPU */
    double *phi = malloc(sizeof(double) * n), *field = malloc(sizeof(double) * 3 * n), eg = 0;
    double *ms = malloc(sizeof(double) * (reps > 0 ? reps : 1));
    fmm_opts og = o;
    og.device = FMM_DEVICE_CUDA;
    fmm_plan *gp;
    int rc = fmm_makeplan(&og, periodic ? box : NULL, &gp);
    if (rc) die("GPU plan", rc);
    fprintf(stderr, "[%s] n %ld: GPU setpts+execute...\n", label, n);
    if ((rc = fmm_setpts(gp, n, xyz))) die("GPU setpts", rc);
    if ((rc = fmm_execute(gp, q, phi, field, &eg, NULL))) die("GPU execute", rc);
    if ((rc = fmm_cuda_time_replays(gp, reps, ms))) die("GPU replays", rc);
    qsort(ms, reps, sizeof(double), cmp);
    double st[8];
    if ((rc = fmm_cuda_stage_times(gp, 10, st))) die("GPU stage times", rc);
    /* (before the device route, which may pick another depth for device positions) */
    fmm_info info;
    fmm_get_info(gp, &info);
    double gvir[9] = {0}, call_ms[3] = {NAN, NAN, NAN}; /* energy, energy + virial, host route */
    double route_ms = NAN, route_host_ms = NAN;
#ifdef FMM_HAVE_CUDA
    if (periodic) {
        const int nv = reps < 20 ? reps : 20;
        double *tv = malloc(sizeof(double) * (nv > 0 ? nv : 1)), ev = 0;
        float *d_f = NULL;
        if (!tv || cudaMalloc((void **)&d_f, sizeof(float) * 3 * n) != cudaSuccess)
            die("device forces", FMM_ERR_NOMEM);
        fprintf(stderr, "[%s] GPU calls that wait...\n", label);
        for (int route = 0; route < 3 && nv > 0; ++route) {
            for (int r = -1; r < nv; ++r) { /* r = -1 warms up */
                const double t0 = now();
                rc = route == 2
                         ? fmm_execute(gp, NULL, phi, field, &ev, gvir)
                         : fmm_cuda_forcesf(gp, NULL, d_f, 1.0, &ev, route ? gvir : NULL, NULL);
                if (rc) die("GPU call that waits", rc);
                if (r >= 0) tv[r] = 1e3 * (now() - t0);
            }
            qsort(tv, nv, sizeof(double), cmp);
            call_ms[route] = tv[nv / 2];
        }
        free(tv);
        route_ms = device_route_ms(gp, n, xyz, d_f, reps, &route_host_ms);
        cudaFree(d_f);
    }
#endif
    fmm_destroy(gp);
    /* CPU at the same order and depth */
    double cpu_s = NAN, rp = NAN, rf = NAN, re = NAN, rv = NAN;
    if (!no_cpu) {
        fmm_opts oc = o;
        oc.order = info.order, oc.depth = info.depth, oc.threads = cpu_threads, oc.precision = FMM_PRECISION_DOUBLE;
        double *cphi = malloc(sizeof(double) * n), *cfield = malloc(sizeof(double) * 3 * n), ec = 0,
               cvir[9];
        fmm_plan *cp;
        if ((rc = fmm_makeplan(&oc, periodic ? box : NULL, &cp))) die("CPU plan", rc);
        fprintf(stderr, "[%s] CPU FMM (p %d, depth %d)...\n", label, info.order, info.depth);
        double t0 = now();
        if ((rc = fmm_setpts(cp, n, xyz)) || (rc = fmm_execute(cp, q, cphi, cfield, &ec, cvir)))
            die("CPU FMM", rc);
        cpu_s = now() - t0;
        fmm_destroy(cp);
        rp = rel(n, phi, cphi), rf = rel(3 * n, field, cfield), re = fabs(eg - ec) / fabs(ec);
        if (!isnan(call_ms[1])) rv = rel(9, gvir, cvir);
        free(cphi), free(cfield);
    }
    /* reference */
    if (!refkind) refkind = periodic ? (tile > 1 ? "tile-ewald" : "ewald") : "sample";
    double ref_phi = NAN, ref_force = NAN, direct_ms = NAN;
    double *rphi = malloc(sizeof(double) * n), *rfield = malloc(sizeof(double) * 3 * n);
    fprintf(stderr, "[%s] reference %s...\n", label, refkind);
    if (!strcmp(refkind, "ewald") || !strcmp(refkind, "tile-ewald")) {
        const int t = !strcmp(refkind, "tile-ewald");
        const double b0[3] = {L0, L0, L0};
        if ((rc = fmm_ewald(t ? n0 : n, t ? x0 : xyz, t ? q0 : q, t ? b0 : box, 1e-10, rphi, rfield, NULL, NULL, 0)))
            die("Ewald", rc);
        if (t) /* every copy of a tile atom sees the tile atom's periodic potential */
            for (long c = n - 1; c >= 0; --c) {
                long i = c % n0;
                rphi[c] = rphi[i];
                for (int d = 0; d < 3; ++d) rfield[3 * c + d] = rfield[3 * i + d];
            }
        ref_phi = rel(n, phi, rphi), ref_force = force_err(n, q, field, rfield);
    } else if (!strcmp(refkind, "direct")) {
        if ((rc = fmm_direct_cuda(n, xyz, q, rphi, rfield, &direct_ms))) die("GPU direct sum", rc);
        ref_phi = rel(n, phi, rphi), ref_force = force_err(n, q, field, rfield);
    } else if (!strcmp(refkind, "sample")) {
        long m = sample < n ? sample : n, *idx = malloc(sizeof(long) * m);
        double *sp = malloc(sizeof(double) * m), *sf = malloc(sizeof(double) * 3 * m);
        double *gp_ = malloc(sizeof(double) * m), *gf = malloc(sizeof(double) * 3 * m), *sq = malloc(sizeof(double) * m);
        for (long i = 0; i < m; ++i) idx[i] = (long)((double)i * n / m);
        if ((rc = fmm_direct_targets(n, xyz, q, m, idx, sp, sf, 0))) die("sampled direct sum", rc);
        for (long i = 0; i < m; ++i) {
            gp_[i] = phi[idx[i]], sq[i] = q[idx[i]];
            for (int d = 0; d < 3; ++d) gf[3 * i + d] = field[3 * idx[i] + d];
        }
        ref_phi = rel(m, gp_, sp), ref_force = force_err(m, sq, gf, sf);
        free(idx), free(sp), free(sf), free(gp_), free(gf), free(sq);
    }
    if (!periodic && isnan(direct_ms) && n <= 4000000) {
        if ((rc = fmm_direct_cuda(n, xyz, q, NULL, NULL, &direct_ms))) die("GPU direct sum", rc);
    }
    printf("%s,%ld,%d,%d,%d,%s,%.4f,%.4f,%.1f,%.4f,%d,%.3e,%.3e,%.3e,%s,%.3e,%.3e,%.10e,%.3f,", label, n, periodic,
           info.order, info.depth, o.precision == FMM_PRECISION_MIXED ? "mixed" : "double", ms[reps / 2], ms[0], n / (ms[reps / 2] * 1e-3) / 1e6, cpu_s,
           cpu_threads ? cpu_threads : omp_get_max_threads(), rp, rf, re, refkind, ref_phi, ref_force, eg, direct_ms);
    for (int s = 0; s < 8; ++s) printf("%.4f%s", st[s], s < 7 ? ";" : ",");
    printf("%.3e,%.4f,%.4f,%.4f,%.4f,%.4f\n", rv, call_ms[0], call_ms[1], call_ms[2], route_ms,
           route_host_ms);
    fflush(stdout);
    free(xyz), free(q), free(x0), free(q0), free(phi), free(field), free(ms), free(rphi), free(rfield);
    return 0;
}

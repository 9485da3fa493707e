/* lfmm3d_driver.c - times FMM3D's Laplace FMM on an `x y z q` file, as `fmm coulomb` reads it.
 *
 * Usage: fmm3d_lfmm3d --in FILE --eps EPS [--out FILE] [--repeat R]
 *
 * Reads the particles (one `x y z q` per line; blank lines and lines starting with '#' are
 * skipped), calls FMM3D's lfmm3d_s_c_g (charges at the sources, potential and gradient at the
 * sources) R times and prints `key value` lines on stdout: n, eps, threads (OpenMP's maximum,
 * set by OMP_NUM_THREADS), time_s (the fastest call; only the lfmm3d call is timed), times_s
 * (every call, comma-separated), cpu_s (the process's CPU time during the fastest call: about
 * threads x time_s when every thread works), energy (1/2 sum q phi) and fmm3d_ier. With --out,
 * writes the results of the last call as raw little-endian doubles, n rows of (phi, Ex, Ey, Ez) in
 * this project's convention: FMM3D computes u = sum q / (4 pi r), so phi = 4 pi u and E = -4 pi
 * grad u. Built by bench/fmm3d/build.sh against FMM3D's library; used by bench/fmm3d_compare.py.
 * Exit status: 0 on success, 1 on FMM3D's error (ier != 0), 2 on bad input or I/O failure.
 */
#define _POSIX_C_SOURCE 200809L /* clock_gettime */
#include <errno.h>
#include <math.h>
#include <omp.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "lfmm3d_c.h"

static int fail(const char *fmt, const char *arg) {
    fprintf(stderr, "fmm3d_lfmm3d: ");
    fprintf(stderr, fmt, arg);
    fputc('\n', stderr);
    return 2;
}

static double cpu_seconds(void) {
    struct timespec ts;
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

/* Reads `x y z q` lines into src (3 x n, FMM3D's layout) and q; returns 0 or an exit status. */
static int read_particles(const char *path, double **src_out, double **q_out, int64_t *n_out) {
    FILE *f = fopen(path, "r");
    if (!f) return fail("cannot open %s", path);
    size_t cap = 1 << 16, n = 0, lineno = 0;
    double *src = malloc(3 * cap * sizeof *src), *q = malloc(cap * sizeof *q);
    char line[512];
    int rc = 0, oom = !src || !q;
    while (!rc && !oom && fgets(line, sizeof line, f)) {
        ++lineno;
        const char *s = line + strspn(line, " \t\r\n");
        if (*s == '\0' || *s == '#') continue;
        if (n == cap) {
            cap *= 2;
            double *s2 = realloc(src, 3 * cap * sizeof *src), *q2 = realloc(q, cap * sizeof *q);
            if (s2) src = s2;
            if (q2) q = q2;
            oom = !s2 || !q2;
            if (oom) break;
        }
        double v[4];
        char *end = (char *)s;
        for (int k = 0; k < 4 && !rc; ++k) {
            errno = 0;
            char *p = end;
            v[k] = strtod(p, &end);
            if (end == p || errno == ERANGE || !isfinite(v[k])) rc = 2;
        }
        if (rc) {
            fprintf(stderr, "fmm3d_lfmm3d: %s:%zu: expected four numbers x y z q\n", path, lineno);
            break;
        }
        for (int k = 0; k < 3; ++k) src[3 * n + k] = v[k];
        q[n++] = v[3];
    }
    if (!rc && oom) rc = fail("out of memory reading %s", path);
    if (!rc && ferror(f)) rc = fail("read error on %s", path);
    if (!rc && n == 0) rc = fail("no particles in %s", path);
    fclose(f);
    if (rc) {
        free(src);
        free(q);
        return rc;
    }
    *src_out = src;
    *q_out = q;
    *n_out = (int64_t)n;
    return 0;
}

int main(int argc, char **argv) {
    const char *in = NULL, *out = NULL;
    double eps = 0.0;
    long repeat = 1;
    for (int i = 1; i < argc; ++i) {
        const char *a = argv[i];
        if (i + 1 >= argc) return fail("option %s needs a value", a);
        char *end;
        if (!strcmp(a, "--in")) {
            in = argv[++i];
        } else if (!strcmp(a, "--out")) {
            out = argv[++i];
        } else if (!strcmp(a, "--eps")) {
            eps = strtod(argv[++i], &end);
            if (*end || !(eps > 0.0 && eps < 1.0))
                return fail("--eps must be in (0, 1): %s", argv[i]);
        } else if (!strcmp(a, "--repeat")) {
            repeat = strtol(argv[++i], &end, 10);
            if (*end || repeat < 1 || repeat > 1000)
                return fail("--repeat must be 1..1000: %s", argv[i]);
        } else {
            return fail("unknown option %s (usage: --in FILE --eps EPS [--out FILE] [--repeat R])",
                        a);
        }
    }
    if (!in || eps == 0.0)
        return fail("%s", "usage: fmm3d_lfmm3d --in FILE --eps EPS [--out FILE] [--repeat R]");

    double *src = NULL, *q = NULL;
    int64_t n = 0;
    int rc = read_particles(in, &src, &q, &n);
    if (rc) return rc;
    double *pot = malloc((size_t)n * sizeof *pot), *grad = malloc(3 * (size_t)n * sizeof *grad);
    if (!pot || !grad) return fail("%s", "out of memory for the results");
    FILE *f = out ? fopen(out, "wb") : NULL; /* opened first: a bad path fails before the FMM */
    if (out && !f) return fail("cannot open %s for writing", out);

    printf("n %lld\neps %.17g\nthreads %d\n", (long long)n, eps, omp_get_max_threads());
    double best = INFINITY, best_cpu = 0.0;
    int64_t ier = 0;
    printf("times_s ");
    for (long r = 0; r < repeat && ier == 0; ++r) {
        double c0 = cpu_seconds(), t0 = omp_get_wtime();
        lfmm3d_s_c_g_(&eps, &n, src, q, pot, grad, &ier);
        double t = omp_get_wtime() - t0, c = cpu_seconds() - c0;
        printf("%s%.6f", r ? "," : "", t);
        if (t < best) best = t, best_cpu = c;
    }
    printf("\nfmm3d_ier %lld\n", (long long)ier);
    if (ier != 0) {
        fprintf(stderr, "fmm3d_lfmm3d: lfmm3d_s_c_g returned ier=%lld (4 or 8: out of memory)\n",
                (long long)ier);
        return 1;
    }
    const double four_pi = 4.0 * acos(-1.0);
    double energy = 0.0;
    for (int64_t i = 0; i < n; ++i) energy += 0.5 * q[i] * four_pi * pot[i];
    printf("time_s %.6f\ncpu_s %.6f\nenergy %.17g\n", best, best_cpu, energy);

    if (f) {
        int ok = 1;
        for (int64_t i = 0; i < n && ok; ++i) {
            double row[4] = {four_pi * pot[i], -four_pi * grad[3 * i], -four_pi * grad[3 * i + 1],
                             -four_pi * grad[3 * i + 2]};
            ok = fwrite(row, sizeof row, 1, f) == 1;
        }
        if (fclose(f) != 0) ok = 0;
        if (!ok) return fail("write error on %s", out);
    }
    free(src);
    free(q);
    free(pot);
    free(grad);
    return 0;
}

/* bench/periodic_cells_cpu.c - the periodic FMM on the CPU in a cell of N atoms at water density
 * (random positions, 100.2 atoms per nm^3, water-like charges): times of fmm_makeplan_cell,
 * fmm_setpts (twice: the second one finds the image operators of the first, as an MD step does),
 * the first fmm_execute and the median and the minimum of REPS more, in wall-clock seconds, and
 * the minimum in processor seconds of the process (cpu: the steadier figure on a shared machine
 * with one thread; the sum over the threads with several).
 *
 *   gcc -O2 -fopenmp -Iinclude bench/periodic_cells_cpu.c -o pcb build/libfmm.a -lm
 *   ./pcb CELL N TOL [VIRIAL [REPS]]
 *
 * CELL: cube, dodecahedron (GROMACS's xy-square rhombic dodecahedron), octahedron (truncated
 * octahedron) or rect13 (a 1:1:3 brick). Results: bench/results/periodic_cells_cpu.txt. */
#include <math.h>
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "fmm.h"

static int cmp(const void *a, const void *b) {
    const double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

int main(int argc, char **argv) {
    if (argc < 4) {
        fprintf(stderr, "usage: %s cube|dodecahedron|octahedron|rect13 N TOL [VIRIAL [REPS]]\n",
                argv[0]);
        return 2;
    }
    const char *cell = argv[1];
    const long n = atol(argv[2]);
    const double tol = atof(argv[3]);
    const int vir = argc > 4 ? atoi(argv[4]) : 0, reps = argc > 5 ? atoi(argv[5]) : 5;
    const double s2 = sqrt(2.0), s3 = sqrt(3.0), s6 = sqrt(6.0);
    /* the rows a, b, c for an image distance (cube edge) d = 1, and the cell's volume */
    double h[9] = {1, 0, 0, 0, 1, 0, 0, 0, 1}, v = 1;
    if (!strcmp(cell, "dodecahedron")) {
        const double r[9] = {1, 0, 0, 0, 1, 0, 0.5, 0.5, s2 / 2};
        memcpy(h, r, sizeof h), v = s2 / 2;
    } else if (!strcmp(cell, "octahedron")) {
        const double r[9] = {1, 0, 0, 1.0 / 3, 2 * s2 / 3, 0, -1.0 / 3, s2 / 3, s6 / 3};
        memcpy(h, r, sizeof h), v = 4 * s3 / 9;
    } else if (!strcmp(cell, "rect13")) {
        h[8] = 3, v = 3;
    } else if (strcmp(cell, "cube")) {
        fprintf(stderr, "unknown cell %s\n", cell);
        return 2;
    }
    const double d = cbrt(n / 100.2 / v);
    for (int k = 0; k < 9; ++k) h[k] *= d;
    double *x = malloc(sizeof(double) * 3 * n), *q = malloc(sizeof(double) * n);
    double *phi = malloc(sizeof(double) * n), *f = malloc(sizeof(double) * 3 * n);
    double *t = malloc(sizeof(double) * (reps + 1)), cpu = INFINITY;
    srand(1);
    for (long i = 0; i < n; ++i) {
        /* uniform in the cell: fractional coordinates times the rows */
        double s[3];
        for (int k = 0; k < 3; ++k) s[k] = rand() / (RAND_MAX + 1.0);
        for (int k = 0; k < 3; ++k) x[3 * i + k] = s[0] * h[k] + s[1] * h[3 + k] + s[2] * h[6 + k];
        q[i] = (i % 3 == 0) ? -0.8476 : 0.4238;
    }
    fmm_opts o;
    fmm_default_opts(&o);
    o.periodic = 1;
    o.tolerance = tol;
    fmm_plan *p;
    double U, W[9];
    double t0 = omp_get_wtime();
    int rc = fmm_makeplan_cell(&o, h, &p);
    double t1 = omp_get_wtime();
    rc |= fmm_setpts(p, n, x);
    double t2 = omp_get_wtime();
    rc |= fmm_setpts(p, n, x);
    double t3 = omp_get_wtime();
    rc |= fmm_execute(p, q, phi, f, &U, vir ? W : NULL);
    double t4 = omp_get_wtime();
    for (int r = 0; r < reps; ++r) {
        const double a = omp_get_wtime();
        const clock_t c = clock();
        rc |= fmm_execute(p, q, phi, f, &U, vir ? W : NULL);
        t[r] = omp_get_wtime() - a;
        cpu = fmin(cpu, (double)(clock() - c) / CLOCKS_PER_SEC);
    }
    qsort(t, reps, sizeof(double), cmp);
    fmm_info in;
    fmm_get_info(p, &in);
    printf("%-12s n %7ld tol %.0e rc %d p %2d depth %d images %2d: plan %.3f setpts %.3f again "
           "%.3f exec1 %.3f exec %.3f min %.3f cpu %.3f\n",
           cell, n, tol, rc, in.order, in.depth, in.images, t1 - t0, t2 - t1, t3 - t2, t4 - t3,
           reps > 0 ? t[reps / 2] : 0.0, reps > 0 ? t[0] : 0.0, cpu);
    fmm_destroy(p);
    free(x), free(q), free(phi), free(f), free(t);
    return rc != 0;
}

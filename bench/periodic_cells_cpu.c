/* bench/periodic_cells_cpu.c - the periodic FMM on the CPU in a rhombic dodecahedron against a
 * cube of about the same N (random positions at water density, 100.2 atoms per nm^3, water-like
 * charges): times of fmm_makeplan_cell, fmm_setpts and two fmm_execute calls.
 *
 *   gcc -O2 -fopenmp -Iinclude -I. bench/periodic_cells_cpu.c -o pcb build/libfmm.a -lm
 *   ./pcb D TOL VIRIAL [cube]     (D: the cell's edge in nm; the cube's edge with "cube")
 *
 * Results: bench/results/periodic_cells_cpu.txt. */
#include <stdio.h>
#include <stdlib.h>
#include <math.h>
#include <omp.h>
#include "fmm.h"
int main(int argc, char **argv) {
    double d = argc > 1 ? atof(argv[1]) : 2.0, tol = argc > 2 ? atof(argv[2]) : 1e-7;
    int vir = argc > 3 ? atoi(argv[3]) : 1;
    double h[9] = {d, 0, 0, 0, d, 0, d / 2, d / 2, d * sqrt(2) / 2};
    if (argc > 4) {
        h[6] = h[7] = 0;
        h[8] = d;
    } /* cube */
    long n = (long)(100.2 * h[0] * h[4] * h[8]);
    double *x = malloc(24 * n), *q = malloc(8 * n), *phi = malloc(8 * n), *f = malloc(24 * n);
    srand(1);
    for (long i = 0; i < n; ++i) {
        for (int k = 0; k < 3; ++k) x[3 * i + k] = h[4 * k] * rand() / (double)RAND_MAX;
        q[i] = (i % 3 == 0) ? -0.8476 : 0.4238;
    }
    fmm_opts o;
    fmm_default_opts(&o);
    o.periodic = 1;
    o.tolerance = tol;
    fmm_plan *p;
    double t0 = omp_get_wtime();
    int rc = fmm_makeplan_cell(&o, h, &p);
    double t1 = omp_get_wtime();
    rc |= fmm_setpts(p, n, x);
    double t2 = omp_get_wtime();
    double U, W[9];
    rc |= fmm_execute(p, q, phi, f, &U, vir ? W : NULL);
    double t3 = omp_get_wtime();
    rc |= fmm_execute(p, q, phi, f, &U, vir ? W : NULL);
    double t4 = omp_get_wtime();
    fmm_info in;
    fmm_get_info(p, &in);
    printf("n %ld rc %d p %d depth %d boxes %ld images %d: plan %.3f setpts %.3f exec1 %.3f exec2 "
           "%.3f\n",
           n, rc, in.order, in.depth, in.nboxes, in.images, t1 - t0, t2 - t1, t3 - t2, t4 - t3);
    fmm_destroy(p);
}

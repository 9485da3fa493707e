/* The cost of the far-field table of a periodic cell (pbc/cell_table.h), recomputed whenever the
 * box changes shape under pressure coupling: median time of one table (L <= 2p), and of the table
 * with its strain tables (the virial), for several cells and orders. One thread.
 *
 *   gcc -O2 -march=native -I include -I . bench/cell_table_cost.c build/libfmm.a -lm -fopenmp \
 *       -o cell_table_cost && ./cell_table_cost [repeats]
 *
 * Results: bench/results/cell_table_cost.txt. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "core/harmonics.h"
#include "fmm.h"
#include "pbc/cell.h"
#include "pbc/cell_table.h"

static double now(void) {
    struct timespec t;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
    return t.tv_sec + 1e-9 * t.tv_nsec;
}

static int cmp(const void *a, const void *b) {
    const double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* median CPU time (ms, this thread) of `reps` tables, with or without the strain tables */
static double median_ms(const pbc_cell *c, const int *near, int nnear, int lmax, int strain,
                        int reps, double *buf) {
    const int n = harm_ncoef(lmax);
    double t[64];
    for (int r = 0; r < reps; ++r) {
        const double t0 = now();
        const int rc =
            pbc_cell_far_table(c, near, nnear, lmax, buf, buf + n, strain ? buf + 2 * n : NULL,
                               strain ? buf + 11 * n : NULL);
        t[r] = 1e3 * (now() - t0);
        if (rc) {
            fprintf(stderr, "pbc_cell_far_table: %s\n", fmm_strerror(rc));
            exit(1);
        }
    }
    qsort(t, (size_t)reps, sizeof(double), cmp);
    return t[reps / 2];
}

int main(int argc, char **argv) {
    const int reps = argc > 1 ? atoi(argv[1]) : 7;
    if (reps < 1 || reps > 64) return 1;
    const double s2 = sqrt(2.0), s6 = sqrt(6.0);
    const struct {
        const char *name;
        double h[9];
    } cells[] = {
        {"cube", {1, 0, 0, 0, 1, 0, 0, 0, 1}},
        {"rect 1:1:3", {1, 0, 0, 0, 1, 0, 0, 0, 3}},
        {"dodecahedron", {1, 0, 0, 0, 1, 0, 0.5, 0.5, s2 / 2}},
        {"octahedron", {1, 0, 0, 1.0 / 3, 2 * s2 / 3, 0, -1.0 / 3, s2 / 3, s6 / 3}},
        {"random A",
         {0.8207136115230598, 0, 0, -0.38681134608957596, 1.0246028243420633, 0,
          -0.28895185464950046, 0.4387462235395987, 1.0808240966928466}},
    };
    const int orders[] = {7, 12, 20, 50};
    double *buf = malloc(sizeof(double) * 20 * (size_t)harm_ncoef(100));
    if (!buf) return 1;
    printf("# median of %d, CPU ms of the calling thread: table (L <= 2p) | table + strain tables\n", reps);
    printf("%-14s %4s", "cell", "|N|");
    for (int k = 0; k < 4; ++k) printf("   p=%-2d table  +strain", orders[k]);
    printf("\n");
    for (size_t c = 0; c < sizeof cells / sizeof *cells; ++c) {
        pbc_cell cell;
        if (pbc_cell_init(&cell, cells[c].h)) return 1;
        const double r = 2 * pbc_cell_brick_radius(&cell) / (sqrt(3.0) / 2);
        const int nn = pbc_cell_near_set(&cell, r, NULL, 0);
        int *near = malloc(sizeof(int) * 3 * (size_t)nn);
        if (!near) return 1;
        pbc_cell_near_set(&cell, r, near, nn);
        printf("%-14s %4d", cells[c].name, nn);
        for (int k = 0; k < 4; ++k) {
            const int lmax = 2 * orders[k], rp = orders[k] > 20 ? 3 : reps;
            printf("   %9.2f %8.2f", median_ms(&cell, near, nn, lmax, 0, rp, buf),
                   median_ms(&cell, near, nn, lmax, 1, rp, buf));
            fflush(stdout);
        }
        printf("\n");
        free(near);
    }
    free(buf);
    return 0;
}

/* Prints pbc_cell_far_table's A_LM (even L, M >= 0) for a cell given as nine numbers (rows a, b, c)
 * and lmax, one "L M re im" line each: the input of cell_table_mp.py's comparison.
 *   gcc -O2 -I include -I . docs/checks/cell_table_dump.c build/libfmm.a -lm -fopenmp \
 *       -o cell_table_dump && ./cell_table_dump 1 0 0 0 1 0 0 0 3 40 > c.txt */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#include "core/harmonics.h"
#include "fmm.h"
#include "pbc/cell.h"
#include "pbc/cell_table.h"

int main(int argc, char **argv) {
    if (argc != 11) return 1;
    double h[9];
    for (int i = 0; i < 9; ++i) h[i] = atof(argv[1 + i]);
    const int lmax = atoi(argv[10]);
    pbc_cell cell;
    if (pbc_cell_init(&cell, h) || lmax < 0 || lmax > 2 * FMM_ORDER_MAX) return 1;
    const double r = 2 * pbc_cell_brick_radius(&cell) / (sqrt(3.0) / 2);
    const int nn = pbc_cell_near_set(&cell, r, NULL, 0);
    int *near = malloc(sizeof(int) * 3 * (size_t)nn);
    double *a = malloc(sizeof(double) * 2 * (size_t)harm_ncoef(lmax));
    if (!near || !a || pbc_cell_near_set(&cell, r, near, nn) != nn) return 1;
    const int rc = pbc_cell_far_table(&cell, near, nn, lmax, a, a + harm_ncoef(lmax), NULL, NULL);
    if (rc) {
        fprintf(stderr, "%s\n", fmm_strerror(rc));
        return 1;
    }
    for (int l = 0; l <= lmax; l += 2)
        for (int m = 0; m <= l; ++m)
            printf("%d %d %.17g %.17g\n", l, m, a[harm_full(l, m)],
                   a[harm_ncoef(lmax) + harm_full(l, m)]);
    free(near), free(a);
    return 0;
}

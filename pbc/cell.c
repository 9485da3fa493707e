#include "pbc/cell.h"

#include <math.h>

#include "core/mathconst.h"
#include "fmm.h"

static void reciprocal(pbc_cell *c) {
    const double *h = c->h;
    /* h is lower triangular: its inverse is too, and g = 2 pi h^-T is upper triangular */
    const double ax = h[0], bx = h[3], by = h[4], cx = h[6], cy = h[7], cz = h[8];
    const double i00 = 1 / ax, i11 = 1 / by, i22 = 1 / cz;
    const double i10 = -bx / (ax * by), i21 = -cy / (by * cz);
    const double i20 = (bx * cy - by * cx) / (ax * by * cz);
    /* inverse (row-major): [[i00,0,0],[i10,i11,0],[i20,i21,i22]]; g = 2 pi transpose */
    const double t = 2 * FMM_PI;
    const double g[9] = {t * i00, t * i10, t * i20, 0, t * i11, t * i21, 0, 0, t * i22};
    for (int k = 0; k < 9; ++k) c->g[k] = g[k];
}

int pbc_cell_init(pbc_cell *cell, const double h[9]) {
    if (!cell || !h) return FMM_ERR_ARG;
    for (int k = 0; k < 9; ++k)
        if (!isfinite(h[k])) return FMM_ERR_BOX;
    if (h[1] != 0 || h[2] != 0 || h[5] != 0) return FMM_ERR_BOX;
    const double ax = h[0], bx = h[3], by = h[4], cx = h[6], cy = h[7], cz = h[8];
    if (!(ax > 0 && by > 0 && cz > 0)) return FMM_ERR_BOX;
    if (fabs(bx) > PBC_SKEW_MARGIN * 0.5 * ax || fabs(cx) > PBC_SKEW_MARGIN * 0.5 * ax ||
        fabs(cy) > PBC_SKEW_MARGIN * 0.5 * by)
        return FMM_ERR_BOX;
    for (int k = 0; k < 9; ++k) cell->h[k] = h[k];
    cell->volume = ax * by * cz;
    if (!(cell->volume > 0 && isfinite(cell->volume))) return FMM_ERR_BOX;
    cell->rect = bx == 0 && cx == 0 && cy == 0;
    cell->cube = cell->rect && ax == by && by == cz;
    reciprocal(cell);
    return FMM_OK;
}

int pbc_cell_rect(pbc_cell *cell, const double edges[3]) {
    if (!edges) return FMM_ERR_ARG;
    const double h[9] = {edges[0], 0, 0, 0, edges[1], 0, 0, 0, edges[2]};
    return pbc_cell_init(cell, h);
}

/* x - n r with n = floor(x_d / r_d) along one axis d, then the same lattice vector r applied to
 * the lower axes; the rounding of floor can leave x_d == r_d, which the second pass moves. */
static void wrap_axis(const double *r, int d, double x[3]) {
    for (int pass = 0; pass < 2; ++pass) {
        const double n = floor(x[d] / r[d]);
        if (n == 0) break;
        for (int e = 0; e <= d; ++e) x[e] -= n * r[e];
    }
    if (x[d] >= r[d]) x[d] = nextafter(r[d], 0); /* rounding at the upper edge only */
}

void pbc_cell_wrap(const pbc_cell *cell, double x[3]) {
    wrap_axis(cell->h + 6, 2, x);
    wrap_axis(cell->h + 3, 1, x);
    wrap_axis(cell->h + 0, 0, x);
}

void pbc_cell_vector(const pbc_cell *cell, const int n[3], double R[3]) {
    for (int d = 0; d < 3; ++d)
        R[d] = n[0] * cell->h[d] + n[1] * cell->h[3 + d] + n[2] * cell->h[6 + d];
}

int pbc_cell_near_set(const pbc_cell *cell, double radius, int *n, int max) {
    if (!(radius > 0 && isfinite(radius))) return -1;
    /* |n h| >= |n_d| / |g_d| (2 pi) for every d bounds the search box of n */
    int lim[3];
    for (int d = 0; d < 3; ++d) {
        const double *gd = cell->g + 3 * d; /* column d of h^-T times 2 pi: row d of g */
        const double gn = sqrt(gd[0] * gd[0] + gd[1] * gd[1] + gd[2] * gd[2]);
        lim[d] = (int)ceil(radius * gn / (2 * FMM_PI));
    }
    int count = 0;
    for (int k = -lim[2]; k <= lim[2]; ++k)
        for (int j = -lim[1]; j <= lim[1]; ++j)
            for (int i = -lim[0]; i <= lim[0]; ++i) {
                const int m[3] = {i, j, k};
                double R[3];
                pbc_cell_vector(cell, m, R);
                if (R[0] * R[0] + R[1] * R[1] + R[2] * R[2] >= radius * radius) continue;
                if (count < max)
                    for (int d = 0; d < 3; ++d) n[3 * count + d] = m[d];
                ++count;
            }
    return count;
}

double pbc_cell_brick_radius(const pbc_cell *cell) {
    const double ax = cell->h[0], by = cell->h[4], cz = cell->h[8];
    return 0.5 * sqrt(ax * ax + by * by + cz * cz);
}

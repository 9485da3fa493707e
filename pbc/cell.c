#include "pbc/cell.h"

#include <math.h>
#include <stdlib.h>

#include "core/mathconst.h"
#include "fmm_common.h"

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
        const double m = ceil(radius * gn / (2 * FMM_PI));
        if (!(m < PBC_SEARCH_MAX)) return -1; /* a cell far thinner than the radius */
        lim[d] = (int)m;
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

/* The n with |n h - y| < reach for some y in the centred brick of half-widths half (zero: the
 * origin alone), visited through the triangular form: n_z from the z extent, then n_y given n_z,
 * then n_x given both, each range widened by one against the rounding of its bounds and every
 * candidate tested exactly. Stores up to max of them in n (NULL: none) and the shortest nonzero
 * |n h| in *shortest (NULL: not wanted); returns the count, or -1 beyond PBC_SEARCH_MAX visits. */
static long brick_search(const pbc_cell *cell, const double half[3], double reach, int *n, long max,
                         double *shortest) {
    const double *h = cell->h, ax = h[0], bx = h[3], by = h[4], cx = h[6], cy = h[7], cz = h[8];
    const double wz = half[2] + reach, wy = half[1] + reach, wx = half[0] + reach;
    long count = 0, visits = 0;
    if (!(wz / cz < PBC_SEARCH_MAX && wy / by < PBC_SEARCH_MAX && wx / ax < PBC_SEARCH_MAX))
        return -1;
    const long kz = (long)floor(wz / cz) + 1;
    for (long k = -kz; k <= kz; ++k) {
        const double z = k * cz, oy = k * cy;
        const long j0 = (long)ceil((-wy - oy) / by) - 1, j1 = (long)floor((wy - oy) / by) + 1;
        if ((visits += j1 - j0 + 1) > PBC_SEARCH_MAX) return -1;
        for (long j = j0; j <= j1; ++j) {
            const double y = j * by + oy, ox = j * bx + k * cx;
            const long i0 = (long)ceil((-wx - ox) / ax) - 1, i1 = (long)floor((wx - ox) / ax) + 1;
            if ((visits += i1 - i0 + 1) > PBC_SEARCH_MAX) return -1;
            for (long i = i0; i <= i1; ++i) {
                const double R[3] = {i * ax + ox, y, z};
                double d2 = 0, r2 = 0;
                for (int d = 0; d < 3; ++d) {
                    const double e = fmax(fabs(R[d]) - half[d], 0.0);
                    d2 += e * e, r2 += R[d] * R[d];
                }
                if (!(d2 < reach * reach)) continue;
                if (shortest && (i || j || k) && sqrt(r2) < *shortest) *shortest = sqrt(r2);
                if (n && count < max) {
                    n[3 * count] = (int)i, n[3 * count + 1] = (int)j, n[3 * count + 2] = (int)k;
                }
                ++count;
            }
        }
    }
    return count;
}

double pbc_cell_shortest(const pbc_cell *cell) {
    const double *h = cell->h, zero[3] = {0, 0, 0};
    double s = h[0]; /* the rows bound it; the search over the ball of the shortest row finds it */
    for (int r = 1; r < 3; ++r)
        s = fmin(s, sqrt(h[3 * r] * h[3 * r] + h[3 * r + 1] * h[3 * r + 1] +
                         h[3 * r + 2] * h[3 * r + 2]));
    return brick_search(cell, zero, s, NULL, 0, &s) < 0 ? -1 : s;
}

long pbc_cell_brick_shifts(const pbc_cell *cell, double reach, int *n, long max) {
    if (!(reach > 0 && isfinite(reach))) return -1;
    const double half[3] = {0.5 * cell->h[0], 0.5 * cell->h[4], 0.5 * cell->h[8]};
    return brick_search(cell, half, reach, n, max, NULL);
}

int pbc_min_image_init(pbc_min_image *mi, const pbc_cell *cell) {
    for (int k = 0; k < 9; ++k) mi->h[k] = cell->h[k];
    for (int d = 0; d < 3; ++d) mi->inv[d] = 1 / cell->h[4 * d];
    /* the reach passes the brick's radius by far more than the rounding of the centring */
    const double reach = pbc_cell_brick_radius(cell) * (1 + 0x1p-30);
    mi->shift = NULL;
    mi->ns = pbc_cell_brick_shifts(cell, reach, NULL, 0);
    int *n = mi->ns > 0 ? malloc(sizeof(int) * 3 * (size_t)mi->ns) : NULL;
    mi->shift = n ? malloc(sizeof(double) * 3 * (size_t)mi->ns) : NULL;
    if (!mi->shift) {
        free(n);
        mi->ns = 0;
        return FMM_ERR_NOMEM;
    }
    pbc_cell_brick_shifts(cell, reach, n, mi->ns);
    for (long s = 0; s < mi->ns; ++s) pbc_cell_vector(cell, n + 3 * s, mi->shift + 3 * s);
    free(n);
    return FMM_OK;
}

void pbc_min_image_free(pbc_min_image *mi) {
    free(mi->shift);
    mi->shift = NULL;
    mi->ns = 0;
}

void pbc_min_image_apply(const pbc_min_image *mi, double r[3]) {
    pbc_cell_centre(mi->h, mi->inv, r);
    double best[3] = {r[0], r[1], r[2]}, b2 = r[0] * r[0] + r[1] * r[1] + r[2] * r[2];
    for (long s = 0; s < mi->ns; ++s) {
        const double *R = mi->shift + 3 * s, v[3] = {r[0] + R[0], r[1] + R[1], r[2] + R[2]};
        const double v2 = v[0] * v[0] + v[1] * v[1] + v[2] * v[2];
        if (v2 < b2) b2 = v2, best[0] = v[0], best[1] = v[1], best[2] = v[2];
    }
    r[0] = best[0], r[1] = best[1], r[2] = best[2];
}

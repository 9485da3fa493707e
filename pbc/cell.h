/* pbc/cell.h - periodic cells in GROMACS's convention (docs/periodic-cells.md): the lattice vectors
 * are the rows a = (ax, 0, 0), b = (bx, by, 0), c = (cx, cy, cz) of h, with ax, by, cz > 0 and
 * |bx| <= ax/2, |cx| <= ax/2, |cy| <= by/2 (GROMACS's own margin allowed: a factor 1.005, the one
 * its check_box accepts). Lattice vectors are R = n h for integer triples n. Positions are wrapped
 * into the brick [0,ax) x [0,by) x [0,cz), a fundamental domain of every such lattice. */
#ifndef FMM_PBC_CELL_H
#define FMM_PBC_CELL_H

#include <math.h>

#ifdef __cplusplus
extern "C" {
#endif

/* GROMACS's skewness limit with its margin for warnings (pbcutil/pbc.cpp: 1.001 + 0.004). */
#define PBC_SKEW_MARGIN 1.005

typedef struct pbc_cell {
    double h[9];   /* rows a, b, c (row-major) */
    double g[9];   /* rows of 2 pi h^-T: the reciprocal basis, k = m g for integer m */
    double volume; /* ax by cz */
    int rect;      /* off-diagonal entries zero: a rectangular brick */
    int cube;      /* rectangular with ax == by == cz */
} pbc_cell;

/* Checks and fills a cell from h (rows a, b, c): FMM_ERR_BOX unless every entry is finite, the
 * upper entries (a_y, a_z, b_z) are zero, ax, by, cz > 0 and the off-diagonals are within the
 * limits above. FMM_OK otherwise. */
int pbc_cell_init(pbc_cell *cell, const double h[9]);

/* A rectangular cell from three edges (FMM_ERR_BOX unless finite and > 0). */
int pbc_cell_rect(pbc_cell *cell, const double edges[3]);

/* x (3) moved by a lattice vector into the brick [0,ax) x [0,by) x [0,cz): z by c first, then y by
 * b, then x by a. Exact lattice shifts: the result differs from x by n h for integer n. */
void pbc_cell_wrap(const pbc_cell *cell, double x[3]);

/* R = n h for the integer triple n. */
void pbc_cell_vector(const pbc_cell *cell, const int n[3], double R[3]);

/* The near set of docs/periodic-cells.md: every n (n = 0 included) with |n h| < radius, in order of
 * n (z slowest), written to n[3 * k + d] for k < max. Returns the count (which may exceed max:
 * call again with room for it), or -1 for a radius that is not finite and positive or a search
 * beyond PBC_SEARCH_MAX along an axis. The set is
 * inversion-symmetric. */
int pbc_cell_near_set(const pbc_cell *cell, double radius, int *n, int max);

/* Half the brick's diagonal, sqrt(ax^2 + by^2 + cz^2) / 2: the radius of the root region about its
 * centre, from which the near set's radius 2 r / theta follows (fmm/images.h). */
double pbc_cell_brick_radius(const pbc_cell *cell);

/* The shortest nonzero lattice vector's length: at least min(ax, by, cz) (a vector with n_z != 0
 * has |z| >= cz, and so on down) and at most the shortest row. -1 if the search would visit more
 * than PBC_SEARCH_MAX lattice vectors (only a cell far thinner than it is wide). */
double pbc_cell_shortest(const pbc_cell *cell);

/* The lattice vectors that can move a point of the centred brick |y_d| <= h_dd / 2 to within
 * `reach` of the origin: every n with |n h - y| < reach for some y in that brick, in order of n
 * (z slowest), written to n[3 * k + d] for k < max. Returns the count (call again with room for
 * it), or -1 for a reach that is not finite and positive or a search beyond PBC_SEARCH_MAX. A
 * difference of two points reduced into the centred brick has its images within `reach` among
 * these shifts; for a rectangular cell and reach <= min(ax, by, cz) / 2 that is n = 0 alone. */
long pbc_cell_brick_shifts(const pbc_cell *cell, double reach, int *n, long max);

/* r moved by lattice vectors into the centred brick |r_d| <= h_dd / 2 (up to rounding): by the
 * nearest whole number of c for z, then of b for y, then of a for x (h lower triangular); inv
 * holds 1 / h_dd. */
static inline void pbc_cell_centre(const double *h, const double inv[3], double r[3]) {
    const double k = nearbyint(r[2] * inv[2]);
    r[0] -= k * h[6], r[1] -= k * h[7], r[2] -= k * h[8];
    const double j = nearbyint(r[1] * inv[1]);
    r[0] -= j * h[3], r[1] -= j * h[4];
    r[0] -= nearbyint(r[0] * inv[0]) * h[0];
}

/* The minimum image of differences in a cell: the lattice shifts that hold the shortest image of
 * every difference centred into the brick (pbc_cell_brick_shifts with the brick's radius as
 * reach: the shortest image is no longer than the centred difference). */
typedef struct pbc_min_image {
    double h[9], inv[3];
    long ns;
    double *shift; /* [3 ns] */
} pbc_min_image;

/* FMM_OK, FMM_ERR_NOMEM (also for a search beyond PBC_SEARCH_MAX). */
int pbc_min_image_init(pbc_min_image *mi, const pbc_cell *cell);
void pbc_min_image_free(pbc_min_image *mi);

/* r (3) replaced by its shortest image r + n h (the first of equal length in the shifts' order). */
void pbc_min_image_apply(const pbc_min_image *mi, double r[3]);

/* The most lattice vectors pbc_cell_shortest and pbc_cell_brick_shifts visit. */
#define PBC_SEARCH_MAX (1L << 26)

#ifdef __cplusplus
}
#endif

#endif /* FMM_PBC_CELL_H */

/* Fuzz target: the Coulomb FMM's plan API (include/fmm.h) on up to NMAX charges, checked against
 * the direct sum (open boundary) or the Ewald sum (periodic). The bytes choose the options (some
 * out of range), a scale of the coordinates and of the charges, the charges and their positions,
 * excluded pairs and a second call on the same plan (layout below). Checks:
 *  - every status is one that include/fmm.h documents for that call, and an input that the
 *    header says is refused (NaN, coincident particles, n < 1, a particle outside the given box,
 *    an excluded pair i == i or twice, an excluded index >= n) gets exactly that status;
 *  - a result returned with FMM_OK is finite and as accurate as its order promises (below);
 *  - a plan whose fmm_setpts failed keeps its previous points, and the same call on the same
 *    plan gives bitwise the same outputs (one thread: the library promises repeatable sums).
 *
 * Accuracy criterion. fmm/accuracy.c holds the largest relative potential error measured at
 * each order p over realistic sets, err(p), and picks the lowest order with 3 err(p) <= the
 * tolerance. Fuzzed sets are adversarial (clusters at 48 scales, a lone charge beside them), so
 * the error is measured against a norm without cancellation: phi_abs_i = sum_j |q_j| / r_ij
 * (the potential of |q|, which bounds every multipole truncation error), its field analogue
 * sum_j |q_j| / r_ij^2 and U_abs = 1/2 sum_i |q_i| phi_abs_i for energy and virial. Periodic: over
 * minimum images, plus sum_j |q_j| / L (or / L^2) for the far images. The allowed relative
 * error is
 *     FACTOR * 3 err(p) (times p + 1 for field and virial, a derivative of the expansions)
 *   + ROUNDING * eps * extent / d_min + FLOOR,
 * with FACTOR 10: the table already holds the largest errors measured at each order, with a
 * margin of 3, and adversarial sets found by fuzzing stayed a factor 5 or more below the bound;
 * a missing or wrong interaction (a list entry, a translation's source) fires it, a slightly
 * low order in one part of the far field may not. The second term is the rounding of positions:
 * the inputs only carry eps * extent of absolute precision (extent: the largest coordinate
 * magnitude or span of the set, or L when periodic, where positions are wrapped), which in 1/r of
 * the closest pair d_min is a relative error eps * extent / d_min; nearly coincident charges
 * thus loosen the check instead of firing it. FLOOR (1e-11) covers the rounding of the sums and
 * of the Ewald reference, whose tolerance is 1e-3 3 err(p) (at least 1e-12). The scales reach
 * 2^+-990: an output whose size lies near or beyond the ends of the double range is not compared
 * but must be refused with FMM_ERR_RANGE where it cannot be represented, and FMM_ERR_RANGE must
 * not come for outputs well inside the range (check_result).
 *
 * Periodic cells: the cube (fmm_makeplan with one edge), rectangular bricks through fmm_makeplan
 * with three unequal edges, and triclinic cells within GROMACS's limits (pbc/cell.h, at and just
 * inside them) through fmm_makeplan_cell, against fmm_ewald_cell; minimum images (the excluded
 * pairs' terms, the norms) by a search over the lattice shifts around the centred difference.
 *
 * Byte layout: HEADER bytes (flags, tolerance, order, depth, leaf size, n, coordinate scale,
 * charge scale, box, second call, flags2, excluded pairs), then PER_POINT bytes per charge
 * (three 16-bit coordinates, a zoom level, the charge, the periodic image shifts). The box byte
 * holds the side (bits 0-2) and, with flags2 bit 1 (a periodic cell other than the cube), the
 * cell's shape (bits 3-5) and a variant of it (bits 6-7). */
#include "tests/fuzz/fuzz.h"

#include <float.h>
#include <math.h>

#include "fmm.h"
#include "fmm/accuracy.h"

enum { NMAX = 200, HEADER = 17, PER_POINT = 9, MAX_PAIRS = 3 };
static const double FACTOR = 10, ROUNDING = 1000, FLOOR = 1e-11;

typedef struct {
    fmm_opts o;
    int box_given; /* open boundary with a box passed to fmm_makeplan */
    double box[3]; /* the box passed (periodic or box_given), or the cell's diagonal */
    int cell;      /* periodic: 0 the cube, 1 three edges (fmm_makeplan), 2 fmm_makeplan_cell */
    double h[9];   /* periodic: the cell's rows a, b, c (a cube or brick: diagonal) */
    int k, m;      /* coordinates are unit * 2^k, charges unit * 2^m */
    long n;
    double *xyz, *q;
    int npairs, pairs[2 * MAX_PAIRS];
    int second; /* which second call (see second_call) */
    int want_phi, want_field, want_energy, want_virial;
} problem;

typedef struct {
    double *phi, *field, energy, virial[9];
} outputs;

/* The error that the library's table gives for order p (see the top): the smallest tolerance
 * for which fmm_order_for_tolerance picks p or less, i.e. 3 err(p). The highest order is
 * chosen for every tolerance below its neighbour's, so it gets its neighbour's value. */
static double table_error(int p, int periodic) {
    if (p >= FMM_ORDER_MAX) p = FMM_ORDER_MAX - 1;
    double lo = -40, hi = 5; /* log10 of the tolerance */
    for (int it = 0; it < 60; ++it) {
        double mid = 0.5 * (lo + hi);
        if (fmm_order_for_tolerance(pow(10, mid), periodic) <= p)
            hi = mid;
        else
            lo = mid;
    }
    return pow(10, hi);
}

/* ---------------------------------------------------------------- input */

/* Making a plan costs 0.04-2 s under the sanitizers at the orders allowed here (operators, and
 * for periodic boxes the lattice sums; the first periodic virial builds tables for up to 4 s
 * more), against milliseconds for the rest of a run, and up to a minute at order 44. So the
 * options come from short menus (orders up to 20 open, 8 periodic, the periodic virial up to
 * order 4; the high orders are the accuracy tests' part), and plans are kept across inputs
 * (plan_for). Out-of-range values are in the menus too. */
static const double tol_menu[16] = {1e-3, 3e-4, 1e-4, 3e-5,  1e-5,  1e-6,     1e-7,        5e-4,
                                    0,    NAN,  2e-3, 1e-13, -1e-6, INFINITY, FMM_TOL_MAX, 2e-4};
static const int order_special[6] = {0, 51, -1, 1000, -1000, 0};
static const int depth_special[6] = {-2, 21, 20, 12, -1000, 7};
static const int leaf_special[6] = {-1, 4097, 4096, 1, 2, 100000};
static const double side_menu[8] = {1, 0.75, 1.25, 1.5, 2, 4, 1024, 33554432};

/* The periodic cells other than the cube, rows a, b, c in units of the side: bricks (through
 * fmm_makeplan with three edges: 1:1.5:2, 1:1:3, flat 1:1:0.4) and triclinic cells (the rhombic
 * dodecahedron, the truncated octahedron, skewed at GROMACS's limits |bx|, |cx| <= ax/2,
 * |cy| <= by/2 and beyond them within its margin (1.004 of them; 1.005 allowed), a 2:1:1 cell); the
 * variant v (0..3) scales the off-diagonals by 1, -1, 1/2 or 0 (a cell given through
 * fmm_makeplan_cell that is a brick). */
static void cell_shape(int shape, int v, double u[9], int *through_cell) {
    const double r2 = sqrt(2.0), r6 = sqrt(6.0), lim = 0.5 * 1.004, f[4] = {1, -1, 0.5, 0};
    static const double bricks[3][3] = {{1, 1.5, 2}, {1, 1, 3}, {1, 1, 0.4}};
    memset(u, 0, 9 * sizeof(double));
    *through_cell = shape >= 3;
    if (shape < 3) {
        u[0] = bricks[shape][0], u[4] = bricks[shape][1], u[8] = bricks[shape][2];
        return;
    }
    const double tri[5][9] = {
        {1, 0, 0, 0, 1, 0, 0.5, 0.5, r2 / 2},                        /* dodecahedron */
        {1, 0, 0, 1 / 3.0, 2 * r2 / 3, 0, -1 / 3.0, r2 / 3, r6 / 3}, /* octahedron */
        {1, 0, 0, 0.5, 0.9, 0, -0.5, 0.45, 1.1},                     /* at the limits */
        {1, 0, 0, lim, 1, 0, -lim, lim, 1.2},                        /* within the margin */
        {2, 0, 0, 1, 1, 0, 0.3, -0.5, 1}};                           /* 2:1:1 skewed */
    memcpy(u, tri[shape - 3], 9 * sizeof(double));
    u[3] *= f[v], u[6] *= f[v], u[7] *= f[v];
}

static int parse(const uint8_t *data, size_t size, problem *P) {
    memset(P, 0, sizeof *P);
    if (size < HEADER + PER_POINT) return 0;
    fuzz_bytes b = {data, size};
    fmm_default_opts(&P->o);
    P->o.threads = 1;
    unsigned flags = fuzz_u8(&b);
    const int periodic = flags & 1;
    P->o.periodic = periodic;
    if (flags & 2) P->o.boundary = FMM_BOUNDARY_VACUUM;
    P->box_given = !periodic && (flags & 4);
    int excl = flags & 8;
    double tol = tol_menu[fuzz_u8(&b) % 16];
    if (periodic && tol >= FMM_TOL_MIN && tol < 1e-3) tol = 1e-3; /* order 7 */
    P->o.tolerance = tol;
    unsigned ob = fuzz_u8(&b), db = fuzz_u8(&b), lb = fuzz_u8(&b);
    if (flags & 64)
        P->o.order = ob >= 250 ? order_special[ob - 250] : 1 + (int)(ob % (periodic ? 8 : 20));
    /* leaves of 1 to 32 charges (0: the default, 128 or 200, one leaf for most sets here) */
    P->o.leaf_size = lb < 250 ? (int)(lb % 33) : leaf_special[lb - 250];
    if (flags & 128) P->o.depth = db < 250 ? (int)(db % 22) - 1 : depth_special[db - 250];
    P->want_virial = (flags & 16) && (!periodic || (P->o.order >= 1 && P->o.order <= 4));
    long n = 1 + fuzz_u8(&b) % NMAX;
    P->k = fuzz_scale(&b);
    P->m = fuzz_scale(&b);
    const unsigned sb = fuzz_u8(&b);
    const double side = side_menu[sb % 8];
    P->second = (int)fuzz_u8(&b);
    unsigned flags2 = fuzz_u8(&b);
    P->want_phi = !(flags2 & 8), P->want_field = !(flags2 & 16), P->want_energy = !(flags2 & 32);
    for (int d = 0; d < 3; ++d) P->box[d] = ldexp(side, P->k);
    /* open boundary: a box that is not a cube bounds the particles */
    if ((flags2 & 1) && !periodic) P->box[1] = ldexp(side * 1.5, P->k);
    if (periodic) {
        double u[9] = {1, 0, 0, 0, 1, 0, 0, 0, 1};
        int through_cell = 0;
        if (flags2 & 2) cell_shape((int)(sb >> 3) % 8, (int)(sb >> 6), u, &through_cell);
        P->cell = flags2 & 2 ? 1 + through_cell : 0;
        for (int e = 0; e < 9; ++e) P->h[e] = ldexp(side * u[e], P->k);
        for (int d = 0; d < 3; ++d) P->box[d] = P->h[4 * d];
    }
    unsigned pb[2 * MAX_PAIRS];
    for (int i = 0; i < 2 * MAX_PAIRS; ++i) pb[i] = fuzz_u8(&b);

    if ((long)(b.n / PER_POINT) < n) n = (long)(b.n / PER_POINT);
    P->n = n;
    P->xyz = malloc(sizeof(double) * 3 * (size_t)n);
    P->q = malloc(sizeof(double) * (size_t)n);
    if (!P->xyz || !P->q) return 0;
    for (long i = 0; i < n; ++i) {
        unsigned u[3] = {fuzz_u16(&b), fuzz_u16(&b), fuzz_u16(&b)};
        unsigned zoom = fuzz_u8(&b), qb = fuzz_u8(&b), shift = fuzz_u8(&b);
        /* around the centre of the unit cube, at one of 48 scales: deep adaptive trees; periodic:
           in another image too (a lattice vector of the cell away) */
        for (int d = 0; d < 3; ++d) P->xyz[3 * i + d] = ldexp(fuzz_coordinate(u[d], zoom), P->k);
        for (int r = 0; periodic && r < 3; ++r) {
            const int s = (int)((shift >> (2 * r)) & 3) - 1;
            for (int d = 0; d < 3; ++d) P->xyz[3 * i + d] += s * P->h[3 * r + d];
        }
        P->q[i] = ldexp((int8_t)qb / 16.0, P->m);
    }
    if (excl) {
        P->npairs = 1 + (int)(flags2 >> 6) % MAX_PAIRS;
        /* index n is out of range: execute must say FMM_ERR_NPTS */
        for (int i = 0; i < 2 * P->npairs; ++i) P->pairs[i] = (int)(pb[i] % (unsigned)(n + 1));
    }
    return 1;
}

/* Kept plans (see the menus above): a plan made with the same options and box or cell by an
 * earlier input is reused, with its excluded pairs cleared; the first fmm_setpts replaces its
 * points. Replaying a saved input makes a fresh plan. *fresh says which. geom is the box (3
 * doubles, kind 1), the cell (9, kind 2) or NULL (kind 0). */
enum { KEPT = 64 };
static struct {
    fmm_opts o;
    int kind;
    double geom[9];
    fmm_plan *plan;
} kept[KEPT];
static int nkept, next_evict;

static int same_opts(const fmm_opts *a, const fmm_opts *b) {
    return a->tolerance == b->tolerance && a->order == b->order && a->depth == b->depth &&
           a->leaf_size == b->leaf_size && a->threads == b->threads && a->periodic == b->periodic &&
           a->boundary == b->boundary && a->device == b->device && a->precision == b->precision;
}

static int plan_for(const problem *P, int kind, const double *geom, fmm_plan **plan, int *fresh) {
    const size_t size = sizeof(double) * (kind == 2 ? 9 : kind == 1 ? 3 : 0);
    for (int i = 0; i < nkept; ++i)
        if (same_opts(&kept[i].o, &P->o) && kept[i].kind == kind &&
            !memcmp(kept[i].geom, geom ? geom : kept[i].geom, size)) {
            *plan = kept[i].plan, *fresh = 0;
            int rc = fmm_set_exclusions(*plan, 0, NULL);
            FUZZ_CHECK(rc == FMM_OK, "clearing the excluded pairs: %d", rc);
            return FMM_OK;
        }
    *fresh = 1;
    int rc = kind == 2 ? fmm_makeplan_cell(&P->o, geom, plan) : fmm_makeplan(&P->o, geom, plan);
    if (rc) return rc;
    int slot = nkept < KEPT ? nkept++ : next_evict++ % KEPT;
    if (kept[slot].plan) fmm_destroy(kept[slot].plan);
    kept[slot].o = P->o, kept[slot].kind = kind, kept[slot].plan = *plan;
    if (geom) memcpy(kept[slot].geom, geom, size);
    return FMM_OK;
}

/* ---------------------------------------------------------------- reference */

typedef struct {
    int rc; /* of the reference sum */
    double *phi, *field, energy, virial[9];
    double phi_abs, field_abs, u_abs;  /* the norms of the check (top of the file) */
    double phi_abs_max, field_abs_max; /* the largest of those absolute sums */
    double rounding;                   /* eps * extent / d_min */
} reference;

/* r = a - b, its minimum image in the periodic cell of rows h (NULL: open): the difference
 * centred (the nearest whole number of c for z, then of b for y, then of a for x), then the
 * shortest of it and its 26 neighbours n h, |n_d| <= 1, which holds the minimum image in every
 * cell within GROMACS's limits */
static void separation(const double *a, const double *b, const double *h, double r[3]) {
    for (int d = 0; d < 3; ++d) r[d] = a[d] - b[d];
    if (!h) return;
    for (int row = 2; row >= 0; --row) {
        const double k = nearbyint(r[row] / h[4 * row]);
        for (int d = 0; d <= row; ++d) r[d] -= k * h[3 * row + d];
    }
    double best[3] = {r[0], r[1], r[2]}, b2 = r[0] * r[0] + r[1] * r[1] + r[2] * r[2];
    for (int n = 0; n < 27; ++n) {
        const int m[3] = {n % 3 - 1, n / 3 % 3 - 1, n / 9 - 1};
        double t[3], t2 = 0;
        for (int d = 0; d < 3; ++d) {
            t[d] = r[d] + m[0] * h[d] + m[1] * h[3 + d] + m[2] * h[6 + d];
            t2 += t[d] * t[d];
        }
        if (t2 < b2) b2 = t2, memcpy(best, t, sizeof best);
    }
    memcpy(r, best, sizeof best);
}

static int excluded(const int *pairs, int npairs, long i, long j) {
    for (int k = 0; k < npairs; ++k)
        if ((pairs[2 * k] == i && pairs[2 * k + 1] == j) ||
            (pairs[2 * k] == j && pairs[2 * k + 1] == i))
            return 1;
    return 0;
}

/* The reference of the set scaled back to unit size (exactly: powers of two), its norms and
 * its rounding allowance. The results are in unit scale too. */
static void compute_reference(const problem *P, long n, const double *xyz, const double *q,
                              double ewald_tol, reference *R) {
    memset(R, 0, sizeof *R);
    double *x = malloc(sizeof(double) * 3 * (size_t)n), *c = malloc(sizeof(double) * (size_t)n);
    R->phi = calloc((size_t)n, sizeof(double));
    R->field = calloc(3 * (size_t)n, sizeof(double));
    if (!x || !c || !R->phi || !R->field) {
        R->rc = FMM_ERR_NOMEM;
        free(x), free(c);
        return;
    }
    for (long i = 0; i < 3 * n; ++i) x[i] = ldexp(xyz[i], -P->k);
    for (long i = 0; i < n; ++i) c[i] = ldexp(q[i], -P->m);
    /* periodic: the cell at unit scale, L its shortest edge (the far images' distance in the
       norms) and hmax its largest entry (the extent of wrapped positions) */
    double hs[9], L = 0, hmax = 0;
    const double *h = P->o.periodic ? hs : NULL;
    for (int e = 0; e < 9; ++e) hs[e] = ldexp(P->h[e], -P->k), hmax = fmax(hmax, fabs(hs[e]));
    if (P->o.periodic) {
        L = fmin(hs[0], fmin(hs[4], hs[8]));
        R->rc = fmm_ewald_cell(n, x, c, hs, ewald_tol, R->phi, R->field, &R->energy, R->virial, 1);
    } else {
        R->rc = fmm_direct(n, x, c, R->phi, R->field, &R->energy, R->virial, 1);
    }
    /* excluded pairs (each once: the library refuses repeats), the nearest image */
    for (int k = 0; k < P->npairs && !R->rc; ++k) {
        long i = P->pairs[2 * k], j = P->pairs[2 * k + 1];
        if (i >= n || j >= n || excluded(P->pairs, k, i, j)) continue;
        double r[3];
        separation(x + 3 * i, x + 3 * j, h, r);
        double r2 = r[0] * r[0] + r[1] * r[1] + r[2] * r[2], r1 = sqrt(r2), r3 = r1 * r2;
        R->phi[i] -= c[j] / r1, R->phi[j] -= c[i] / r1;
        for (int d = 0; d < 3; ++d) {
            R->field[3 * i + d] -= c[j] * r[d] / r3;
            R->field[3 * j + d] += c[i] * r[d] / r3;
        }
        R->energy -= c[i] * c[j] / r1;
        for (int a = 0; a < 3; ++a)
            for (int bb = 0; bb < 3; ++bb) R->virial[3 * a + bb] -= c[i] * c[j] * r[a] * r[bb] / r3;
    }
    /* norms and rounding allowance */
    double qabs = 0, lo[3] = {INFINITY, INFINITY, INFINITY},
           hi[3] = {-INFINITY, -INFINITY, -INFINITY};
    double extent = hmax, dmin = INFINITY;
    for (long i = 0; i < n; ++i) {
        qabs += fabs(c[i]);
        for (int d = 0; d < 3; ++d) {
            lo[d] = fmin(lo[d], x[3 * i + d]), hi[d] = fmax(hi[d], x[3 * i + d]);
            extent = fmax(extent, fabs(x[3 * i + d]));
        }
    }
    for (int d = 0; d < 3; ++d) extent = fmax(extent, hi[d] - lo[d]);
    double s_phi = 0, s_field = 0, s_u = 0;
    for (long i = 0; i < n; ++i) {
        double a = L > 0 ? qabs / L : 0, bf = L > 0 ? qabs / (L * L) : 0;
        for (long j = 0; j < n; ++j) {
            if (j == i) continue;
            double r[3];
            separation(x + 3 * i, x + 3 * j, h, r);
            double r2 = r[0] * r[0] + r[1] * r[1] + r[2] * r[2];
            dmin = fmin(dmin, sqrt(r2));
            a += fabs(c[j]) / sqrt(r2), bf += fabs(c[j]) / r2;
        }
        s_phi += a * a, s_field += bf * bf, s_u += 0.5 * fabs(c[i]) * a;
        R->phi_abs_max = fmax(R->phi_abs_max, a), R->field_abs_max = fmax(R->field_abs_max, bf);
    }
    R->phi_abs = sqrt(s_phi), R->field_abs = sqrt(s_field), R->u_abs = s_u;
    R->rounding = n > 1 ? DBL_EPSILON * extent / dmin : 0;
    free(x), free(c);
}

static void free_reference(reference *R) {
    free(R->phi), free(R->field);
}

/* Checks the status rc (FMM_OK or FMM_ERR_RANGE) and outputs of fmm_execute for the set
 * (n, xyz, q) against the reference (fuzz_check_outputs); an overflow inside the sums, which
 * include/fmm.h allows for two charges 2^-340 times the extent apart, justifies FMM_ERR_RANGE
 * below 2^-300. */
static void check_result(const problem *P, fmm_plan *plan, long n, const double *xyz,
                         const double *q, const outputs *out, int rc) {
    if (P->o.boundary == FMM_BOUNDARY_VACUUM && P->o.periodic) { /* no reference here */
        FUZZ_CHECK(rc != FMM_OK || ((!P->want_phi || fuzz_all_finite(n, out->phi)) &&
                                    (!P->want_field || fuzz_all_finite(3 * n, out->field)) &&
                                    (!P->want_energy || isfinite(out->energy)) &&
                                    (!P->want_virial || fuzz_all_finite(9, out->virial))),
                   "an output is not finite");
        return;
    }
    fmm_info info;
    FUZZ_CHECK(fmm_get_info(plan, &info) == FMM_OK, "fmm_get_info");
    const int p = info.order, k = P->k, m = P->m;
    const double table = table_error(p, P->o.periodic), err = FACTOR * table;
    reference R;
    compute_reference(P, n, xyz, q, fmax(1e-12, 1e-3 * table), &R);
    if (R.rc) { /* the reference refuses what the plan took: only coincident points may differ
                   (wrapped positions) */
        FUZZ_CHECK(R.rc == FMM_ERR_COINCIDENT || R.rc == FMM_ERR_NOMEM, "reference status %d",
                   R.rc);
        free_reference(&R);
        return;
    }
    const double slack = FLOOR + ROUNDING * R.rounding;
    const fuzz_output c[4] = {
        {"phi", P->want_phi, n, out->phi, R.phi, m - k, R.phi_abs, R.phi_abs_max, err + slack},
        {"field", P->want_field, 3 * n, out->field, R.field, m - 2 * k, R.field_abs,
         R.field_abs_max, (p + 1) * err + slack},
        {"energy", P->want_energy, 1, &out->energy, &R.energy, 2 * m - k, R.u_abs, R.u_abs,
         err + slack},
        {"virial", P->want_virial, 9, out->virial, R.virial, 2 * m - k, R.u_abs, R.u_abs,
         (p + 1) * err + slack},
    };
    char context[96];
    snprintf(context, sizeof context, "order %d, depth %d, n %ld", p, info.depth, n);
    fuzz_check_outputs(rc, c, 4, R.rounding > ldexp(DBL_EPSILON, 300), context);
    free_reference(&R);
}

/* ---------------------------------------------------------------- calls */

static int execute(const problem *P, fmm_plan *plan, const double *q, outputs *o) {
    o->energy = NAN;
    for (int i = 0; i < 9; ++i) o->virial[i] = NAN;
    int rc = fmm_execute(plan, q, P->want_phi ? o->phi : NULL, P->want_field ? o->field : NULL,
                         P->want_energy ? &o->energy : NULL, P->want_virial ? o->virial : NULL);
    FUZZ_CHECK(rc == FMM_OK || rc == FMM_ERR_ARG || rc == FMM_ERR_NPTS || rc == FMM_ERR_NONFINITE ||
                   rc == FMM_ERR_BOUNDARY || rc == FMM_ERR_RANGE || rc == FMM_ERR_NOMEM,
               "fmm_execute: undocumented status %d (%s)", rc, fmm_strerror(rc));
    return rc;
}

/* rc of fmm_execute against the status it must give, want: besides, FMM_ERR_NOMEM may always
 * come, FMM_ERR_BOUNDARY for a periodic vacuum cell (charged: the library's test allows for
 * rounding) and FMM_ERR_RANGE in place of FMM_OK (check_result judges it). */
static void expect_execute(const problem *P, int rc, int want, const char *call) {
    if (rc == FMM_ERR_NOMEM || (rc == FMM_ERR_RANGE && want == FMM_OK)) return;
    if (rc == FMM_ERR_BOUNDARY && P->o.periodic && P->o.boundary == FMM_BOUNDARY_VACUUM) return;
    FUZZ_CHECK(rc == want, "%s fmm_execute returned %d (%s), expected %d", call, rc,
               fmm_strerror(rc), want);
}

static int same_outputs(const problem *P, long n, const outputs *a, const outputs *b) {
    return (!P->want_phi || !memcmp(a->phi, b->phi, sizeof(double) * (size_t)n)) &&
           (!P->want_field || !memcmp(a->field, b->field, sizeof(double) * 3 * (size_t)n)) &&
           (!P->want_energy || !memcmp(&a->energy, &b->energy, sizeof(double))) &&
           (!P->want_virial || !memcmp(a->virial, b->virial, sizeof a->virial));
}

/* Whether the given set must be refused by fmm_setpts, and with which status (0: accepted) */
static int expected_setpts(const problem *P, long n, const double *xyz) {
    if (!xyz) return FMM_ERR_ARG;
    if (n < 1) return FMM_ERR_NPTS;
    for (long i = 0; i < 3 * n; ++i)
        if (!isfinite(xyz[i])) return FMM_ERR_NONFINITE;
    if (P->box_given)
        for (long i = 0; i < n; ++i)
            for (int d = 0; d < 3; ++d)
                if (xyz[3 * i + d] < 0 || xyz[3 * i + d] > P->box[d]) return FMM_ERR_OUTSIDE;
    for (long i = 0; i < n; ++i)
        for (long j = 0; j < i; ++j)
            if (!memcmp(xyz + 3 * i, xyz + 3 * j, 3 * sizeof(double))) return FMM_ERR_COINCIDENT;
    return 0;
}

static int setpts(const problem *P, fmm_plan *plan, long n, const double *xyz) {
    int rc = fmm_setpts(plan, n, xyz);
    FUZZ_CHECK(rc == FMM_OK || rc == FMM_ERR_ARG || rc == FMM_ERR_NPTS || rc == FMM_ERR_NONFINITE ||
                   rc == FMM_ERR_OUTSIDE || rc == FMM_ERR_COINCIDENT || rc == FMM_ERR_NOMEM,
               "fmm_setpts: undocumented status %d (%s)", rc, fmm_strerror(rc));
    /* periodic: positions that differ may still coincide once wrapped into the box */
    int want = expected_setpts(P, n, xyz);
    FUZZ_CHECK(rc == want || rc == FMM_ERR_NOMEM ||
                   (P->o.periodic && !want && rc == FMM_ERR_COINCIDENT),
               "fmm_setpts returned %d (%s), expected %d", rc, fmm_strerror(rc), want);
    return rc;
}

/* The status fmm_execute must give for the charges q (NULL: the kept ones) after a successful
 * fmm_setpts of n points, with the excluded pairs if fmm_set_exclusions accepted them. The
 * vacuum boundary's refusal of a charged cell is left out: its test allows for rounding. */
static int expected_execute(const problem *P, long n, const double *q, int pairs_set) {
    if (pairs_set)
        for (int k = 0; k < 2 * P->npairs; ++k)
            if (P->pairs[k] >= n) return FMM_ERR_NPTS;
    for (long i = 0; q && i < n; ++i)
        if (!isfinite(q[i])) return FMM_ERR_NONFINITE;
    return 0;
}

/* The second call on the plan (P->second % 9): the same points again (bitwise the same result),
 * a refused set (NaN, a duplicate point, n = 0, NULL, a point outside the given box: the plan
 * keeps its points and gives bitwise the same result), the charges reused (q NULL), NaN charges
 * (refused, then the plan still works), one point fewer or one point moved (a new result,
 * checked against its reference). */
static void second_call(const problem *P, fmm_plan *plan, const outputs *first, int pairs_set) {
    const long n = P->n;
    const int what = P->second % 9;
    const long j = (P->second / 9) % n, i = (j + 1) % n;
    outputs o = {
        malloc(sizeof(double) * (size_t)n), malloc(sizeof(double) * 3 * (size_t)n), 0, {0}};
    double *xyz = malloc(sizeof(double) * 3 * (size_t)n), *q = malloc(sizeof(double) * (size_t)n);
    if (!o.phi || !o.field || !xyz || !q) goto done;
    memcpy(xyz, P->xyz, sizeof(double) * 3 * (size_t)n);
    memcpy(q, P->q, sizeof(double) * (size_t)n);
    long n2 = n;
    const double *set = xyz, *charges = q;
    switch (what) {
    case 0:
        break; /* the same points */
    case 1:
        xyz[3 * j + P->second % 3] = NAN;
        break; /* refused */
    case 2:    /* a duplicate (refused if n > 1) */
        memcpy(xyz + 3 * j, xyz + 3 * i, 3 * sizeof(double));
        break;
    case 3:
        n2 = 0;
        break;
    case 4:
        set = NULL;
        break;
    case 5:
        xyz[3 * j] = -0.5 * P->box[0] - xyz[3 * j];
        break; /* outside the box, or moved */
    case 6:
        charges = NULL;
        break;
    case 7:
        q[j] = NAN;
        break;
    case 8:
        n2 = n > 1 ? n - 1 : n;
        break;
    }
    int rc = setpts(P, plan, n2, set);
    int rc2;
    if (!rc && n2 != n) {
        rc2 = execute(P, plan, NULL, &o);
        FUZZ_CHECK(rc2 == FMM_ERR_ARG, "kept charges of another point count: status %d", rc2);
    }
    if (rc) {
        /* refused: the previous points are kept */
        rc2 = execute(P, plan, P->q, &o);
        FUZZ_CHECK(rc2 == FMM_OK, "after a refused fmm_setpts: status %d", rc2);
        FUZZ_CHECK(same_outputs(P, n, first, &o), "after a refused fmm_setpts: other outputs");
        goto done;
    }
    rc2 = execute(P, plan, charges, &o);
    expect_execute(P, rc2, expected_execute(P, n2, charges, pairs_set), "the second");
    if (rc2 && rc2 != FMM_ERR_RANGE) {
        /* still works with the first call's charges (one point fewer: their prefix) */
        charges = P->q;
        rc2 = execute(P, plan, charges, &o);
        expect_execute(P, rc2, expected_execute(P, n2, charges, pairs_set),
                       "a refused call's next");
    }
    if (rc2 == FMM_OK && n2 == n && set && what != 5)
        FUZZ_CHECK(same_outputs(P, n, first, &o), "the same call gave other outputs (case %d)",
                   what);
    else if (rc2 == FMM_OK || rc2 == FMM_ERR_RANGE)
        check_result(P, plan, n2, set, charges, &o, rc2);
done:
    free(o.phi), free(o.field), free(xyz), free(q);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    problem P;
    if (!parse(data, size, &P)) {
        free(P.xyz), free(P.q);
        return 0;
    }
    const long n = P.n;
    fmm_plan *plan = NULL;
    int fresh;
    const int kind = P.cell == 2 ? 2 : P.o.periodic || P.box_given ? 1 : 0;
    int rc = plan_for(&P, kind, kind == 2 ? P.h : kind ? P.box : NULL, &plan, &fresh);
    FUZZ_CHECK(rc == FMM_OK || rc == FMM_ERR_ARG || rc == FMM_ERR_TOLERANCE ||
                   rc == FMM_ERR_ORDER || rc == FMM_ERR_DEPTH || rc == FMM_ERR_LEAF ||
                   rc == FMM_ERR_BOX || rc == FMM_ERR_THREADS || rc == FMM_ERR_BOUNDARY ||
                   rc == FMM_ERR_NOMEM,
               "fmm_makeplan: undocumented status %d (%s)", rc, fmm_strerror(rc));
    FUZZ_CHECK(!rc == !!plan, "fmm_makeplan returned %d and plan %p", rc, (void *)plan);
    /* options out of range must be refused */
    const fmm_opts *o = &P.o;
    int bad = !(o->tolerance >= FMM_TOL_MIN && o->tolerance <= FMM_TOL_MAX) ? FMM_ERR_TOLERANCE
              : o->order != 0 && (o->order < FMM_ORDER_MIN || o->order > FMM_ORDER_MAX)
                  ? FMM_ERR_ORDER
              : o->depth < -1 || o->depth > FMM_DEPTH_MAX       ? FMM_ERR_DEPTH
              : o->leaf_size < 0 || o->leaf_size > FMM_LEAF_MAX ? FMM_ERR_LEAF
                                                                : 0;
    if (rc != FMM_ERR_NOMEM)
        FUZZ_CHECK(bad ? rc != FMM_OK : 1, "fmm_makeplan accepted bad options (expected %d)", bad);
    if (rc) goto done;

    outputs first = {
        malloc(sizeof(double) * (size_t)n), malloc(sizeof(double) * 3 * (size_t)n), 0, {0}};
    if (!first.phi || !first.field) goto done_first;
    if (fresh)
        FUZZ_CHECK(fmm_execute(plan, P.q, first.phi, NULL, NULL, NULL) == FMM_ERR_NOPTS,
                   "fmm_execute before fmm_setpts");
    rc = setpts(&P, plan, n, P.xyz);
    if (rc) {
        if (fresh) {
            rc = fmm_execute(plan, P.q, first.phi, NULL, NULL, NULL);
            FUZZ_CHECK(rc == FMM_ERR_NOPTS, "fmm_execute after a failed first fmm_setpts: %d", rc);
        }
        goto done_first;
    }
    int pairs_set = 0;
    if (P.npairs) {
        int want = 0;
        for (int k = 0; k < P.npairs; ++k)
            if (P.pairs[2 * k] == P.pairs[2 * k + 1] ||
                excluded(P.pairs, k, P.pairs[2 * k], P.pairs[2 * k + 1]))
                want = FMM_ERR_ARG;
        rc = fmm_set_exclusions(plan, P.npairs, P.pairs);
        if (rc != FMM_ERR_NOMEM)
            FUZZ_CHECK(rc == want, "fmm_set_exclusions returned %d, expected %d", rc, want);
        pairs_set = rc == FMM_OK;
    }
    problem Pe = P; /* the pairs the plan holds */
    if (!pairs_set) Pe.npairs = 0;
    rc = execute(&Pe, plan, P.q, &first);
    expect_execute(&Pe, rc, expected_execute(&Pe, n, P.q, pairs_set), "the first");
    if (rc == FMM_OK || rc == FMM_ERR_RANGE) check_result(&Pe, plan, n, P.xyz, P.q, &first, rc);
    if (rc == FMM_OK) second_call(&Pe, plan, &first, pairs_set);
done_first:
    free(first.phi), free(first.field);
done:
    free(P.xyz), free(P.q);
    return 0;
}

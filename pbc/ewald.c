/* Plain Ewald sum in any periodic cell of pbc/cell.h (rows a, b, c in GROMACS's form), the
 * reference for the periodic FMM: tin-foil boundary, neutralising background for a net charge
 * (docs/periodic-cells.md, section 1; docs/checks/periodic_cells.py's `ewald` is the model). */
#include "pbc/ewald.h"

#include <math.h>
#include <omp.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "core/mathconst.h"
#include "core/scale.h"
#include "fmm_reference.h"
#include "pbc/cell.h"

/* The largest grid of integer triples the reciprocal sum may scan: a cell thin enough to need more
 * (its shortest lattice vector far below its longest row) is refused as FMM_ERR_NOMEM. */
#define EWALD_GRID_MAX (1L << 28)

/* The scaled cell, then the charges and positions (positions wrapped into the cell's brick), all in
 * units of 2^el (lengths) and 2^eq (charges) (core/scale.h): x (3n), qs (n). Checks first, in the
 * order BOX, NONFINITE; FMM_ERR_RANGE for a position whose place in the cell double cannot hold
 * (more than ~2^1023 cell lengths away). */
static int prepare(long n, const double *xyz, const double *q, const double h[9], int threads,
                   pbc_cell *cell, double *x, double *qs, int *el, int *eq) {
    double hmax = 0, qmax = 0, amax = 0, hs[9];
    for (int k = 0; k < 9; ++k) {
        if (!isfinite(h[k])) return FMM_ERR_BOX;
        hmax = fmax(hmax, fabs(h[k]));
    }
    /* the limits are checked in the sum's units: the volume of a cell of edge 1e120 overflows */
    *el = fmm_length_exponent(hmax, 0.0);
    const double fl = ldexp(1.0, -*el);
    for (int k = 0; k < 9; ++k) hs[k] = fmm_pow2(h[k], fl, -*el);
    int rc = pbc_cell_init(cell, hs);
    if (!rc) rc = fmm_check_max_abs(n, q, &qmax, threads);
    if (!rc) rc = fmm_check_max_abs(3 * n, xyz, &amax, threads);
    if (rc) return rc;
    *eq = fmm_scale_exponent(qmax);
    const double fq = ldexp(1.0, -*eq);
    for (long i = 0; i < n; ++i) {
        qs[i] = fmm_pow2(q[i], fq, -*eq);
        double *y = x + 3 * i;
        for (int d = 0; d < 3; ++d) y[d] = fmm_pow2(xyz[3 * i + d], fl, -*el);
        pbc_cell_wrap(cell, y);
        if (!(isfinite(y[0]) && isfinite(y[1]) && isfinite(y[2]))) return FMM_ERR_RANGE;
    }
    return FMM_OK;
}

/* One term of the reciprocal sum: the integer components m of k = m g, k, exp(-k^2/4a^2)/k^2. */
typedef struct wave {
    double k[3], f;
    int m[3];
} wave;

/* The wave vectors with 0 < |k| <= kc among |m_d| <= kmax[d] (m_x slowest), stored in w unless
 * it is NULL; returns their count. |m_d| = |k . row_d(h)| / 2 pi <= kc |row_d| / 2 pi bounds the
 * search (the reciprocal range per index). */
static long waves(const pbc_cell *c, const int kmax[3], double kc, double a, wave *w) {
    long count = 0;
    for (int i = -kmax[0]; i <= kmax[0]; ++i)
        for (int j = -kmax[1]; j <= kmax[1]; ++j)
            for (int l = -kmax[2]; l <= kmax[2]; ++l) {
                double k[3], k2 = 0;
                for (int d = 0; d < 3; ++d) {
                    k[d] = i * c->g[d] + j * c->g[3 + d] + l * c->g[6 + d];
                    k2 += k[d] * k[d];
                }
                if ((!i && !j && !l) || k2 > kc * kc) continue;
                if (w) {
                    wave *o = w + count;
                    for (int d = 0; d < 3; ++d) o->k[d] = k[d];
                    o->f = exp(-k2 / (4 * a * a)) / k2;
                    o->m[0] = i, o->m[1] = j, o->m[2] = l;
                }
                ++count;
            }
    return count;
}

/* exp(i k.x_j) = (*re, *im) for k = m g, the product of the three indices' tables; tab[d] holds
 * [n][2 kmax[d] + 1] (cos, sin) of m_d g_d.x_j. */
static void k_phase(double *const tab[3], const int kmax[3], long j, const int m[3], double *re,
                    double *im) {
    const double *p[3];
    for (int d = 0; d < 3; ++d)
        p[d] = tab[d] + 2 * ((size_t)j * (2 * kmax[d] + 1) + m[d] + kmax[d]);
    const double ar = p[0][0] * p[1][0] - p[0][1] * p[1][1],
                 ai = p[0][0] * p[1][1] + p[0][1] * p[1][0];
    *re = ar * p[2][0] - ai * p[2][1], *im = ar * p[2][1] + ai * p[2][0];
}

/* Real space: each particle's erfc sum over the pairs within the cut-off rcut (one image of each,
 * from the ns shifts of the brick), with its self term and the background's (Q: the net charge),
 * into out (phi, then E); its share of the virial (xx, yy, zz, xy, xz, yz) into wr. a: the
 * splitting parameter. */
static void real_space(long n, const double *x, const double *q, const pbc_cell *cell, long ns,
                       const double *shift, double a, double rcut, double Q, int nt, double *out,
                       double *wr) {
    const double *h = cell->h, V = cell->volume;
    const double c2 = 2 * a / sqrt(FMM_PI), rc2 = rcut * rcut;
    const double inv[3] = {1 / h[0], 1 / h[4], 1 / h[8]};
#pragma omp parallel for num_threads(nt) schedule(static)
    for (long i = 0; i < n; ++i) {
        double p = 0, e[3] = {0, 0, 0}, w[6] = {0, 0, 0, 0, 0, 0};
        for (long j = 0; j < n; ++j) {
            double r0[3];
            for (int c = 0; c < 3; ++c) r0[c] = x[3 * i + c] - x[3 * j + c];
            pbc_cell_centre(h, inv, r0);
            for (long t = 0; t < ns; ++t) {
                const double r[3] = {r0[0] + shift[3 * t], r0[1] + shift[3 * t + 1],
                                     r0[2] + shift[3 * t + 2]};
                const double r2 = r[0] * r[0] + r[1] * r[1] + r[2] * r[2];
                if (!(r2 < rc2)) continue;
                if (r2 > 0) { /* the pair itself (or a coincident one) adds nothing */
                    const double d = sqrt(r2), ef = erfc(a * d) / d;
                    const double gr = q[j] * (ef + c2 * exp(-a * a * r2)) / r2;
                    p += q[j] * ef;
                    for (int c = 0; c < 3; ++c) e[c] += gr * r[c];
                    w[0] += gr * r[0] * r[0], w[1] += gr * r[1] * r[1], w[2] += gr * r[2] * r[2];
                    w[3] += gr * r[0] * r[1], w[4] += gr * r[0] * r[2], w[5] += gr * r[1] * r[2];
                }
                break; /* no other image within the cut-off */
            }
        }
        out[i] = p - c2 * q[i] - FMM_PI * Q / (V * a * a);
        for (int c = 0; c < 3; ++c) out[n + 3 * i + c] = e[c];
        for (int c = 0; c < 6; ++c) wr[6 * i + c] = 0.5 * q[i] * w[c];
    }
}

/* Reciprocal space: the structure factors S(k) = sum q_j exp(i k.x_j), first for every k, then
 * each particle's sum over k in the order of k (no sum depends on which thread did what), added to
 * out (phi, then E); the reciprocal part of the virial into W. kmax, kc: the wave vectors' range
 * (waves); a: the splitting parameter. */
static int reciprocal_space(const pbc_cell *cell, const int kmax[3], double kc, double a, long n,
                            const double *x, const double *q, int nt, double *out, double W[9]) {
    const double V = cell->volume;
    const long nw = waves(cell, kmax, kc, a, NULL);
    const size_t wsum = (size_t)(2 * kmax[0] + 1) + (2 * kmax[1] + 1) + (2 * kmax[2] + 1);
    wave *wv = malloc(sizeof(wave) * (size_t)(nw > 0 ? nw : 1));
    double *sk = malloc(sizeof(double) * 2 * (size_t)(nw > 0 ? nw : 1)); /* Re S, Im S */
    double *tabs = calloc(2 * wsum, sizeof(double) * (size_t)n); /* calloc checks the product */
    if (!wv || !sk || !tabs) {
        free(wv), free(sk), free(tabs);
        return FMM_ERR_NOMEM;
    }
    waves(cell, kmax, kc, a, wv);
    double *tab[3] = {tabs, tabs + 2 * (size_t)n * (2 * kmax[0] + 1),
                      tabs + 2 * (size_t)n * (2 * kmax[0] + 2 * kmax[1] + 2)};
#pragma omp parallel for num_threads(nt) schedule(static)
    for (long i = 0; i < n; ++i)
        for (int d = 0; d < 3; ++d) {
            const double *g = cell->g + 3 * d,
                         th = g[0] * x[3 * i] + g[1] * x[3 * i + 1] + g[2] * x[3 * i + 2];
            double *o = tab[d] + 2 * (size_t)i * (2 * kmax[d] + 1);
            for (int m = -kmax[d]; m <= kmax[d]; ++m)
                o[2 * (m + kmax[d])] = cos(m * th), o[2 * (m + kmax[d]) + 1] = sin(m * th);
        }
#pragma omp parallel for num_threads(nt) schedule(dynamic, 4)
    for (long kk = 0; kk < nw; ++kk) {
        double sr = 0, si = 0;
        for (long j = 0; j < n; ++j) {
            double c, sn;
            k_phase(tab, kmax, j, wv[kk].m, &c, &sn);
            sr += q[j] * c, si += q[j] * sn;
        }
        sk[2 * kk] = sr, sk[2 * kk + 1] = si;
    }
#pragma omp parallel for num_threads(nt) schedule(static)
    for (long i = 0; i < n; ++i) {
        double acc[4] = {0, 0, 0, 0};
        for (long kk = 0; kk < nw; ++kk) {
            const wave *o = wv + kk;
            double c, sn;
            k_phase(tab, kmax, i, o->m, &c, &sn);
            /* Re and Im of S(k) exp(-i k.x_i) */
            const double re = sk[2 * kk] * c + sk[2 * kk + 1] * sn,
                         im = sk[2 * kk + 1] * c - sk[2 * kk] * sn;
            acc[0] += o->f * re;
            for (int d = 0; d < 3; ++d) acc[1 + d] -= o->f * im * o->k[d];
        }
        out[i] += 4 * FMM_PI / V * acc[0];
        for (int d = 0; d < 3; ++d) out[n + 3 * i + d] += 4 * FMM_PI / V * acc[1 + d];
    }
    for (long kk = 0; kk < nw; ++kk) {
        const wave *o = wv + kk;
        const double *k = o->k, k2 = k[0] * k[0] + k[1] * k[1] + k[2] * k[2],
                     S2 = sk[2 * kk] * sk[2 * kk] + sk[2 * kk + 1] * sk[2 * kk + 1];
        for (int u = 0; u < 3; ++u)
            for (int v = 0; v < 3; ++v)
                W[3 * u + v] += 2 * FMM_PI / V * o->f * S2 *
                                ((u == v) - 2 * k[u] * k[v] * (1 / k2 + 1 / (4 * a * a)));
    }
    free(wv), free(sk), free(tabs);
    return FMM_OK;
}

int pbc_ewald(long n, const double *xyz, const double *q_in, const double cell_in[9], double tol,
              double split, double *phi, double *field, double *energy, double *virial,
              int threads) {
    if (n < 1) return FMM_ERR_NPTS;
    if (!xyz || !q_in || !cell_in || !(split > 0 && split <= 1)) return FMM_ERR_ARG;
    if (!(tol >= FMM_TOL_MIN && tol <= FMM_TOL_MAX)) return FMM_ERR_TOLERANCE;
    if (threads < 0 || threads > FMM_THREADS_MAX) return FMM_ERR_THREADS;
    const int nt = threads > 0 ? threads : omp_get_max_threads();
    if ((size_t)n > SIZE_MAX / 64) return FMM_ERR_NOMEM; /* no size below overflows */
    /* x, q: the wrapped positions and the charges in the sum's units; out: phi (n), then E (3n);
       wr: each particle's share of the real-space virial (xx, yy, zz, xy, xz, yz), added in
       index order so that no sum depends on the thread count */
    double *x = malloc(sizeof(double) * 4 * (size_t)n), *out = NULL, *wr = NULL, *shift = NULL;
    int *ni = NULL;
    if (!x) return FMM_ERR_NOMEM;
    double *q = x + 3 * (size_t)n;
    pbc_cell cell;
    int el, eq, rc = prepare(n, xyz, q_in, cell_in, threads, &cell, x, q, &el, &eq);
    if (rc) goto done;
    const double *h = cell.h, V = cell.volume, lmin = pbc_cell_shortest(&cell);
    if (lmin < 0) { /* the search for the shortest vector of a very thin cell was cut off */
        rc = FMM_ERR_NOMEM;
        goto done;
    }
    /* erfc(a rc) ~ exp(-(a rc)^2) = tol and exp(-k^2/4a^2) = tol at the k cut-off, with a
     * margin: s = sqrt(-ln(tol / 10)). The cut-off is just below half the shortest lattice
     * vector, so that at most one image of each pair lies within it, and a rectangular cell's
     * face shifts (at exactly half an edge from the centred brick) stay out of the search. */
    const double s = sqrt(-log(0.1 * tol)), rcut = 0.5 * lmin * split * (1 - 0x1p-20);
    const double a = s / rcut, kc = 2 * a * s;
    int kmax[3];
    double grid = 1;
    for (int d = 0; d < 3; ++d) {
        const double *r = h + 3 * d,
                     km = ceil(kc * sqrt(r[0] * r[0] + r[1] * r[1] + r[2] * r[2]) / (2 * FMM_PI));
        kmax[d] = km < EWALD_GRID_MAX ? (int)km : EWALD_GRID_MAX;
        grid *= 2.0 * kmax[d] + 1;
    }
    /* the search reaches past the cut-off by far more than the rounding of centre() */
    const double reach = rcut + 0x1p-40 * (h[0] + h[4] + h[8]);
    const long ns = pbc_cell_brick_shifts(&cell, reach, NULL, 0);
    if (grid > EWALD_GRID_MAX || ns < 0) {
        rc = FMM_ERR_NOMEM;
        goto done;
    }
    out = calloc(4 * (size_t)n, sizeof(double));
    wr = malloc(sizeof(double) * 6 * (size_t)n);
    ni = malloc(sizeof(int) * 3 * (size_t)ns);
    shift = malloc(sizeof(double) * 3 * (size_t)ns);
    if (!out || !wr || !ni || !shift) {
        rc = FMM_ERR_NOMEM;
        goto done;
    }
    pbc_cell_brick_shifts(&cell, reach, ni, ns);
    for (long t = 0; t < ns; ++t) pbc_cell_vector(&cell, ni + 3 * t, shift + 3 * t);
    for (long t = 1; t < ns; ++t) /* R = 0 (in the set) first: most pairs within the cut-off */
        if (!ni[3 * t] && !ni[3 * t + 1] && !ni[3 * t + 2])
            for (int d = 0; d < 3; ++d) shift[3 * t + d] = shift[d], shift[d] = 0;
    double Q = 0;
    for (long i = 0; i < n; ++i) Q += q[i];
    real_space(n, x, q, &cell, ns, shift, a, rcut, Q, nt, out, wr);
    double W[9] = {0}, U = 0;
    rc = reciprocal_space(&cell, kmax, kc, a, n, x, q, nt, out, W);
    if (rc) goto done;
    /* the real-space shares (xx, yy, zz, xy, xz, yz) and the background's constant */
    static const int slot[9] = {0, 3, 4, 3, 1, 5, 4, 5, 2};
    for (long i = 0; i < n; ++i)
        for (int k = 0; k < 9; ++k) W[k] += wr[6 * i + slot[k]];
    for (int d = 0; d < 3; ++d) W[4 * d] -= FMM_PI * Q * Q / (2 * V * a * a);
    for (long i = 0; i < n; ++i) U += 0.5 * q[i] * out[i];
    /* outputs in the caller's units: phi x 2^(eq-el), E x 2^(eq-2el), U and W x 2^(2eq-el); the
     * caller's arrays are written only when every requested output is representable */
    if (phi) rc = fmm_scale_output(n, out, 0, out, 0, eq - el, threads);
    if (field && !rc) rc = fmm_scale_output(3 * n, out + n, 0, out + n, 0, eq - 2 * el, threads);
    if (energy && !rc) rc = fmm_scale_output(1, &U, 0, &U, 0, 2 * eq - el, threads);
    if (virial && !rc) rc = fmm_scale_output(9, W, 0, W, 0, 2 * eq - el, threads);
    if (!rc) {
        if (phi) memcpy(phi, out, sizeof(double) * (size_t)n);
        if (field) memcpy(field, out + n, sizeof(double) * 3 * (size_t)n);
        if (energy) *energy = U;
        if (virial) memcpy(virial, W, sizeof W);
    }
done:
    free(x), free(out), free(wr), free(ni), free(shift);
    return rc;
}

int fmm_ewald_cell(long n, const double *xyz, const double *q, const double cell[9],
                   double tolerance, double *phi, double *field, double *energy, double *virial,
                   int threads) {
    return pbc_ewald(n, xyz, q, cell, tolerance, 1.0, phi, field, energy, virial, threads);
}

int fmm_ewald(long n, const double *xyz, const double *q, const double box[3], double tolerance,
              double *phi, double *field, double *energy, double *virial, int threads) {
    if (!box)
        return fmm_ewald_cell(n, xyz, q, NULL, tolerance, phi, field, energy, virial, threads);
    const double cell[9] = {box[0], 0, 0, 0, box[1], 0, 0, 0, box[2]};
    return fmm_ewald_cell(n, xyz, q, cell, tolerance, phi, field, energy, virial, threads);
}

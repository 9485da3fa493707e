/* The far-field table of a periodic cell by the Ewald-type formula of docs/periodic-cells.md
 * (section 3), with Hobson's theorem mu_LM(R) = c_LM Z_LM(grad) 1/r, Z_LM = conj(R_LM),
 * c_LM = (L-M)! (L+M)! / ((-1)^L (2L-1)!!):
 *   A_LM = sum_{R not in N} mu_LM(R) Q_L(a^2 R^2) - sum_{R in N, R != 0} mu_LM(R) P_L(a^2 R^2)
 *        + c_LM (4 pi / V) i^L sum_{k != 0} exp(-k^2 / 4a^2) / k^2 Z_LM(k)
 *        + [L = 0] (-2a / sqrt(pi) - pi / (V a^2)),
 * Q_L, P_L the regularised upper and lower incomplete gamma functions of order L + 1/2. The strain
 * tables differentiate every term (section 4). Lattice vectors come in pairs +-R (and +-k) whose
 * terms are (-1)^L times each other: one of each pair is summed, twice, for even L only. Only
 * m >= 0 is summed; X_{L,-M} = (-1)^M conj X_LM fills the rest. */
#include "pbc/cell_table.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "core/harmonics.h"
#include "core/mathconst.h"
#include "fmm_common.h"

/* alpha V^(1/3) = 1.7 balances the real and reciprocal vector counts for compact cells. The near
 * images' terms -mu P_L are cancelled by the reciprocal sum, and where alpha^2 R^2 is large at a
 * near image they outgrow the table by orders of magnitude: against 32-digit evaluations of the
 * same formula (docs/checks/cell_table_mp.py), the largest error of a degree (relative to its
 * largest entry, L <= 40) is 1e-12 for the 1:1:3 brick and 1e-13 for the cube unless
 * alpha^2 R^2 <= 6 at the farthest near image, and at most 8e-14 over the cube, 1:1:3, 2:2:1,
 * dodecahedron and two triclinic cells with it. Ranges: the tails beyond them are 2^-64 of the
 * sums' terms. */
const pbc_far_split pbc_far_split_default = {1.7, 6.0, 0x1p-64};

#define NEAR_MAX_INDEX (1 << 20)

/* Everything one evaluation accumulates; vectors are added by real_term and recip_term. */
typedef struct table_acc {
    int lmax, strain, n;  /* n = (lmax + 1)^2 */
    double alpha, V;      /* splitting and volume (scaled units) */
    double *are, *aim;    /* A_LM, m >= 0 */
    double *dre, *dim;    /* D[a][b]_LM = dA_LM / d e_ab before symmetrising: [9][n] */
    double *hre, *him;    /* one harmonic table, order lmax + 1 */
    double *g, *dg, *clm; /* gamma weights (lmax + 1); c_LM / (-1)^L, triangle (l, m >= 0) */
    double *row;          /* 12 rows of 2 lmax + 4: one degree's values and gradients */
} table_acc;

static int tri(int l, int m) {
    return l * (l + 1) / 2 + m;
}

/* Q_L(x) = erfc(sqrt x) + sum_{j<L} t_j, t_j = x^(j+1/2) e^-x / Gamma(j+3/2), for L <= lmax into
 * q, and t_{L-1} (t_{-1} = e^-x / sqrt(pi x)) into t: positive sums, each accurate to a few
 * roundings. Returns t_lmax. */
static double gamma_upper(double x, int lmax, double *q, double *t) {
    double s = exp(-x) / sqrt(FMM_PI * x), acc = erfc(sqrt(x));
    for (int L = 0; L <= lmax; ++L) {
        t[L] = s;
        s *= x / (L + 0.5);
        q[L] = acc;
        acc += s;
    }
    return s;
}

/* g[L] = Q_L(x) for a far image, -P_L(x) for a near one, and dg[L] = d g_L / dx =
 * -x^(L-1/2) e^-x / Gamma(L+1/2) for both, L <= lmax. P_L = sum_{j>=L} t_j is taken as 1 - Q_L
 * where Q_L <= 1/2 (no cancellation there) and from its tail sum otherwise. */
static void gamma_weights(double x, int lmax, int near, double *g, double *dg) {
    const double tl = gamma_upper(x, lmax, g, dg);
    for (int L = 0; L <= lmax; ++L) dg[L] = -dg[L];
    if (!near) return;
    double p = 0.0;
    if (g[lmax] > 0.5) {
        /* the tail beyond lmax: its terms fall once j > x, and x < lmax + 1 here */
        double s = tl;
        for (int j = lmax + 1; j < lmax + 4096; ++j) {
            s *= x / (j + 0.5);
            p += s;
            if (s <= 0x1p-60 * p) break;
        }
    }
    for (int L = lmax; L >= 0; --L) {
        p += L < lmax ? -dg[L + 1] : tl; /* p = P_L where it is used */
        g[L] = g[L] > 0.5 ? -p : -(1.0 - g[L]);
    }
}

/* The smallest x with f(x) <= eps, f decreasing: doubling, then bisection. */
static double solve_down(double (*f)(double, const void *), const void *ctx, double x0,
                         double eps) {
    double lo = 0.0, hi = x0;
    while (f(hi, ctx) > eps) lo = hi, hi *= 2;
    for (int it = 0; it < 60; ++it) {
        const double mid = 0.5 * (lo + hi);
        if (f(mid, ctx) > eps)
            lo = mid;
        else
            hi = mid;
    }
    return hi;
}

typedef struct range_ctx {
    int lmax;
    double arf;    /* alpha times the shortest far image's length */
    double *q, *t; /* scratch, lmax + 1 */
} range_ctx;

/* The reciprocal terms k^(L-2) exp(-k^2/4a^2), their strain derivatives a factor k^2 more, over
 * shells of k^2 dk: the tail of a Gamma function of order up to lmax/2 + 3/2 at x = k^2/4a^2. */
static double recip_tail(double x, const void *ctx) {
    const range_ctx *c = ctx;
    const int j = c->lmax / 2 + 1;
    gamma_upper(x, j, c->q, c->t);
    return c->q[j];
}

/* A real-space vector R at x = a^2 R^2 adds to degree L at most about Q_L(x) (2 R_f / R)^(L+1)
 * of the degree's largest entry (R_f the shortest far image: the degree's scale is at least
 * R_f^-(L+1) times its weakest direction's harmonics, and (2L-1)!! / L! <= 2^L bounds the
 * strongest over the weakest), (L+1) times that to the strain tables: the largest over L. */
static double real_tail(double x, const void *ctx) {
    const range_ctx *c = ctx;
    gamma_upper(x, c->lmax, c->q, c->t);
    const double s = fmin(1.0, 2 * c->arf / sqrt(x));
    double f = 0.0, sp = s;
    for (int L = 0; L <= c->lmax; ++L, sp *= s) f = fmax(f, (L + 1) * c->q[L] * sp);
    return f;
}

/* d += s * (xr + i xi) over m = 0..l (one degree, contiguous) */
static void axpy(int l, double s, const double *xr, const double *xi, double *dr, double *di) {
    for (int m = 0; m <= l; ++m) dr[m] += s * xr[m], di[m] += s * xi[m];
}

/* A far or near image R (and -R): mu_LM(R) g_L, and for the strain d/de_ab of mu_LM(R) g_L(a^2 R^2)
 * = R_b [d_a mu_LM g_L + mu_LM g_L' 2 a^2 R_a], with d_z mu_lm = -mu_{l+1,m},
 * d_x mu_lm = (mu_{l+1,m+1} - mu_{l+1,m-1})/2, d_y mu_lm = -i (mu_{l+1,m+1} + mu_{l+1,m-1})/2. */
static void real_term(table_acc *t, const double R[3], int near) {
    const int lmax = t->lmax, n = t->n;
    const double x = t->alpha * t->alpha * (R[0] * R[0] + R[1] * R[1] + R[2] * R[2]);
    gamma_weights(x, lmax, near, t->g, t->dg);
    harm_irregular_full(lmax + t->strain, R, t->hre, t->him);
    for (int L = 0; L <= lmax; L += 2) {
        const int f = harm_full(L, 0), u = harm_full(L + 1, 0);
        const double g = 2 * t->g[L], dg = 4 * t->alpha * t->alpha * t->dg[L];
        const double *mr = t->hre + f, *mi = t->him + f, *ur = t->hre + u, *ui = t->him + u;
        axpy(L, g, mr, mi, t->are + f, t->aim + f);
        if (!t->strain) continue;
        /* T_a = g d_a mu + dg R_a mu, rows (re, im) for a = x, y, z */
        double *T = t->row;
        const int w = 2 * lmax + 4;
        for (int m = 0; m <= L; ++m) {
            T[m] = g * 0.5 * (ur[m + 1] - ur[m - 1]) + dg * R[0] * mr[m];
            T[w + m] = g * 0.5 * (ui[m + 1] - ui[m - 1]) + dg * R[0] * mi[m];
            T[2 * w + m] = g * 0.5 * (ui[m + 1] + ui[m - 1]) + dg * R[1] * mr[m];
            T[3 * w + m] = -g * 0.5 * (ur[m + 1] + ur[m - 1]) + dg * R[1] * mi[m];
            T[4 * w + m] = -g * ur[m] + dg * R[2] * mr[m];
            T[5 * w + m] = -g * ui[m] + dg * R[2] * mi[m];
        }
        for (int a = 0; a < 3; ++a)
            for (int b = 0; b < 3; ++b)
                axpy(L, R[b], T + 2 * a * w, T + (2 * a + 1) * w, t->dre + (3 * a + b) * n + f,
                     t->dim + (3 * a + b) * n + f);
    }
}

/* A reciprocal vector k (and -k): c_LM (4 pi / V) i^L h(k^2) Z_LM(k), h = exp(-k^2/4a^2) / k^2.
 * Under strain k -> (I + e)^-T k and V -> V (1 + tr e): d/de_ab gives
 * -c_LM (4 pi / V) i^L k_a [2 h'(k^2) k_b Z_LM + h d_b Z_LM] - delta_ab (the term), with
 * d_z Z_lm = Z_{l-1,m}, d_x Z_lm = (Z_{l-1,m+1} - Z_{l-1,m-1})/2,
 * d_y Z_lm = -i (Z_{l-1,m+1} + Z_{l-1,m-1})/2 (the conjugates of R_lm's gradients). */
static void recip_term(table_acc *t, const double k[3]) {
    const int lmax = t->lmax, n = t->n, w = 2 * lmax + 4;
    const double k2 = k[0] * k[0] + k[1] * k[1] + k[2] * k[2], ia = 0.25 / (t->alpha * t->alpha);
    const double h = exp(-k2 * ia) / k2, dh = -h * (ia + 1 / k2);
    harm_regular_full(lmax, k, t->hre, t->him);
    /* rows: c Z (re, im), then c d_b Z (re, im) for b = x, y, z, and Z_{L-1} padded with zeros */
    double *cz = t->row, *dz = cz + 2 * w, *pr = cz + 8 * w + 1, *pi = cz + 9 * w + 1;
    for (int L = 0; L <= lmax; L += 2) {
        const int f = harm_full(L, 0);
        /* i^L for even L, the pair's factor 2 */
        const double s = (L & 2 ? -2.0 : 2.0) * 4 * FMM_PI / t->V;
        for (int m = 0; m <= L; ++m) {
            const double c = s * t->clm[tri(L, m)];
            cz[m] = c * t->hre[f + m], cz[w + m] = -c * t->him[f + m];
        }
        axpy(L, h, cz, cz + w, t->are + f, t->aim + f);
        if (!t->strain) continue;
        for (int m = -1; m <= L + 1; ++m) {
            const int in = L > 0 && m >= -(L - 1) && m <= L - 1;
            pr[m] = in ? t->hre[harm_full(L - 1, m)] : 0.0;
            pi[m] = in ? -t->him[harm_full(L - 1, m)] : 0.0;
        }
        for (int m = 0; m <= L; ++m) {
            const double c = s * t->clm[tri(L, m)];
            dz[m] = c * 0.5 * (pr[m + 1] - pr[m - 1]),
            dz[w + m] = c * 0.5 * (pi[m + 1] - pi[m - 1]);
            dz[2 * w + m] = c * 0.5 * (pi[m + 1] + pi[m - 1]);
            dz[3 * w + m] = -c * 0.5 * (pr[m + 1] + pr[m - 1]);
            dz[4 * w + m] = c * pr[m], dz[5 * w + m] = c * pi[m];
        }
        for (int a = 0; a < 3; ++a)
            for (int b = 0; b < 3; ++b) {
                double *dr = t->dre + (3 * a + b) * n + f, *di = t->dim + (3 * a + b) * n + f;
                axpy(L, -2 * dh * k[a] * k[b] - (a == b) * h, cz, cz + w, dr, di);
                axpy(L, -h * k[a], dz + 2 * b * w, dz + (2 * b + 1) * w, dr, di);
            }
    }
}

/* One of each pair +-n: the first nonzero of (n2, n1, n0) positive. */
static int positive(const int n[3]) {
    return n[2] > 0 || (n[2] == 0 && (n[1] > 0 || (n[1] == 0 && n[0] > 0)));
}

static void combine(const double *rows, const int n[3], double R[3]) {
    for (int d = 0; d < 3; ++d) R[d] = n[0] * rows[d] + n[1] * rows[3 + d] + n[2] * rows[6 + d];
}

static double norm2(const double R[3]) {
    return R[0] * R[0] + R[1] * R[1] + R[2] * R[2];
}

static int cmp_triple(const void *a, const void *b) {
    const int *x = a, *y = b;
    for (int d = 2; d >= 0; --d)
        if (x[d] != y[d]) return x[d] < y[d] ? -1 : 1;
    return 0;
}

static int in_set(const int *sorted, int count, const int n[3]) {
    return bsearch(n, sorted, (size_t)count, 3 * sizeof(int), cmp_triple) != NULL;
}

/* The half of the lattice {n rows} (dual rows with rows dual^T = 2 pi I) within radius r:
 * |n_d| <= r |dual_d| / 2 pi bounds the search. For each, real_term or recip_term. */
static void lattice_ball(table_acc *t, const double *rows, const double *dual, double r,
                         const int *near, int nnear, int recip) {
    int lim[3];
    for (int d = 0; d < 3; ++d) lim[d] = (int)ceil(r * sqrt(norm2(dual + 3 * d)) / (2 * FMM_PI));
    for (int c = 0; c <= lim[2]; ++c)
        for (int b = -lim[1]; b <= lim[1]; ++b)
            for (int a = -lim[0]; a <= lim[0]; ++a) {
                const int n[3] = {a, b, c};
                if (!positive(n)) continue;
                double R[3];
                combine(rows, n, R);
                if (norm2(R) >= r * r) continue;
                if (recip)
                    recip_term(t, R);
                else
                    real_term(t, R, in_set(near, nnear, n));
            }
}

/* The near set sorted, checked: 0 in it, no repeats, -n with every n, entries bounded. */
static int sorted_near(const int *near, int nnear, int **out) {
    if (!near || nnear < 1) return FMM_ERR_ARG;
    int *s = malloc(sizeof(int) * 3 * (size_t)nnear);
    if (!s) return FMM_ERR_NOMEM;
    for (int k = 0; k < 3 * nnear; ++k) {
        if (near[k] > NEAR_MAX_INDEX || near[k] < -NEAR_MAX_INDEX) {
            free(s);
            return FMM_ERR_ARG;
        }
        s[k] = near[k];
    }
    qsort(s, (size_t)nnear, 3 * sizeof(int), cmp_triple);
    const int zero[3] = {0, 0, 0};
    int ok = in_set(s, nnear, zero);
    for (int k = 0; k < nnear && ok; ++k) {
        const int m[3] = {-s[3 * k], -s[3 * k + 1], -s[3 * k + 2]};
        ok = in_set(s, nnear, m) && (k == 0 || cmp_triple(s + 3 * (k - 1), s + 3 * k) != 0);
    }
    if (!ok) {
        free(s);
        return FMM_ERR_ARG;
    }
    *out = s;
    return FMM_OK;
}

/* X_{L,-M} = (-1)^M conj X_LM and zero odd L, then the factor 2^(-e (L+1)) of the scaled units */
static void finish(int lmax, int e, double *re, double *im) {
    for (int l = 0; l <= lmax; ++l)
        for (int m = 0; m <= l; ++m) {
            const int f = harm_full(l, m), fm = harm_full(l, -m);
            if (l & 1) {
                re[f] = im[f] = re[fm] = im[fm] = 0.0;
                continue;
            }
            re[f] = ldexp(re[f], -e * (l + 1)), im[f] = m ? ldexp(im[f], -e * (l + 1)) : 0.0;
            re[fm] = m & 1 ? -re[f] : re[f], im[fm] = m & 1 ? im[f] : -im[f];
        }
}

static int all_finite(long n, const double *x) {
    for (long k = 0; k < n; ++k)
        if (!isfinite(x[k])) return 0;
    return 1;
}

int pbc_cell_far_table_split(const pbc_cell *cell, const int *near, int nnear, int lmax,
                             const pbc_far_split *split, double *are, double *aim, double *vre,
                             double *vim) {
    if (!cell || !split || !are || !aim || (!vre) != (!vim)) return FMM_ERR_ARG;
    if (lmax < 0 || lmax > 2 * FMM_ORDER_MAX) return FMM_ERR_ARG;
    if (!(split->alpha_v > 0 && split->near_x > 0 && split->eps > 0 && split->eps < 1 &&
          isfinite(split->alpha_v) && isfinite(split->near_x)))
        return FMM_ERR_ARG;
    if (!(cell->volume > 0 && isfinite(cell->volume))) return FMM_ERR_ARG;
    int *sn = NULL, rc = sorted_near(near, nnear, &sn);
    if (rc) return rc;
    /* scaled units: lengths times 2^-e, V^(1/3) in [1/2, 1); exact, undone in finish() */
    int e;
    frexp(cbrt(cell->volume), &e);
    double h[9], g[9];
    for (int k = 0; k < 9; ++k) h[k] = ldexp(cell->h[k], -e), g[k] = ldexp(cell->g[k], e);
    table_acc t = {.lmax = lmax, .strain = vre != NULL, .n = harm_ncoef(lmax)};
    t.V = ldexp(cell->volume, -3 * e);
    double rn2 = 0.0; /* the farthest near image */
    for (int k = 0; k < nnear; ++k) {
        double R[3];
        combine(h, sn + 3 * k, R);
        rn2 = fmax(rn2, norm2(R));
    }
    /* alpha lowered for the near images, at most 4-fold (a near set reaching much farther than
     * the cell's size costs accuracy, not unbounded time) */
    t.alpha = split->alpha_v / cbrt(t.V);
    if (t.alpha * t.alpha * rn2 > split->near_x)
        t.alpha = fmax(sqrt(split->near_x / rn2), 0.25 * t.alpha);
    const int nh = harm_ncoef(lmax + 1), w = 2 * lmax + 4;
    const size_t nacc = (size_t)(t.strain ? 20 : 2) * t.n;
    const size_t nmem =
        nacc + 2 * (size_t)nh + 2 * (size_t)(lmax + 3) + (size_t)tri(lmax + 1, 0) + 12 * (size_t)w;
    double *mem = calloc(nmem, sizeof(double));
    if (!mem) {
        free(sn);
        return FMM_ERR_NOMEM;
    }
    t.are = mem, t.aim = mem + t.n;
    t.dre = t.strain ? mem + 2 * t.n : NULL, t.dim = t.strain ? mem + 11 * t.n : NULL;
    t.hre = mem + nacc, t.him = t.hre + nh, t.g = t.him + nh, t.dg = t.g + lmax + 3;
    t.clm = t.dg + lmax + 3, t.row = t.clm + tri(lmax + 1, 0);
    /* c_LM (-1)^L = (L-M)! (L+M)! / (2L-1)!! by ratios, no factorial overflows */
    for (int l = 0; l <= lmax; ++l) {
        t.clm[tri(l, 0)] = l == 0 ? 1.0 : t.clm[tri(l - 1, 0)] * l * l / (2 * l - 1);
        for (int m = 0; m < l; ++m) t.clm[tri(l, m + 1)] = t.clm[tri(l, m)] * (l + m + 1) / (l - m);
    }
    /* the shortest far image, or a longer one (the real range only grows with it): the
     * shortest n +- e_d outside N over n in N (a ball-shaped N has the shortest far image there) */
    double rf2 = HUGE_VAL;
    for (int k = 0; k < nnear; ++k)
        for (int d = 0; d < 6; ++d) {
            int m[3] = {sn[3 * k], sn[3 * k + 1], sn[3 * k + 2]};
            m[d % 3] += d < 3 ? 1 : -1;
            double R[3];
            combine(h, m, R);
            if (!in_set(sn, nnear, m)) rf2 = fmin(rf2, norm2(R));
        }
    range_ctx rctx = {lmax, t.alpha * sqrt(rf2), t.g, t.dg};
    const double xr = solve_down(real_tail, &rctx, 8.0, split->eps),
                 xk = solve_down(recip_tail, &rctx, 8.0, split->eps);
    const double rc_real = sqrt(xr) / t.alpha;
    lattice_ball(&t, h, g, rc_real, sn, nnear, 0);
    /* near images beyond the real-space range: -mu P_L with P_L ~ 1, never left out */
    for (int k = 0; k < nnear; ++k) {
        double R[3];
        combine(h, sn + 3 * k, R);
        if (positive(sn + 3 * k) && norm2(R) >= rc_real * rc_real) real_term(&t, R, 1);
    }
    lattice_ball(&t, g, h, 2 * t.alpha * sqrt(xk), sn, nnear, 1);
    free(sn);
    const double bg = FMM_PI / (t.V * t.alpha * t.alpha);
    t.are[0] += -2 * t.alpha / sqrt(FMM_PI) - bg;
    finish(lmax, e, t.are, t.aim);
    int finite = all_finite(2L * t.n, t.are);
    if (t.strain) {
        for (int a = 0; a < 3; ++a) t.dre[4 * a * t.n] += bg;
        for (int a = 0; a < 3; ++a)
            for (int b = a; b < 3; ++b)
                for (int c = 0; c < 2; ++c) {
                    double *d = c ? t.dim : t.dre, *x = d + (3 * a + b) * t.n,
                           *y = d + (3 * b + a) * t.n;
                    for (int k = 0; k < t.n; ++k) x[k] = y[k] = 0.5 * (x[k] + y[k]);
                }
        for (int ab = 0; ab < 9; ++ab) finish(lmax, e, t.dre + ab * t.n, t.dim + ab * t.n);
        finite = finite && all_finite(18L * t.n, t.dre);
    }
    if (finite) {
        memcpy(are, t.are, sizeof(double) * t.n), memcpy(aim, t.aim, sizeof(double) * t.n);
        if (t.strain) {
            memcpy(vre, t.dre, sizeof(double) * 9 * t.n);
            memcpy(vim, t.dim, sizeof(double) * 9 * t.n);
        }
    }
    free(mem);
    return finite ? FMM_OK : FMM_ERR_RANGE;
}

int pbc_cell_far_table(const pbc_cell *cell, const int *near, int nnear, int lmax, double *are,
                       double *aim, double *vre, double *vim) {
    return pbc_cell_far_table_split(cell, near, nnear, lmax, &pbc_far_split_default, are, aim, vre,
                                    vim);
}

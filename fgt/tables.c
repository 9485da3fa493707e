/* fgt/tables.c - the FGT's error control: per box offset the order of each mode that meets the
 * tolerance, measured on sample points; the cost model; the box side it chooses (docs/fgt.md). */
#include <math.h>
#include <omp.h>
#include <stdlib.h>
#include <string.h>

#include "fgt/fgt_internal.h"

#define SAMPLES 17 /* sample points per box side for the measured 1-D truncation error */

/* ---------------------------------------------------------------------------------------
 * Error control. For box side b (scaled), half side r = b/2, and per-axis offset k of the
 * box centres (d = k b), the 1-D truncation errors at order p are measured on a grid of
 * SAMPLES x SAMPLES (source, target) positions over the two boxes:
 *   eh[k][p]  = max |exp(-(t - a)^2) - sum_{n<p} a^n/n! h_n(t)|          (Hermite; Taylor is
 *               the same function with source and target exchanged),
 *   et[k][p]  = max |exp(-(t + d - a)^2) - sum_{b<p} t^b (-1)^b/b! sum_{a<p} a^a/a! h_{a+b}(d)|,
 * with a the source offset from its centre and t the target offset. Since the Gaussian is a
 * product over axes and each factor is <= g[k] = exp(-max(0,|k|b-b)^2) on the box pair, the
 * d-dimensional error of one pair is at most sum_a e[k_a] prod_{a' != a} (g[k_a'] + e[k_a']).
 * Each mode is used at the lowest order where this is <= tol/2 (a factor 2 for the sampling);
 * a pair is dropped when prod g[k_a] <= tol/2. Every (source, target) pair goes through
 * exactly one mode, so |G - G_exact| <= tol * sum |q|.
 */
static void hermite_fun(double x, int n, double *h) {
    h[0] = exp(-x * x);
    if (n > 1) h[1] = 2 * x * h[0];
    for (int k = 1; k + 1 < n; ++k) h[k + 1] = 2 * x * h[k] - 2 * k * h[k - 1];
}

/* The larger of two measured errors, where NaN (terms that overflow on boxes many h wide) is
 * larger than any number and stays: an order whose error is unknown must fail every test
 * E <= tol/2 below, never pass for the error of a lower order. */
static double err_max(double m, double x) {
    return isnan(m) || x <= m ? m : x;
}

typedef struct tables {
    double b;
    int R, P;
    fgt_offset *off;
    int *colR;
    double *M;
} tables;

static void tables_free(tables *t) {
    free(t->off), free(t->colR), free(t->M);
    memset(t, 0, sizeof *t);
}

/* The 1-D errors at a distance of k boxes of side b, orders 1 .. FGT_PMAX, the largest over the
 * sample points sa of two boxes: of the Hermite expansion into eh's row k, of H2T into et's (quick:
 * twice the Hermite error; INFINITY where force rules H2T out). half: the error budget, below which
 * the H2T scan stops. */
static void errors_1d(int k, double b, const double *sa, double half, int force, int quick,
                      double *eh, double *et) {
    const int PM = FGT_PMAX;
    const double dk = k * b;
    /* Hermite */
    double *e = eh + (size_t)k * (PM + 1);
    for (int i = 0; i < SAMPLES; ++i)
        for (int j = 0; j < SAMPLES; ++j) {
            double a = sa[i], t = dk + sa[j], hn[FGT_PMAX], exact = exp(-(t - a) * (t - a));
            hermite_fun(t, PM, hn);
            double s = 0, an = 1;
            for (int n = 0; n < PM; ++n) {
                s += an * hn[n];
                an *= a / (n + 1);
                double err = fabs(exact - s);
                e[n + 1] = err_max(e[n + 1], err);
            }
        }
    /* H2T */
    e = et + (size_t)k * (PM + 1);
    double hd[2 * FGT_PMAX];
    hermite_fun(dk, 2 * PM, hd);
    if (quick)
        for (int p = 1; p <= PM; ++p) e[p] = 2 * eh[(size_t)k * (PM + 1) + p];
    else if (force == FGT_MODE_AUTO || force == FGT_MODE_H2T)
        for (int p = 1; p <= PM; ++p) {
            double worst = 0;
            for (int i = 0; i < SAMPLES; ++i) {
                double a = sa[i], C[FGT_PMAX], an[FGT_PMAX];
                an[0] = 1;
                for (int n = 1; n < p; ++n) an[n] = an[n - 1] * a / n;
                double fb = 1; /* (-1)^beta / beta! */
                for (int be = 0; be < p; ++be) {
                    double s = 0;
                    for (int al = 0; al < p; ++al) s += an[al] * hd[al + be];
                    C[be] = fb * s;
                    fb *= -1.0 / (be + 1);
                }
                for (int j = 0; j < SAMPLES; ++j) {
                    double t = sa[j], s = 0;
                    for (int be = p - 1; be >= 0; --be) s = s * t + C[be];
                    double x = t + dk - a, err = fabs(exp(-x * x) - s);
                    worst = err_max(worst, err);
                }
            }
            e[p] = worst;
            if (worst < 1e-6 * half) { /* far below any use: the rest is smaller still */
                for (int q = p + 1; q <= PM; ++q) e[q] = worst;
                break;
            }
        }
    else
        for (int p = 1; p <= PM; ++p) e[p] = INFINITY;
}

/* quick: the H2T error is taken as twice the Hermite error (for ranking box sides only) */
static int tables_build(tables *T, double b, double tol, int dim, int force, int quick) {
    memset(T, 0, sizeof *T);
    const double half = tol / 2, r = b / 2;
    const double rc = sqrt(log(1 / half));
    int R = (int)ceil(rc / b) + 1;
    if (R > FGT_RMAX) R = FGT_RMAX;
    T->b = b;
    T->R = R;
    const int PM = FGT_PMAX;
    double *eh = calloc((size_t)(R + 1) * (PM + 1), sizeof(double));
    double *et = calloc((size_t)(R + 1) * (PM + 1), sizeof(double));
    double *g = calloc((size_t)R + 1, sizeof(double));
    if (!eh || !et || !g) {
        free(eh), free(et), free(g);
        return FMM_ERR_NOMEM;
    }
    double sa[SAMPLES];
    for (int i = 0; i < SAMPLES; ++i) sa[i] = -r + 2 * r * i / (SAMPLES - 1);
    for (int k = 0; k <= R; ++k) {
        double gap = k * b - b;
        g[k] = gap > 0 ? exp(-gap * gap) : 1.0;
        errors_1d(k, b, sa, half, force, quick, eh, et);
    }
    /* per offset triple (folded to |k|) */
    const int R0 = dim >= 3 ? R : 0, R1 = dim >= 2 ? R : 0;
    size_t noff = (size_t)(R + 1) * (R + 1) * (R + 1);
    T->off = calloc(noff, sizeof(fgt_offset));
    T->colR = malloc(sizeof(int) * (size_t)(2 * R + 1) * (2 * R + 1));
    if (!T->off || !T->colR) {
        free(eh), free(et), free(g);
        tables_free(T);
        return FMM_ERR_NOMEM;
    }
    int P = 1;
    for (int k0 = 0; k0 <= R0; ++k0)
        for (int k1 = 0; k1 <= R1; ++k1)
            for (int k2 = 0; k2 <= R; ++k2) {
                int ks[3] = {k0, k1, k2}, used0 = 3 - dim;
                double gp = 1;
                for (int a = used0; a < 3; ++a) gp *= g[ks[a]];
                fgt_offset *o = T->off + ((size_t)k0 * (R + 1) + k1) * (R + 1) + k2;
                if (gp <= half) continue;
                o->keep = 1;
                for (int m = 0; m < 2; ++m) {
                    const double *e = m == 0 ? eh : et;
                    for (int p = 1; p <= PM; ++p) {
                        double E = 0;
                        for (int a = used0; a < 3; ++a) {
                            double term = e[(size_t)ks[a] * (PM + 1) + p];
                            for (int a2 = used0; a2 < 3; ++a2)
                                if (a2 != a) term *= g[ks[a2]] + e[(size_t)ks[a2] * (PM + 1) + p];
                            E += term;
                        }
                        if (E <= half) {
                            if (m == 0)
                                o->p_herm = (unsigned char)p;
                            else
                                o->p_h2t = (unsigned char)p;
                            if (p > P) P = p;
                            break;
                        }
                    }
                }
            }
    for (int k0 = -R; k0 <= R; ++k0)
        for (int k1 = -R; k1 <= R; ++k1) {
            int best = -1;
            if (abs(k0) <= R0 && abs(k1) <= R1)
                for (int k2 = 0; k2 <= R; ++k2)
                    if (fgt_off(T->off, R, k0, k1, k2)->keep) best = k2;
            T->colR[(k0 + R) * (2 * R + 1) + (k1 + R)] = best;
        }
    T->P = P;
    free(eh), free(et), free(g);
    return FMM_OK;
}

/* the H2T 1-D matrices, transposed and padded: M[k][alpha*P8 + beta] = (-1)^beta/beta!
 * h_{alpha+beta}(k b), |k| <= R, P8 = P rounded up to 8 (zeros beyond P) */
static int tables_matrices(tables *T) {
    const int R = T->R, P = T->P, P8 = (P + 7) / 8 * 8;
    T->M = calloc((size_t)(2 * R + 1) * P * P8, sizeof(double));
    if (!T->M) return FMM_ERR_NOMEM;
    for (int k = -R; k <= R; ++k) {
        double hd[2 * FGT_PMAX], *M = T->M + (size_t)(k + R) * P * P8;
        hermite_fun(k * T->b, 2 * P, hd);
        double fb = 1;
        for (int be = 0; be < P; ++be) {
            for (int al = 0; al < P; ++al) M[al * P8 + be] = fb * hd[al + be];
            fb *= -1.0 / (be + 1);
        }
    }
    return FMM_OK;
}

fgt_cost fgt_default_cost(void) {
    fgt_cost c = {.direct = 6.0, .coef = 1.0, .fun = 4.0, .h2t = 1.5, .pair = 60.0};
    return c;
}

/* Estimated cost of box side b for points spread uniformly over the extents ext (scaled). */
static double estimate(const tables *T, int dim, const double ext[3], long ns, long nt, int force,
                       const fgt_cost *c) {
    const int R = T->R;
    double nbox = 1, n[3];
    for (int a = 0; a < 3; ++a) {
        n[a] = a >= 3 - dim ? floor(ext[a] / T->b) + 1 : 1;
        nbox *= n[a];
    }
    double fs = ns >= nbox ? 1.0 : ns / nbox, ft = nt >= nbox ? 1.0 : nt / nbox;
    double ms = ns / (nbox * fs), mt = nt / (nbox * ft);
    double per = 0, useA = 0, useB = 0;
    const int R0 = dim >= 3 ? R : 0, R1 = dim >= 2 ? R : 0;
    for (int k0 = -R0; k0 <= R0; ++k0)
        for (int k1 = -R1; k1 <= R1; ++k1) {
            per += 20; /* a column search */
            for (int k2 = -R; k2 <= R; ++k2) {
                if (fabs((double)k0) >= n[0] || fabs((double)k1) >= n[1] ||
                    fabs((double)k2) >= n[2])
                    continue;
                const fgt_offset *e = fgt_off(T->off, R, k0, k1, k2);
                if (!e->keep) continue;
                double w = (1 - fabs((double)k0) / n[0]) * (1 - fabs((double)k1) / n[1]) *
                           (1 - fabs((double)k2) / n[2]) * fs;
                int p, mode = fgt_choose_mode(e, dim, (long)ceil(ms), (long)ceil(mt), force, c, &p);
                double pd = 1;
                for (int d = 0; d < dim; ++d) pd *= p;
                double cm = 0;
                switch (mode) {
                case FGT_MODE_DIRECT:
                    cm = c->direct * ms * mt;
                    break;
                case FGT_MODE_HERMITE:
                    cm = mt * (c->coef * pd + c->fun * dim * p), useA += w;
                    break;
                case FGT_MODE_TAYLOR:
                    cm = ms * (c->coef * pd + c->fun * dim * p), useB += w;
                    break;
                default:
                    cm = c->h2t * dim * pd * p, useA += w, useB += w;
                    break;
                }
                per += w * (c->pair + cm);
            }
        }
    double Pd = 1;
    for (int d = 0; d < dim; ++d) Pd *= T->P;
    double total = nbox * ft * per;
    if (useA > 0) total += ns * (c->coef * Pd + c->fun * dim * T->P);
    if (useB > 0) total += nt * (c->coef * Pd + c->fun * dim * T->P);
    return total;
}

/* The box side and its tables for points of scaled extents ext (fgt_internal.h): fills t->b,
 * R, P, off, colR and M. Dim, options and cost model from t. */
int fgt_choose_boxes(fgt_plan *t, const double ext[3], long ns, long nt) {
    const int dim = t->dim, a0 = 3 - dim;
    /* box side: opts.box_side, or the cheapest candidate by the cost model, at least big enough
     * that the number of possible boxes fits in a 62-bit key */
    double bmin = 0.125;
    for (int a = a0; a < 3; ++a)
        if (ext[a] / (1 << 20) > bmin) bmin = ext[a] / (1 << 20);
    static const double cand[] = {0.35, 0.5, 0.7, 1.0, 1.4, 2.0, 2.8, 4.0, 5.6, 8.0};
    tables T = {0}, best = {0};
    double best_cost = INFINITY;
    int rc = FMM_OK;
    if (t->o.box_side > 0 || t->o.force_mode != FGT_MODE_AUTO) {
        /* a forced mode without a box side: side h, where every mode is usable */
        double b = t->o.box_side > 0 ? t->o.box_side : 1.0;
        if (b < bmin) b = bmin;
        rc = tables_build(&best, b, t->o.tolerance, dim, t->o.force_mode, 0);
    } else {
        for (size_t c = 0; c < sizeof cand / sizeof cand[0] && !rc; ++c) {
            if (cand[c] < bmin) continue;
            rc = tables_build(&T, cand[c], t->o.tolerance, dim, t->o.force_mode, 1);
            if (rc) break;
            double e = estimate(&T, dim, ext, ns, nt, t->o.force_mode, &t->cost);
            if (e < best_cost) {
                tables_free(&best);
                best = T, best_cost = e;
                memset(&T, 0, sizeof T);
            } else
                tables_free(&T);
        }
        double b = best.off ? best.b : bmin;
        tables_free(&best);
        if (!rc) rc = tables_build(&best, b, t->o.tolerance, dim, t->o.force_mode, 0);
    }
    if (!rc) rc = tables_matrices(&best);
    if (rc) {
        tables_free(&best);
        return rc;
    }
    t->b = best.b, t->R = best.R, t->P = best.P, t->off = best.off, t->colR = best.colR,
    t->M = best.M;
    return FMM_OK;
}

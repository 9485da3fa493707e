/* fgt.c - the fast Gauss transform: plan, error control, boxes, CPU evaluation.
 * See include/fmm_fgt.h for the API and docs/fgt.md for the algorithm. */
#include <math.h>
#include <omp.h>
#include <stdlib.h>
#include <string.h>

#include "core/scale.h"
#include "core/sort.h"
#include "fgt/fgt_internal.h"
#include "fgt/fgt_kernels.h"

#define SAMPLES 17 /* sample points per box side for the measured 1-D truncation error */

void fgt_default_opts(fgt_opts *o) {
    if (!o) return;
    memset(o, 0, sizeof *o);
    o->tolerance = 1e-6;
    o->device = FMM_DEVICE_CPU;
}

const char *fgt_strerror(int status) {
    return fmm_strerror(status);
}

static int check_opts(const fgt_opts *o) {
    if (!(o->tolerance >= FGT_TOL_MIN && o->tolerance <= FGT_TOL_MAX)) return FMM_ERR_TOLERANCE;
    if (o->threads < 0 || o->threads > FMM_THREADS_MAX) return FMM_ERR_THREADS;
    if (o->device != FMM_DEVICE_CPU && o->device != FMM_DEVICE_CUDA) return FMM_ERR_ARG;
    if (!(o->box_side == 0 || (o->box_side >= 0.125 && o->box_side <= 8))) return FMM_ERR_PARAM;
    if (o->force_mode < FGT_MODE_AUTO || o->force_mode > FGT_MODE_H2T) return FMM_ERR_PARAM;
    return FMM_OK;
}

int fgt_makeplan(int dim, double h, const fgt_opts *opts, fgt_plan **plan) {
    if (!plan) return FMM_ERR_ARG;
    *plan = NULL;
    if (dim < 1 || dim > 3) return FMM_ERR_PARAM;
    if (!(h > 0) || !isfinite(h)) return FMM_ERR_PARAM;
    fgt_opts o;
    if (opts)
        o = *opts;
    else
        fgt_default_opts(&o);
    int rc = check_opts(&o);
    if (rc) return rc;
    if (o.device == FMM_DEVICE_CUDA) {
#ifdef FMM_HAVE_CUDA
        if (fmm_cuda_device_count() == 0) return FMM_ERR_DEVICE;
#else
        return FMM_ERR_DEVICE;
#endif
    }
    fgt_plan *p = calloc(1, sizeof *p);
    if (!p) return FMM_ERR_NOMEM;
    p->dim = dim;
    p->h = h;
    p->o = o;
    p->order_dims = 3 - dim;
    *plan = p;
    return FMM_OK;
}

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
        double dk = k * b, gap = k * b - b;
        g[k] = gap > 0 ? exp(-gap * gap) : 1.0;
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

static fgt_cost default_cost(void) {
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

/* ---------------------------------------------------------------------------------------
 * Points and boxes */
static void plan_free_geometry(fgt_plan *p) {
#ifdef FMM_HAVE_CUDA
    if (p->cuda) fgt_cuda_free(p);
#endif
    p->cuda = NULL;
    free(p->off), free(p->colR), free(p->M);
    for (int a = 0; a < 3; ++a) free(p->su[a]), free(p->tu[a]);
    free(p->sperm), free(p->tperm), free(p->skey), free(p->tkey), free(p->sstart), free(p->tstart);
    free(p->aidx), free(p->sq), free(p->A), free(p->gs);
    p->off = NULL, p->colR = NULL, p->M = NULL;
    for (int a = 0; a < 3; ++a) p->su[a] = p->tu[a] = NULL;
    p->sperm = p->tperm = NULL, p->skey = p->tkey = NULL, p->sstart = p->tstart = NULL;
    p->aidx = NULL, p->sq = p->A = p->gs = NULL;
    p->have_pts = 0;
}

void fgt_destroy(fgt_plan *p) {
    if (!p) return;
    plan_free_geometry(p);
    free(p);
}

/* u = (x - lo) / h on axis a, in the plan's units (fgt_internal.h) */
static inline double scaled(const fgt_plan *p, double x, int a) {
    return (fmm_pow2(x, p->fl, -p->elen) - p->lo[a]) / p->hs;
}

/* scale, key, sort one point set; fills u[3] (padded), perm, boxes */
static int build_points(const fgt_plan *p, long n, const double *x, double *u[3], long **perm,
                        long *nbox, int64_t **bkey, long **bstart) {
    const int dim = p->dim, a0 = 3 - dim;
    uint64_t *key = malloc(sizeof(uint64_t) * (size_t)n);
    long *idx = malloc(sizeof(long) * (size_t)n);
    int rc = FMM_ERR_NOMEM;
    for (int a = 0; a < 3; ++a) u[a] = NULL;
    *perm = NULL, *bkey = NULL, *bstart = NULL;
    if (!key || !idx) goto fail;
    const double b = p->b;
    const int nth = p->o.threads > 0 ? p->o.threads : omp_get_max_threads();
#pragma omp parallel for schedule(static) num_threads(nth)
    for (long i = 0; i < n; ++i) {
        uint64_t kk = 0;
        for (int a = 0; a < 3; ++a) {
            long ia = 0;
            if (a >= a0) {
                double v = scaled(p, x[i * dim + (a - a0)], a);
                ia = (long)(v / b);
                if (ia >= p->n[a]) ia = p->n[a] - 1;
                if (ia < 0) ia = 0;
            }
            kk = kk * (uint64_t)p->n[a] + (uint64_t)ia;
        }
        key[i] = kk;
        idx[i] = i;
    }
    uint64_t total = (uint64_t)p->n[0] * p->n[1] * p->n[2];
    int bits = 1;
    while (bits < 63 && ((uint64_t)1 << bits) < total) ++bits;
    if ((rc = fmm_radix_sort(n, key, idx, bits, nth))) goto fail;
    rc = FMM_ERR_NOMEM;
    for (int a = 0; a < 3; ++a) {
        u[a] = malloc(sizeof(double) * (size_t)(n + 8));
        if (!u[a]) goto fail;
    }
    /* one gather for all axes: each point's coordinates share a cache line */
#pragma omp parallel for schedule(static) num_threads(nth)
    for (long i = 0; i < n; ++i) {
        const double *xi = x + idx[i] * dim;
        for (int a = 0; a < 3; ++a) u[a][i] = a < a0 ? b / 2 : scaled(p, xi[a - a0], a);
    }
    for (int a = 0; a < 3; ++a)
        for (long i = n; i < n + 8; ++i) u[a][i] = a < a0 ? b / 2 : 0;
    long nb = 1;
    for (long i = 1; i < n; ++i) nb += key[i] != key[i - 1];
    *bkey = malloc(sizeof(int64_t) * (size_t)nb);
    *bstart = malloc(sizeof(long) * (size_t)(nb + 1));
    if (!*bkey || !*bstart) goto fail;
    long m = 0;
    for (long i = 0; i < n; ++i)
        if (i == 0 || key[i] != key[i - 1]) (*bkey)[m] = (int64_t)key[i], (*bstart)[m++] = i;
    (*bstart)[nb] = n;
    *nbox = nb;
    *perm = idx;
    free(key);
    return FMM_OK;
fail:
    free(key), free(idx);
    for (int a = 0; a < 3; ++a) free(u[a]), u[a] = NULL;
    free(*bkey), free(*bstart);
    *bkey = NULL, *bstart = NULL;
    return rc;
}

static long lower_bound(const int64_t *k, long n, int64_t v) {
    long lo = 0, hi = n;
    while (lo < hi) {
        long mid = (lo + hi) / 2;
        if (k[mid] < v)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo;
}

static void box_index(const fgt_plan *p, int64_t key, long i[3]) {
    i[2] = key % p->n[2];
    key /= p->n[2];
    i[1] = key % p->n[1];
    i[0] = key / p->n[1];
}

/* Calls visit(ctx, sb, k, mode, order) for every kept source box of target box tb, in key order. */
typedef void (*visit_fn)(void *ctx, long sb, const long k[3], int mode, int order);

static void traverse(const fgt_plan *p, long tb, visit_fn visit, void *ctx) {
    long it[3];
    box_index(p, p->tkey[tb], it);
    const int R = p->R;
    const int R0 = p->dim >= 3 ? R : 0, R1 = p->dim >= 2 ? R : 0;
    const long nt = p->tstart[tb + 1] - p->tstart[tb];
    for (int k0 = -R0; k0 <= R0; ++k0) {
        long j0 = it[0] - k0;
        if (j0 < 0 || j0 >= p->n[0]) continue;
        for (int k1 = -R1; k1 <= R1; ++k1) {
            long j1 = it[1] - k1;
            if (j1 < 0 || j1 >= p->n[1]) continue;
            int rz = p->colR[(k0 + R) * (2 * R + 1) + (k1 + R)];
            if (rz < 0) continue;
            long lo2 = it[2] - rz < 0 ? 0 : it[2] - rz;
            long hi2 = it[2] + rz >= p->n[2] ? p->n[2] - 1 : it[2] + rz;
            int64_t klo = fgt_key(p->n, j0, j1, lo2), khi = fgt_key(p->n, j0, j1, hi2);
            for (long sb = lower_bound(p->skey, p->nsb, klo); sb < p->nsb && p->skey[sb] <= khi;
                 ++sb) {
                long k[3] = {k0, k1, it[2] - p->skey[sb] % p->n[2]};
                const fgt_offset *e = fgt_off(p->off, R, k[0], k[1], k[2]);
                int order;
                int mode = fgt_choose_mode(e, p->dim, p->sstart[sb + 1] - p->sstart[sb], nt,
                                           p->o.force_mode, &p->cost, &order);
                visit(ctx, sb, k, mode, order);
            }
        }
    }
}

typedef struct count_ctx {
    const fgt_plan *p;
    long pairs[5];
    long *aidx;
} count_ctx;

static void count_visit(void *vc, long sb, const long k[3], int mode, int order) {
    (void)k, (void)order;
    count_ctx *c = vc;
    c->pairs[mode]++;
    if (mode == FGT_MODE_HERMITE || mode == FGT_MODE_H2T) {
#pragma omp atomic write
        c->aidx[sb] = 1;
    }
}

int fgt_setpts(fgt_plan *plan, long ns, const double *src, long nt, const double *trg) {
    if (!plan || !src) return FMM_ERR_ARG;
    if (!trg) nt = ns;
    if (ns < 1 || nt < 1) return FMM_ERR_NPTS;
    const int dim = plan->dim, a0 = 3 - dim;
    const double *tx = trg ? trg : src;
    double lo[3] = {0, 0, 0}, hi[3] = {0, 0, 0};
    for (int d = 0; d < dim; ++d) lo[a0 + d] = INFINITY, hi[a0 + d] = -INFINITY;
    const int nth = plan->o.threads > 0 ? plan->o.threads : omp_get_max_threads();
    for (int s = 0; s < 2; ++s) {
        const double *x = s ? tx : src;
        long n = s ? nt : ns;
        int bad = 0;
        double l0 = lo[0], l1 = lo[1], l2 = lo[2], h0 = hi[0], h1 = hi[1], h2 = hi[2];
#pragma omp parallel for schedule(static) num_threads(nth) reduction(|                             \
                                                                     : bad)                        \
    reduction(min                                                                                  \
              : l0, l1, l2) reduction(max                                                          \
                                      : h0, h1, h2)
        for (long i = 0; i < n; ++i) {
            double v[3] = {0, 0, 0};
            for (int d = 0; d < dim; ++d) v[a0 + d] = x[i * dim + d], bad |= !isfinite(v[a0 + d]);
            l0 = v[0] < l0 ? v[0] : l0, l1 = v[1] < l1 ? v[1] : l1, l2 = v[2] < l2 ? v[2] : l2;
            h0 = v[0] > h0 ? v[0] : h0, h1 = v[1] > h1 ? v[1] : h1, h2 = v[2] > h2 ? v[2] : h2;
        }
        if (bad) return FMM_ERR_NONFINITE;
        lo[0] = l0, lo[1] = l1, lo[2] = l2, hi[0] = h0, hi[1] = h1, hi[2] = h2;
    }
    fgt_plan t = *plan; /* the new geometry; the plan keeps the old one until success */
    t.cuda = NULL;
    t.off = NULL, t.colR = NULL, t.M = NULL;
    for (int a = 0; a < 3; ++a) t.su[a] = t.tu[a] = NULL;
    t.sperm = t.tperm = NULL, t.skey = t.tkey = NULL, t.sstart = t.tstart = NULL;
    t.aidx = NULL, t.sq = t.A = t.gs = NULL;
    t.ns = ns, t.nt = nt;
    t.cost = default_cost();
    /* units of 2^elen, the scale of the larger of h and every |coordinate| (fgt_internal.h) */
    double amax = plan->h;
    for (int a = a0; a < 3; ++a) amax = fmax(amax, fmax(fabs(lo[a]), fabs(hi[a])));
    t.elen = fmm_scale_exponent(amax);
    t.fl = ldexp(1.0, -t.elen);
    t.hs = fmm_pow2(plan->h, t.fl, -t.elen);
    double ext[3];
    for (int a = 0; a < 3; ++a) {
        t.lo[a] = fmm_pow2(lo[a], t.fl, -t.elen);
        ext[a] = (fmm_pow2(hi[a], t.fl, -t.elen) - t.lo[a]) / t.hs;
        if (!isfinite(ext[a])) return FMM_ERR_PARAM; /* h too small for the extent */
    }
    /* box side: the cheapest candidate by the cost model, at least big enough that the
     * number of possible boxes fits in a 62-bit key */
    double bmin = 0.125;
    for (int a = a0; a < 3; ++a)
        if (ext[a] / (1 << 20) > bmin) bmin = ext[a] / (1 << 20);
    static const double cand[] = {0.35, 0.5, 0.7, 1.0, 1.4, 2.0, 2.8, 4.0, 5.6, 8.0};
    tables T = {0}, best = {0};
    double best_cost = INFINITY;
    int rc = FMM_OK;
    if (plan->o.box_side > 0 || plan->o.force_mode != FGT_MODE_AUTO) {
        /* a forced mode without a box side: side h, where every mode is usable */
        double b = plan->o.box_side > 0 ? plan->o.box_side : 1.0;
        if (b < bmin) b = bmin;
        rc = tables_build(&best, b, plan->o.tolerance, dim, plan->o.force_mode, 0);
    } else {
        for (size_t c = 0; c < sizeof cand / sizeof cand[0] && !rc; ++c) {
            if (cand[c] < bmin) continue;
            rc = tables_build(&T, cand[c], plan->o.tolerance, dim, plan->o.force_mode, 1);
            if (rc) break;
            double e = estimate(&T, dim, ext, ns, nt, plan->o.force_mode, &t.cost);
            if (e < best_cost) {
                tables_free(&best);
                best = T, best_cost = e;
                memset(&T, 0, sizeof T);
            } else
                tables_free(&T);
        }
        double b = best.off ? best.b : bmin;
        tables_free(&best);
        if (!rc) rc = tables_build(&best, b, plan->o.tolerance, dim, plan->o.force_mode, 0);
    }
    if (!rc) rc = tables_matrices(&best);
    if (rc) {
        tables_free(&best);
        return rc;
    }
    t.b = best.b, t.R = best.R, t.P = best.P, t.off = best.off, t.colR = best.colR, t.M = best.M;
    for (int a = 0; a < 3; ++a) {
        t.n[a] = a >= a0 ? (long)floor(ext[a] / t.b) + 1 : 1;
        t.pe[a] = a >= a0 ? t.P : 1;
    }
    t.ncoef = (long)t.pe[0] * t.pe[1] * t.pe[2];
    rc = build_points(&t, ns, src, t.su, &t.sperm, &t.nsb, &t.skey, &t.sstart);
    if (!rc) rc = build_points(&t, nt, tx, t.tu, &t.tperm, &t.ntb, &t.tkey, &t.tstart);
    if (!rc) {
        t.aidx = calloc((size_t)t.nsb, sizeof(long));
        t.sq = malloc(sizeof(double) * (size_t)(ns + 8));
        t.gs = malloc(sizeof(double) * (size_t)(nt + 8));
        if (!t.aidx || !t.sq || !t.gs) rc = FMM_ERR_NOMEM;
    }
    if (!rc) {
        long pairs[5] = {0, 0, 0, 0, 0};
#pragma omp parallel num_threads(nth)
        {
            count_ctx c = {&t, {0, 0, 0, 0, 0}, t.aidx};
#pragma omp for schedule(dynamic, 16)
            for (long tb = 0; tb < t.ntb; ++tb) traverse(&t, tb, count_visit, &c);
#pragma omp critical
            for (int m = 0; m < 5; ++m) pairs[m] += c.pairs[m];
        }
        memcpy(t.pairs, pairs, sizeof pairs);
        t.na = 0;
        for (long sb = 0; sb < t.nsb; ++sb) t.aidx[sb] = t.aidx[sb] ? t.na++ : -1;
        if (t.na > 0 && t.o.device == FMM_DEVICE_CPU) {
            t.A = malloc(sizeof(double) * (size_t)t.na * (size_t)t.ncoef);
            if (!t.A) rc = FMM_ERR_NOMEM;
        }
    }
#ifdef FMM_HAVE_CUDA
    if (!rc && t.o.device == FMM_DEVICE_CUDA) rc = fgt_cuda_setpts(&t);
#endif
    if (rc) {
        plan_free_geometry(&t);
        return rc;
    }
    plan_free_geometry(plan);
    *plan = t;
    plan->have_pts = 1;
    return FMM_OK;
}

int fgt_get_info(const fgt_plan *p, fgt_info *info) {
    if (!p || !info) return FMM_ERR_ARG;
    memset(info, 0, sizeof *info);
    info->dim = p->dim;
    if (!p->have_pts) return FMM_ERR_NOPTS;
    info->box_side = p->b;
    info->order = p->P;
    info->radius = p->R;
    info->source_boxes = p->nsb;
    info->target_boxes = p->ntb;
    memcpy(info->pairs, p->pairs, sizeof p->pairs);
    return FMM_OK;
}

/* ---------------------------------------------------------------------------------------
 * CPU evaluation */
typedef struct eval_ctx {
    const fgt_plan *p;
    long tb, t0, t1;
    double c[3];   /* target box centre */
    double *g;     /* gs + t0 */
    double *B;     /* Taylor coefficients of the target box (stride P) */
    int pB;        /* largest order accumulated into B */
    long ds0, ds1; /* pending direct span of sources */
    double *acc, *tmp;
} eval_ctx;

static void flush_direct(eval_ctx *e) {
    if (e->ds1 > e->ds0)
        fgt_k_direct(e->t0, e->t1, e->p->tu, e->ds0, e->ds1, e->p->su, e->p->sq, e->g);
    e->ds0 = e->ds1 = 0;
}

static void eval_visit(void *vc, long sb, const long k[3], int mode, int order) {
    eval_ctx *e = vc;
    const fgt_plan *p = e->p;
    long s0 = p->sstart[sb], s1 = p->sstart[sb + 1];
    if (mode == FGT_MODE_DIRECT) {
        if (e->ds1 == s0 && e->ds1 > e->ds0)
            e->ds1 = s1;
        else {
            flush_direct(e);
            e->ds0 = s0, e->ds1 = s1;
        }
        return;
    }
    int pe[3], st[3] = {p->pe[0], p->pe[1], p->pe[2]};
    for (int a = 0; a < 3; ++a) pe[a] = p->pe[a] > 1 ? order : 1;
    double cs[3];
    for (int a = 0; a < 3; ++a) cs[a] = e->c[a] - k[a] * p->b; /* source box centre */
    if (mode == FGT_MODE_HERMITE) {
        fgt_k_eval(0, e->t0, e->t1, p->tu, cs, pe, st, p->A + p->aidx[sb] * p->ncoef, e->g);
    } else if (mode == FGT_MODE_TAYLOR) {
        fgt_k_moments(1, s0, s1, p->su, p->sq, e->c, pe, st, e->B, e->acc);
        if (order > e->pB) e->pB = order;
    } else {
        const double *M[3];
        const int P8 = (p->P + 7) / 8 * 8;
        for (int a = 0; a < 3; ++a) M[a] = p->M + (size_t)(k[a] + p->R) * p->P * P8;
        fgt_k_h2t(p->A + p->aidx[sb] * p->ncoef, e->B, M, P8, pe, st, e->tmp);
        if (order > e->pB) e->pB = order;
    }
}

static int execute_cpu(fgt_plan *p) {
    const int nth = p->o.threads > 0 ? p->o.threads : omp_get_max_threads();
    int fail = 0;
    const size_t ncoef = (size_t)p->ncoef;
#pragma omp parallel num_threads(nth)
    {
        double *acc = aligned_alloc(64, sizeof(double) * 8 * ncoef);
        double *B = malloc(sizeof(double) * ncoef);
        const size_t P8 = (size_t)(p->P + 7) / 8 * 8;
        double *tmp = aligned_alloc(64, sizeof(double) * 2 * (size_t)p->pe[0] * p->pe[1] * P8);
        if (!acc || !B || !tmp) {
#pragma omp atomic write
            fail = 1;
        }
#pragma omp barrier
        if (!fail) {
            const int st[3] = {p->pe[0], p->pe[1], p->pe[2]};
#pragma omp for schedule(dynamic, 4)
            for (long sb = 0; sb < p->nsb; ++sb) {
                if (p->aidx[sb] < 0) continue;
                long i[3];
                box_index(p, p->skey[sb], i);
                double c[3];
                for (int a = 0; a < 3; ++a) c[a] = (i[a] + 0.5) * p->b;
                double *A = p->A + p->aidx[sb] * p->ncoef;
                memset(A, 0, sizeof(double) * ncoef);
                fgt_k_moments(0, p->sstart[sb], p->sstart[sb + 1], p->su, p->sq, c, p->pe, st, A,
                              acc);
            }
#pragma omp for schedule(dynamic, 1)
            for (long tb = 0; tb < p->ntb; ++tb) {
                eval_ctx e = {.p = p,
                              .tb = tb,
                              .t0 = p->tstart[tb],
                              .t1 = p->tstart[tb + 1],
                              .B = B,
                              .pB = 0,
                              .ds0 = 0,
                              .ds1 = 0,
                              .acc = acc,
                              .tmp = tmp};
                long i[3];
                box_index(p, p->tkey[tb], i);
                for (int a = 0; a < 3; ++a) e.c[a] = (i[a] + 0.5) * p->b;
                e.g = p->gs + e.t0;
                for (long j = e.t0; j < e.t1; ++j) p->gs[j] = 0;
                memset(B, 0, sizeof(double) * ncoef);
                traverse(p, tb, eval_visit, &e);
                flush_direct(&e);
                if (e.pB > 0) {
                    int pe[3];
                    for (int a = 0; a < 3; ++a) pe[a] = p->pe[a] > 1 ? e.pB : 1;
                    fgt_k_eval(1, e.t0, e.t1, p->tu, e.c, pe, st, B, e.g);
                }
            }
        }
        free(acc), free(B), free(tmp);
    }
    return fail ? FMM_ERR_NOMEM : FMM_OK;
}

int fgt_execute(fgt_plan *p, const double *q, double *g) {
    if (!p || !q || !g) return FMM_ERR_ARG;
    if (!p->have_pts) return FMM_ERR_NOPTS;
    const int nth = p->o.threads > 0 ? p->o.threads : omp_get_max_threads();
    /* weights divided by a power of two near the largest (core/scale.h), G scaled back at the
     * end: no overflow inside the sums for weights near 1e308, no subnormal products near 1e-308 */
    double qmax = 0;
    int rc = fmm_check_max_abs(p->ns, q, &qmax, nth);
    if (rc) return rc;
    const int eq = fmm_scale_exponent(qmax);
    const double f = ldexp(1.0, -eq);
    /* the permutations are random accesses over the whole arrays: threads hide their latency */
#pragma omp parallel for schedule(static) num_threads(nth)
    for (long i = 0; i < p->ns; ++i) p->sq[i] = fmm_pow2(q[p->sperm[i]], f, -eq);
    for (long i = p->ns; i < p->ns + 8; ++i) p->sq[i] = 0;
#ifdef FMM_HAVE_CUDA
    if (p->o.device == FMM_DEVICE_CUDA)
        rc = fgt_cuda_execute(p, p->sq, p->gs);
    else
#endif
        rc = execute_cpu(p);
    if (!rc) rc = fmm_scale_output(p->nt, p->gs, 0, p->gs, 0, eq, nth);
    if (rc) return rc;
#pragma omp parallel for schedule(static) num_threads(nth)
    for (long i = 0; i < p->nt; ++i) g[p->tperm[i]] = p->gs[i];
    return FMM_OK;
}

int fgt_direct(int dim, double h, long ns, const double *src, const double *q, long nt,
               const double *trg, double *g, int threads) {
    if (dim < 1 || dim > 3 || !(h > 0) || !isfinite(h)) return FMM_ERR_PARAM;
    if (!src || !q || !g) return FMM_ERR_ARG;
    if (!trg) trg = src, nt = ns;
    if (ns < 1 || nt < 1) return FMM_ERR_NPTS;
    if (threads < 0 || threads > FMM_THREADS_MAX) return FMM_ERR_THREADS;
    int nth = threads > 0 ? threads : omp_get_max_threads();
    /* the plan's units (fgt_internal.h): coordinates and h divided by 2^elen, the scale of the
     * larger of h and every |coordinate|, weights by a power of two near the largest; then t - s
     * cannot overflow and (t - s) / h is one correctly rounded division, whatever the scale of h */
    double amax = h, qmax = 0;
    int rc = fmm_check_max_abs(ns * dim, src, &amax, nth);
    if (!rc) rc = fmm_check_max_abs(nt * dim, trg, &amax, nth);
    if (!rc) rc = fmm_check_max_abs(ns, q, &qmax, nth);
    if (rc) return rc;
    const int elen = fmm_scale_exponent(amax), eq = fmm_scale_exponent(qmax);
    double *buf = malloc(sizeof(double) * (size_t)((ns + nt) * dim + ns));
    if (!buf) return FMM_ERR_NOMEM;
    double *s = buf, *t = s + ns * dim, *qs = t + nt * dim;
    const double fl = ldexp(1.0, -elen), fq = ldexp(1.0, -eq), hs = fmm_pow2(h, fl, -elen);
#pragma omp parallel for schedule(static) num_threads(nth)
    for (long i = 0; i < ns * dim; ++i) s[i] = fmm_pow2(src[i], fl, -elen);
#pragma omp parallel for schedule(static) num_threads(nth)
    for (long i = 0; i < nt * dim; ++i) t[i] = fmm_pow2(trg[i], fl, -elen);
#pragma omp parallel for schedule(static) num_threads(nth)
    for (long i = 0; i < ns; ++i) qs[i] = fmm_pow2(q[i], fq, -eq);
#pragma omp parallel for schedule(dynamic, 64) num_threads(nth)
    for (long j = 0; j < nt; ++j) {
        double sum = 0;
        for (long i = 0; i < ns; ++i) {
            double r2 = 0;
            for (int d = 0; d < dim; ++d) {
                double u = (t[j * dim + d] - s[i * dim + d]) / hs;
                r2 += u * u;
            }
            sum += qs[i] * exp(-r2);
        }
        g[j] = sum;
    }
    free(buf);
    return fmm_scale_output(nt, g, 0, g, 0, eq, nth);
}

#ifndef FMM_HAVE_CUDA
int fgt_cuda_stage_times(const fgt_plan *p, double ms[4]) {
    (void)p, (void)ms;
    return FMM_ERR_DEVICE;
}
int fgt_cuda_hermite_bench(long n, int p, int nclusters, double side, double *ms) {
    (void)n, (void)p, (void)nclusters, (void)side, (void)ms;
    return FMM_ERR_DEVICE;
}
#else
int fgt_cuda_stage_times(const fgt_plan *p, double ms[4]) {
    if (!p || !ms) return FMM_ERR_ARG;
    if (p->o.device != FMM_DEVICE_CUDA) return FMM_ERR_DEVICE;
    return fgt_cuda_stage_times_impl(p, ms);
}
int fgt_cuda_hermite_bench(long n, int p, int nclusters, double side, double *ms) {
    if (!ms) return FMM_ERR_ARG;
    if (n < 1 || nclusters < 1) return FMM_ERR_NPTS;
    if (p < 1 || p > FGT_ORDER_MAX || !(side > 0)) return FMM_ERR_PARAM;
    if (fmm_cuda_device_count() == 0) return FMM_ERR_DEVICE;
    return fgt_cuda_hermite_bench_impl(n, p, nclusters, side, ms);
}
#endif

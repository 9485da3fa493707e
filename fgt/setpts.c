/* fgt/setpts.c - fgt_setpts: the points scaled and sorted into boxes (core/sort.c), the box
 * pairs within the cut-off (fgt_traverse, shared with the CPU evaluation) and their count. */
#include <math.h>
#include <omp.h>
#include <stdlib.h>
#include <string.h>

#include "core/scale.h"
#include "core/sort.h"
#include "fgt/fgt_internal.h"

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

void fgt_box_index(const fgt_plan *p, int64_t key, long i[3]) {
    i[2] = key % p->n[2];
    key /= p->n[2];
    i[1] = key % p->n[1];
    i[0] = key / p->n[1];
}

void fgt_traverse(const fgt_plan *p, long tb, fgt_visit_fn visit, void *ctx) {
    long it[3];
    fgt_box_index(p, p->tkey[tb], it);
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
            for (long sb = fgt_lower_bound(p->skey, p->nsb, klo); sb < p->nsb && p->skey[sb] <= khi;
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
    t.cost = fgt_default_cost();
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
    int rc = fgt_choose_boxes(&t, ext, ns, nt);
    if (rc) return rc;
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
            for (long tb = 0; tb < t.ntb; ++tb) fgt_traverse(&t, tb, count_visit, &c);
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
        fgt_free_geometry(&t);
        return rc;
    }
    fgt_free_geometry(plan);
    *plan = t;
    plan->have_pts = 1;
    return FMM_OK;
}

/* core/cluster_tree.c - the cluster trees of core/cluster_tree.h: level by level, the nodes of a
 * level split side by side (or, at the top levels with fewer nodes than threads, each by the
 * whole team), then the children's boxes. */
#include "core/cluster_tree.h"

#include <math.h>
#include <omp.h>
#include <stdlib.h>
#include <string.h>

#include "core/scale.h"
#include "fmm_common.h"

static void node_box(ct_node *nd, const double *x, const double *y, const double *z) {
    double lo[3] = {INFINITY, INFINITY, INFINITY}, hi[3] = {-INFINITY, -INFINITY, -INFINITY};
    /* comparisons, not fmin/fmax: those are libm calls (NaN rules) that do not vectorise, and
     * the coordinates are finite (checked in setpts) */
    for (long i = nd->ibeg; i < nd->iend; ++i) {
        lo[0] = x[i] < lo[0] ? x[i] : lo[0], hi[0] = x[i] > hi[0] ? x[i] : hi[0];
        lo[1] = y[i] < lo[1] ? y[i] : lo[1], hi[1] = y[i] > hi[1] ? y[i] : hi[1];
        lo[2] = z[i] < lo[2] ? z[i] : lo[2], hi[2] = z[i] > hi[2] ? z[i] : hi[2];
    }
    double r2 = 0;
    for (int d = 0; d < 3; ++d) {
        nd->lo[d] = lo[d], nd->hi[d] = hi[d];
        nd->c[d] = 0.5 * (lo[d] + hi[d]);
        r2 += 0.25 * (hi[d] - lo[d]) * (hi[d] - lo[d]);
    }
    nd->r = sqrt(r2);
}

/* BISECT: splits node nd (particles already in its range) into up to 8 children by a stable
 * partition of the range; writes the child ranges to cb/ce (count returned, 0 = leaf). tx, ty, tz,
 * tp, code: scratch of the node's size (x, y, z, perm, octant). nthr > 1: a team of that many
 * threads partitions the range (the top levels, with fewer nodes than threads); 1: the calling
 * thread alone. */
enum { CT_SPLIT_THREADS_MAX = 64 };
static int split_bisect(const ct_node *nd, int leaf, double *x, double *y, double *z, long *perm,
                        double *tx, double *ty, double *tz, long *tp, unsigned char *code, int nthr,
                        long cb[8], long ce[8]) {
    long cnt = nd->iend - nd->ibeg;
    if (cnt <= leaf) return 0;
    double side[3], lmax = 0;
    for (int d = 0; d < 3; ++d) side[d] = nd->hi[d] - nd->lo[d], lmax = fmax(lmax, side[d]);
    if (!(lmax > 0)) return 0; /* all particles at one point */
    int split[3], ns = 0;
    for (int d = 0; d < 3; ++d)
        split[d] = side[d] > 0 && side[d] >= lmax / sqrt(2.0), ns += split[d];
    int maxs = cnt < 2L * leaf ? 1 : cnt < 4L * leaf ? 2 : 3;
    while (ns > maxs) { /* drop the shortest split dimension */
        int dmin = -1;
        for (int d = 0; d < 3; ++d)
            if (split[d] && (dmin < 0 || side[d] < side[dmin])) dmin = d;
        split[dmin] = 0, --ns;
    }
    double mid[3];
    for (int d = 0; d < 3; ++d) mid[d] = 0.5 * (nd->lo[d] + nd->hi[d]);
    const int sx = split[0], sy = split[1] << 1, sz = split[2] << 2;
    const long b = nd->ibeg;
    if (nthr > CT_SPLIT_THREADS_MAX) nthr = CT_SPLIT_THREADS_MAX;
    long hist[CT_SPLIT_THREADS_MAX][8], count[8] = {0}, off[8];
#pragma omp parallel num_threads(nthr) if (nthr > 1)
    {
        int me = omp_get_thread_num(), nth = omp_get_num_threads();
        long i0 = cnt * me / nth, i1 = cnt * (me + 1) / nth, h[8] = {0};
        /* octant codes without branches (random points would mispredict three per point) */
        for (long i = i0; i < i1; ++i) {
            int c = ((x[b + i] >= mid[0]) & sx) | (-(y[b + i] >= mid[1]) & sy) |
                    (-(z[b + i] >= mid[2]) & sz);
            code[i] = (unsigned char)c, h[c]++;
        }
        memcpy(hist[me], h, sizeof h);
#pragma omp barrier
#pragma omp single
        {
            long pos = 0;
            for (int c = 0; c < 8; ++c) {
                off[c] = pos;
                for (int r = 0; r < nth; ++r) {
                    long k = hist[r][c];
                    hist[r][c] = pos, pos += k, count[c] += k;
                }
            }
        }
        memcpy(h, hist[me], sizeof h);
        for (long i = i0; i < i1; ++i) {
            long k = h[code[i]]++;
            tx[k] = x[b + i], ty[k] = y[b + i], tz[k] = z[b + i], tp[k] = perm[b + i];
        }
#pragma omp barrier
        memcpy(x + b + i0, tx + i0, sizeof(double) * (i1 - i0));
        memcpy(y + b + i0, ty + i0, sizeof(double) * (i1 - i0));
        memcpy(z + b + i0, tz + i0, sizeof(double) * (i1 - i0));
        memcpy(perm + b + i0, tp + i0, sizeof(long) * (i1 - i0));
    }
    int nonempty = 0;
    for (int c = 0; c < 8; ++c) nonempty += count[c] > 0;
    if (nonempty < 2) return 0; /* cannot separate (rounding at a tiny box): a leaf, order kept */
    int nc = 0;
    for (int c = 0; c < 8; ++c)
        if (count[c]) cb[nc] = b + off[c], ce[nc] = b + off[c] + count[c], ++nc;
    return nc;
}

/* quickselect: orders perm[lo..hi) so that the k-th (absolute) element is in place along dim
 * of the caller's coordinates xyz (Hoare partitions around a median of three) */
static void select_k(long *perm, const double *xyz, int dim, long lo, long hi, long k) {
    while (hi - lo > 1) {
        long mid = lo + (hi - lo) / 2;
        double a = xyz[3 * perm[lo] + dim], b = xyz[3 * perm[mid] + dim],
               c = xyz[3 * perm[hi - 1] + dim];
        double piv = a < b ? (b < c ? b : (a < c ? c : a)) : (a < c ? a : (b < c ? c : b));
        long i = lo, j = hi - 1;
        while (i <= j) {
            while (xyz[3 * perm[i] + dim] < piv) ++i;
            while (xyz[3 * perm[j] + dim] > piv) --j;
            if (i <= j) {
                long t = perm[i];
                perm[i] = perm[j], perm[j] = t;
                ++i, --j;
            }
        }
        if (k <= j)
            hi = j + 1;
        else if (k >= i)
            lo = i;
        else
            return;
    }
}

/* MEDIAN: splits node nd into two halves at the median along the longest side of its box
 * (count returned, 0 = leaf), reordering its range of perm and taking x, y, z of the range from
 * xyz again (each coordinate times f = 2^-elen) */
static int split_median(const ct_node *nd, int leaf, const double *xyz, double f, int elen,
                        double *x, double *y, double *z, long *perm, long cb[8], long ce[8]) {
    if (nd->iend - nd->ibeg <= leaf) return 0;
    int dim = 0;
    for (int d = 1; d < 3; ++d)
        if (nd->hi[d] - nd->lo[d] > nd->hi[dim] - nd->lo[dim]) dim = d;
    if (!(nd->hi[dim] > nd->lo[dim])) return 0; /* all points at one position */
    long mid = nd->ibeg + (nd->iend - nd->ibeg) / 2;
    select_k(perm, xyz, dim, nd->ibeg, nd->iend, mid);
    for (long i = nd->ibeg; i < nd->iend; ++i) {
        const double *p = xyz + 3 * perm[i];
        x[i] = fmm_pow2(p[0], f, -elen), y[i] = fmm_pow2(p[1], f, -elen),
        z[i] = fmm_pow2(p[2], f, -elen);
    }
    cb[0] = nd->ibeg, ce[0] = mid, cb[1] = mid, ce[1] = nd->iend;
    return 2;
}

/* What the split of one node needs: the tree, the caller's points and units, the rule, and the
 * scratch of the BISECT partition (tx, ty, tz, tp, code: n each) */
typedef struct build_ctx {
    ct_tree *t;
    const double *xyz;
    double f;
    int elen, leaf, split;
    double *tx, *ty, *tz;
    long *tp;
    unsigned char *code;
} build_ctx;

/* splits node k of the tree by the rule, with the node's slices of the scratch arrays; nthr as
 * in split_bisect */
static int split_level_node(const build_ctx *b, int k, int nthr, long cbe[16]) {
    ct_tree *t = b->t;
    const ct_node *nd = &t->nodes[k];
    if (b->split == CT_SPLIT_MEDIAN)
        return split_median(nd, b->leaf, b->xyz, b->f, b->elen, t->x, t->y, t->z, t->perm, cbe,
                            cbe + 8);
    long o = nd->ibeg;
    return split_bisect(nd, b->leaf, t->x, t->y, t->z, t->perm, b->tx + o, b->ty + o, b->tz + o,
                        b->tp + o, b->code + o, nthr, cbe, cbe + 8);
}

/* rad of every node: the largest distance from its centre to one of its points */
static void node_radii(ct_tree *t, int nthr) {
#pragma omp parallel for schedule(dynamic, 16) num_threads(nthr)
    for (int k = 0; k < t->nnodes; ++k) {
        ct_node *nd = &t->nodes[k];
        double r2 = 0;
        for (long i = nd->ibeg; i < nd->iend; ++i) {
            double dx = t->x[i] - nd->c[0], dy = t->y[i] - nd->c[1], dz = t->z[i] - nd->c[2];
            double q = dx * dx + dy * dy + dz * dz;
            if (q > r2) r2 = q;
        }
        nd->rad = sqrt(r2);
    }
}

void ct_free(ct_tree *t) {
    if (!t) return;
    free(t->x), free(t->nodes), free(t->level_start); /* x holds y, z and perm too */
    free(t->leaves);
    memset(t, 0, sizeof *t);
}

int ct_build(ct_tree *t, long n, const double *xyz, int elen, int leaf, int split, int radius,
             int threads) {
    memset(t, 0, sizeof *t);
    const int nthr = threads > 0 ? threads : omp_get_max_threads();
    const int bisect = split != CT_SPLIT_MEDIAN;
    t->n = n;
    /* x, y, z, perm in one block, the scratch (tx, ty, tz, tp, code) in another: glibc keeps a
     * freed block of that size for the next set-up rather than giving it back to the kernel
     * (1e5 points: 134-291 page faults per setpts instead of 819 with eight arrays). MEDIAN
     * partitions perm in place and needs no scratch. */
    t->x = malloc((sizeof(double) * 3 + sizeof(long)) * n);
    double *tx = bisect ? malloc((sizeof(double) * 3 + sizeof(long) + 1) * n) : NULL;
    if (t->x) t->y = t->x + n, t->z = t->y + n, t->perm = (long *)(t->z + n);
    double *ty = tx ? tx + n : NULL, *tz = tx ? ty + n : NULL;
    long *tp = tx ? (long *)(tz + n) : NULL;
    unsigned char *code = tx ? (unsigned char *)(tp + n) : NULL;
    int cap = 64;
    t->nodes = malloc(sizeof(ct_node) * cap);
    int lcap = 8;
    t->level_start = malloc(sizeof(int) * lcap);
    long(*cbe)[16] = NULL;
    int rc = FMM_ERR_NOMEM;
    if (!t->x || (bisect && !tx) || !t->nodes || !t->level_start) goto fail;
    /* every array, the scratch too, is first written here by all threads: the first write of a
     * fresh page is a page fault, which cost more than the copy where measured (a VM: ~2.8 us
     * per 4 KB page) and would otherwise fall to the one thread that splits the root */
    const double f = ldexp(1.0, -elen);
#pragma omp parallel for schedule(static) num_threads(nthr)
    for (long i = 0; i < n; ++i) {
        double a = fmm_pow2(xyz[3 * i], f, -elen), b = fmm_pow2(xyz[3 * i + 1], f, -elen),
               c = fmm_pow2(xyz[3 * i + 2], f, -elen);
        t->x[i] = a, t->y[i] = b, t->z[i] = c, t->perm[i] = i;
        if (bisect) tx[i] = a, ty[i] = b, tz[i] = c, tp[i] = i, code[i] = 0;
    }
    const build_ctx bc = {t, xyz, f, elen, leaf, split, tx, ty, tz, tp, code};
    ct_node *root = &t->nodes[0];
    memset(root, 0, sizeof *root);
    root->ibeg = 0, root->iend = n, root->parent = -1, root->level = 0;
    node_box(root, t->x, t->y, t->z);
    t->nnodes = 1;
    t->level_start[0] = 0;
    int lb = 0, le = 1, level = 0;
    while (lb < le) {
        int nl = le - lb;
        long(*tmp)[16] = realloc(cbe, sizeof(long[16]) * nl);
        if (!tmp) goto fail;
        cbe = tmp;
        int *nch = malloc(sizeof(int) * nl);
        if (!nch) goto fail;
        /* fewer nodes than threads (the top levels): one node at a time, all threads on it.
         * Not as a parallel for with an if clause: the node's team would then be a nested one,
         * which libgomp makes of new threads (1e5 points, 16 threads: setup 7 -> 40 ms) */
        if (nl < nthr)
            for (int k = 0; k < nl; ++k) nch[k] = split_level_node(&bc, lb + k, nthr, cbe[k]);
        else {
#pragma omp parallel for schedule(dynamic, 1) num_threads(nthr)
            for (int k = 0; k < nl; ++k) nch[k] = split_level_node(&bc, lb + k, 1, cbe[k]);
        }
        int add = 0;
        for (int k = 0; k < nl; ++k) add += nch[k];
        if (t->nnodes + add > cap) {
            while (t->nnodes + add > cap) cap *= 2;
            ct_node *nn = realloc(t->nodes, sizeof(ct_node) * cap);
            if (!nn) {
                free(nch);
                goto fail;
            }
            t->nodes = nn;
        }
        int first = t->nnodes;
        for (int k = 0; k < nl; ++k) {
            ct_node *nd = &t->nodes[lb + k];
            nd->nchild = nch[k];
            for (int c = 0; c < nch[k]; ++c) {
                ct_node *ch = &t->nodes[t->nnodes];
                memset(ch, 0, sizeof *ch);
                ch->ibeg = cbe[k][c], ch->iend = cbe[k][8 + c];
                ch->parent = lb + k, ch->level = level + 1;
                nd->child[c] = t->nnodes++;
            }
        }
        free(nch);
#pragma omp parallel for schedule(dynamic, 16) num_threads(nthr)
        for (int i = first; i < t->nnodes; ++i) node_box(&t->nodes[i], t->x, t->y, t->z);
        if (t->nnodes > first) {
            if (level + 2 >= lcap) {
                lcap *= 2;
                int *ls = realloc(t->level_start, sizeof(int) * lcap);
                if (!ls) goto fail;
                t->level_start = ls;
            }
            ++level;
            t->level_start[level] = first;
        }
        lb = le, le = t->nnodes;
    }
    t->depth = level;
    t->level_start[level + 1] = t->nnodes;
    t->nleaves = 0;
    for (int i = 0; i < t->nnodes; ++i) t->nleaves += t->nodes[i].nchild == 0;
    t->leaves = malloc(sizeof(int) * t->nleaves);
    if (!t->leaves) goto fail;
    t->nleaves = 0;
    for (int i = 0; i < t->nnodes; ++i)
        if (t->nodes[i].nchild == 0) t->leaves[t->nleaves++] = i;
    if (radius) node_radii(t, nthr);
    free(tx), free(cbe);
    return FMM_OK;
fail:
    free(tx), free(cbe);
    ct_free(t);
    return rc;
}

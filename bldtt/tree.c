/* bldtt/tree.c - cluster trees for the BLDTT solver (aspect-ratio-aware bisection of shrunk
 * bounding boxes, WVK section 2.3) and the barycentric Lagrange interpolation helpers. */
#include <math.h>
#include <omp.h>
#include <stdlib.h>
#include <string.h>

#include "bldtt/bldtt_internal.h"
#include "bldtt/kernels.h"
#include "core/scale.h"

void bt_cheb_points(int n, double a, double b, double *s) {
    if (n == 0) {
        s[0] = 0.5 * (a + b);
        return;
    }
    for (int k = 0; k <= n; ++k) s[k] = a + 0.5 * (cos(BT_PI * k / n) + 1.0) * (b - a);
    s[0] = b;
    s[n] = a;
    if (n % 2 == 0) s[n / 2] = 0.5 * (a + b);
}

void bt_cheb_weights(int n, double *w) {
    for (int k = 0; k <= n; ++k) w[k] = bt_cheb_weight(k, n);
}

void bt_lagrange(int n, const double *s, const double *w, double x, double *L) {
    double sum = 0;
    for (int k = 0; k <= n; ++k) {
        double d = x - s[k];
        if (fabs(d) < BT_NODE_HIT) { /* x is a node: the basis is the Kronecker delta there */
            for (int j = 0; j <= n; ++j) L[j] = 0;
            L[k] = 1;
            return;
        }
        L[k] = w[k] / d;
        sum += L[k];
    }
    double inv = 1.0 / sum;
    for (int k = 0; k <= n; ++k) L[k] *= inv;
}

void bt_tree_free(bt_tree *t) {
    if (!t) return;
    free(t->x), free(t->nodes), free(t->level_start); /* x holds y, z and perm too */
    free(t->leaves), free(t->cheb);
    memset(t, 0, sizeof *t);
}

static void node_box(bt_node *nd, const double *x, const double *y, const double *z) {
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

/* Splits node nd (particles already in its range) into up to 8 children by a stable partition
 * of the range; writes the child ranges to cb/ce (count returned, 0 = leaf). tx, ty, tz, tp,
 * code: scratch of the node's size (x, y, z, perm, octant). nthr > 1: a team of that many
 * threads partitions the range (the top levels, with fewer nodes than threads); 1: the calling
 * thread alone. */
enum { BT_SPLIT_THREADS_MAX = 64 };
static int split_node(const bt_node *nd, int leaf, double *x, double *y, double *z, long *perm,
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
    if (nthr > BT_SPLIT_THREADS_MAX) nthr = BT_SPLIT_THREADS_MAX;
    long hist[BT_SPLIT_THREADS_MAX][8], count[8] = {0}, off[8];
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

/* split_node on node k of t, with the node's slices of the scratch arrays */
static int split_level_node(bt_tree *t, int k, int leaf, double *tx, double *ty, double *tz,
                            long *tp, unsigned char *code, int nthr, long cbe[16]) {
    const bt_node *nd = &t->nodes[k];
    long o = nd->ibeg;
    return split_node(nd, leaf, t->x, t->y, t->z, t->perm, tx + o, ty + o, tz + o, tp + o, code + o,
                      nthr, cbe, cbe + 8);
}

int bt_tree_build(bt_tree *t, long n, const double *xyz, int elen, int leaf, int degree) {
    memset(t, 0, sizeof *t);
    t->n = n;
    /* x, y, z, perm in one block, the scratch (tx, ty, tz, tp, code) in another: glibc keeps a
     * freed block of that size for the next set-up rather than giving it back to the kernel
     * (1e5 points: 134-291 page faults per setpts instead of 819 with eight arrays) */
    t->x = malloc((sizeof(double) * 3 + sizeof(long)) * n);
    double *tx = malloc((sizeof(double) * 3 + sizeof(long) + 1) * n);
    if (t->x) t->y = t->x + n, t->z = t->y + n, t->perm = (long *)(t->z + n);
    double *ty = tx ? tx + n : NULL, *tz = tx ? ty + n : NULL;
    long *tp = tx ? (long *)(tz + n) : NULL;
    unsigned char *code = tx ? (unsigned char *)(tp + n) : NULL;
    int cap = 64;
    t->nodes = malloc(sizeof(bt_node) * cap);
    int lcap = 8;
    t->level_start = malloc(sizeof(int) * lcap);
    long(*cbe)[16] = NULL;
    int rc = FMM_ERR_NOMEM;
    if (!t->x || !tx || !t->nodes || !t->level_start) goto fail;
    /* every array, the scratch too, is first written here by all threads: the first write of a
     * fresh page is a page fault, which cost more than the copy where measured (a VM: ~2.8 us
     * per 4 KB page) and would otherwise fall to the one thread that splits the root */
    const double f = ldexp(1.0, -elen);
#pragma omp parallel for schedule(static)
    for (long i = 0; i < n; ++i) {
        double a = fmm_pow2(xyz[3 * i], f, -elen), b = fmm_pow2(xyz[3 * i + 1], f, -elen),
               c = fmm_pow2(xyz[3 * i + 2], f, -elen);
        t->x[i] = tx[i] = a, t->y[i] = ty[i] = b, t->z[i] = tz[i] = c, t->perm[i] = tp[i] = i;
        code[i] = 0;
    }
    bt_node *root = &t->nodes[0];
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
        int nthr = omp_get_max_threads();
        if (nl < nthr)
            for (int k = 0; k < nl; ++k)
                nch[k] = split_level_node(t, lb + k, leaf, tx, ty, tz, tp, code, nthr, cbe[k]);
        else {
#pragma omp parallel for schedule(dynamic, 1)
            for (int k = 0; k < nl; ++k)
                nch[k] = split_level_node(t, lb + k, leaf, tx, ty, tz, tp, code, 1, cbe[k]);
        }
        int add = 0;
        for (int k = 0; k < nl; ++k) add += nch[k];
        if (t->nnodes + add > cap) {
            while (t->nnodes + add > cap) cap *= 2;
            bt_node *nn = realloc(t->nodes, sizeof(bt_node) * cap);
            if (!nn) {
                free(nch);
                goto fail;
            }
            t->nodes = nn;
        }
        int first = t->nnodes;
        for (int k = 0; k < nl; ++k) {
            bt_node *nd = &t->nodes[lb + k];
            nd->nchild = nch[k];
            for (int c = 0; c < nch[k]; ++c) {
                bt_node *ch = &t->nodes[t->nnodes];
                memset(ch, 0, sizeof *ch);
                ch->ibeg = cbe[k][c], ch->iend = cbe[k][8 + c];
                ch->parent = lb + k, ch->level = level + 1;
                nd->child[c] = t->nnodes++;
            }
        }
        free(nch);
#pragma omp parallel for schedule(dynamic, 16)
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
    int n1 = degree + 1;
    t->cheb = malloc(sizeof(double) * 3 * n1 * (size_t)t->nnodes);
    if (!t->leaves || !t->cheb) goto fail;
    t->nleaves = 0;
    for (int i = 0; i < t->nnodes; ++i) {
        bt_node *nd = &t->nodes[i];
        if (nd->nchild == 0) t->leaves[t->nleaves++] = i;
        for (int d = 0; d < 3; ++d)
            bt_cheb_points(degree, nd->lo[d], nd->hi[d], t->cheb + ((size_t)i * 3 + d) * n1);
    }
    free(tx), free(cbe);
    return FMM_OK;
fail:
    free(tx), free(cbe);
    bt_tree_free(t);
    return rc;
}

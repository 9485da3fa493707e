/* bldtt/tree.c - cluster trees for the BLDTT solver (aspect-ratio-aware bisection of shrunk
 * bounding boxes, WVK section 2.3) and the barycentric Lagrange interpolation helpers. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "bldtt/bldtt_internal.h"

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
    for (int k = 0; k <= n; ++k) w[k] = ((k % 2) ? -1.0 : 1.0) * ((k == 0 || k == n) ? 0.5 : 1.0);
    if (n == 0) w[0] = 1.0;
}

void bt_lagrange(int n, const double *s, const double *w, double x, double *L) {
    double sum = 0;
    for (int k = 0; k <= n; ++k) {
        double d = x - s[k];
        if (d == 0.0) { /* x is a node: the basis is the Kronecker delta there */
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
    free(t->x), free(t->y), free(t->z), free(t->perm), free(t->nodes), free(t->level_start);
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

/* Splits node nd (particles already in its range) into up to 8 children by partitioning the
 * range; writes the child ranges to cb/ce (count returned, 0 = leaf). tmp: scratch of the
 * node's size (x, y, z, perm). */
static int split_node(const bt_node *nd, int leaf, double *x, double *y, double *z, long *perm,
                      double *tx, double *ty, double *tz, long *tp, long cb[8], long ce[8]) {
    long cnt = nd->iend - nd->ibeg;
    if (cnt <= leaf) return 0;
    double side[3], lmax = 0;
    for (int d = 0; d < 3; ++d) side[d] = nd->hi[d] - nd->lo[d], lmax = fmax(lmax, side[d]);
    if (!(lmax > 0)) return 0; /* all particles at one point */
    int split[3], ns = 0;
    for (int d = 0; d < 3; ++d) split[d] = side[d] > 0 && side[d] >= lmax / sqrt(2.0), ns += split[d];
    int maxs = cnt < 2L * leaf ? 1 : cnt < 4L * leaf ? 2 : 3;
    while (ns > maxs) { /* drop the shortest split dimension */
        int dmin = -1;
        for (int d = 0; d < 3; ++d)
            if (split[d] && (dmin < 0 || side[d] < side[dmin])) dmin = d;
        split[dmin] = 0, --ns;
    }
    double mid[3];
    for (int d = 0; d < 3; ++d) mid[d] = 0.5 * (nd->lo[d] + nd->hi[d]);
    long count[8] = {0};
    const double *c3[3] = {x, y, z};
    for (long i = nd->ibeg; i < nd->iend; ++i) {
        int code = 0;
        for (int d = 0; d < 3; ++d)
            if (split[d] && c3[d][i] >= mid[d]) code |= 1 << d;
        count[code]++;
    }
    int nonempty = 0;
    for (int c = 0; c < 8; ++c) nonempty += count[c] > 0;
    if (nonempty < 2) return 0; /* cannot separate (rounding at a tiny box): leave as a leaf */
    long off[8], pos = 0;
    for (int c = 0; c < 8; ++c) off[c] = pos, pos += count[c];
    long o2[8];
    memcpy(o2, off, sizeof off);
    for (long i = nd->ibeg; i < nd->iend; ++i) {
        int code = 0;
        for (int d = 0; d < 3; ++d)
            if (split[d] && c3[d][i] >= mid[d]) code |= 1 << d;
        long k = o2[code]++;
        tx[k] = x[i], ty[k] = y[i], tz[k] = z[i], tp[k] = perm[i];
    }
    memcpy(x + nd->ibeg, tx, sizeof(double) * cnt);
    memcpy(y + nd->ibeg, ty, sizeof(double) * cnt);
    memcpy(z + nd->ibeg, tz, sizeof(double) * cnt);
    memcpy(perm + nd->ibeg, tp, sizeof(long) * cnt);
    int nc = 0;
    for (int c = 0; c < 8; ++c)
        if (count[c]) cb[nc] = nd->ibeg + off[c], ce[nc] = nd->ibeg + off[c] + count[c], ++nc;
    return nc;
}

int bt_tree_build(bt_tree *t, long n, const double *xyz, int leaf, int degree) {
    memset(t, 0, sizeof *t);
    t->n = n;
    t->x = malloc(sizeof(double) * n), t->y = malloc(sizeof(double) * n);
    t->z = malloc(sizeof(double) * n), t->perm = malloc(sizeof(long) * n);
    double *tx = malloc(sizeof(double) * n), *ty = malloc(sizeof(double) * n),
           *tz = malloc(sizeof(double) * n);
    long *tp = malloc(sizeof(long) * n);
    int cap = 64;
    t->nodes = malloc(sizeof(bt_node) * cap);
    int lcap = 8;
    t->level_start = malloc(sizeof(int) * lcap);
    long (*cbe)[16] = NULL;
    int rc = FMM_ERR_NOMEM;
    if (!t->x || !t->y || !t->z || !t->perm || !tx || !ty || !tz || !tp || !t->nodes ||
        !t->level_start)
        goto fail;
    for (long i = 0; i < n; ++i)
        t->x[i] = xyz[3 * i], t->y[i] = xyz[3 * i + 1], t->z[i] = xyz[3 * i + 2], t->perm[i] = i;
    bt_node *root = &t->nodes[0];
    memset(root, 0, sizeof *root);
    root->ibeg = 0, root->iend = n, root->parent = -1, root->level = 0;
    node_box(root, t->x, t->y, t->z);
    t->nnodes = 1;
    t->level_start[0] = 0;
    int lb = 0, le = 1, level = 0;
    while (lb < le) {
        int nl = le - lb;
        long (*tmp)[16] = realloc(cbe, sizeof(long[16]) * nl);
        if (!tmp) goto fail;
        cbe = tmp;
        int *nch = malloc(sizeof(int) * nl);
        if (!nch) goto fail;
#pragma omp parallel for schedule(dynamic, 1)
        for (int k = 0; k < nl; ++k) {
            bt_node *nd = &t->nodes[lb + k];
            long off = nd->ibeg;
            nch[k] = split_node(nd, leaf, t->x, t->y, t->z, t->perm, tx + off, ty + off, tz + off,
                                tp + off, cbe[k], cbe[k] + 8);
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
        for (int d = 0; d < 3; ++d) bt_cheb_points(degree, nd->lo[d], nd->hi[d], t->cheb + ((size_t)i * 3 + d) * n1);
    }
    free(tx), free(ty), free(tz), free(tp), free(cbe);
    return FMM_OK;
fail:
    free(tx), free(ty), free(tz), free(tp), free(cbe);
    bt_tree_free(t);
    return rc;
}

/* k-d tree: median splits along the widest extent, tight boxes, max rank per node. */
#include "rbf/kdtree.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "fmm_common.h"

/* quickselect: order idx[lo..hi) so that the k-th (absolute) element is in place along dim */
static void select_k(long *idx, const double *xyz, int dim, long lo, long hi, long k) {
    while (hi - lo > 1) {
        /* median of three pivot */
        long mid = lo + (hi - lo) / 2;
        double a = xyz[3 * idx[lo] + dim], b = xyz[3 * idx[mid] + dim], c = xyz[3 * idx[hi - 1] + dim];
        double piv = a < b ? (b < c ? b : (a < c ? c : a)) : (a < c ? a : (b < c ? c : b));
        long i = lo, j = hi - 1;
        while (i <= j) {
            while (xyz[3 * idx[i] + dim] < piv) ++i;
            while (xyz[3 * idx[j] + dim] > piv) --j;
            if (i <= j) {
                long t = idx[i];
                idx[i] = idx[j], idx[j] = t;
                ++i, --j;
            }
        }
        if (k <= j) hi = j + 1;
        else if (k >= i) lo = i;
        else return;
    }
}

int rbf_kd_build(rbf_kdtree *t, long n, const double *xyz, const long *rank, int leaf_size) {
    memset(t, 0, sizeof *t);
    if (leaf_size < 1) leaf_size = 1;
    long maxnode = 2 * (2 * n / (leaf_size + 1) + 2) + 1;
    t->n = n;
    t->node = malloc(sizeof(rbf_kdnode) * maxnode);
    t->idx = malloc(sizeof(long) * (n > 0 ? n : 1));
    t->x = malloc(sizeof(double) * (n > 0 ? n : 1));
    t->y = malloc(sizeof(double) * (n > 0 ? n : 1));
    t->z = malloc(sizeof(double) * (n > 0 ? n : 1));
    if (rank) t->rk = malloc(sizeof(long) * (n > 0 ? n : 1));
    if (!t->node || !t->idx || !t->x || !t->y || !t->z || (rank && !t->rk)) {
        rbf_kd_free(t);
        return FMM_ERR_NOMEM;
    }
    for (long i = 0; i < n; ++i) t->idx[i] = i;
    /* breadth-first split: a node's children follow it in creation order */
    t->nnode = 1;
    t->node[0].begin = 0, t->node[0].end = n;
    for (int b = 0; b < t->nnode; ++b) {
        rbf_kdnode *nd = &t->node[b];
        nd->left = nd->right = -1;
        for (int d = 0; d < 3; ++d) nd->lo[d] = INFINITY, nd->hi[d] = -INFINITY;
        for (long i = nd->begin; i < nd->end; ++i)
            for (int d = 0; d < 3; ++d) {
                double v = xyz[3 * t->idx[i] + d];
                if (v < nd->lo[d]) nd->lo[d] = v;
                if (v > nd->hi[d]) nd->hi[d] = v;
            }
        if (nd->end - nd->begin <= leaf_size || t->nnode + 2 > maxnode) continue;
        int dim = 0;
        for (int d = 1; d < 3; ++d)
            if (nd->hi[d] - nd->lo[d] > nd->hi[dim] - nd->lo[dim]) dim = d;
        if (!(nd->hi[dim] > nd->lo[dim])) continue; /* all points equal: stays a leaf */
        long mid = nd->begin + (nd->end - nd->begin) / 2;
        select_k(t->idx, xyz, dim, nd->begin, nd->end, mid);
        int l = t->nnode++, r = t->nnode++;
        t->node[l].begin = nd->begin, t->node[l].end = mid;
        t->node[r].begin = mid, t->node[r].end = nd->end;
        nd = &t->node[b];
        nd->left = l, nd->right = r;
    }
    for (long i = 0; i < n; ++i) {
        long j = t->idx[i];
        t->x[i] = xyz[3 * j], t->y[i] = xyz[3 * j + 1], t->z[i] = xyz[3 * j + 2];
        if (rank) t->rk[i] = rank[j];
    }
    /* centres, radii, max ranks: children have larger indices, so go backwards */
    for (int b = t->nnode - 1; b >= 0; --b) {
        rbf_kdnode *nd = &t->node[b];
        double r2 = 0;
        for (int d = 0; d < 3; ++d) nd->c[d] = 0.5 * (nd->lo[d] + nd->hi[d]);
        long mr = -1;
        for (long i = nd->begin; i < nd->end && nd->left < 0; ++i) {
            double dx = t->x[i] - nd->c[0], dy = t->y[i] - nd->c[1], dz = t->z[i] - nd->c[2];
            double q = dx * dx + dy * dy + dz * dz;
            if (q > r2) r2 = q;
            if (rank && t->rk[i] > mr) mr = t->rk[i];
        }
        if (nd->left >= 0) {
            /* radius over all points (exact, O(n log n) overall) */
            for (long i = nd->begin; i < nd->end; ++i) {
                double dx = t->x[i] - nd->c[0], dy = t->y[i] - nd->c[1], dz = t->z[i] - nd->c[2];
                double q = dx * dx + dy * dy + dz * dz;
                if (q > r2) r2 = q;
            }
            long a = t->node[nd->left].maxrank, c = t->node[nd->right].maxrank;
            mr = a > c ? a : c;
        }
        nd->rad = sqrt(r2);
        nd->maxrank = mr;
    }
    return 0;
}

void rbf_kd_free(rbf_kdtree *t) {
    free(t->node), free(t->idx), free(t->x), free(t->y), free(t->z), free(t->rk);
    memset(t, 0, sizeof *t);
}

/* Partial selection: orders (d, id)[0..n) so that the k smallest d come first (Hoare
 * partitions around a median of three, k < n). */
static void select_pairs(double *d, long *id, int n, int k) {
    int lo = 0, hi = n - 1;
    while (lo < hi) {
        int mid = lo + (hi - lo) / 2;
        double a = d[lo], b = d[mid], c = d[hi];
        double piv = a < b ? (b < c ? b : (a < c ? c : a)) : (a < c ? a : (b < c ? c : b));
        int i = lo, j = hi;
        while (i <= j) {
            while (d[i] < piv) ++i;
            while (d[j] > piv) --j;
            if (i <= j) {
                double t = d[i];
                d[i] = d[j], d[j] = t;
                long u = id[i];
                id[i] = id[j], id[j] = u;
                ++i, --j;
            }
        }
        if (k - 1 <= j) hi = j;
        else if (k - 1 >= i) lo = i;
        else return;
    }
}

static double max_of(const double *d, int n) {
    double m = d[0];
    for (int i = 1; i < n; ++i) m = d[i] > m ? d[i] : m;
    return m;
}

/* branch-free: the queries' box tests are unpredictable (comparisons compile to max
 * instructions; fmax is a libm call for its NaN rules, and the points are finite) */
static double box_d2(const rbf_kdnode *nd, const double p[3]) {
    double s = 0;
    for (int d = 0; d < 3; ++d) {
        double a = nd->lo[d] - p[d], b = p[d] - nd->hi[d];
        double e = (a > 0 ? a : 0) + (b > 0 ? b : 0);
        s += e * e;
    }
    return s;
}

int rbf_kd_knn_rank(const rbf_kdtree *t, const double p[3], long minrank, int k, long *out,
                    double *d2) {
    /* Candidates closer than the current bound are appended to a buffer of 2k; when it is full
       the k nearest are selected and the bound becomes the k-th distance. Amortised O(1) per
       candidate, where a bounded heap costs O(log k) per replacement (at k = 80 the heap
       updates and its final sort were half the query time). */
    double bd[2 * RBF_KD_KMAX + 1], lim = INFINITY;
    long bi[2 * RBF_KD_KMAX + 1];
    int cnt = 0;
    int stack[128];
    int sp = 0;
    if (t->nnode == 0 || k <= 0) return 0;
    if (k > RBF_KD_KMAX) k = RBF_KD_KMAX;
    stack[sp++] = 0;
    while (sp > 0) {
        const rbf_kdnode *nd = &t->node[stack[--sp]];
        if (nd->maxrank < minrank || box_d2(nd, p) >= lim) continue;
        if (nd->left < 0) {
            for (long i = nd->begin; i < nd->end; ++i) {
                double dx = t->x[i] - p[0], dy = t->y[i] - p[1], dz = t->z[i] - p[2];
                double q = dx * dx + dy * dy + dz * dz;
                /* always written, kept by advancing cnt (the test is unpredictable) */
                bd[cnt] = q, bi[cnt] = i;
                cnt += (q < lim) & (t->rk[i] >= minrank);
                if (cnt == k && lim == INFINITY) lim = max_of(bd, k); /* bounds the k-th */
                if (cnt == 2 * k) {
                    select_pairs(bd, bi, cnt, k);
                    cnt = k;
                    lim = max_of(bd, k);
                }
            }
            continue;
        }
        /* nearer child last on the stack, so it is visited first */
        const rbf_kdnode *a = &t->node[nd->left], *b = &t->node[nd->right];
        double da = box_d2(a, p), db = box_d2(b, p);
        if (sp + 2 > 128) continue; /* cannot happen for depth < 64 */
        if (da <= db) stack[sp++] = nd->right, stack[sp++] = nd->left;
        else stack[sp++] = nd->left, stack[sp++] = nd->right;
    }
    if (cnt > k) select_pairs(bd, bi, cnt, k), cnt = k;
    for (int i = 0; i < cnt; ++i) out[i] = t->idx[bi[i]], d2[i] = bd[i];
    return cnt;
}

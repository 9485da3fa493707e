/* The L-set k-d tree: the tree of core/cluster_tree.c with ranks, and the k-nearest query. */
#include "rbf/kdtree.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "fmm_common.h"

int rbf_kd_build(rbf_kdtree *t, long n, const double *xyz, const long *rank, int leaf_size) {
    memset(t, 0, sizeof *t);
    /* one thread: the L-set trees are many and small, and the deformation's are built once */
    int rc = ct_build(&t->t, n, xyz, 0, leaf_size < 1 ? 1 : leaf_size, CT_SPLIT_MEDIAN, 0, 1);
    if (rc) return rc;
    t->rk = malloc(sizeof(long) * (n > 0 ? n : 1));
    t->maxrank = malloc(sizeof(long) * t->t.nnodes);
    if (!t->rk || !t->maxrank) {
        rbf_kd_free(t);
        return FMM_ERR_NOMEM;
    }
    for (long i = 0; i < n; ++i) t->rk[i] = rank[t->t.perm[i]];
    /* children have larger indices than their parent: backwards, the children are done */
    for (int b = t->t.nnodes - 1; b >= 0; --b) {
        const ct_node *nd = &t->t.nodes[b];
        long mr = -1;
        if (nd->nchild == 0)
            for (long i = nd->ibeg; i < nd->iend; ++i) mr = t->rk[i] > mr ? t->rk[i] : mr;
        for (int c = 0; c < nd->nchild; ++c)
            mr = t->maxrank[nd->child[c]] > mr ? t->maxrank[nd->child[c]] : mr;
        t->maxrank[b] = mr;
    }
    return 0;
}

void rbf_kd_free(rbf_kdtree *t) {
    ct_free(&t->t);
    free(t->rk), free(t->maxrank);
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
        if (k - 1 <= j)
            hi = j;
        else if (k - 1 >= i)
            lo = i;
        else
            return;
    }
}

static double max_of(const double *d, int n) {
    double m = d[0];
    for (int i = 1; i < n; ++i) m = d[i] > m ? d[i] : m;
    return m;
}

/* branch-free: the queries' box tests are unpredictable (comparisons compile to max
 * instructions; fmax is a libm call for its NaN rules, and the points are finite) */
static double box_d2(const ct_node *nd, const double p[3]) {
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
    if (t->t.nnodes == 0 || k <= 0) return 0;
    if (k > RBF_KD_KMAX) k = RBF_KD_KMAX;
    stack[sp++] = 0;
    while (sp > 0) {
        const int b = stack[--sp];
        const ct_node *nd = &t->t.nodes[b];
        if (t->maxrank[b] < minrank || box_d2(nd, p) >= lim) continue;
        if (nd->nchild == 0) {
            for (long i = nd->ibeg; i < nd->iend; ++i) {
                double dx = t->t.x[i] - p[0], dy = t->t.y[i] - p[1], dz = t->t.z[i] - p[2];
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
        const int l = nd->child[0], r = nd->child[1];
        double dl = box_d2(&t->t.nodes[l], p), dr = box_d2(&t->t.nodes[r], p);
        if (sp + 2 > 128) continue; /* cannot happen for depth < 64 */
        if (dl <= dr)
            stack[sp++] = r, stack[sp++] = l;
        else
            stack[sp++] = l, stack[sp++] = r;
    }
    if (cnt > k) select_pairs(bd, bi, cnt, k), cnt = k;
    for (int i = 0; i < cnt; ++i) out[i] = t->t.perm[bi[i]], d2[i] = bd[i];
    return cnt;
}

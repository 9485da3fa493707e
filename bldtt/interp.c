/* bldtt/interp.c - the BLDTT's cluster trees (core/cluster_tree.c, split by bisection of the
 * shrunk boxes, WVK section 2.3) with the Chebyshev points of every cluster, and the barycentric
 * Lagrange interpolation on them. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "bldtt/bldtt_internal.h"
#include "bldtt/kernels.h"

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

int bt_tree_build(ct_tree *t, double **cheb, long n, const double *xyz, int elen, int leaf,
                  int degree, int threads) {
    *cheb = NULL;
    int rc = ct_build(t, n, xyz, elen, leaf, CT_SPLIT_BISECT, 0, threads);
    if (rc) return rc;
    const int n1 = degree + 1;
    double *c = malloc(sizeof(double) * 3 * n1 * (size_t)t->nnodes);
    if (!c) {
        ct_free(t);
        return FMM_ERR_NOMEM;
    }
    for (int i = 0; i < t->nnodes; ++i) {
        const ct_node *nd = &t->nodes[i];
        for (int d = 0; d < 3; ++d)
            bt_cheb_points(degree, nd->lo[d], nd->hi[d], c + ((size_t)i * 3 + d) * n1);
    }
    *cheb = c;
    return FMM_OK;
}

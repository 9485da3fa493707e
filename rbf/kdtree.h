/* The FGP L-set queries (q nearest among the points of rank >= m, a static query): a k-d tree
 * of core/cluster_tree.h (CT_SPLIT_MEDIAN) with each point's rank, every node knowing the
 * largest rank below it. */
#ifndef FMM_RBF_KDTREE_H
#define FMM_RBF_KDTREE_H

#include "core/cluster_tree.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct rbf_kdtree {
    ct_tree t;     /* median splits, leaves of at most leaf_size points */
    long *rk;      /* ranks in tree order */
    long *maxrank; /* per node: the largest rank of a point below it */
} rbf_kdtree;

/* Builds the tree of n points (interleaved xyz) with leaves of at most leaf_size points, rank
 * giving each point's rank for rbf_kd_knn_rank. 0 or FMM_ERR_NOMEM. */
int rbf_kd_build(rbf_kdtree *t, long n, const double *xyz, const long *rank, int leaf_size);
void rbf_kd_free(rbf_kdtree *t);

#define RBF_KD_KMAX 256 /* largest k of a query */

/* The k nearest points to p among those with rank >= minrank (caller's indices in out, d2
 * their squared distances, in no particular order); returns how many were found (min(k, number
 * of eligible points)); k <= RBF_KD_KMAX. */
int rbf_kd_knn_rank(const rbf_kdtree *t, const double p[3], long minrank, int k, long *out,
                    double *d2);

#ifdef __cplusplus
}
#endif

#endif

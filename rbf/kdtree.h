/* k-d tree over 3-D points for the FGP L-sets (q nearest among the points of rank >= m, a
 * static query: every node knows the largest rank below it) and as the cluster tree of the
 * multiquadric series mat-vec (tight bounding boxes, centre, radius). */
#ifndef FMM_RBF_KDTREE_H
#define FMM_RBF_KDTREE_H

#ifdef __cplusplus
extern "C" {
#endif

typedef struct rbf_kdnode {
    double lo[3], hi[3]; /* tight bounding box of the node's points */
    double c[3], rad;    /* centre of the box, max distance from c to a point */
    long begin, end;     /* points [begin, end) in tree order */
    int left, right;     /* children, -1 for a leaf */
    long maxrank;        /* largest rank of a point below (L-set queries) */
} rbf_kdnode;

typedef struct rbf_kdtree {
    long n;
    int nnode;
    rbf_kdnode *node;  /* node 0 is the root; children after their parent */
    long *idx;         /* tree position -> caller's index */
    double *x, *y, *z; /* coordinates in tree order */
    long *rk;          /* ranks in tree order (NULL without ranks) */
} rbf_kdtree;

/* Builds the tree of n points (interleaved xyz) with leaves of at most leaf_size points.
 * rank (may be NULL) gives each point's rank for rbf_kd_knn_rank. 0 or FMM_ERR_NOMEM. */
int rbf_kd_build(rbf_kdtree *t, long n, const double *xyz, const long *rank, int leaf_size);
void rbf_kd_free(rbf_kdtree *t);

#define RBF_KD_KMAX 256 /* largest k of a query */

/* The k nearest points to p among those with rank >= minrank (caller's indices in out, d2
 * their squared distances, in no particular order); returns how many were found (min(k, number
 * of eligible points)); k <= RBF_KD_KMAX. Needs a tree built with ranks. */
int rbf_kd_knn_rank(const rbf_kdtree *t, const double p[3], long minrank, int k, long *out,
                    double *d2);

#ifdef __cplusplus
}
#endif

#endif

/*
 * Cluster trees over 3-D points: every node a range of the points in tree order and their
 * bounding box shrunk to them, nodes breadth first (parents before children, each level a
 * contiguous range). One builder, two split rules:
 *   CT_SPLIT_BISECT: the box bisected at its middle along the sides longer than 1/sqrt(2) of the
 *     longest (2, 4 or 8 children, fewer for small clusters), a stable partition of the points;
 *     the cluster trees of BLDTT (Wilson, Vaughn & Krasny 2021, section 2.3; docs/bldtt.md);
 *   CT_SPLIT_MEDIAN: two children at the median along the box's longest side (a k-d tree:
 *     balanced depth whatever the distribution); the L-set neighbour queries and the series
 *     mat-vec of FGP-RBF (rbf/kdtree.c, rbf/series.c).
 * A node of more than `leaf` points is split unless all its points share one position (or, for
 * BISECT, rounding at a tiny box leaves them on one side). The FMM's octree of cubes with its
 * interaction lists is core/octree.h; docs/architecture.md says why these are apart.
 */
#ifndef FMM_CORE_CLUSTER_TREE_H
#define FMM_CORE_CLUSTER_TREE_H

#ifdef __cplusplus
extern "C" {
#endif

enum ct_split { CT_SPLIT_BISECT = 0, CT_SPLIT_MEDIAN = 1 };

typedef struct ct_node {
    long ibeg, iend; /* points ibeg .. iend-1 in tree order */
    int child[8];
    int nchild; /* 0: a leaf */
    int parent; /* -1 for the root */
    int level;
    double lo[3], hi[3]; /* shrunk bounding box */
    double c[3], r;      /* box centre and half diagonal */
    double rad;          /* with ct_build's radius: the largest distance from c to a point */
} ct_node;

typedef struct ct_tree {
    long n;
    double *x, *y, *z; /* coordinates in tree order */
    long *perm;        /* tree position -> caller's index */
    ct_node *nodes;
    int nnodes;
    int depth;        /* deepest level */
    int *level_start; /* nodes of level l: level_start[l] .. level_start[l+1]-1 */
    int *leaves;      /* leaf node indices, in node order */
    int nleaves;
} ct_tree;

/* Builds the tree of the n points xyz (interleaved), each coordinate multiplied by 2^-elen
 * (exactly, core/scale.h) for the tree's coordinates and boxes, with leaves of at most `leaf`
 * points (>= 1) by the rule split (enum ct_split); radius != 0 also fills each node's rad.
 * threads: OpenMP threads (<= 0: OpenMP's default); the tree does not depend on it. The
 * coordinates must be finite. FMM_OK or FMM_ERR_NOMEM (t empty then). */
int ct_build(ct_tree *t, long n, const double *xyz, int elen, int leaf, int split, int radius,
             int threads);
void ct_free(ct_tree *t);

#ifdef __cplusplus
}
#endif

#endif

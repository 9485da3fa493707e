/*
 * The near images of a periodic cell of any shape (docs/periodic-cells.md section 8): the tree is
 * an open octree over the cube around the brick [0,ax) x [0,by) x [0,cz), and each near image
 * n != 0 of the near set N interacts with the cell through a dual traversal of the tree against
 * its copy shifted by n h. A pair of boxes is well separated when r_t + r_s <= theta |d| (d the
 * centre offset with the shift, r the radius of the box clipped to the brick, theta = sqrt(3)/2:
 * the worst ratio of the cube's one-box rule); same-level pairs go through M2L at their exact
 * (arbitrary) offset, a leaf against a finer box through M2P or P2L, touching leaves through
 * P2P. Same-level M2L pairs with one offset form a class that shares one factored operator.
 */
#ifndef FMM_IMAGES_H
#define FMM_IMAGES_H

#include "core/octree.h"
#include "m2l/operators.h"

#ifdef __cplusplus
extern "C" {
#endif

/* sqrt(3) / 2: the separation ratio of the cube tree's one-box rule */
#define IMG_THETA 0.86602540378443864676

typedef struct img_lists {
    int nimg;      /* near images, n = 0 first */
    int *n;        /* [3 nimg] integer triples */
    double *shift; /* [3 nimg] n h in the plan's units */
    /* M2L pairs sorted by class; class c holds pairs [cstart[c], cstart[c+1]) with the offset
       cd[3c..] (source - target, in units of the level's box side) and image cimg[c] */
    long nm2l;
    int *m2l_t, *m2l_s;
    int nclass;
    long *cstart;
    double *cd;
    int *cimg, *clevel;
    /* target-major CSR of the M2L pairs (pair indices, ascending per target box) */
    long *tstart, *tpair;
    /* P2L into box b: entries [p2l_start[b], p2l_start[b+1]) of (source leaf, image) */
    long *p2l_start;
    int *p2l_s, *p2l_k;
    /* M2P (kind 1) or P2P (kind 0) into leaf b: [near_start[b], near_start[b+1]) */
    long *near_start;
    int *near_s, *near_k;
    unsigned char *near_kind;
} img_lists;

/* The lists for tree t over the brick of diagonal `brick` (plan units), images n (nimg triples,
 * n = 0 first) with shifts; ncoef: (p+1)^2, for the choice of P2P over M2P (a source with fewer
 * than ncoef / 2 particles). Returns 0 or FMM_ERR_NOMEM (L left empty). */
int img_build(img_lists *L, const octree *t, const double brick[3], int nimg, const int *n,
              const double *shift, int ncoef);
void img_free(img_lists *L);

/* U += the image M2L and P2L of every box (multipoles W). fshift (may be NULL): [nimg][3] += the
 * total force of image k's sources on the cell's charges. Returns 0 or FMM_ERR_NOMEM. */
int img_to_local(const img_lists *L, const m2l_operators *ops, const octree *t, const double *q,
                 const double *W, double *U, double *fshift);

/* phi, ex, ey, ez (tree order) += the image M2P and P2P at every leaf; fshift as above.
 * Returns 0 or FMM_ERR_NOMEM. */
int img_to_particles(const img_lists *L, int p, int npad, const octree *t, const double *q,
                     const double *W, double *phi, double *ex, double *ey, double *ez,
                     double *fshift);

#ifdef __cplusplus
}
#endif

#endif

/*
 * The near images of a periodic cell of any shape (docs/periodic-cells.md section 9): the tree is
 * an open octree over the cube around the brick [0,ax) x [0,by) x [0,cz), and each near image
 * n != 0 of the near set N interacts with the cell through a dual traversal of the tree against
 * its copy shifted by n h. A pair of boxes is well separated when r_t + r_s <= theta |d| (d the
 * centre offset with the shift, r the radius of the box clipped to the brick, theta =
 * IMG_THETA); same-level pairs go through M2L at their exact (arbitrary) offset, a leaf against a
 * finer box through M2P or P2L, touching leaves through P2P. Same-level M2L pairs whose offsets
 * agree up to reflections share one factored operator (img_cache).
 */
#ifndef FMM_IMAGES_H
#define FMM_IMAGES_H

#include "core/octree.h"
#include "m2l/operators.h"

#ifdef __cplusplus
extern "C" {
#endif

/* The separation ratio of the pairs of boxes below the root (IMG_ROOT_THETA at it). The cube's
 * one-box rule reaches sqrt(3)/2 only for its 6 face offsets (2,0,0); with shifts that are not
 * whole boxes the geometric rule admits many pairs near that ratio, and cells of a few hundred
 * charges (trees of depth 1) missed the tolerance by up to 4x at the order fmm/accuracy.c gives
 * (tests/test_periodic_cells.cpp, SmallCellsAtTheTolerance). At 0.835 they stay below 0.4 of it;
 * the times at 3k and 24k charges moved by less than the noise (docs/periodic-cells.md section 9).
 * Same-level pairs whose offset is whole boxes keep the cube's rule (sqrt(3)/2), as the error table
 * was measured with it. */
#define IMG_THETA 0.835
/* The ratio at the root: for the near set (the images within 2 r / IMG_ROOT_THETA) and for the
 * pairs with the root, whose expansions are the far table's. The octahedron's second shell of
 * images lies at 2 r / |R| = 0.835: at that bound water in a 1.7 nm octahedron missed the
 * tolerance 1e-5 in 9 of 200 configurations (by up to 2.3x), at 0.8 (51 near images instead of
 * 27) none came above 0.4 of it. */
#define IMG_ROOT_THETA 0.8

/* The factored operators of the image M2L (docs/periodic-cells.md section 9), kept across tree
 * builds: an operator depends only on the offset in units of the level's box side, so pairs of
 * every level and image with one offset up to the reflections of core/panel.h share one. An
 * entry's key is that offset's absolute value in units of 2^-IMG_KEY_BITS (the operator is built
 * for the key itself, so it does not depend on which pair brought it). */
#define IMG_KEY_BITS 44
#define IMG_KEY_SCALE 0x1p44 /* 2^IMG_KEY_BITS */

typedef struct img_cache {
    long n;
    long long *key;      /* [3 n], ascending */
    double **op;         /* [n]: rotations (2 nrot), then z blocks (2 nz) */
    unsigned char *used; /* by the last img_build */
} img_cache;

typedef struct img_lists {
    int nimg;      /* near images, n = 0 first */
    int *n;        /* [3 nimg] integer triples */
    double *shift; /* [3 nimg] n h in the plan's units */
    /* M2L pairs grouped by operator, in traversal order within one: operator o (a cache entry's
       data) holds pairs [ostart[o], ostart[o+1]); per pair the image and the reflection flags of
       its offset */
    long nm2l;
    int *m2l_t, *m2l_s, *m2l_k;
    unsigned char *m2l_f;
    int nop;
    long *ostart;
    const double **opdata;
    /* scratch of the evaluation: the results of up to cap pairs (+ PANEL_NB), stride npad */
    long cap;
    double *buf;
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
 * n = 0 first) with shifts; ops: the plan's operators (order, reflection signs; the choice of
 * P2P over M2P for a source with fewer than ncoef / 2 particles). The M2L operators come from
 * cache C, which gains those it lacks and marks those the lists use. Returns 0 or
 * FMM_ERR_NOMEM (L left empty). */
int img_build(img_lists *L, const octree *t, const double brick[3], int nimg, const int *n,
              const double *shift, const m2l_operators *ops, img_cache *C);
void img_free(img_lists *L);

/* Drops the cache entries that the last img_build did not use (after its lists replaced the old
 * ones); img_cache_free drops all. */
void img_cache_prune(img_cache *C);
void img_cache_free(img_cache *C);

/* U += the image M2L and P2L of every box (multipoles W), through L's scratch buf. fshift (may be
 * NULL): [nimg][3] += the total force of image k's sources on the cell's charges. Returns 0 or
 * FMM_ERR_NOMEM. */
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

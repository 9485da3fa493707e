/*
 * Adaptive octree over a cube, with the interaction lists of the adaptive FMM
 * (Carrier, Greengard & Rokhlin 1988) and optional periodic images:
 *   colleagues C(B): same-level boxes touching B (B itself included), with an image shift;
 *   V(B): children of C(parent B) not touching B            -> M2L (same level, offsets in [-3,3]^3);
 *   U(B), leaf B: leaves touching B, at any level            -> P2P;
 *   W(B), leaf B: descendants D of C(B) not touching B, parent(D) touching B -> M2P at B's particles;
 *   X(B): leaves C with B in W(C)                            -> P2L into B's local expansion.
 * A uniform tree (every non-empty box split down to a fixed depth) is the special case with
 * empty W and X lists. Image shifts are coded 0..26 as (sx+1) + 3 (sy+1) + 9 (sz+1), 13 = none.
 */
#ifndef FMM_CORE_OCTREE_H
#define FMM_CORE_OCTREE_H

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define OCT_MAXLEVEL 20
#define OCT_NOSHIFT 13

typedef struct oct_box {
    int level;
    int ix[3];     /* integer position at its level, 0 .. 2^level - 1 */
    long begin;    /* particles [begin, end) in tree order */
    long end;
    int parent;    /* -1 for the root */
    int child[8];  /* -1 where the octant is empty */
    int nchild;
    double c[3];   /* centre */
} oct_box;

/* compressed list: entries of box b are [start[b], start[b+1]) */
typedef struct oct_list {
    long *start;
    int *box;            /* source box */
    unsigned short *aux; /* image shift code, or for V lists the M2L offset index 0..342 */
} oct_list;

typedef struct octree {
    long n;
    int nbox, nleaf, depth, periodic;
    oct_box *box;
    int *level_start; /* boxes of level l: [level_start[l], level_start[l+1]) */
    int *leaves;      /* indices of the leaf boxes */
    double lo[3], side;
    /* particles in tree order */
    long *perm; /* tree position -> caller's index */
    double *x, *y, *z;
    /* lists */
    oct_list coll, V, U, W, X;
} octree;

/* M2L offset index of d = source - target in level units, each in [-3, 3] */
static inline int oct_offset_index(int dx, int dy, int dz) {
    return (dx + 3) + 7 * (dy + 3) + 49 * (dz + 3);
}
static inline void oct_shift_vec(int code, int s[3]) {
    s[0] = code % 3 - 1;
    s[1] = (code / 3) % 3 - 1;
    s[2] = code / 9 - 1;
}

/* Build the tree for n points (interleaved xyz) inside the cube [lo, lo + side)^3.
 * depth >= 0: uniform tree of that depth; depth < 0: adaptive, leaves hold <= leaf_size
 * particles (or sit at OCT_MAXLEVEL). Returns 0, or FMM_ERR_NOMEM / FMM_ERR_COINCIDENT. */
int oct_build(octree *t, long n, const double *xyz, const double lo[3], double side, int depth,
              int leaf_size, int periodic);
void oct_free(octree *t);

static inline int oct_is_leaf(const oct_box *b) { return b->nchild == 0; }

#ifdef __cplusplus
}
#endif

#endif

#include "core/octree.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "core/sort.h"
#include "fmm_common.h"

#define UNIT(level) ((int64_t)1 << (OCT_MAXLEVEL - (level)))

static uint64_t spread3(uint64_t v) { /* 20 bits -> every third bit */
    v &= 0xfffff;
    v = (v | (v << 32)) & 0x1f00000000ffffULL;
    v = (v | (v << 16)) & 0x1f0000ff0000ffULL;
    v = (v | (v << 8)) & 0x100f00f00f00f00fULL;
    v = (v | (v << 4)) & 0x10c30c30c30c30c3ULL;
    v = (v | (v << 2)) & 0x1249249249249249ULL;
    return v;
}

/* first position in [lo, hi) whose key is >= v */
static long lower_bound(const uint64_t *key, long lo, long hi, uint64_t v) {
    while (lo < hi) {
        long mid = lo + (hi - lo) / 2;
        if (key[mid] < v)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo;
}

/* do the closed boxes a and b (+ image shift) touch or overlap? */
static int touches(const oct_box *a, const oct_box *b, int shift) {
    int s[3];
    oct_shift_vec(shift, s);
    int64_t ua = UNIT(a->level), ub = UNIT(b->level);
    for (int d = 0; d < 3; ++d) {
        int64_t alo = a->ix[d] * ua, ahi = alo + ua;
        int64_t blo = b->ix[d] * ub + s[d] * UNIT(0), bhi = blo + ub;
        if (alo > bhi || blo > ahi) return 0;
    }
    return 1;
}

/* ---------------------------------------------------------------- lists */

typedef long (*list_fn)(const octree *t, int b, int *obox, unsigned short *oaux);

static int build_list(octree *t, oct_list *L, list_fn f) {
    L->start = malloc(sizeof(long) * (size_t)(t->nbox + 1));
    if (!L->start) return FMM_ERR_NOMEM;
#pragma omp parallel for schedule(dynamic, 64)
    for (int b = 0; b < t->nbox; ++b) L->start[b + 1] = f(t, b, NULL, NULL);
    L->start[0] = 0;
    for (int b = 0; b < t->nbox; ++b) L->start[b + 1] += L->start[b];
    long total = L->start[t->nbox];
    L->box = malloc(sizeof(int) * (size_t)(total + 1));
    L->aux = malloc(sizeof(unsigned short) * (size_t)(total + 1));
    if (!L->box || !L->aux) return FMM_ERR_NOMEM;
#pragma omp parallel for schedule(dynamic, 64)
    for (int b = 0; b < t->nbox; ++b) f(t, b, L->box + L->start[b], L->aux + L->start[b]);
    return 0;
}

static inline void put(long k, int *obox, unsigned short *oaux, int box, int aux) {
    if (obox) {
        obox[k] = box;
        oaux[k] = (unsigned short)aux;
    }
}

/* colleagues: level 0 is the root and (periodic) its 26 images; deeper levels come from
 * the children of the parent's colleagues, which inherit their image shift. */
static long colleagues(const octree *t, int b, int *obox, unsigned short *oaux) {
    const oct_box *B = &t->box[b];
    long k = 0;
    if (B->parent < 0) {
        if (!t->periodic) {
            put(k++, obox, oaux, b, OCT_NOSHIFT);
        } else {
            for (int s = 0; s < 27; ++s) put(k++, obox, oaux, b, s);
        }
        return k;
    }
    const oct_list *C = &t->coll;
    for (long e = C->start[B->parent]; e < C->start[B->parent + 1]; ++e) {
        const oct_box *A = &t->box[C->box[e]];
        for (int o = 0; o < 8; ++o) {
            int c = A->child[o];
            if (c >= 0 && touches(B, &t->box[c], C->aux[e])) put(k++, obox, oaux, c, C->aux[e]);
        }
    }
    return k;
}

static long vlist(const octree *t, int b, int *obox, unsigned short *oaux) {
    const oct_box *B = &t->box[b];
    if (B->parent < 0) return 0;
    const oct_list *C = &t->coll;
    long k = 0;
    for (long e = C->start[B->parent]; e < C->start[B->parent + 1]; ++e) {
        const oct_box *A = &t->box[C->box[e]];
        int s[3];
        oct_shift_vec(C->aux[e], s);
        for (int o = 0; o < 8; ++o) {
            int c = A->child[o];
            if (c < 0 || touches(B, &t->box[c], C->aux[e])) continue;
            const oct_box *S = &t->box[c];
            int n = 1 << B->level, d[3];
            for (int a = 0; a < 3; ++a) d[a] = S->ix[a] + s[a] * n - B->ix[a];
            put(k++, obox, oaux, c, oct_offset_index(d[0], d[1], d[2]));
        }
    }
    return k;
}

/* descendants of a colleague (c, shift) of leaf B: touching leaves -> U, first non-touching -> W */
static long descend(const octree *t, const oct_box *B, int c, int shift, int want_u, int *obox,
                    unsigned short *oaux, long k) {
    const oct_box *C = &t->box[c];
    for (int o = 0; o < 8; ++o) {
        int d = C->child[o];
        if (d < 0) continue;
        const oct_box *D = &t->box[d];
        if (touches(B, D, shift)) {
            if (oct_is_leaf(D)) {
                if (want_u) put(k++, obox, oaux, d, shift);
            } else {
                k = descend(t, B, d, shift, want_u, obox, oaux, k);
            }
        } else if (!want_u) {
            put(k++, obox, oaux, d, shift);
        }
    }
    return k;
}

/* leaves at a coarser level than box b that touch box `target` (b or its parent) */
static long coarse_leaves(const octree *t, const oct_box *target, int from, const oct_box *notouch,
                          int *obox, unsigned short *oaux, long k) {
    const oct_list *C = &t->coll;
    for (int a = from; a >= 0; a = t->box[a].parent)
        for (long e = C->start[a]; e < C->start[a + 1]; ++e) {
            const oct_box *A = &t->box[C->box[e]];
            if (!oct_is_leaf(A) || !touches(target, A, C->aux[e])) continue;
            if (notouch && touches(notouch, A, C->aux[e])) continue;
            put(k++, obox, oaux, C->box[e], C->aux[e]);
        }
    return k;
}

static long ulist(const octree *t, int b, int *obox, unsigned short *oaux) {
    const oct_box *B = &t->box[b];
    if (!oct_is_leaf(B)) return 0;
    const oct_list *C = &t->coll;
    long k = 0;
    for (long e = C->start[b]; e < C->start[b + 1]; ++e) {
        int c = C->box[e];
        if (oct_is_leaf(&t->box[c]))
            put(k++, obox, oaux, c, C->aux[e]);
        else
            k = descend(t, B, c, C->aux[e], 1, obox, oaux, k);
    }
    if (B->parent >= 0) k = coarse_leaves(t, B, B->parent, NULL, obox, oaux, k);
    return k;
}

static long wlist(const octree *t, int b, int *obox, unsigned short *oaux) {
    const oct_box *B = &t->box[b];
    if (!oct_is_leaf(B)) return 0;
    const oct_list *C = &t->coll;
    long k = 0;
    for (long e = C->start[b]; e < C->start[b + 1]; ++e) {
        int c = C->box[e];
        if (!oct_is_leaf(&t->box[c])) k = descend(t, B, c, C->aux[e], 0, obox, oaux, k);
    }
    return k;
}

/* X(B): leaves touching parent(B), at parent(B)'s level or coarser, not touching B */
static long xlist(const octree *t, int b, int *obox, unsigned short *oaux) {
    const oct_box *B = &t->box[b];
    if (B->parent < 0) return 0;
    return coarse_leaves(t, &t->box[B->parent], B->parent, B, obox, oaux, 0);
}

/* ---------------------------------------------------------------- build */

void oct_free(octree *t) {
    if (!t) return;
    free(t->box);
    free(t->level_start);
    free(t->leaves);
    free(t->perm);
    free(t->x);
    free(t->y);
    free(t->z);
    oct_list *ls[5] = {&t->coll, &t->V, &t->U, &t->W, &t->X};
    for (int i = 0; i < 5; ++i) {
        free(ls[i]->start);
        free(ls[i]->box);
        free(ls[i]->aux);
    }
    memset(t, 0, sizeof *t);
}

static int check_coincident(const octree *t, const uint64_t *key) {
    int bad = 0;
#pragma omp parallel for schedule(static) reduction(| : bad)
    for (long i = 1; i < t->n; ++i) {
        if (key[i] != key[i - 1]) continue;
        /* compare against every earlier point with the same key (runs are tiny) */
        for (long j = i - 1; j >= 0 && key[j] == key[i]; --j)
            if (t->x[i] == t->x[j] && t->y[i] == t->y[j] && t->z[i] == t->z[j]) bad = 1;
    }
    return bad ? FMM_ERR_COINCIDENT : 0;
}

/* The boxes, level by level (so each level is contiguous): a box splits into its non-empty octants
 * while it holds more than leaf_size points, or down to the uniform depth (depth >= 0); then the
 * tree's depth and level starts. key: the points' Morton keys, sorted. Returns 0 or
 * FMM_ERR_NOMEM. */
static int build_boxes(octree *t, const uint64_t *key, int depth, int leaf_size) {
    const double *lo = t->lo, side = t->side;
    long cap = 1024;
    t->box = malloc(sizeof(oct_box) * (size_t)cap);
    t->level_start = malloc(sizeof(int) * (OCT_MAXLEVEL + 2));
    if (!t->box || !t->level_start) return FMM_ERR_NOMEM;
    oct_box root = {0, {0, 0, 0}, 0, t->n, -1, {-1, -1, -1, -1, -1, -1, -1, -1}, 0, {0, 0, 0}};
    for (int d = 0; d < 3; ++d) root.c[d] = lo[d] + 0.5 * side;
    t->box[0] = root;
    t->nbox = 1;
    t->level_start[0] = 0;
    int level = 0;
    for (;; ++level) {
        int first = t->level_start[level], last = t->nbox;
        t->level_start[level + 1] = last;
        if (level == OCT_MAXLEVEL || (depth >= 0 && level == depth)) break;
        for (int b = first; b < last; ++b) {
            long cnt = t->box[b].end - t->box[b].begin;
            int split = depth >= 0 ? 1 : cnt > leaf_size;
            if (!split) continue;
            int shift = 3 * (OCT_MAXLEVEL - level - 1);
            uint64_t prefix = key[t->box[b].begin] >> (shift + 3) << (shift + 3);
            long s = t->box[b].begin;
            for (int o = 0; o < 8; ++o) {
                long e = o == 7 ? t->box[b].end
                                : lower_bound(key, s, t->box[b].end,
                                              prefix | ((uint64_t)(o + 1) << shift));
                if (e > s) {
                    if (t->nbox == cap) {
                        cap *= 2;
                        oct_box *nb = realloc(t->box, sizeof(oct_box) * (size_t)cap);
                        if (!nb) return FMM_ERR_NOMEM;
                        t->box = nb;
                    }
                    oct_box *P = &t->box[b], *C = &t->box[t->nbox];
                    C->level = level + 1;
                    double h = side / (double)(1 << (level + 1));
                    for (int d = 0; d < 3; ++d) {
                        C->ix[d] = 2 * P->ix[d] + ((o >> d) & 1);
                        C->c[d] = lo[d] + (C->ix[d] + 0.5) * h;
                    }
                    C->begin = s;
                    C->end = e;
                    C->parent = b;
                    for (int k = 0; k < 8; ++k) C->child[k] = -1;
                    C->nchild = 0;
                    P->child[o] = t->nbox;
                    P->nchild++;
                    t->nbox++;
                }
                s = e;
            }
        }
        if (t->nbox == last) {
            t->level_start[level + 1] = last;
            break;
        }
    }
    t->depth = level;
    while (t->depth > 0 && t->level_start[t->depth] == t->level_start[t->depth + 1]) t->depth--;
    t->level_start[t->depth + 1] = t->nbox;
    return 0;
}

/* The colleagues level by level (each needs its parent's), then the V, U, W and X lists. Returns 0
 * or the first failure's status. */
static int build_all_lists(octree *t) {
    t->coll.start = malloc(sizeof(long) * (size_t)(t->nbox + 1));
    t->coll.box = malloc(sizeof(int) * 27 * (size_t)t->nbox);
    t->coll.aux = malloc(sizeof(unsigned short) * 27 * (size_t)t->nbox);
    if (!t->coll.start || !t->coll.box || !t->coll.aux) return FMM_ERR_NOMEM;
    /* levels are contiguous, so the CSR can grow level by level */
    t->coll.start[0] = 0;
    for (int l = 0; l <= t->depth; ++l) {
        int b0 = t->level_start[l], b1 = t->level_start[l + 1];
#pragma omp parallel for schedule(dynamic, 64)
        for (int b = b0; b < b1; ++b) t->coll.start[b + 1] = colleagues(t, b, NULL, NULL);
        for (int b = b0; b < b1; ++b) t->coll.start[b + 1] += t->coll.start[b];
#pragma omp parallel for schedule(dynamic, 64)
        for (int b = b0; b < b1; ++b)
            colleagues(t, b, t->coll.box + t->coll.start[b], t->coll.aux + t->coll.start[b]);
    }
    int rc;
    if ((rc = build_list(t, &t->V, vlist)) != 0) return rc;
    if ((rc = build_list(t, &t->U, ulist)) != 0) return rc;
    if ((rc = build_list(t, &t->W, wlist)) != 0) return rc;
    if ((rc = build_list(t, &t->X, xlist)) != 0) return rc;
    return 0;
}

int oct_build(octree *t, long n, const double *xyz, const double lo[3], double side, int depth,
              int leaf_size, int periodic) {
    memset(t, 0, sizeof *t);
    t->n = n;
    t->periodic = periodic;
    t->side = side;
    for (int d = 0; d < 3; ++d) t->lo[d] = lo[d];
    int rc = FMM_ERR_NOMEM;
    uint64_t *key = malloc(sizeof(uint64_t) * (size_t)n);
    t->perm = malloc(sizeof(long) * (size_t)n);
    t->x = malloc(sizeof(double) * (size_t)n);
    t->y = malloc(sizeof(double) * (size_t)n);
    t->z = malloc(sizeof(double) * (size_t)n);
    if (!key || !t->perm || !t->x || !t->y || !t->z) goto fail;

    const double scale = (double)UNIT(0) / side;
    const int64_t top = UNIT(0) - 1;
#pragma omp parallel for schedule(static)
    for (long i = 0; i < n; ++i) {
        uint64_t k = 0;
        for (int d = 0; d < 3; ++d) {
            int64_t v = (int64_t)floor((xyz[3 * i + d] - lo[d]) * scale);
            v = v < 0 ? 0 : (v > top ? top : v);
            k |= spread3((uint64_t)v) << d;
        }
        key[i] = k;
        t->perm[i] = i;
    }
    if ((rc = fmm_radix_sort(n, key, t->perm, 3 * OCT_MAXLEVEL, 0)) != 0) goto fail;
#pragma omp parallel for schedule(static)
    for (long i = 0; i < n; ++i) {
        long j = t->perm[i];
        t->x[i] = xyz[3 * j];
        t->y[i] = xyz[3 * j + 1];
        t->z[i] = xyz[3 * j + 2];
    }
    if ((rc = check_coincident(t, key)) != 0) goto fail;

    if ((rc = build_boxes(t, key, depth, leaf_size)) != 0) goto fail;
    rc = FMM_ERR_NOMEM;
    t->leaves = malloc(sizeof(int) * (size_t)t->nbox);
    if (!t->leaves) goto fail;
    for (int b = 0; b < t->nbox; ++b)
        if (oct_is_leaf(&t->box[b])) t->leaves[t->nleaf++] = b;

    if ((rc = build_all_lists(t)) != 0) goto fail;
    free(key);
    return 0;
fail:
    free(key);
    oct_free(t);
    return rc;
}

#include "fmm/images.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "core/harmonics.h"
#include "core/p2p.h"
#include "core/panel.h"
#include "core/reduce.h"
#include "fmm.h"

/* ---------------------------------------------------------------- traversal */

typedef struct m2l_rec {
    int level, k, off[3], t, s;
} m2l_rec;

typedef struct pair_rec {
    int t, s, k, kind;
} pair_rec;

/* growable arrays of one image's records */
typedef struct recs {
    m2l_rec *m;
    pair_rec *l, *p; /* P2L; M2P / P2P */
    long nm, nl, np, cm, cl, cp;
    int fail;
} recs;

#define GROW(arr, n, cap, fail)                                                                    \
    do {                                                                                           \
        if ((n) == (cap)) {                                                                        \
            long nc = (cap) ? 2 * (cap) : 256;                                                     \
            void *nb = realloc((arr), sizeof(*(arr)) * (size_t)nc);                                \
            if (!nb) {                                                                             \
                (fail) = 1;                                                                        \
                break;                                                                             \
            }                                                                                      \
            (arr) = nb, (cap) = nc;                                                                \
        }                                                                                          \
        ++(n);                                                                                     \
    } while (0)

typedef struct trav {
    const octree *t;
    const double *radius; /* per box: the radius of the box clipped to the brick */
    const double *R;      /* this image's shift */
    int k, ncoef;
    recs *r;
} trav;

static void add_pair(trav *T, pair_rec **arr, long *n, long *cap, int t, int s, int kind) {
    GROW(*arr, *n, *cap, T->r->fail);
    if (T->r->fail) return;
    (*arr)[*n - 1] = (pair_rec){t, s, T->k, kind};
}

static void visit(trav *T, int t, int s) {
    if (T->r->fail) return;
    const oct_box *A = &T->t->box[t], *B = &T->t->box[s];
    double d2 = 0;
    for (int a = 0; a < 3; ++a) {
        const double d = B->c[a] + T->R[a] - A->c[a];
        d2 += d * d;
    }
    const double rs = T->radius[t] + T->radius[s];
    const int lt = oct_is_leaf(A), ls = oct_is_leaf(B);
    recs *r = T->r;
    const double th = A->level ? IMG_THETA : IMG_ROOT_THETA;
    int sep = rs * rs <= th * th * d2;
    if (!sep && A->level == B->level && rs * rs <= 0.75 * d2) {
        /* an offset of whole boxes: the cube's one-box rule, ratio sqrt(3)/2 (fmm/images.h) */
        const double h = T->t->side / (double)(1 << A->level);
        int whole = 1;
        for (int a = 0; a < 3; ++a) {
            const double v = (B->c[a] + T->R[a] - A->c[a]) / h;
            whole &= fabs(v - round(v)) < 1e-9;
        }
        sep = whole;
    }
    if (sep) {
        if (A->level == B->level) {
            GROW(r->m, r->nm, r->cm, r->fail);
            if (r->fail) return;
            m2l_rec *m = &r->m[r->nm - 1];
            m->level = A->level, m->k = T->k, m->t = t, m->s = s;
            for (int a = 0; a < 3; ++a) m->off[a] = B->ix[a] - A->ix[a];
        } else if (lt) { /* a finer source box: its multipole, or its few particles */
            add_pair(T, &r->p, &r->np, &r->cp, t, s, 2 * (B->end - B->begin) >= T->ncoef);
        } else { /* a coarser source leaf: its particles into the local expansion */
            add_pair(T, &r->l, &r->nl, &r->cl, t, s, 0);
        }
        return;
    }
    if (lt && ls) {
        add_pair(T, &r->p, &r->np, &r->cp, t, s, 0);
        return;
    }
    /* split the coarser box (both at equal levels), a leaf never */
    const int split_t = !lt && (ls || A->level <= B->level);
    const int split_s = !ls && (lt || B->level <= A->level);
    for (int i = 0; i < 8; ++i) {
        const int ct = split_t ? A->child[i] : t;
        if (ct < 0) continue;
        for (int j = 0; j < 8; ++j) {
            const int cs = split_s ? B->child[j] : s;
            if (cs >= 0) visit(T, ct, cs);
            if (!split_s) break;
        }
        if (!split_t) break;
    }
}

/* an operator's key with its place among the keys of one build */
typedef struct key_rec {
    long long key[3];
    long id;
} key_rec;

static int cmp_key3(const long long *a, const long long *b) {
    for (int i = 0; i < 3; ++i)
        if (a[i] != b[i]) return a[i] < b[i] ? -1 : 1;
    return 0;
}

static int cmp_keyrec(const void *pa, const void *pb) {
    return cmp_key3(((const key_rec *)pa)->key, ((const key_rec *)pb)->key);
}

static unsigned long long hash3(const long long *k) {
    unsigned long long h = 0x9e3779b97f4a7c15ull;
    for (int i = 0; i < 3; ++i) h = (h ^ (unsigned long long)k[i]) * 0xff51afd7ed558ccdull;
    return h ^ (h >> 29);
}

/* the index of key in C, or -1 */
static long cache_find(const img_cache *C, const long long *key) {
    long lo = 0, hi = C->n;
    while (lo < hi) {
        const long mid = (lo + hi) / 2;
        const int c = cmp_key3(C->key + 3 * mid, key);
        if (!c) return mid;
        if (c < 0)
            lo = mid + 1;
        else
            hi = mid;
    }
    return -1;
}

/* C gains the operators of the nk keys nk3 (ascending, none in C), marked used */
static int cache_add(img_cache *C, const m2l_operators *ops, long nk, const long long *nk3) {
    const int p = ops->p, nrot = ops->nrot, nz = ops->nz;
    const size_t size = 2 * (size_t)nrot + 2 * (size_t)nz;
    /* frames per harm_rotation_matrices call: they share its O(p^5) setup; about 2^22 doubles */
    const int chunk = nrot < (1 << 14) ? 256 : (1 << 22) / nrot;
    double **op = calloc((size_t)nk + 1, sizeof(double *));
    double *Q = malloc(sizeof(double) * 9 * (size_t)chunk);
    double *rot = malloc(sizeof(double) * 2 * (size_t)chunk * (size_t)nrot);
    long long *key = malloc(sizeof(long long) * 3 * (size_t)(C->n + nk));
    double **all = malloc(sizeof(double *) * (size_t)(C->n + nk));
    unsigned char *used = malloc((size_t)(C->n + nk));
    int fail = !op || !Q || !rot || !key || !all || !used;
    for (long i = 0; i < nk && !fail; ++i) fail = !(op[i] = malloc(sizeof(double) * size));
    for (long i0 = 0; i0 < nk && !fail; i0 += chunk) {
        const int nq = (int)(nk - i0 < chunk ? nk - i0 : chunk);
        for (int i = 0; i < nq; ++i) {
            double d[3];
            for (int a = 0; a < 3; ++a) d[a] = (double)nk3[3 * (i0 + i) + a] / IMG_KEY_SCALE;
            m2l_frame_along(d, Q + 9 * i);
            double *z = op[i0 + i] + 2 * (size_t)nrot;
            harm_m2l_zblocks(p, sqrt(d[0] * d[0] + d[1] * d[1] + d[2] * d[2]), z, z + nz);
        }
        fail = harm_rotation_matrices(p, nq, Q, rot, rot + (size_t)nq * nrot, (size_t)nrot);
        for (int i = 0; i < nq && !fail; ++i) {
            memcpy(op[i0 + i], rot + (size_t)i * nrot, sizeof(double) * (size_t)nrot);
            memcpy(op[i0 + i] + nrot, rot + (size_t)(nq + i) * nrot, sizeof(double) * (size_t)nrot);
        }
    }
    free(Q), free(rot);
    if (fail) {
        for (long i = 0; op && i < nk; ++i) free(op[i]);
        free(op), free(key), free(all), free(used);
        return FMM_ERR_NOMEM;
    }
    /* merge the two ascending lists */
    long i = 0, j = 0, o = 0;
    while (i < C->n || j < nk) {
        const int old = j == nk || (i < C->n && cmp_key3(C->key + 3 * i, nk3 + 3 * j) < 0);
        memcpy(key + 3 * o, old ? C->key + 3 * i : nk3 + 3 * j, sizeof(long long) * 3);
        all[o] = old ? C->op[i] : op[j];
        used[o++] = old ? C->used[i++] : (++j, 1);
    }
    free(C->key), free(C->op), free(C->used), free(op);
    C->key = key, C->op = all, C->used = used, C->n += nk;
    return 0;
}

void img_cache_prune(img_cache *C) {
    long o = 0;
    for (long i = 0; i < C->n; ++i) {
        if (!C->used[i]) {
            free(C->op[i]);
            continue;
        }
        memmove(C->key + 3 * o, C->key + 3 * i, sizeof(long long) * 3);
        C->op[o] = C->op[i], C->used[o++] = 1;
    }
    C->n = o;
}

void img_cache_free(img_cache *C) {
    for (long i = 0; i < C->n; ++i) free(C->op[i]);
    free(C->key), free(C->op), free(C->used);
    memset(C, 0, sizeof *C);
}

/* CSR by target of n records (a stable counting sort: the records' order within a target) */
static int csr(long n, const pair_rec *rec, int nbox, long **start, int **s, int **k,
               unsigned char **kind) {
    *start = calloc((size_t)nbox + 1, sizeof(long));
    *s = malloc(sizeof(int) * (size_t)(n + 1));
    *k = malloc(sizeof(int) * (size_t)(n + 1));
    if (kind) *kind = malloc((size_t)n + 1);
    if (!*start || !*s || !*k || (kind && !*kind)) return FMM_ERR_NOMEM;
    for (long e = 0; e < n; ++e) (*start)[rec[e].t + 1]++;
    for (int b = 0; b < nbox; ++b) (*start)[b + 1] += (*start)[b];
    long *pos = malloc(sizeof(long) * (size_t)(nbox + 1));
    if (!pos) return FMM_ERR_NOMEM;
    memcpy(pos, *start, sizeof(long) * (size_t)(nbox + 1));
    for (long e = 0; e < n; ++e) {
        const long o = pos[rec[e].t]++;
        (*s)[o] = rec[e].s, (*k)[o] = rec[e].k;
        if (kind) (*kind)[o] = (unsigned char)rec[e].kind;
    }
    free(pos);
    return 0;
}

void img_free(img_lists *L) {
    if (!L) return;
    free(L->n), free(L->shift), free(L->m2l_t), free(L->m2l_s), free(L->m2l_k), free(L->m2l_f);
    free(L->ostart), free(L->opdata), free(L->tstart), free(L->tpair), free(L->p2l_start);
    free(L->p2l_s), free(L->p2l_k), free(L->near_start), free(L->near_s), free(L->near_k);
    free(L->near_kind), free(L->buf);
    memset(L, 0, sizeof *L);
}

/* L's M2L pairs from the nm records m: sorted by operator key, the operators from C (built where
 * it lacks them) */
static int m2l_pairs(img_lists *L, const octree *t, const double *shift, long nm, const m2l_rec *m,
                     const m2l_operators *ops, img_cache *C) {
    long hn = 16;
    while (hn < 2 * nm) hn *= 2;
    long long *key = malloc(sizeof(long long) * 3 * (size_t)(nm + 1));
    long *id = malloc(sizeof(long) * (size_t)(nm + 1)), *slot = malloc(sizeof(long) * (size_t)hn);
    key_rec *u = malloc(sizeof(key_rec) * (size_t)(nm + 1));
    long long *nk3 = malloc(sizeof(long long) * 3 * (size_t)(nm + 1));
    L->nm2l = nm;
    L->m2l_t = malloc(sizeof(int) * (size_t)(nm + 1));
    L->m2l_s = malloc(sizeof(int) * (size_t)(nm + 1));
    L->m2l_k = malloc(sizeof(int) * (size_t)(nm + 1));
    L->m2l_f = malloc((size_t)nm + 1);
    L->ostart = calloc((size_t)nm + 2, sizeof(long));
    L->opdata = malloc(sizeof(double *) * (size_t)(nm + 1));
    L->tstart = calloc((size_t)t->nbox + 1, sizeof(long));
    L->tpair = malloc(sizeof(long) * (size_t)(nm + 1));
    long *pos = malloc(sizeof(long) * (size_t)(t->nbox + 1));
    long *rank = malloc(sizeof(long) * (size_t)(nm + 1));
    unsigned char *f = malloc((size_t)nm + 1);
    int rc = FMM_ERR_NOMEM;
    if (!key || !id || !slot || !u || !nk3 || !L->m2l_t || !L->m2l_s || !L->m2l_k || !L->m2l_f ||
        !L->ostart || !L->opdata || !L->tstart || !L->tpair || !pos || !rank || !f)
        goto done;
    /* each pair's key (the absolute offset in box sides, in units of 2^-IMG_KEY_BITS) and
       reflection flags; the distinct keys by a hash table, in the order first met */
    for (long i = 0; i < hn; ++i) slot[i] = -1;
    long nu = 0;
    for (long e = 0; e < nm; ++e) {
        const double h = t->side / (double)(1 << m[e].level);
        long long *k = key + 3 * e;
        f[e] = 0;
        for (int a = 0; a < 3; ++a) {
            const double d = m[e].off[a] + shift[3 * m[e].k + a] / h;
            k[a] = llround(fabs(d) * IMG_KEY_SCALE);
            f[e] |= (unsigned char)((d < 0) << a);
        }
        long i = (long)(hash3(k) & (unsigned long long)(hn - 1));
        while (slot[i] >= 0 && cmp_key3(u[slot[i]].key, k)) i = (i + 1) & (hn - 1);
        if (slot[i] < 0) {
            slot[i] = nu;
            memcpy(u[nu].key, k, sizeof u[nu].key), u[nu].id = nu, ++nu;
        }
        id[e] = slot[i];
    }
    /* operators in key order (whatever order the traversal met them), each from C, which first
       gains the keys it lacks */
    qsort(u, (size_t)nu, sizeof *u, cmp_keyrec);
    long nk = 0;
    for (long o = 0; o < nu; ++o)
        if (cache_find(C, u[o].key) < 0) memcpy(nk3 + 3 * nk++, u[o].key, sizeof(long long) * 3);
    if (C->n) memset(C->used, 0, (size_t)C->n);
    if (nk && cache_add(C, ops, nk, nk3)) goto done;
    L->nop = (int)nu;
    for (long o = 0; o < nu; ++o) {
        const long i = cache_find(C, u[o].key);
        C->used[i] = 1, L->opdata[o] = C->op[i], rank[u[o].id] = o;
    }
    /* the pairs by operator, in traversal order within one (a stable counting sort) */
    for (long e = 0; e < nm; ++e) L->ostart[rank[id[e]] + 1]++;
    for (long o = 0; o < nu; ++o) L->ostart[o + 1] += L->ostart[o];
    for (long e = 0; e < nm; ++e) {
        const long o = L->ostart[rank[id[e]]]++;
        L->m2l_t[o] = m[e].t, L->m2l_s[o] = m[e].s, L->m2l_k[o] = m[e].k, L->m2l_f[o] = f[e];
        L->tstart[m[e].t + 1]++;
    }
    for (long o = nu; o > 0; --o) L->ostart[o] = L->ostart[o - 1];
    L->ostart[0] = 0;
    /* the results of up to 2^21 doubles' worth of pairs at once, kept for every evaluation */
    L->cap = (1L << 21) / ops->npad > PANEL_NB ? (1L << 21) / ops->npad : PANEL_NB;
    L->cap = nm < L->cap ? nm : L->cap;
    L->buf = aligned_alloc(64, sizeof(double) * (size_t)ops->npad * (size_t)(L->cap + PANEL_NB));
    if (!L->buf) goto done;
    for (int b = 0; b < t->nbox; ++b) L->tstart[b + 1] += L->tstart[b];
    memcpy(pos, L->tstart, sizeof(long) * (size_t)(t->nbox + 1));
    for (long e = 0; e < nm; ++e) L->tpair[pos[L->m2l_t[e]]++] = e;
    rc = 0;
done:
    free(key), free(id), free(slot), free(u), free(nk3), free(pos), free(rank), free(f);
    return rc;
}

int img_build(img_lists *L, const octree *t, const double brick[3], int nimg, const int *n,
              const double *shift, const m2l_operators *ops, img_cache *C) {
    memset(L, 0, sizeof *L);
    const int nbox = t->nbox;
    L->nimg = nimg;
    L->n = malloc(sizeof(int) * 3 * (size_t)nimg);
    L->shift = malloc(sizeof(double) * 3 * (size_t)nimg);
    double *radius = malloc(sizeof(double) * (size_t)nbox);
    recs *r = calloc((size_t)nimg, sizeof(recs));
    m2l_rec *m = NULL;
    pair_rec *pl = NULL, *pp = NULL;
    int rc = FMM_ERR_NOMEM;
    if (!L->n || !L->shift || !radius || !r) goto done;
    memcpy(L->n, n, sizeof(int) * 3 * (size_t)nimg);
    memcpy(L->shift, shift, sizeof(double) * 3 * (size_t)nimg);
    for (int b = 0; b < nbox; ++b) {
        const oct_box *B = &t->box[b];
        const double hw = 0.5 * t->side / (double)(1 << B->level);
        double r2 = 0;
        for (int a = 0; a < 3; ++a) {
            const double lo = fmax(B->c[a] - hw, 0.0), hi = fmin(B->c[a] + hw, brick[a]);
            const double e = fmax(fmax(B->c[a] - lo, hi - B->c[a]), 0.0);
            r2 += e * e;
        }
        radius[b] = sqrt(r2);
    }
#pragma omp parallel for schedule(dynamic, 1)
    for (int k = 1; k < nimg; ++k) {
        trav T = {t, radius, shift + 3 * k, k, ops->ncoef, r + k};
        visit(&T, 0, 0);
    }
    long nm = 0, nl = 0, np = 0;
    for (int k = 1; k < nimg; ++k) {
        if (r[k].fail) goto done;
        nm += r[k].nm, nl += r[k].nl, np += r[k].np;
    }
    m = malloc(sizeof(m2l_rec) * (size_t)(nm + 1));
    pl = malloc(sizeof(pair_rec) * (size_t)(nl + 1));
    pp = malloc(sizeof(pair_rec) * (size_t)(np + 1));
    if (!m || !pl || !pp) goto done;
    nm = nl = np = 0;
    for (int k = 1; k < nimg; ++k) { /* (an image without records of a kind has no array) */
        if (r[k].nm) memcpy(m + nm, r[k].m, sizeof(m2l_rec) * (size_t)r[k].nm), nm += r[k].nm;
        if (r[k].nl) memcpy(pl + nl, r[k].l, sizeof(pair_rec) * (size_t)r[k].nl), nl += r[k].nl;
        if (r[k].np) memcpy(pp + np, r[k].p, sizeof(pair_rec) * (size_t)r[k].np), np += r[k].np;
    }
    if (m2l_pairs(L, t, shift, nm, m, ops, C) ||
        csr(nl, pl, nbox, &L->p2l_start, &L->p2l_s, &L->p2l_k, NULL) ||
        csr(np, pp, nbox, &L->near_start, &L->near_s, &L->near_k, &L->near_kind))
        goto done;
    rc = 0;
done:
    for (int k = 0; r && k < nimg; ++k) free(r[k].m), free(r[k].l), free(r[k].p);
    free(r), free(radius), free(m), free(pl), free(pp);
    if (rc) img_free(L);
    return rc;
}

/* ---------------------------------------------------------------- evaluation */

int img_to_local(const img_lists *L, const m2l_operators *ops, const octree *t, const double *q,
                 const double *W, double *U, double *fshift) {
    const int p = ops->p, np = ops->npad, nrot = ops->nrot, nz = ops->nz;
    /* work items: panels of at most PANEL_NB pairs of one operator */
    long nitem = 0;
    for (int o = 0; o < L->nop; ++o)
        nitem += (L->ostart[o + 1] - L->ostart[o] + PANEL_NB - 1) / PANEL_NB;
    const long cap = L->cap, nm = L->nm2l;
    long *item = malloc(sizeof(long) * 2 * (size_t)(nitem + 1)); /* operator, first pair */
    double *buf = L->buf;
    double *fp = fshift ? malloc(sizeof(double) * 3 * (size_t)(nm + 1)) : NULL; /* per pair */
    long *cur = malloc(sizeof(long) * (size_t)(t->nbox + 1));
    int fail = !item || !buf || !cur || (fshift && !fp);
    if (!fail) {
        long it = 0;
        for (int o = 0; o < L->nop; ++o)
            for (long e = L->ostart[o]; e < L->ostart[o + 1]; e += PANEL_NB)
                item[2 * it] = o, item[2 * it + 1] = e, ++it;
        memcpy(cur, L->tstart, sizeof(long) * (size_t)t->nbox);
    }
    for (long i0 = 0; i0 < nitem && !fail;) {
        /* a batch: items i0 .. i1 - 1, pairs first .. p1 - 1 */
        long i1 = i0, p1 = 0;
        const long first = item[2 * i0 + 1];
        while (i1 < nitem) {
            const long e = item[2 * i1 + 1], oend = L->ostart[item[2 * i1] + 1];
            const long end = e + PANEL_NB < oend ? e + PANEL_NB : oend;
            if (end - first > cap && i1 > i0) break;
            p1 = end, ++i1;
        }
#pragma omp parallel reduction(| : fail)
        {
            double *A = aligned_alloc(64, sizeof(double) * PANEL_NB * (size_t)np);
            double *T = aligned_alloc(64, sizeof(double) * PANEL_NB * (size_t)np);
            int dst[PANEL_NB];
            if (!A || !T) fail = 1;
#pragma omp for schedule(dynamic, 1)
            for (long i = i0; i < i1; ++i) {
                if (!A || !T) continue;
                const int o = (int)item[2 * i];
                const long e0 = item[2 * i + 1];
                const int nc =
                    (int)(L->ostart[o + 1] - e0 < PANEL_NB ? L->ostart[o + 1] - e0 : PANEL_NB);
                const double *d = L->opdata[o];
                const factored_op op = {p, d, d + nrot, d + 2 * nrot, d + 2 * nrot + nz, ops->zoff};
                for (int j = 0; j < nc; ++j) dst[j] = (int)(e0 + j - first);
                memset(buf + (size_t)(e0 - first) * np, 0, sizeof(double) * (size_t)nc * np);
                panel_gather(np, W, nc, L->m2l_s + e0, L->m2l_f + e0, ops->sign, A);
                panel_apply(&op, A, T);
                panel_scatter_add(np, A, nc, dst, L->m2l_f + e0, ops->sign, buf);
                for (int j = 0; fp && j < nc; ++j) {
                    const int b = L->m2l_t[e0 + j];
                    harm_local_force(p, t->side / (double)(1 << t->box[b].level),
                                     buf + (size_t)dst[j] * np, 1, W + (size_t)b * np,
                                     fp + 3 * (e0 + j));
                }
            }
            free(A), free(T);
        }
        if (fail) break;
            /* each box adds its pairs of this batch in pair order */
#pragma omp parallel for schedule(static)
        for (int b = 0; b < t->nbox; ++b)
            for (; cur[b] < L->tstart[b + 1] && L->tpair[cur[b]] < p1; ++cur[b]) {
                const double *o = buf + (size_t)(L->tpair[cur[b]] - first) * np;
                double *u = U + (size_t)b * np;
                for (int k = 0; k < np; ++k) u[k] += o[k];
            }
        i0 = i1;
    }
    if (fp && !fail)
        for (long e = 0; e < nm; ++e)
            for (int a = 0; a < 3; ++a) fshift[3 * L->m2l_k[e] + a] += fp[3 * e + a];
    free(item), free(fp), free(cur);
    if (fail) return FMM_ERR_NOMEM;
    const int nimg = L->nimg;

    /* P2L: the particles of coarser source leaves, shifted by their image */
#define BCHUNK 16
    const int nch = (t->nbox + BCHUNK - 1) / BCHUNK;
    double *fc = fshift ? calloc(3 * (size_t)nimg * (size_t)nch, sizeof(double)) : NULL;
    if (fshift && !fc) return FMM_ERR_NOMEM;
#pragma omp parallel for schedule(dynamic, 1)
    for (int ch = 0; ch < nch; ++ch)
        for (int b = ch * BCHUNK; b < t->nbox && b < (ch + 1) * BCHUNK; ++b) {
            const oct_box *B = &t->box[b];
            const double h = t->side / (double)(1 << B->level);
            for (long e = L->p2l_start[b]; e < L->p2l_start[b + 1]; ++e) {
                const oct_box *C = &t->box[L->p2l_s[e]];
                const int k = L->p2l_k[e];
                double c[3], tmp[HARM_NPAD_MAX];
                for (int a = 0; a < 3; ++a) c[a] = B->c[a] - L->shift[3 * k + a];
                double *u = fc ? tmp : U + (size_t)b * np;
                if (fc) memset(tmp, 0, sizeof(double) * np);
                harm_p2l(p, h, c, C->end - C->begin, t->x + C->begin, t->y + C->begin,
                         t->z + C->begin, q + C->begin, u);
                if (fc) {
                    double F[3];
                    harm_local_force(p, h, tmp, 1, W + (size_t)b * np, F);
                    for (int a = 0; a < 3; ++a) fc[3 * ((size_t)ch * nimg + k) + a] += F[a];
                    for (int i = 0; i < np; ++i) U[(size_t)b * np + i] += tmp[i];
                }
            }
        }
    if (fc) {
        for (int ch = 0; ch < nch; ++ch)
            for (int k = 0; k < 3 * nimg; ++k) fshift[k] += fc[(size_t)ch * 3 * nimg + k];
        free(fc);
    }
    return 0;
}

int img_to_particles(const img_lists *L, int p, int npad, const octree *t, const double *q,
                     const double *W, double *phi, double *ex, double *ey, double *ez,
                     double *fshift) {
    const int nimg = L->nimg, nch = (t->nleaf + BCHUNK - 1) / BCHUNK;
    double *fc = fshift ? calloc(3 * (size_t)nimg * (size_t)nch, sizeof(double)) : NULL;
    if (fshift && !fc) return FMM_ERR_NOMEM;
    int fail = 0;
#pragma omp parallel for schedule(dynamic, 1) reduction(| : fail)
    for (int ch = 0; ch < nch; ++ch)
        for (int i = ch * BCHUNK; i < t->nleaf && i < (ch + 1) * BCHUNK; ++i) {
            const int b = t->leaves[i];
            const oct_box *B = &t->box[b];
            const long s0 = B->begin, m = B->end - B->begin;
            if (L->near_start[b] == L->near_start[b + 1]) continue;
            double *buf = fc ? calloc(4 * (size_t)m, sizeof(double)) : NULL;
            if (fc && !buf) {
                fail = 1;
                continue;
            }
            const double *x = t->x + s0, *y = t->y + s0, *z = t->z + s0;
            for (long e = L->near_start[b]; e < L->near_start[b + 1]; ++e) {
                const oct_box *C = &t->box[L->near_s[e]];
                const int k = L->near_k[e];
                const double *R = L->shift + 3 * k;
                double *op = buf ? buf : phi + s0, *ox = buf ? buf + m : ex + s0,
                       *oy = buf ? buf + 2 * m : ey + s0, *oz = buf ? buf + 3 * m : ez + s0;
                if (buf) memset(buf, 0, sizeof(double) * 4 * (size_t)m);
                if (L->near_kind[e]) {
                    const double c[3] = {C->c[0] + R[0], C->c[1] + R[1], C->c[2] + R[2]};
                    harm_m2p(p, t->side / (double)(1 << C->level), c,
                             W + (size_t)L->near_s[e] * npad, m, x, y, z, op, ox, oy, oz);
                } else {
                    p2p(m, x, y, z, C->end - C->begin, t->x + C->begin, t->y + C->begin,
                        t->z + C->begin, q + C->begin, R, op, ox, oy, oz);
                }
                if (buf) {
                    double *f = fc + 3 * ((size_t)ch * nimg + k);
                    for (long j = 0; j < m; ++j) {
                        phi[s0 + j] += op[j], ex[s0 + j] += ox[j], ey[s0 + j] += oy[j],
                            ez[s0 + j] += oz[j];
                        f[0] += q[s0 + j] * ox[j], f[1] += q[s0 + j] * oy[j],
                            f[2] += q[s0 + j] * oz[j];
                    }
                }
            }
            free(buf);
        }
    if (fc) {
        for (int ch = 0; ch < nch; ++ch)
            for (int k = 0; k < 3 * nimg; ++k) fshift[k] += fc[(size_t)ch * 3 * nimg + k];
        free(fc);
    }
    return fail ? FMM_ERR_NOMEM : 0;
}

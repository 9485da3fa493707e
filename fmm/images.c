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
    if (rs * rs <= IMG_THETA * IMG_THETA * d2) {
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

static int same_class(const m2l_rec *a, const m2l_rec *b) {
    return a->level == b->level && a->k == b->k && a->off[0] == b->off[0] &&
           a->off[1] == b->off[1] && a->off[2] == b->off[2];
}

static int cmp_m2l(const void *pa, const void *pb) {
    const m2l_rec *a = pa, *b = pb;
    const int ka[6] = {a->level, a->k, a->off[0], a->off[1], a->off[2], a->t};
    const int kb[6] = {b->level, b->k, b->off[0], b->off[1], b->off[2], b->t};
    for (int i = 0; i < 6; ++i)
        if (ka[i] != kb[i]) return ka[i] < kb[i] ? -1 : 1;
    return 0;
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
    free(L->n), free(L->shift), free(L->m2l_t), free(L->m2l_s), free(L->cstart), free(L->cd);
    free(L->cimg), free(L->clevel), free(L->tstart), free(L->tpair), free(L->p2l_start);
    free(L->p2l_s), free(L->p2l_k), free(L->near_start), free(L->near_s), free(L->near_k);
    free(L->near_kind);
    memset(L, 0, sizeof *L);
}

int img_build(img_lists *L, const octree *t, const double brick[3], int nimg, const int *n,
              const double *shift, int ncoef) {
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
        trav T = {t, radius, shift + 3 * k, k, ncoef, r + k};
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
    for (int k = 1; k < nimg; ++k) {
        memcpy(m + nm, r[k].m, sizeof(m2l_rec) * (size_t)r[k].nm), nm += r[k].nm;
        memcpy(pl + nl, r[k].l, sizeof(pair_rec) * (size_t)r[k].nl), nl += r[k].nl;
        memcpy(pp + np, r[k].p, sizeof(pair_rec) * (size_t)r[k].np), np += r[k].np;
    }
    /* M2L: sorted by class (level, image, offset), then by target */
    qsort(m, (size_t)nm, sizeof *m, cmp_m2l);
    L->nm2l = nm;
    L->m2l_t = malloc(sizeof(int) * (size_t)(nm + 1));
    L->m2l_s = malloc(sizeof(int) * (size_t)(nm + 1));
    L->cstart = malloc(sizeof(long) * (size_t)(nm + 2));
    L->cd = malloc(sizeof(double) * 3 * (size_t)(nm + 1));
    L->cimg = malloc(sizeof(int) * (size_t)(nm + 1));
    L->clevel = malloc(sizeof(int) * (size_t)(nm + 1));
    L->tstart = calloc((size_t)nbox + 1, sizeof(long));
    L->tpair = malloc(sizeof(long) * (size_t)(nm + 1));
    if (!L->m2l_t || !L->m2l_s || !L->cstart || !L->cd || !L->cimg || !L->clevel || !L->tstart ||
        !L->tpair)
        goto done;
    for (long e = 0; e < nm; ++e) {
        L->m2l_t[e] = m[e].t, L->m2l_s[e] = m[e].s;
        if (e == 0 || !same_class(&m[e], &m[e - 1])) {
            const int c = L->nclass++;
            const double h = t->side / (double)(1 << m[e].level);
            L->cstart[c] = e, L->cimg[c] = m[e].k, L->clevel[c] = m[e].level;
            for (int a = 0; a < 3; ++a) L->cd[3 * c + a] = m[e].off[a] + shift[3 * m[e].k + a] / h;
        }
        L->tstart[m[e].t + 1]++;
    }
    L->cstart[L->nclass] = nm;
    for (int b = 0; b < nbox; ++b) L->tstart[b + 1] += L->tstart[b];
    {
        long *pos = malloc(sizeof(long) * (size_t)(nbox + 1));
        if (!pos) goto done;
        memcpy(pos, L->tstart, sizeof(long) * (size_t)(nbox + 1));
        for (long e = 0; e < nm; ++e) L->tpair[pos[m[e].t]++] = e;
        free(pos);
    }
    if (csr(nl, pl, nbox, &L->p2l_start, &L->p2l_s, &L->p2l_k, NULL) ||
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

/* classes whose rotations are built at once */
#define CLASS_BATCH 64

/* pairs whose M2L results are held at once: about 2^23 doubles */
static long batch_pairs(int npad) {
    const long b = (1L << 23) / npad;
    return b > PANEL_NB ? b : PANEL_NB;
}

int img_to_local(const img_lists *L, const m2l_operators *ops, const octree *t, const double *q,
                 const double *W, double *U, double *fshift) {
    const int p = ops->p, np = ops->npad, nrot = ops->nrot, nz = ops->nz, nimg = L->nimg;
    /* work items: panels of at most PANEL_NB pairs of one class */
    long nitem = 0;
    for (int c = 0; c < L->nclass; ++c)
        nitem += (L->cstart[c + 1] - L->cstart[c] + PANEL_NB - 1) / PANEL_NB;
    const long cap = batch_pairs(np);
    long *item = malloc(sizeof(long) * 2 * (size_t)(nitem + 1)); /* class, first pair */
    double *buf = aligned_alloc(64, sizeof(double) * (size_t)np * (size_t)(cap + PANEL_NB));
    double *fit = fshift ? calloc(3 * (size_t)(nitem + 1), sizeof(double)) : NULL;
    long *cur = malloc(sizeof(long) * (size_t)(t->nbox + 1));
    double *rot = malloc(sizeof(double) * 2 * CLASS_BATCH * (size_t)nrot);
    int fail = !item || !buf || !cur || !rot || (fshift && !fit);
    if (!fail) {
        long it = 0;
        for (int c = 0; c < L->nclass; ++c)
            for (long e = L->cstart[c]; e < L->cstart[c + 1]; e += PANEL_NB)
                item[2 * it] = c, item[2 * it + 1] = e, ++it;
        memcpy(cur, L->tstart, sizeof(long) * (size_t)t->nbox);
    }
    for (long i0 = 0; i0 < nitem && !fail;) {
        /* a batch: items i0 .. i1 - 1, pairs first .. p1 - 1 */
        long i1 = i0, p1 = 0;
        const long first = item[2 * i0 + 1];
        const int c0 = (int)item[2 * i0];
        while (i1 < nitem) {
            const long e = item[2 * i1 + 1], c = item[2 * i1];
            const long end = e + PANEL_NB < L->cstart[c + 1] ? e + PANEL_NB : L->cstart[c + 1];
            if ((end - first > cap || c - c0 >= CLASS_BATCH) && i1 > i0) break;
            p1 = end, ++i1;
        }
        /* the rotations of the batch's classes in one call: it shares their setup (O(p^5)) */
        const int nq = (int)item[2 * (i1 - 1)] - c0 + 1;
        double Q[9 * CLASS_BATCH];
        for (int c = 0; c < nq; ++c) m2l_frame_along(L->cd + 3 * (c0 + c), Q + 9 * c);
        if (harm_rotation_matrices(p, nq, Q, rot, rot + (size_t)nq * nrot, (size_t)nrot)) {
            fail = 1;
            break;
        }
#pragma omp parallel reduction(| : fail)
        {
            double *z = malloc(sizeof(double) * 2 * (size_t)nz);
            double *A = aligned_alloc(64, sizeof(double) * PANEL_NB * (size_t)np);
            double *T = aligned_alloc(64, sizeof(double) * PANEL_NB * (size_t)np);
            unsigned char flg[PANEL_NB] = {0};
            int src[PANEL_NB];
            if (!z || !A || !T) fail = 1;
#pragma omp for schedule(dynamic, 1)
            for (long i = i0; i < i1; ++i) {
                if (!z || !A || !T) continue;
                const int c = (int)item[2 * i];
                const long e0 = item[2 * i + 1];
                const int nc =
                    (int)(L->cstart[c + 1] - e0 < PANEL_NB ? L->cstart[c + 1] - e0 : PANEL_NB);
                const double *d = L->cd + 3 * c;
                harm_m2l_zblocks(p, sqrt(d[0] * d[0] + d[1] * d[1] + d[2] * d[2]), z, z + nz);
                const double *rw = rot + (size_t)(c - c0) * nrot;
                const factored_op op = {p, rw, rw + (size_t)nq * nrot, z, z + nz, ops->zoff};
                for (int j = 0; j < nc; ++j) src[j] = L->m2l_s[e0 + j];
                panel_gather(np, W, nc, src, flg, ops->sign, A);
                panel_apply(&op, A, T);
                for (int j = 0; j < nc; ++j) {
                    double *o = buf + (size_t)(e0 + j - first) * np;
                    for (int k = 0; k < np; ++k) o[k] = A[(size_t)k * PANEL_NB + j];
                    if (fit) {
                        double F[3];
                        const double h = t->side / (double)(1 << L->clevel[c]);
                        harm_local_force(p, h, o, 1, W + (size_t)L->m2l_t[e0 + j] * np, F);
                        for (int a = 0; a < 3; ++a) fit[3 * i + a] += F[a];
                    }
                }
            }
            free(z), free(A), free(T);
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
    if (fit && !fail)
        for (long i = 0; i < nitem; ++i)
            for (int a = 0; a < 3; ++a) fshift[3 * L->cimg[item[2 * i]] + a] += fit[3 * i + a];
    free(item), free(buf), free(fit), free(cur), free(rot);
    if (fail) return FMM_ERR_NOMEM;

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

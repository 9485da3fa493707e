/* The Coulomb FMM's CPU passes (fmm/fmm_internal.h): upward (P2M, M2M), interaction lists (M2L,
 * P2L), downward (L2L), leaves (L2P, M2P, P2P), with the virial's per-image forces. A distributed
 * rank (fmm_dist_rank) runs them over its home boxes only (fmm_home_box), and forms the
 * multipoles of the boxes it owns (fmm_owned_box), level by level with the other ranks. */
#include "fmm/fmm_internal.h"

#include <stdlib.h>
#include <string.h>

#include "core/harmonics.h"
#include "core/p2p.h"
#include "core/reduce.h"
#include "m2l/m2l_cpu.h"

void fmm_matvec_add(int n, const double *restrict A, const double *restrict x, double *restrict y) {
    for (int i = 0; i < n; ++i) {
        const double *a = A + (size_t)i * n;
        double s = 0.0;
#pragma omp simd reduction(+ : s)
        for (int k = 0; k < n; ++k) s += a[k] * x[k];
        y[i] += s;
    }
}

static inline double box_side(const octree *t, int level) {
    return t->side / (double)(1 << level);
}

/* Child-parent translations of one level, grouped by child octant: PANEL_NB at a time,
 * sources gathered with the octant's reflection signs, one factored operator, results
 * scattered with the same signs. For the M2M (up) several octants write the same parent, so
 * the octants go one after the other; for the L2L (down) every child is written once. On a
 * distributed rank only the children of owned boxes (up) or the home children (down). */
static int child_translations(fmm_plan *P, int level, int up) {
    const octree *t = &P->tree;
    const int np = P->npad, b0 = t->level_start[level], b1 = t->level_start[level + 1];
    const int nb = b1 - b0;
    int *idx = malloc(sizeof(int) * 2 * (size_t)(nb + 1));
    unsigned char *flg = malloc((size_t)nb + 1);
    if (!idx || !flg) {
        free(idx), free(flg);
        return FMM_ERR_NOMEM;
    }
    int *child = idx, *parent = idx + nb, start[9] = {0};
    for (int b = b0; b < b1; ++b) {
        const oct_box *B = &t->box[b];
        if (up ? fmm_owned_box(P, B->parent) : fmm_home_box(P, b))
            start[1 + ((B->ix[0] & 1) | (B->ix[1] & 1) << 1 | (B->ix[2] & 1) << 2)]++;
    }
    for (int o = 0; o < 8; ++o) start[o + 1] += start[o];
    int pos[8];
    memcpy(pos, start, sizeof pos);
    for (int b = b0; b < b1; ++b) {
        const oct_box *B = &t->box[b];
        if (!(up ? fmm_owned_box(P, B->parent) : fmm_home_box(P, b))) continue;
        int o = (B->ix[0] & 1) | (B->ix[1] & 1) << 1 | (B->ix[2] & 1) << 2, k = pos[o]++;
        child[k] = b, parent[k] = B->parent, flg[k] = octant_flags(o);
    }
    const double *src = up ? P->W : P->U;
    double *dst = up ? P->W : P->U;
    const int *from = up ? child : parent, *to = up ? parent : child;
    const factored_op *op = up ? &P->m2m : &P->l2l;
    int fail = 0;
    for (int o = 0; o < (up ? 8 : 1); ++o) {
        int e_begin = up ? start[o] : 0, e_end = up ? start[o + 1] : start[8];
#pragma omp parallel reduction(| : fail)
        {
            double *A = aligned_alloc(64, sizeof(double) * PANEL_NB * (size_t)np);
            double *T = aligned_alloc(64, sizeof(double) * PANEL_NB * (size_t)np);
            if (!A || !T) fail = 1;
#pragma omp for schedule(dynamic, 1)
            for (int e0 = e_begin; e0 < e_end; e0 += PANEL_NB) {
                if (!A || !T) continue;
                int n = e_end - e0 < PANEL_NB ? e_end - e0 : PANEL_NB;
                panel_gather(np, src, n, from + e0, flg + e0, P->ops.sign, A);
                panel_apply(op, A, T);
                panel_scatter_add(np, A, n, to + e0, flg + e0, P->ops.sign, dst);
            }
            free(A), free(T);
        }
    }
    free(idx), free(flg);
    return fail ? FMM_ERR_NOMEM : FMM_OK;
}

int fmm_upward(fmm_plan *P, int rc) {
    const octree *t = &P->tree;
    const int np = P->npad;
    memset(P->W, 0, sizeof(double) * (size_t)t->nbox * np);
#pragma omp parallel for schedule(dynamic, 16)
    for (int i = 0; i < t->nleaf; ++i) {
        const oct_box *B = &t->box[t->leaves[i]];
        if (rc || !fmm_owned_box(P, t->leaves[i])) continue;
        harm_p2m(P->p, box_side(t, B->level), B->c, B->end - B->begin, t->x + B->begin,
                 t->y + B->begin, t->z + B->begin, P->q + B->begin,
                 P->W + (size_t)t->leaves[i] * np);
    }
    /* a distributed rank joins every level's sum, after a failure too (the tree is uniform: the
       leaves are the deepest level) */
    if (P->dist) rc = fmm_dist_sum_level(P, t->depth, rc);
    for (int l = t->depth; l >= 1; --l) {
        if (rc == FMM_OK) rc = child_translations(P, l, 1);
        if (P->dist) rc = fmm_dist_sum_level(P, l - 1, rc);
        if (rc && !P->dist) return rc;
    }
    return rc;
}

static void image_shift(const octree *t, int code, double s[3]) {
    int v[3];
    oct_shift_vec(code, v);
    for (int d = 0; d < 3; ++d) s[d] = v[d] * t->side;
}

/* The W and X lists pass a box's particles through an expansion: O(p^2) work per particle and
 * box. Where the particles on the other side are fewer than (p+1)^2 / 2, the pairs are cheaper
 * (and exact): 20-odd flops each against some 10 p^2 for the expansion's terms. */
static int direct_cheaper(const fmm_plan *P, long n) {
    return 2 * n < P->ncoef;
}

/* With the virial, the image forces (81 slots) and the far pairs' terms (9, m2l/m2l_cpu.h) of the
 * X lists and of the leaves are gathered per chunk of boxes (XCHUNK) or leaves (LCHUNK) and added
 * in chunk order: the same sums on every run whatever thread takes which chunk (core/reduce.h). */
#define XCHUNK 16
#define LCHUNK 4
#define VSLOTS 90

/* scratch of nch chunks' virial terms, or NULL where the evaluation gathers none (*fail: out of
   memory) */
static double *chunk_terms(const fmm_plan *P, int nch, int *fail) {
    double *fsc = P->virial || P->vpairs ? calloc(VSLOTS * (size_t)nch, sizeof(double)) : NULL;
    *fail = (P->virial || P->vpairs) && !fsc;
    return fsc;
}

/* fshift and vpair += the nch chunks' terms fsc[nch][VSLOTS], in chunk order; frees fsc */
static void add_chunk_terms(fmm_plan *P, double *fsc, int nch) {
    if (!fsc) return;
    double sum[VSLOTS];
    fmm_sum_slots(fsc, nch, VSLOTS, sum);
    for (int k = 0; k < 81; ++k) P->fshift[k] += sum[k];
    for (int k = 0; k < 9; ++k) P->vpair[k] += sum[81 + k];
    free(fsc);
}

/* The V lists of one level. A distributed rank's home boxes go in two parts: those it owns with
 * their virial terms, then the others without, so that each box's terms count once over the
 * ranks (fmm_dist_rank). */
static int m2l_level(fmm_plan *P, int level) {
    const m2l_virial v = {P->virial ? P->fshift : NULL, P->vpairs ? P->vpair : NULL, P->vorg};
    if (!P->dist) return m2l_cpu_level_virial(&P->ops, &P->tree, level, P->W, P->U, &v);
    octree part = P->tree;
    part.V = P->dist->vown;
    int rc = m2l_cpu_level_virial(&P->ops, &part, level, P->W, P->U, &v);
    part.V = P->dist->vshared;
    return rc ? rc : m2l_cpu_level(&P->ops, &part, level, P->W, P->U, NULL);
}

int fmm_interactions(fmm_plan *P) {
    const octree *t = &P->tree;
    const int np = P->npad;
    memset(P->U, 0, sizeof(double) * (size_t)t->nbox * np);
    if (t->periodic) {
        /* images beyond the 27 nearest, on the neutralised root multipole (recipe 2) */
        const int nc = P->ncoef;
        double Q = P->W[0], *wn = malloc(sizeof(double) * nc);
        if (!wn) return FMM_ERR_NOMEM;
        for (int k = 0; k < nc; ++k) wn[k] = P->W[k] - Q * P->bg[k];
        wn[0] = 0.0;
        fmm_matvec_add(nc, P->lattice, wn, P->U);
        free(wn);
        if (P->compact)
            fmm_matvec_add(nc, P->near_op, P->W, P->U); /* the 26 nearest images, charge included */
    }
    for (int l = 1; l <= t->depth; ++l) {
        int rc = m2l_level(P, l);
        if (rc) return rc;
    }
    /* X list: particles of coarser leaves straight into the local expansion, unless the box has
     * so few particles that its leaves take those particles as pairs (fmm_leaves()) */
    const int nch = (t->nbox + XCHUNK - 1) / XCHUNK;
    int fail;
    double *fsc = chunk_terms(P, nch, &fail);
    if (fail) return FMM_ERR_NOMEM;
#pragma omp parallel for schedule(dynamic, 1)
    for (int ch = 0; ch < nch; ++ch)
        for (int b = ch * XCHUNK; b < t->nbox && b < (ch + 1) * XCHUNK; ++b) {
            const oct_box *B = &t->box[b];
            double tmp[HARM_NPAD_MAX], *fs = fsc ? fsc + VSLOTS * (size_t)ch : NULL;
            if (direct_cheaper(P, B->end - B->begin) || !fmm_home_box(P, b)) continue;
            /* a distributed rank takes the pair terms of the boxes it owns (m2l_level) */
            const int pair = P->vpairs && fmm_owned_box(P, b);
            for (long e = t->X.start[b]; e < t->X.start[b + 1]; ++e) {
                const oct_box *C = &t->box[t->X.box[e]];
                double s[3], c[3], h = box_side(t, B->level);
                int code = t->X.aux[e], tag = P->virial && code != OCT_NOSHIFT;
                image_shift(t, code, s);
                for (int d = 0; d < 3; ++d) c[d] = B->c[d] - s[d];
                double *u = tag || pair ? tmp : P->U + (size_t)b * np;
                if (tag || pair) memset(tmp, 0, sizeof(double) * np);
                harm_p2l(P->p, h, c, C->end - C->begin, t->x + C->begin, t->y + C->begin,
                         t->z + C->begin, P->q + C->begin, u);
                if (tag || pair) {
                    double F[3];
                    harm_local_force(P->p, h, tmp, 1, P->W + (size_t)b * np, F);
                    for (int a = 0; tag && a < 3; ++a) fs[3 * code + a] += F[a];
                    if (pair) m2l_pair_virial(B->c, C->c, P->vorg, F, fs + 81);
                    for (int k = 0; k < np; ++k) P->U[(size_t)b * np + k] += tmp[k];
                }
            }
        }
    add_chunk_terms(P, fsc, nch);
    return FMM_OK;
}

int fmm_downward(fmm_plan *P) {
    for (int l = 1; l <= P->tree.depth; ++l) {
        int rc = child_translations(P, l, 0);
        if (rc) return rc;
    }
    return FMM_OK;
}

/* Sources kept apart for the virial: their outputs, evaluated into scratch, added to the leaf's,
 * and their total force F = sum q.E on the leaf's charges. */
static void tagged_add(long m, const double *q, const double *buf, double *phi, double *ex,
                       double *ey, double *ez, double F[3]) {
    const double *bp = buf, *bx = buf + m, *by = buf + 2 * m, *bz = buf + 3 * m;
    F[0] = F[1] = F[2] = 0.0;
    for (long i = 0; i < m; ++i) {
        phi[i] += bp[i], ex[i] += bx[i], ey[i] += by[i], ez[i] += bz[i];
        F[0] += q[i] * bx[i], F[1] += q[i] * by[i], F[2] += q[i] * bz[i];
    }
}

/* A leaf's targets and outputs (fmm_leaves); buf and fs with the virial only */
typedef struct leaf_out {
    const oct_box *B;
    const double *x, *y, *z, *qs;
    double *phi, *ex, *ey, *ez, *buf, *fs;
} leaf_out;

/* The sources of box C under image shift `code` into the leaf's outputs: through C's multipole
 * (m2p: a W list's far box) or as pairs. Kept apart in buf where the virial gathers their force
 * on the leaf's (home) charges: under the shift's code (the image forces), and for the multipole
 * as a far pair's term (m2l_pair_virial). */
static void leaf_sources(const fmm_plan *P, const leaf_out *L, int c, int code, int m2p) {
    const octree *t = &P->tree;
    const oct_box *C = &t->box[c];
    const long m = L->B->end - L->B->begin;
    const int tag = P->virial && code != OCT_NOSHIFT, pair = P->vpairs && m2p, apart = tag || pair;
    double s[3], *bp = apart ? L->buf : L->phi, *bx = apart ? L->buf + m : L->ex,
                 *by = apart ? L->buf + 2 * m : L->ey, *bz = apart ? L->buf + 3 * m : L->ez;
    image_shift(t, code, s);
    if (apart) memset(L->buf, 0, sizeof(double) * 4 * m);
    if (m2p) {
        const double cs[3] = {C->c[0] + s[0], C->c[1] + s[1], C->c[2] + s[2]};
        harm_m2p(P->p, box_side(t, C->level), cs, P->W + (size_t)c * P->npad, m, L->x, L->y, L->z,
                 bp, bx, by, bz);
    } else {
        p2p(m, L->x, L->y, L->z, C->end - C->begin, t->x + C->begin, t->y + C->begin,
            t->z + C->begin, P->q + C->begin, s, bp, bx, by, bz);
    }
    if (!apart) return;
    double F[3];
    tagged_add(m, L->qs, L->buf, L->phi, L->ex, L->ey, L->ez, F);
    for (int a = 0; tag && a < 3; ++a) L->fs[3 * code + a] += F[a];
    if (pair) m2l_pair_virial(L->B->c, C->c, P->vorg, F, L->fs + 81);
}

int fmm_leaves(fmm_plan *P) {
    const octree *t = &P->tree;
    const int np = P->npad;
    const int nch = (t->nleaf + LCHUNK - 1) / LCHUNK;
    int fail;
    double *fsc = chunk_terms(P, nch, &fail);
    if (fail) return FMM_ERR_NOMEM;
#pragma omp parallel for schedule(dynamic, 1) reduction(| : fail)
    for (int ch = 0; ch < nch; ++ch)
        for (int i = ch * LCHUNK; i < t->nleaf && i < (ch + 1) * LCHUNK; ++i) {
            int b = t->leaves[i];
            double *fs = fsc ? fsc + VSLOTS * (size_t)ch : NULL;
            const oct_box *B = &t->box[b];
            long s0 = B->begin, m = B->end - B->begin;
            const double *x = t->x + s0, *y = t->y + s0, *z = t->z + s0;
            double *phi = P->phi + s0, *ex = P->ex + s0, *ey = P->ey + s0, *ez = P->ez + s0;
            memset(phi, 0, sizeof(double) * m), memset(ex, 0, sizeof(double) * m);
            memset(ey, 0, sizeof(double) * m), memset(ez, 0, sizeof(double) * m);
            if (!fmm_home_box(P, b)) continue;
            if (B->level >= 2 || t->periodic || P->is_cell)
                harm_l2p(P->p, box_side(t, B->level), B->c, P->U + (size_t)b * np, m, x, y, z, phi,
                         ex, ey, ez);
            double *buf = fsc ? calloc(4 * (size_t)m, sizeof(double)) : NULL;
            if (fsc && !buf) {
                fail = 1;
                continue;
            }
            const double *qs = fmm_home_charges(P) + s0; /* the forces on home targets */
            const leaf_out L = {B, x, y, z, qs, phi, ex, ey, ez, buf, fs};
            for (long e = t->W.start[b]; e < t->W.start[b + 1]; ++e) {
                const int c = t->W.box[e];
                leaf_sources(P, &L, c, t->W.aux[e],
                             !direct_cheaper(P, t->box[c].end - t->box[c].begin));
            }
            /* the X lists of this leaf and its ancestors that fmm_interactions() left to the pairs
             */
            for (int a = b; a >= 0; a = t->box[a].parent) {
                if (!direct_cheaper(P, t->box[a].end - t->box[a].begin)) continue;
                for (long e = t->X.start[a]; e < t->X.start[a + 1]; ++e)
                    leaf_sources(P, &L, t->X.box[e], t->X.aux[e], 0);
            }
            for (long e = t->U.start[b]; e < t->U.start[b + 1]; ++e) {
                const int code = t->U.aux[e];
                if (P->compact && code != OCT_NOSHIFT) continue; /* by M2L at the root instead */
                leaf_sources(P, &L, t->U.box[e], code, 0);
            }
            free(buf);
        }
    add_chunk_terms(P, fsc, nch);
    return fail ? FMM_ERR_NOMEM : FMM_OK;
}

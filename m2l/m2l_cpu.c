#include "m2l/m2l_cpu.h"

#include <stdlib.h>
#include <string.h>

#include "core/panel.h"
#include "core/reduce.h"
#include "fmm_common.h"
#include "m2l/virial_terms.h"

#define CHUNK 32 /* target boxes per task */

/* image shift code of a V entry: source + shift * 2^level = target + offset */
static int v_shift(const octree *t, int level, int tgt, int src, int offset) {
    int d[3] = {offset % 7 - 3, (offset / 7) % 7 - 3, offset / 49 - 3}, code = 0, mul = 1;
    for (int a = 0; a < 3; ++a, mul *= 3)
        code += mul * ((t->box[tgt].ix[a] + d[a] - t->box[src].ix[a]) / (1 << level) + 1);
    return code;
}

/* F[3j..3j+2] = the force of panel column j (nc translations, their local expansions in the
 * frames of their reflection flags flg) on its target's charges, by the target's force map
 * (G + 3 np (target - t0), m2l/virial_terms.h) */
static void panel_forces(const m2l_operators *ops, int nc, const double *C,
                         const unsigned char *flg, const int *tgt, int t0, const double *G,
                         double *F) {
    const int np = ops->npad;
    for (int j = 0; j < nc; ++j) {
        const double *g = G + 3 * (size_t)(tgt[j] - t0) * np, *sg = ops->sign + flg[j] * np;
        double fx = 0, fy = 0, fz = 0;
#pragma omp simd reduction(+ : fx, fy, fz)
        for (int k = 0; k < ops->ncoef; ++k) {
            const double u = sg[k] * C[(size_t)k * PANEL_NB + j];
            fx += g[k] * u, fy += g[np + k] * u, fz += g[2 * np + k] * u;
        }
        F[3 * j] = fx, F[3 * j + 1] = fy, F[3 * j + 2] = fz;
    }
}

void m2l_pair_virial(const double cA[3], const double cC[3], const double g[3], const double F[3],
                     double v[9]) {
    for (int b = 0; b < 3; ++b) {
        const double m = 0.5 * (cA[b] + cC[b]) - g[b];
        for (int a = 0; a < 3; ++a) v[3 * a + b] += F[a] * m;
    }
}

int m2l_cpu_level(const m2l_operators *ops, const octree *t, int level, const double *W, double *U,
                  double *fshift) {
    const m2l_virial v = {fshift, NULL, NULL};
    return m2l_cpu_level_virial(ops, t, level, W, U, &v);
}

int m2l_cpu_level_virial(const m2l_operators *ops, const octree *t, int level, const double *W,
                         double *U, const m2l_virial *v) {
    const int np = ops->npad;
    const int b0 = t->level_start[level], b1 = t->level_start[level + 1];
    const oct_list *V = &t->V;
    double *fshift = v ? v->fshift : NULL, *pairs = v ? v->pairs : NULL;
    /* the virial's terms per chunk of target boxes (81 image forces, 9 pair terms), added in
       chunk order after the pass: the same sums whatever thread takes which chunk
       (core/reduce.h) */
    enum { NS = 90 };
    const int nch = (b1 - b0 + CHUNK - 1) / CHUNK, terms = fshift || pairs;
    double *fch = terms ? calloc(NS * (size_t)nch, sizeof(double)) : NULL;
    if (terms && !fch) return FMM_ERR_NOMEM;
    int fail = 0;
#pragma omp parallel reduction(| : fail)
    {
        /* per thread: the chunk's translations sorted by class, and the GEMM panels */
        long cap = 0;
        int *src = NULL, *tgt = NULL;
        unsigned char *flg = NULL;
        unsigned short *off = NULL;
        const double h = t->side / (double)(1 << level);
        /* panels: row k holds coefficient k of NB translations; padding rows stay zero */
        double *B = aligned_alloc(64, sizeof(double) * (size_t)PANEL_NB * np);
        double *C = aligned_alloc(64, sizeof(double) * (size_t)PANEL_NB * np);
        /* with the virial's terms: the force maps of the chunk's targets (m2l/virial_terms.h) */
        double *G = terms ? malloc(sizeof(double) * 3 * CHUNK * (size_t)np) : NULL;
        if (!B || !C || (terms && !G))
            fail = 1;
        else
            memset(B, 0, sizeof(double) * (size_t)PANEL_NB * np),
                memset(C, 0, sizeof(double) * (size_t)PANEL_NB * np);
#pragma omp for schedule(dynamic, 1)
        for (int cb = b0; cb < b1; cb += CHUNK) {
            if (fail) continue;
            int ce = cb + CHUNK < b1 ? cb + CHUNK : b1;
            long total = V->start[ce] - V->start[cb];
            if (total == 0) continue;
            if (total > cap) {
                cap = total;
                free(src), free(tgt), free(flg), free(off);
                src = malloc(sizeof(int) * cap);
                tgt = malloc(sizeof(int) * cap);
                flg = malloc(cap);
                off = malloc(sizeof(unsigned short) * cap);
                if (!src || !tgt || !flg || !off) {
                    fail = 1, cap = 0;
                    continue;
                }
            }
            double *fl = fch ? fch + NS * (size_t)((cb - b0) / CHUNK) : NULL;
            for (int b = cb; terms && b < ce; ++b)
                if (V->start[b + 1] > V->start[b])
                    m2l_force_map(ops->p, h, W + (size_t)b * np, np, G + 3 * (size_t)(b - cb) * np);
            long cnt[M2L_NCLASS + 1] = {0};
            for (long e = V->start[cb]; e < V->start[ce]; ++e) cnt[ops->cls[V->aux[e]] + 1]++;
            for (int c = 0; c < M2L_NCLASS; ++c) cnt[c + 1] += cnt[c];
            long pos[M2L_NCLASS];
            memcpy(pos, cnt, sizeof pos);
            for (int b = cb; b < ce; ++b)
                for (long e = V->start[b]; e < V->start[b + 1]; ++e) {
                    int o = V->aux[e];
                    long k = pos[ops->cls[o]]++;
                    src[k] = V->box[e];
                    tgt[k] = b;
                    flg[k] = ops->flags[o];
                    off[k] = (unsigned short)o;
                }
            for (int c = 0; c < M2L_NCLASS; ++c) {
                factored_op op = {ops->p,
                                  ops->rot_w + (size_t)c * ops->nrot,
                                  ops->rot_u + (size_t)c * ops->nrot,
                                  ops->zre + (size_t)c * ops->nz,
                                  ops->zim + (size_t)c * ops->nz,
                                  ops->zoff};
                for (long e0 = cnt[c]; e0 < cnt[c + 1]; e0 += PANEL_NB) {
                    int nc = (int)(cnt[c + 1] - e0 < PANEL_NB ? cnt[c + 1] - e0 : PANEL_NB);
                    panel_gather(np, W, nc, src + e0, flg + e0, ops->sign, C);
                    panel_apply(&op, C, B);
                    /* the net force of each translation on its target box's charges */
                    if (terms) {
                        double F[3 * PANEL_NB];
                        panel_forces(ops, nc, C, flg + e0, tgt + e0, cb, G, F);
                        for (int j = 0; j < nc; ++j) {
                            long e = e0 + j;
                            int code =
                                fshift ? v_shift(t, level, tgt[e], src[e], off[e]) : OCT_NOSHIFT;
                            if (code != OCT_NOSHIFT)
                                for (int a = 0; a < 3; ++a) fl[3 * code + a] += F[3 * j + a];
                            if (pairs)
                                m2l_pair_virial(t->box[tgt[e]].c, t->box[src[e]].c, v->g, F + 3 * j,
                                                fl + 81);
                        }
                    }
                    /* one target may occur twice in a panel: the scatter adds in order */
                    panel_scatter_add(np, C, nc, tgt + e0, flg + e0, ops->sign, U);
                }
            }
        }
        free(src), free(tgt), free(flg), free(off), free(B), free(C), free(G);
    }
    if (fch) {
        double sum[NS];
        fmm_sum_slots(fch, nch, NS, sum);
        for (int k = 0; fshift && k < 81; ++k) fshift[k] += sum[k];
        for (int k = 0; pairs && k < 9; ++k) pairs[k] += sum[81 + k];
        free(fch);
    }
    return fail ? FMM_ERR_NOMEM : 0;
}

#include "m2l/m2l_cpu.h"

#include <stdlib.h>
#include <string.h>

#include "fmm.h"

typedef double v8d __attribute__((vector_size(64)));

typedef long long v8di __attribute__((vector_size(64)));

#define CHUNK 32 /* target boxes per task */
#define NB 64    /* translations per panel; a panel row holds one coefficient of NB expansions */

/* 8x8 transpose in three shuffle stages (pairs, 128-bit lanes, 256-bit halves) */
static inline void transpose8(v8d r[8]) {
    const v8di lo = {0, 8, 2, 10, 4, 12, 6, 14}, hi = {1, 9, 3, 11, 5, 13, 7, 15};
    const v8di l2 = {0, 1, 8, 9, 4, 5, 12, 13}, h2 = {2, 3, 10, 11, 6, 7, 14, 15};
    const v8di l4 = {0, 1, 2, 3, 8, 9, 10, 11}, h4 = {4, 5, 6, 7, 12, 13, 14, 15};
    v8d t[8], u[8];
    for (int i = 0; i < 8; i += 2) {
        t[i] = __builtin_shuffle(r[i], r[i + 1], lo);
        t[i + 1] = __builtin_shuffle(r[i], r[i + 1], hi);
    }
    for (int i = 0; i < 8; i += 4) {
        u[i] = __builtin_shuffle(t[i], t[i + 2], l2);
        u[i + 2] = __builtin_shuffle(t[i], t[i + 2], h2);
        u[i + 1] = __builtin_shuffle(t[i + 1], t[i + 3], l2);
        u[i + 3] = __builtin_shuffle(t[i + 1], t[i + 3], h2);
    }
    for (int i = 0; i < 4; ++i) {
        r[i] = __builtin_shuffle(u[i], u[i + 4], l4);
        r[i + 4] = __builtin_shuffle(u[i], u[i + 4], h4);
    }
}

/* out[0:NB] = sum_k a[k] * in[rows(k)][0:NB], rows k at in + (r0 + k * stride) * NB */
static inline void row_combo(int nk, const double *restrict a, const double *restrict in, int r0,
                             int stride, double *restrict out) {
    v8d acc[NB / 8] = {{0}};
    for (int k = 0; k < nk; ++k) {
        const v8d *row = (const v8d *)(in + (size_t)(r0 + k * stride) * NB);
        double s = a[k];
        for (int v = 0; v < NB / 8; ++v) acc[v] += row[v] * s;
    }
    v8d *o = (v8d *)out;
    for (int v = 0; v < NB / 8; ++v) o[v] = acc[v];
}

/* in-degree-block rotation: out_l = R_l in_l for every l (blocks of rows l^2 .. l^2+2l) */
static void rotate(int p, const double *R, const double *in, double *out) {
    for (int l = 0; l <= p; ++l) {
        int w = 2 * l + 1;
        for (int i = 0; i < w; ++i) row_combo(w, R + i * w, in, l * l, 1, out + (size_t)(l * l + i) * NB);
        R += w * w;
    }
}

/* translation along z: couples (l,m) only to (j,m); Re and Im rows separately */
static void translate_z(const m2l_operators *ops, const double *zre, const double *zim,
                        const double *in, double *out) {
    int p = ops->p;
    for (int m = 0; m <= p; ++m) {
        int w = p + 1 - m;
        const double *zr = zre + ops->zoff[m], *zi = zim + ops->zoff[m];
        for (int l = m; l <= p; ++l) {
            /* rows re(j,m) = j^2 + 2m - 1 (m > 0) or j^2: not equally spaced in j, so gather */
            v8d ar[NB / 8] = {{0}}, ai[NB / 8] = {{0}};
            for (int j = m; j <= p; ++j) {
                double sr = zr[(l - m) * w + (j - m)];
                const v8d *rr = (const v8d *)(in + (size_t)(j * j + (m ? 2 * m - 1 : 0)) * NB);
                for (int v = 0; v < NB / 8; ++v) ar[v] += rr[v] * sr;
                if (m) {
                    double si = zi[(l - m) * w + (j - m)];
                    const v8d *ri = (const v8d *)(in + (size_t)(j * j + 2 * m) * NB);
                    for (int v = 0; v < NB / 8; ++v) ai[v] += ri[v] * si;
                }
            }
            v8d *orr = (v8d *)(out + (size_t)(l * l + (m ? 2 * m - 1 : 0)) * NB);
            for (int v = 0; v < NB / 8; ++v) orr[v] = ar[v];
            if (m) {
                v8d *oi = (v8d *)(out + (size_t)(l * l + 2 * m) * NB);
                for (int v = 0; v < NB / 8; ++v) oi[v] = ai[v];
            }
        }
    }
}

int m2l_cpu_level(const m2l_operators *ops, const octree *t, int level, const double *W,
                  double *U) {
    const int np = ops->npad;
    const int b0 = t->level_start[level], b1 = t->level_start[level + 1];
    const oct_list *V = &t->V;
    int fail = 0;
#pragma omp parallel reduction(| : fail)
    {
        /* per thread: the chunk's translations sorted by class, and the GEMM panels */
        long cap = 0;
        int *src = NULL, *tgt = NULL;
        unsigned char *flg = NULL;
        /* panels: row k holds coefficient k of NB translations; padding rows stay zero */
        double *B = aligned_alloc(64, sizeof(double) * (size_t)NB * np);
        double *C = aligned_alloc(64, sizeof(double) * (size_t)NB * np);
        if (!B || !C)
            fail = 1;
        else
            memset(B, 0, sizeof(double) * (size_t)NB * np), memset(C, 0, sizeof(double) * (size_t)NB * np);
#pragma omp for schedule(dynamic, 1)
        for (int cb = b0; cb < b1; cb += CHUNK) {
            if (fail) continue;
            int ce = cb + CHUNK < b1 ? cb + CHUNK : b1;
            long total = V->start[ce] - V->start[cb];
            if (total == 0) continue;
            if (total > cap) {
                cap = total;
                free(src), free(tgt), free(flg);
                src = malloc(sizeof(int) * cap);
                tgt = malloc(sizeof(int) * cap);
                flg = malloc(cap);
                if (!src || !tgt || !flg) {
                    fail = 1, cap = 0;
                    continue;
                }
            }
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
                }
            for (int c = 0; c < M2L_NCLASS; ++c) {
                const double *rw = ops->rot_w + (size_t)c * ops->nrot;
                const double *ru = ops->rot_u + (size_t)c * ops->nrot;
                const double *zr = ops->zre + (size_t)c * ops->nz, *zi = ops->zim + (size_t)c * ops->nz;
                for (long e0 = cnt[c]; e0 < cnt[c + 1]; e0 += NB) {
                    int nc = (int)(cnt[c + 1] - e0 < NB ? cnt[c + 1] - e0 : NB);
                    /* gather the reflected sources as panel columns, 8x8 blocks at a time */
                    for (int j0 = 0; j0 < NB; j0 += 8)
                        for (int k0 = 0; k0 < np; k0 += 8) {
                            v8d r[8];
                            for (int jj = 0; jj < 8; ++jj) {
                                long e = e0 + j0 + jj;
                                if (j0 + jj < nc)
                                    r[jj] = *(const v8d *)(W + (size_t)src[e] * np + k0) *
                                            *(const v8d *)(ops->sign + flg[e] * np + k0);
                                else
                                    r[jj] = (v8d){0};
                            }
                            transpose8(r);
                            for (int kk = 0; kk < 8; ++kk) *(v8d *)(C + (size_t)(k0 + kk) * NB + j0) = r[kk];
                        }
                    rotate(ops->p, rw, C, B);
                    translate_z(ops, zr, zi, B, C);
                    rotate(ops->p, ru, C, B);
                    /* scatter back with the same signs; one target may occur twice: in order */
                    for (int j0 = 0; j0 < nc; j0 += 8)
                        for (int k0 = 0; k0 < np; k0 += 8) {
                            v8d r[8];
                            for (int kk = 0; kk < 8; ++kk) r[kk] = *(const v8d *)(B + (size_t)(k0 + kk) * NB + j0);
                            transpose8(r);
                            for (int jj = 0; jj < 8 && j0 + jj < nc; ++jj) {
                                long e = e0 + j0 + jj;
                                *(v8d *)(U + (size_t)tgt[e] * np + k0) +=
                                    r[jj] * *(const v8d *)(ops->sign + flg[e] * np + k0);
                            }
                        }
                }
            }
        }
        free(src), free(tgt), free(flg), free(B), free(C);
    }
    return fail ? FMM_ERR_NOMEM : 0;
}

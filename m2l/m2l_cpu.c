#include "m2l/m2l_cpu.h"

#include <stdlib.h>
#include <string.h>

#include "fmm.h"

typedef double v8d __attribute__((vector_size(64)));

#define CHUNK 32 /* target boxes per task */
#define NB 64    /* columns per GEMM panel */

/* C[c][0:mpad] += sum_k B[c][k] At[k][0:mpad] for c < nc; At rows 64-byte aligned. */
static void gemm_panel(int K, int mpad, const double *restrict At, int nc, const double *restrict B,
                       double *restrict C) {
    int c = 0;
    for (; c + 4 <= nc; c += 4) {
        const double *b0 = B + (size_t)c * K, *b1 = b0 + K, *b2 = b1 + K, *b3 = b2 + K;
        double *c0 = C + (size_t)c * mpad, *c1 = c0 + mpad, *c2 = c1 + mpad, *c3 = c2 + mpad;
        int r = 0;
        for (; r + 24 <= mpad; r += 24) {
            v8d a00 = {0}, a01 = {0}, a02 = {0}, a10 = {0}, a11 = {0}, a12 = {0};
            v8d a20 = {0}, a21 = {0}, a22 = {0}, a30 = {0}, a31 = {0}, a32 = {0};
            for (int k = 0; k < K; ++k) {
                const v8d *a = (const v8d *)(At + (size_t)k * mpad + r);
                v8d x0 = a[0], x1 = a[1], x2 = a[2];
                double s0 = b0[k], s1 = b1[k], s2 = b2[k], s3 = b3[k];
                a00 += x0 * s0, a01 += x1 * s0, a02 += x2 * s0;
                a10 += x0 * s1, a11 += x1 * s1, a12 += x2 * s1;
                a20 += x0 * s2, a21 += x1 * s2, a22 += x2 * s2;
                a30 += x0 * s3, a31 += x1 * s3, a32 += x2 * s3;
            }
            v8d *o0 = (v8d *)(c0 + r), *o1 = (v8d *)(c1 + r), *o2 = (v8d *)(c2 + r),
                *o3 = (v8d *)(c3 + r);
            o0[0] += a00, o0[1] += a01, o0[2] += a02;
            o1[0] += a10, o1[1] += a11, o1[2] += a12;
            o2[0] += a20, o2[1] += a21, o2[2] += a22;
            o3[0] += a30, o3[1] += a31, o3[2] += a32;
        }
        for (; r < mpad; r += 8) {
            v8d a0 = {0}, a1 = {0}, a2 = {0}, a3 = {0};
            for (int k = 0; k < K; ++k) {
                v8d x = *(const v8d *)(At + (size_t)k * mpad + r);
                a0 += x * b0[k], a1 += x * b1[k], a2 += x * b2[k], a3 += x * b3[k];
            }
            *(v8d *)(c0 + r) += a0, *(v8d *)(c1 + r) += a1;
            *(v8d *)(c2 + r) += a2, *(v8d *)(c3 + r) += a3;
        }
    }
    for (; c < nc; ++c) {
        const double *b0 = B + (size_t)c * K;
        double *c0 = C + (size_t)c * mpad;
        for (int r = 0; r < mpad; r += 8) {
            v8d a0 = {0};
            for (int k = 0; k < K; ++k) a0 += *(const v8d *)(At + (size_t)k * mpad + r) * b0[k];
            *(v8d *)(c0 + r) += a0;
        }
    }
}

int m2l_cpu_level(const m2l_operators *ops, const octree *t, int level, const double *W,
                  double *U) {
    const int n = ops->ncoef, mpad = ops->mpad;
    const int b0 = t->level_start[level], b1 = t->level_start[level + 1];
    const oct_list *V = &t->V;
    int fail = 0;
#pragma omp parallel reduction(| : fail)
    {
        /* per thread: the chunk's translations sorted by class, and the GEMM panels */
        long cap = 0;
        int *src = NULL, *tgt = NULL;
        unsigned char *flg = NULL;
        double *B = aligned_alloc(64, sizeof(double) * (size_t)NB * n);
        double *C = aligned_alloc(64, sizeof(double) * (size_t)NB * mpad);
        if (!B || !C) fail = 1;
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
                const double *At = ops->At + (size_t)c * n * mpad;
                for (long e0 = cnt[c]; e0 < cnt[c + 1]; e0 += NB) {
                    int nc = (int)(cnt[c + 1] - e0 < NB ? cnt[c + 1] - e0 : NB);
                    for (int j = 0; j < nc; ++j) {
                        const double *w = W + (size_t)src[e0 + j] * n, *s = ops->sign + flg[e0 + j] * n;
                        double *bj = B + (size_t)j * n;
                        for (int k = 0; k < n; ++k) bj[k] = s[k] * w[k];
                    }
                    memset(C, 0, sizeof(double) * (size_t)nc * mpad);
                    gemm_panel(n, mpad, At, nc, B, C);
                    for (int j = 0; j < nc; ++j) {
                        double *u = U + (size_t)tgt[e0 + j] * n;
                        const double *s = ops->sign + flg[e0 + j] * n, *cj = C + (size_t)j * mpad;
                        for (int k = 0; k < n; ++k) u[k] += s[k] * cj[k];
                    }
                }
            }
        }
        free(src), free(tgt), free(flg), free(B), free(C);
    }
    return fail ? FMM_ERR_NOMEM : 0;
}

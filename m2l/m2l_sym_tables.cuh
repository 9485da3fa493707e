/*
 * The symmetry-class tables of the GPU M2L (m2l/m2l_symmetric.cu, m2l/m2l_halo.cu): each parity's
 * V list sorted into the 8 sign groups (axis sets A) of 7 classes, their members by reflection
 * gamma, and the reflection algebra of the coefficients (m2l/m2l_symmetric.cu's header derives it).
 * Host and device helpers; included by the .cu files of m2l/ only.
 */
#ifndef FMM_M2L_SYM_TABLES_CUH
#define FMM_M2L_SYM_TABLES_CUH

#include <stdlib.h>
#include <string.h>

#include "core/cuda_status.cuh"
#include "fmm_common.h"
#include "m2l/m2l_gpu.h"

#define SYM_NQ 8 /* sign groups: axis sets A */
#define SYM_NR 7 /* classes per sign group */

/* ---- tables shared by host and device ---- */

/* which axes flip coefficient (l, m, re/im) under a reflection (m2l/operators.c's signs) */
__host__ __device__ constexpr int sym_pi(int l, int m, int im) {
    return ((m & 1) ^ im) | im << 1 | ((l + m) & 1) << 2;
}
/* the bits of v on the axes of A, packed */
__host__ __device__ constexpr int sym_compress(int v, int A) {
    int r = 0, b = 0;
    for (int a = 0; a < 3; ++a)
        if (A >> a & 1) r |= (v >> a & 1) << b++;
    return r;
}
__host__ __device__ constexpr int sym_popc3(int v) {
    return (v & 1) + (v >> 1 & 1) + (v >> 2 & 1);
}
/* rows per warp of sign group A: its row groups share the 8 warps evenly (8 / beta each) */
constexpr int sym_rows_per_warp(int P, int A) {
    int cnt[8] = {0, 0, 0, 0, 0, 0, 0, 0};
    for (int l = 0; l <= P; ++l)
        for (int m = 0; m <= l; ++m)
            for (int im = 0; im <= (m > 0 ? 1 : 0); ++im)
                cnt[sym_compress(sym_pi(l, m, im) & A, A)]++;
    const int beta = 1 << sym_popc3(A), gw = 8 / beta;
    int r = 0;
    for (int g = 0; g < beta; ++g) r = (cnt[g] + gw - 1) / gw > r ? (cnt[g] + gw - 1) / gw : r;
    return r;
}
constexpr int sym_rpt(int P, int B) {
    int r = 0;
    for (int A = 0; A < 8; ++A)
        if ((1 << sym_popc3(A)) == B && sym_rows_per_warp(P, A) > r) r = sym_rows_per_warp(P, A);
    return r;
}

/* largest rows-per-warp stride over the four beta kinds (row table stride) */
static int sym_row_stride(int p) {
    int r = 0;
    for (int B = 1; B <= 8; B *= 2) {
        int rpt = sym_rpt(p, B), ns = (rpt + 15) / 16, rpts = (rpt + ns - 1) / ns;
        r = ns * rpts > r ? ns * rpts : r;
    }
    return r;
}

/* sign group A: position of its first member entry in a parity's 189 presorted entries */
__host__ __device__ constexpr int sym_qbase(int A) {
    int b = 0;
    for (int q = 0; q < A; ++q) b += SYM_NR << sym_popc3(q);
    return b;
}

/* packed offset of m2l_gpu_ops::vlist: (dx+3) | (dy+3)<<3 | (dz+3)<<6 | class<<9 | flag<<15 */
__host__ __device__ static inline long sym_source(long k, int parity, int pk, int level,
                                                  int periodic) {
    const long half = 1L << (level - 1), s = 1L << level;
    long a = k % half, b = k / half % half, c = k / (half * half);
    long sx = 2 * a + (parity & 1) + (pk & 7) - 3,
         sy = 2 * b + (parity >> 1 & 1) + (pk >> 3 & 7) - 3,
         sz = 2 * c + (parity >> 2 & 1) + (pk >> 6 & 7) - 3;
    if (periodic) {
        sx = (sx + 4 * s) % s, sy = (sy + 4 * s) % s, sz = (sz + 4 * s) % s;
    } else if (sx < 0 || sy < 0 || sz < 0 || sx >= s || sy >= s || sz >= s) {
        return -1;
    }
    return sx + s * (sy + s * sz);
}
__host__ __device__ static inline long sym_target(long k, int parity, int level) {
    const long half = 1L << (level - 1), s = 1L << level;
    long a = k % half, b = k / half % half, c = k / (half * half);
    return (2 * a + (parity & 1)) +
           s * ((2 * b + (parity >> 1 & 1)) + s * (2 * c + (parity >> 2 & 1)));
}

/* Host tables of the plan (also used by the CPU emulation). */
typedef struct sym_tables {
    int p, nc, rstride;
    int info[8][SYM_NQ][SYM_NR]; /* per parity, sign group, class slot: class | f0 << 6 */
    int memb[8][M2L_VLIST];      /* per parity, presorted entry: packed offset of the member */
    unsigned char *kap;          /* [8 groups][nc]: row group kappa(j) */
    short *rows;                 /* [8 groups][8 warps][rstride]: row or -1 */
} sym_tables;

static void sym_tables_free(sym_tables *t) {
    free(t->kap), free(t->rows);
    t->kap = NULL, t->rows = NULL;
}

/* vlist: [8][189] packed offsets, sign: [8][nc] reflection signs (f = fx | fy<<1 | fz<<2).
 * Checks every assumption the kernels make; FMM_ERR_PARAM if one fails (a bug, not an input). */
static int sym_tables_build(int p, const int *vlist, const double *sign, sym_tables *t) {
    memset(t, 0, sizeof *t);
    const int nc = (p + 1) * (p + 1);
    t->p = p, t->nc = nc, t->rstride = sym_row_stride(p);
    t->kap = (unsigned char *)malloc((size_t)SYM_NQ * nc);
    t->rows = (short *)malloc(sizeof(short) * SYM_NQ * 8 * t->rstride);
    int *pi = (int *)malloc(sizeof(int) * nc);
    if (!t->kap || !t->rows || !pi) {
        free(pi), sym_tables_free(t);
        return FMM_ERR_NOMEM;
    }
    int rc = FMM_OK;
    /* pi(k) from the sign table; it must match the closed form and generate all 8 patterns */
    for (int l = 0; l <= p; ++l)
        for (int m = 0; m <= l; ++m)
            for (int im = 0; im <= (m > 0); ++im) {
                int k = im ? l * l + 2 * m : l * l + (m == 0 ? 0 : 2 * m - 1), v = 0;
                for (int a = 0; a < 3; ++a) v |= (sign[(1 << a) * nc + k] < 0) << a;
                if (v != sym_pi(l, m, im)) rc = FMM_ERR_PARAM;
                pi[k] = v;
                for (int f = 0; f < 8; ++f)
                    if (sign[f * nc + k] != ((sym_popc3(v & f) & 1) ? -1.0 : 1.0))
                        rc = FMM_ERR_PARAM;
            }
    /* rows per sign group: row groups in order, each spread over its 8 / beta warps */
    for (int i = 0; i < SYM_NQ * 8 * t->rstride; ++i) t->rows[i] = -1;
    for (int A = 0; A < SYM_NQ; ++A) {
        const int beta = 1 << sym_popc3(A), gw = 8 / beta;
        int cnt[8] = {0};
        for (int k = 0; k < nc; ++k) {
            const int g = sym_compress(pi[k] & A, A), n = cnt[g]++;
            const int w = g * gw + n % gw, slot = n / gw;
            t->kap[A * nc + k] = (unsigned char)g;
            if (slot >= sym_rpt(p, beta)) {
                rc = FMM_ERR_PARAM;
                continue;
            }
            t->rows[(A * 8 + w) * t->rstride + slot] = (short)k;
        }
    }
    /* classes of each parity's V list: members, sign group, reflection f0 */
    for (int par = 0; par < 8 && !rc; ++par) {
        int slot_of_class[M2L_NCLASS], nslot[SYM_NQ] = {0}, seen[M2L_NCLASS] = {0}, f0[M2L_NCLASS],
                                       Aof[M2L_NCLASS];
        for (int c = 0; c < M2L_NCLASS; ++c) slot_of_class[c] = -1, f0[c] = -1, Aof[c] = -1;
        for (int e = 0; e < M2L_VLIST; ++e) t->memb[par][e] = -1;
        /* sign group of a class: the axes where its members take both signs */
        int pos[M2L_NCLASS] = {0}, neg[M2L_NCLASS] = {0};
        for (int e = 0; e < M2L_VLIST; ++e) {
            const int pk = vlist[par * M2L_VLIST + e], c = pk >> 9 & 63, f = pk >> 15;
            pos[c] |= ~f & 7, neg[c] |= f;
        }
        for (int c = 0; c < M2L_NCLASS; ++c) {
            Aof[c] = pos[c] & neg[c];
            if (!pos[c] && !neg[c]) rc = FMM_ERR_PARAM; /* every class occurs in every parity */
        }
        for (int c = 0; c < M2L_NCLASS && !rc; ++c) { /* slots in class order within each group */
            const int A = Aof[c];
            if (nslot[A] >= SYM_NR) {
                rc = FMM_ERR_PARAM;
                break;
            }
            slot_of_class[c] = nslot[A]++;
        }
        for (int e = 0; e < M2L_VLIST && !rc; ++e) {
            const int pk = vlist[par * M2L_VLIST + e], c = pk >> 9 & 63, f = pk >> 15, A = Aof[c];
            const int beta = 1 << sym_popc3(A), gamma = sym_compress(f & A, A);
            if (f0[c] < 0) f0[c] = f & ~A;
            if (f0[c] != (f & ~A) || seen[c] >> gamma & 1) {
                rc = FMM_ERR_PARAM;
                break;
            }
            seen[c] |= 1 << gamma;
            const int at = sym_qbase(A) + slot_of_class[c] * beta + gamma;
            t->memb[par][at] = pk & 511;
            t->info[par][A][slot_of_class[c]] = c | f0[c] << 6;
        }
        for (int c = 0; c < M2L_NCLASS && !rc; ++c)
            if (seen[c] != (1 << (1 << sym_popc3(Aof[c]))) - 1) rc = FMM_ERR_PARAM;
    }
    free(pi);
    if (rc) sym_tables_free(t);
    return rc;
}

/* the tables of a device operator set (its V list and signs copied back to the host) */
static int sym_tables_from_device(const m2l_gpu_ops *g, sym_tables *t) {
    memset(t, 0, sizeof *t);
    int *vl = (int *)malloc(sizeof(int) * 8 * M2L_VLIST);
    double *sg = (double *)malloc(sizeof(double) * 8 * g->nc);
    int rc = FMM_ERR_NOMEM;
    if (vl && sg) {
        rc = FMM_ERR_CUDA;
        if (cudaMemcpy(vl, g->vlist, sizeof(int) * 8 * M2L_VLIST, cudaMemcpyDeviceToHost) ==
                cudaSuccess &&
            cudaMemcpy(sg, g->sign, sizeof(double) * 8 * g->nc, cudaMemcpyDeviceToHost) ==
                cudaSuccess)
            rc = sym_tables_build(g->p, vl, sg, t);
    }
    free(vl), free(sg);
    return rc;
}

/* the sources rounded to float, rows padded with zeros to ws coefficients (vector gathers) */
static __global__ void k_sym_tofloat(long nbox, int nc, int ws, const double *__restrict__ W,
                                     float *__restrict__ Wf) {
    for (long idx = (long)blockIdx.x * blockDim.x + threadIdx.x; idx < nbox * ws;
         idx += (long)gridDim.x * blockDim.x) {
        const long b = idx / ws;
        const int j = (int)(idx % ws);
        Wf[idx] = j < nc ? (float)W[b * nc + j] : 0.0f;
    }
}

#endif

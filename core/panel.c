#include "core/panel.h"

#include <string.h>

#include "core/simd.h"

#define NB PANEL_NB

/* SIMD_W x SIMD_W transpose in log2(SIMD_W) shuffle stages (pairs, then 128-bit lanes, then
   256-bit halves). __builtin_shufflevector (GCC >= 12, clang) takes the lane indices as
   constants: lane i of the result is lane k of the concatenation of a and b. */
#if SIMD_W == 8
#define SH_LO(a, b) __builtin_shufflevector(a, b, 0, 8, 2, 10, 4, 12, 6, 14)
#define SH_HI(a, b) __builtin_shufflevector(a, b, 1, 9, 3, 11, 5, 13, 7, 15)
#define SH_L2(a, b) __builtin_shufflevector(a, b, 0, 1, 8, 9, 4, 5, 12, 13)
#define SH_H2(a, b) __builtin_shufflevector(a, b, 2, 3, 10, 11, 6, 7, 14, 15)
#define SH_L4(a, b) __builtin_shufflevector(a, b, 0, 1, 2, 3, 8, 9, 10, 11)
#define SH_H4(a, b) __builtin_shufflevector(a, b, 4, 5, 6, 7, 12, 13, 14, 15)
#elif SIMD_W == 4
#define SH_LO(a, b) __builtin_shufflevector(a, b, 0, 4, 2, 6)
#define SH_HI(a, b) __builtin_shufflevector(a, b, 1, 5, 3, 7)
#define SH_L2(a, b) __builtin_shufflevector(a, b, 0, 1, 4, 5)
#define SH_H2(a, b) __builtin_shufflevector(a, b, 2, 3, 6, 7)
#else
#define SH_LO(a, b) __builtin_shufflevector(a, b, 0, 2)
#define SH_HI(a, b) __builtin_shufflevector(a, b, 1, 3)
#endif
static inline void transpose(simd_d r[SIMD_W]) {
    simd_d t[SIMD_W];
    for (int i = 0; i < SIMD_W; i += 2) {
        t[i] = SH_LO(r[i], r[i + 1]);
        t[i + 1] = SH_HI(r[i], r[i + 1]);
    }
#if SIMD_W >= 4
    simd_d u[SIMD_W];
    for (int i = 0; i < SIMD_W; i += 4) {
        u[i] = SH_L2(t[i], t[i + 2]);
        u[i + 2] = SH_H2(t[i], t[i + 2]);
        u[i + 1] = SH_L2(t[i + 1], t[i + 3]);
        u[i + 3] = SH_H2(t[i + 1], t[i + 3]);
    }
#if SIMD_W == 8
    for (int i = 0; i < 4; ++i) {
        r[i] = SH_L4(u[i], u[i + 4]);
        r[i + 4] = SH_H4(u[i], u[i + 4]);
    }
#else
    for (int i = 0; i < SIMD_W; ++i) r[i] = u[i];
#endif
#else
    for (int i = 0; i < SIMD_W; ++i) r[i] = t[i];
#endif
}

/* Panel rows as native vectors: NV per row, summed CH at a time, so the accumulators stay in
 * registers (8 of AVX-512's 32, which is a whole row; 8 of AVX2's 16, half a row). Wider GCC
 * vectors than the registers are split and spilled: on Zen 3 this loop ran ~10x slower with
 * 64-byte vectors. */
#define NV (NB / SIMD_W)
#define CH (NV < 8 ? NV : 8)

/* out[0:NB] = sum_k a[k] * in[rows(k)][0:NB], rows k at in + (r0 + k * stride) * NB */
static inline void row_combo(int nk, const double *restrict a, const double *restrict in, int r0,
                             int stride, double *restrict out) {
    for (int c = 0; c < NV; c += CH) {
        simd_d acc[CH] = {{0}};
        for (int k = 0; k < nk; ++k) {
            const simd_d *row = (const simd_d *)(in + (size_t)(r0 + k * stride) * NB) + c;
            double s = a[k];
            for (int v = 0; v < CH; ++v) acc[v] += row[v] * s;
        }
        simd_d *o = (simd_d *)out + c;
        for (int v = 0; v < CH; ++v) o[v] = acc[v];
    }
}

/* in-degree-block rotation: out_l = R_l in_l for every l (blocks of rows l^2 .. l^2+2l) */
static void rotate(int p, const double *R, const double *in, double *out) {
    for (int l = 0; l <= p; ++l) {
        int w = 2 * l + 1;
        for (int i = 0; i < w; ++i)
            row_combo(w, R + i * w, in, l * l, 1, out + (size_t)(l * l + i) * NB);
        R += w * w;
    }
}

/* translation along z: couples (l,m) only to (j,m); Re and Im rows separately */
static void translate_z(const factored_op *op, const double *in, double *out) {
    int p = op->p;
    for (int m = 0; m <= p; ++m) {
        int w = p + 1 - m;
        const double *zr = op->zre + op->zoff[m], *zi = op->zim + op->zoff[m];
        for (int l = m; l <= p; ++l) {
            /* rows re(j,m) = j^2 + 2m - 1 (m > 0) or j^2: not equally spaced in j, so gather */
            size_t ore = (size_t)(l * l + (m ? 2 * m - 1 : 0)) * NB,
                   oim = (size_t)(l * l + 2 * m) * NB;
            for (int c = 0; c < NV; c += CH / 2) { /* Re and Im accumulators share the registers */
                simd_d ar[CH / 2] = {{0}}, ai[CH / 2] = {{0}};
                for (int j = m; j <= p; ++j) {
                    double sr = zr[(l - m) * w + (j - m)];
                    const simd_d *rr =
                        (const simd_d *)(in + (size_t)(j * j + (m ? 2 * m - 1 : 0)) * NB) + c;
                    for (int v = 0; v < CH / 2; ++v) ar[v] += rr[v] * sr;
                    if (m) {
                        double si = zi[(l - m) * w + (j - m)];
                        const simd_d *ri = (const simd_d *)(in + (size_t)(j * j + 2 * m) * NB) + c;
                        for (int v = 0; v < CH / 2; ++v) ai[v] += ri[v] * si;
                    }
                }
                simd_d *orr = (simd_d *)(out + ore) + c;
                for (int v = 0; v < CH / 2; ++v) orr[v] = ar[v];
                if (m) {
                    simd_d *oi = (simd_d *)(out + oim) + c;
                    for (int v = 0; v < CH / 2; ++v) oi[v] = ai[v];
                }
            }
        }
    }
}

int panel_zsize(int p, int *zoff) {
    int n = 0;
    for (int m = 0; m <= p; ++m) zoff[m] = n, n += (p + 1 - m) * (p + 1 - m);
    zoff[p + 1] = n;
    return n;
}

void panel_zblocks(int p, const double *Z, const int *zoff, double *zre, double *zim) {
    int n = (p + 1) * (p + 1);
    for (int m = 0; m <= p; ++m)
        for (int l = m; l <= p; ++l)
            for (int j = m; j <= p; ++j) {
                int k = zoff[m] + (l - m) * (p + 1 - m) + (j - m);
                int rl = l * l + (m ? 2 * m - 1 : 0), rj = j * j + (m ? 2 * m - 1 : 0);
                zre[k] = Z[(size_t)rl * n + rj];
                zim[k] = m ? Z[(size_t)(l * l + 2 * m) * n + j * j + 2 * m] : 0.0;
            }
}

void panel_gather(int np, const double *X, int nc, const int *src, const unsigned char *flag,
                  const double *sign, double *P) {
    for (int j0 = 0; j0 < NB; j0 += SIMD_W)
        for (int k0 = 0; k0 < np; k0 += SIMD_W) {
            simd_d r[SIMD_W];
            for (int jj = 0; jj < SIMD_W; ++jj) {
                int j = j0 + jj;
                r[jj] = j < nc ? simd_load(X + (size_t)src[j] * np + k0) *
                                     simd_load(sign + flag[j] * np + k0)
                               : simd_set1(0.0);
            }
            transpose(r);
            for (int kk = 0; kk < SIMD_W; ++kk) simd_store(P + (size_t)(k0 + kk) * NB + j0, r[kk]);
        }
}

void panel_scatter_add(int np, const double *P, int nc, const int *dst, const unsigned char *flag,
                       const double *sign, double *Y) {
    for (int j0 = 0; j0 < nc; j0 += SIMD_W)
        for (int k0 = 0; k0 < np; k0 += SIMD_W) {
            simd_d r[SIMD_W];
            for (int kk = 0; kk < SIMD_W; ++kk) r[kk] = simd_load(P + (size_t)(k0 + kk) * NB + j0);
            transpose(r);
            for (int jj = 0; jj < SIMD_W && j0 + jj < nc; ++jj) {
                double *y = Y + (size_t)dst[j0 + jj] * np + k0;
                simd_store(y, simd_load(y) + r[jj] * simd_load(sign + flag[j0 + jj] * np + k0));
            }
        }
}

void panel_apply(const factored_op *op, double *P, double *T) {
    rotate(op->p, op->r1, P, T);
    translate_z(op, T, P);
    rotate(op->p, op->r2, P, T);
    /* result back into P (rows < ncoef; padding rows of P are untouched zeros) */
    memcpy(P, T, sizeof(double) * (size_t)(op->p + 1) * (op->p + 1) * NB);
}

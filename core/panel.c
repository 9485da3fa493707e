#include "core/panel.h"

#include <string.h>

typedef double v8d __attribute__((vector_size(64)));

typedef long long v8di __attribute__((vector_size(64)));

#define NB PANEL_NB

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
static void translate_z(const factored_op *op, const double *in, double *out) {
    int p = op->p;
    for (int m = 0; m <= p; ++m) {
        int w = p + 1 - m;
        const double *zr = op->zre + op->zoff[m], *zi = op->zim + op->zoff[m];
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
    for (int j0 = 0; j0 < NB; j0 += 8)
        for (int k0 = 0; k0 < np; k0 += 8) {
            v8d r[8];
            for (int jj = 0; jj < 8; ++jj) {
                int j = j0 + jj;
                r[jj] = j < nc ? *(const v8d *)(X + (size_t)src[j] * np + k0) *
                                     *(const v8d *)(sign + flag[j] * np + k0)
                               : (v8d){0};
            }
            transpose8(r);
            for (int kk = 0; kk < 8; ++kk) *(v8d *)(P + (size_t)(k0 + kk) * NB + j0) = r[kk];
        }
}

void panel_scatter_add(int np, const double *P, int nc, const int *dst, const unsigned char *flag,
                       const double *sign, double *Y) {
    for (int j0 = 0; j0 < nc; j0 += 8)
        for (int k0 = 0; k0 < np; k0 += 8) {
            v8d r[8];
            for (int kk = 0; kk < 8; ++kk) r[kk] = *(const v8d *)(P + (size_t)(k0 + kk) * NB + j0);
            transpose8(r);
            for (int jj = 0; jj < 8 && j0 + jj < nc; ++jj) {
                int j = j0 + jj;
                *(v8d *)(Y + (size_t)dst[j] * np + k0) += r[jj] * *(const v8d *)(sign + flag[j] * np + k0);
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

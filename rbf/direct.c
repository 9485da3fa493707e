/* Direct multiquadric sums on the CPU: out_i = sum_j w_j sqrt(|t_i - s_j|^2 + c^2).
 * With AVX-512 (square roots: rbf/mq_sqrt.h), two targets per pass over a source tile; the
 * mat-vec at the centres uses the symmetry of Phi: each pair is evaluated once and feeds both
 * ends (blocks of 8 centres against 8 by lane rotation), half the square roots of the target
 * form. Otherwise plain C that the compiler vectorises. */
#include <math.h>
#include <omp.h>
#include <stdlib.h>
#include <string.h>

#include "rbf/mq_sqrt.h"
#include "rbf/rbf_internal.h"

#define RBF_TILE 4096
#define RBF_CHUNK 64 /* targets per work item of the target sums (even) */
/* j-blocks of 8 centres per tile of the symmetric sum (even): 2048 centres, 64 KiB of x y z w,
 * so a tile stays in L2 while the rows stream past it */
#define RBF_SYM_TILE 256

#if defined(__AVX512F__)
static inline __m512d mq_pair(__m512d xi, __m512d yi, __m512d zi, __m512d xj, __m512d yj,
                              __m512d zj, __m512d cc) {
    __m512d dx = _mm512_sub_pd(xi, xj), dy = _mm512_sub_pd(yi, yj), dz = _mm512_sub_pd(zi, zj);
    return rbf_mq_sqrt(_mm512_fmadd_pd(dx, dx, _mm512_fmadd_pd(dy, dy, _mm512_fmadd_pd(dz, dz, cc))));
}

/* Targets i and i2 (i2 may equal i: then the second result is ignored) against [j0, j1), for
 * NW weight vectors w + k ns at once (each kernel value serves all of them). */
static inline __attribute__((always_inline)) void pair_tile(int NW, long ns, const double *sx,
                                                           const double *sy, const double *sz,
                                                           const double *w, double c2, long j0,
                                                           long j1, long i, long i2, long m,
                                                           const double *tx, const double *ty,
                                                           const double *tz, double *out) {
    const __m512d x0 = _mm512_set1_pd(tx[i]), y0 = _mm512_set1_pd(ty[i]), z0 = _mm512_set1_pd(tz[i]);
    const __m512d x1 = _mm512_set1_pd(tx[i2]), y1 = _mm512_set1_pd(ty[i2]), z1 = _mm512_set1_pd(tz[i2]);
    const __m512d cc = _mm512_set1_pd(c2);
    __m512d a0[RBF_MAXW], a1[RBF_MAXW];
    for (int k = 0; k < NW; ++k) a0[k] = a1[k] = _mm512_setzero_pd();
    for (long j = j0; j < j1; j += 8) {
        __mmask8 in = j1 - j >= 8 ? (__mmask8)0xff : (__mmask8)((1u << (j1 - j)) - 1);
        __m512d px = _mm512_maskz_loadu_pd(in, sx + j), py = _mm512_maskz_loadu_pd(in, sy + j);
        __m512d pz = _mm512_maskz_loadu_pd(in, sz + j);
        __m512d p0 = mq_pair(x0, y0, z0, px, py, pz, cc), p1 = mq_pair(x1, y1, z1, px, py, pz, cc);
        for (int k = 0; k < NW; ++k) {
            __m512d pw = _mm512_maskz_loadu_pd(in, w + k * ns + j);
            a0[k] = _mm512_fmadd_pd(pw, p0, a0[k]);
            a1[k] = _mm512_fmadd_pd(pw, p1, a1[k]);
        }
    }
    for (int k = 0; k < NW; ++k) {
        out[k * m + i] += _mm512_reduce_add_pd(a0[k]);
        if (i2 != i) out[k * m + i2] += _mm512_reduce_add_pd(a1[k]);
    }
}

static inline __mmask8 block_mask(long n, long b) {
    long r = n - 8 * b;
    return r >= 8 ? (__mmask8)0xff : r > 0 ? (__mmask8)((1u << r) - 1) : (__mmask8)0;
}

/* Rows of the R blocks bi .. bi + R - 1 against the blocks [jb, je) (all past them) and, if
 * diag, each block against itself. A source block is rotated one lane at a time through all 8
 * alignments, its accumulator with it, so after 8 steps both are back in place; with R = 2 each
 * rotation (5 permutes, the source loads) serves two row blocks. Padding lanes (and a block
 * past the end) carry w = 0 and are not stored. */
static inline __attribute__((always_inline)) void sym_rows(int R, long n, const double *x,
                                                          const double *y, const double *z,
                                                          const double *w, __m512d cc, long bi,
                                                          int diag, long jb, long je, double *o) {
    const __m512i rot = _mm512_set_epi64(0, 7, 6, 5, 4, 3, 2, 1);
    __m512d xi[2], yi[2], zi[2], wi[2], ai[2];
    __mmask8 mi[2];
    for (int k = 0; k < R; ++k) {
        long i = 8 * (bi + k);
        mi[k] = block_mask(n, bi + k);
        xi[k] = _mm512_maskz_loadu_pd(mi[k], x + i), yi[k] = _mm512_maskz_loadu_pd(mi[k], y + i);
        zi[k] = _mm512_maskz_loadu_pd(mi[k], z + i), wi[k] = _mm512_maskz_loadu_pd(mi[k], w + i);
        ai[k] = _mm512_setzero_pd();
        if (!diag) continue;
        __m512d xj = xi[k], yj = yi[k], zj = zi[k], wj = wi[k];
        for (int r = 0; r < 8; ++r) {
            ai[k] = _mm512_fmadd_pd(wj, mq_pair(xi[k], yi[k], zi[k], xj, yj, zj, cc), ai[k]);
            xj = _mm512_permutexvar_pd(rot, xj), yj = _mm512_permutexvar_pd(rot, yj);
            zj = _mm512_permutexvar_pd(rot, zj), wj = _mm512_permutexvar_pd(rot, wj);
        }
    }
    for (long bj = jb; bj < je; ++bj) {
        __mmask8 mj = block_mask(n, bj);
        long j = 8 * bj;
        __m512d xj = _mm512_maskz_loadu_pd(mj, x + j), yj = _mm512_maskz_loadu_pd(mj, y + j);
        __m512d zj = _mm512_maskz_loadu_pd(mj, z + j), wj = _mm512_maskz_loadu_pd(mj, w + j);
        __m512d aj = _mm512_setzero_pd();
        for (int r = 0; r < 8; ++r) {
            for (int k = 0; k < R; ++k) {
                __m512d p = mq_pair(xi[k], yi[k], zi[k], xj, yj, zj, cc);
                ai[k] = _mm512_fmadd_pd(wj, p, ai[k]);
                aj = _mm512_fmadd_pd(wi[k], p, aj);
            }
            xj = _mm512_permutexvar_pd(rot, xj), yj = _mm512_permutexvar_pd(rot, yj);
            zj = _mm512_permutexvar_pd(rot, zj), wj = _mm512_permutexvar_pd(rot, wj);
            aj = _mm512_permutexvar_pd(rot, aj);
        }
        _mm512_mask_storeu_pd(o + j, mj, _mm512_add_pd(_mm512_maskz_loadu_pd(mj, o + j), aj));
    }
    for (int k = 0; k < R; ++k) {
        long i = 8 * (bi + k);
        _mm512_mask_storeu_pd(o + i, mi[k], _mm512_add_pd(_mm512_maskz_loadu_pd(mi[k], o + i), ai[k]));
    }
}
#endif

/* out += this thread's share of Phi w (o: its own buffer of n, zeroed) */
static void sym_share(long n, const double *x, const double *y, const double *z, const double *w,
                      double c2, double *o) {
#if defined(__AVX512F__)
    const __m512d cc = _mm512_set1_pd(c2);
    long nb = (n + 7) / 8;
    for (long j0 = 0; j0 < nb; j0 += RBF_SYM_TILE) {
        long j1 = j0 + RBF_SYM_TILE < nb ? j0 + RBF_SYM_TILE : nb;
        /* row blocks in pairs a, a + 1 (j0 is even: a pair is before the tile or inside it) */
#pragma omp for schedule(dynamic, 2) nowait
        for (long a = 0; a < j1; a += 2) {
            if (a >= j0) { /* the pair's own triangle */
                sym_rows(1, n, x, y, z, w, cc, a, 1, a + 1, a + 2 < j1 ? a + 2 : j1, o);
                if (a + 1 < j1) sym_rows(1, n, x, y, z, w, cc, a + 1, 1, a + 2, a + 2, o);
            }
            long jb = a >= j0 ? a + 2 : j0;
            if (jb < j1) sym_rows(2, n, x, y, z, w, cc, a, 0, jb, j1, o);
        }
    }
#else
    double c = sqrt(c2);
#pragma omp for schedule(dynamic, 16) nowait
    for (long i = 0; i < n; ++i) {
        double xi = x[i], yi = y[i], zi = z[i], wi = w[i], acc = c * wi;
#pragma omp simd reduction(+ : acc)
        for (long j = i + 1; j < n; ++j) {
            double dx = xi - x[j], dy = yi - y[j], dz = zi - z[j];
            double p = sqrt(dx * dx + dy * dy + dz * dz + c2);
            acc += w[j] * p;
            o[j] += wi * p;
        }
        o[i] += acc;
    }
#endif
}

int rbf_direct_self_cpu(long n, const double *x, const double *y, const double *z,
                        const double *w, double c2, double *out, int threads) {
    /* every pair feeds two rows: each thread sums into its own buffer */
    double *buf = threads > 1 ? malloc(sizeof(double) * n * threads) : out;
    if (!buf) return FMM_ERR_NOMEM;
    int used = 1;
#pragma omp parallel num_threads(threads)
    {
        double *o = buf + (long)omp_get_thread_num() * n;
        memset(o, 0, sizeof(double) * n);
#pragma omp single
        used = omp_get_num_threads();
        /* the single's barrier: every buffer is zeroed before any thread adds to another row */
        sym_share(n, x, y, z, w, c2, o);
        if (buf != out) {
#pragma omp barrier
#pragma omp for schedule(static)
            for (long i = 0; i < n; ++i) {
                double s = 0;
                for (int t = 0; t < used; ++t) s += buf[(long)t * n + i];
                out[i] = s;
            }
        }
    }
    if (buf != out) free(buf);
    return 0;
}

void rbf_direct_cpu(long ns, const double *sx, const double *sy, const double *sz, int nw,
                    const double *w, double c2, long m, const double *tx, const double *ty,
                    const double *tz, double *out, int threads) {
    for (long i = 0; i < nw * m; ++i) out[i] = 0;
    /* chunks of targets handed out dynamically (no barrier per source tile: a thread that
       shares its core with another process does not hold the other one up) */
#pragma omp parallel for schedule(dynamic, 1) num_threads(threads)
    for (long i0 = 0; i0 < m; i0 += RBF_CHUNK) {
        long i1 = i0 + RBF_CHUNK < m ? i0 + RBF_CHUNK : m;
        for (long j0 = 0; j0 < ns; j0 += RBF_TILE) {
            long j1 = j0 + RBF_TILE < ns ? j0 + RBF_TILE : ns;
#if defined(__AVX512F__)
            for (long i = i0; i < i1; i += 2) {
                long i2 = i + 1 < i1 ? i + 1 : i;
                if (nw == 1) pair_tile(1, ns, sx, sy, sz, w, c2, j0, j1, i, i2, m, tx, ty, tz, out);
                else if (nw == 2) pair_tile(2, ns, sx, sy, sz, w, c2, j0, j1, i, i2, m, tx, ty, tz, out);
                else pair_tile(3, ns, sx, sy, sz, w, c2, j0, j1, i, i2, m, tx, ty, tz, out);
            }
#else
            for (long i = i0; i < i1; ++i)
                for (int k = 0; k < nw; ++k) {
                    const double *wk = w + k * ns;
                    double xi = tx[i], yi = ty[i], zi = tz[i], acc = 0;
#pragma omp simd reduction(+ : acc)
                    for (long j = j0; j < j1; ++j) {
                        double dx = xi - sx[j], dy = yi - sy[j], dz = zi - sz[j];
                        acc += wk[j] * sqrt(dx * dx + dy * dy + dz * dz + c2);
                    }
                    out[k * m + i] += acc;
                }
#endif
        }
    }
}

/* Direct multiquadric sums on the CPU: out_i = sum_j w_j sqrt(|t_i - s_j|^2 + c^2), in SIMD
 * vectors of SIMD_W doubles (core/simd.h: 8 with AVX-512, 4 with AVX2). Two targets per pass
 * over a source tile; the mat-vec at the centres uses the symmetry of Phi: each pair is
 * evaluated once and feeds both its row and its column (two rows against a stream of columns),
 * half the square roots of the target form. The points are copied into arrays padded to whole
 * vectors (weight 0 in the padding), so the kernels have no tails.
 *
 * A column's sum in the symmetric form runs through every row pair before it, up to N/2 adds in
 * one chain; with lambda of a fit (sum |lambda| some 200 max|f|, terms of both signs) the
 * rounding of that chain reached 9e-14 max|f| at N = 20000, the residual a fit at tolerance
 * 1e-13 has to see. So the column sums are compensated: a block of RBF_SYM_BLOCK row pairs adds
 * into a plain partial column sum (a short chain of small terms), which is then folded into the
 * running sum by TwoSum, its error kept in a second buffer. Compensating every row pair instead
 * cost 5-10% of the mat-vec (20000 centres, 2 threads: 84-94 against 80-82 ms uncompensated).
 *
 * The symmetric sum also runs in single precision (kernel values, products and partial sums in
 * float, the sums over runs of columns in double): the square root of 2W floats takes about as
 * long as that of W doubles on Zen 3, so a pass is ~2.7x faster (20000 centres, 2 threads: 30
 * against 82 ms), at an absolute error of up to 3-4 u_f phi_max ||w||_2 in a row (u_f = 2^-24).
 * Rounding the coordinates to float costs no more accuracy than that: a kernel value's error is
 * u_f-absolute either way (keeping their low parts in a second float, as double-float, made the
 * pass 1.4x slower for 6% less error). The fit (rbf/fit.c) takes such passes where that error is
 * small enough. */
#include <math.h>
#include <omp.h>
#include <stdlib.h>
#include <string.h>

#include "core/simd.h"
#include "rbf/rbf_internal.h"

#define W SIMD_W
#define WF SIMD_FW
#define RBF_TILE 4096
#define RBF_CHUNK 64 /* targets per work item of the target sums (even) */
/* columns per tile of the symmetric sum: 2048 (96 KiB of x y z w and the thread's o, e) stay in L2
   while the row pairs stream past them (a multiple of W and even) */
#define RBF_SYM_TILE 2048
/* row pairs per partial column sum (and per work item) */
#define RBF_SYM_BLOCK 8

/* sqrt(a): SIMD (core/simd.h), or exactly where a leaves the range of AVX-512's estimate (the
   compiler's vector square root) */
static inline __attribute__((always_inline)) simd_d mq_sqrt(simd_d a, int exact) {
    if (!exact) return simd_sqrt(a);
    for (int k = 0; k < W; ++k) a[k] = sqrt(a[k]);
    return a;
}

static inline __attribute__((always_inline)) simd_d mq_pair(simd_d xi, simd_d yi, simd_d zi,
                                                            simd_d xj, simd_d yj, simd_d zj,
                                                            simd_d cc, int exact) {
    simd_d dx = xi - xj, dy = yi - yj, dz = zi - zj;
    return mq_sqrt(dx * dx + dy * dy + dz * dz + cc, exact);
}

/* whether r^2 + c^2 over the bounding box of the points leaves the estimate's range */
static int mq_exact(double c2, long n, const double *x, const double *y, const double *z, long m,
                    const double *tx, const double *ty, const double *tz) {
    return !simd_rsqrt_range_ok(c2, simd_extent2(n, x, y, z, m, tx, ty, tz, NULL) + c2);
}

/* x y z (and nw weight vectors w + k n) into arrays of np >= n entries (np a multiple of W),
   the padding at the origin with weight 0; one allocation, returned (NULL: out of memory) */
static double *pad_copy(long n, long np, const double *x, const double *y, const double *z, int nw,
                        const double *w) {
    double *b = malloc(sizeof(double) * np * (3 + nw));
    if (!b) return NULL;
    const double *src[3 + RBF_MAXW] = {x, y, z};
    for (int k = 0; k < nw; ++k) src[3 + k] = w + k * n;
    for (int a = 0; a < 3 + nw; ++a) {
        memcpy(b + a * np, src[a], sizeof(double) * n);
        memset(b + a * np + n, 0, sizeof(double) * (np - n));
    }
    return b;
}

/* Targets i and i2 (i2 may equal i: then the second result is ignored) against [j0, j1) of the
   padded sources (j1 a multiple of W), for NW weight vectors w + k ns at once (each kernel value
   serves all of them). */
static inline __attribute__((always_inline)) void
pair_tile(int NW, long ns, const double *sx, const double *sy, const double *sz, const double *w,
          simd_d cc, int exact, long j0, long j1, long i, long i2, long m, const double *tx,
          const double *ty, const double *tz, double *out) {
    const simd_d x0 = simd_set1(tx[i]), y0 = simd_set1(ty[i]), z0 = simd_set1(tz[i]);
    const simd_d x1 = simd_set1(tx[i2]), y1 = simd_set1(ty[i2]), z1 = simd_set1(tz[i2]);
    simd_d a0[RBF_MAXW], a1[RBF_MAXW];
    for (int k = 0; k < NW; ++k) a0[k] = a1[k] = simd_set1(0.0);
    for (long j = j0; j < j1; j += W) {
        simd_d px = simd_load(sx + j), py = simd_load(sy + j), pz = simd_load(sz + j);
        simd_d p0 = mq_pair(x0, y0, z0, px, py, pz, cc, exact);
        simd_d p1 = mq_pair(x1, y1, z1, px, py, pz, cc, exact);
        for (int k = 0; k < NW; ++k) {
            simd_d pw = simd_load(w + k * ns + j);
            a0[k] += pw * p0;
            a1[k] += pw * p1;
        }
    }
    for (int k = 0; k < NW; ++k) {
        out[k * m + i] += simd_sum(a0[k]);
        if (i2 != i) out[k * m + i2] += simd_sum(a1[k]);
    }
}

/* s = a + b rounded; the rounding error (Knuth's TwoSum: exact for any a, b) */
static inline __attribute__((always_inline)) simd_d two_sum_err(simd_d s, simd_d a, simd_d b) {
    simd_d bb = s - a;
    return (a - (s - bb)) + (b - bb);
}

/* Rows i and i + 1 against the columns [j0, j1) (all past i + 1; j0, j1 multiples of W), for NW
 * weight vectors w + k np at once: each kernel value feeds both its row (o[k np + i], o[k np + i +
 * 1]) and its column (the partial sum p[k np + j], streamed through the vectors). The square roots
 * bound the step, so further weight vectors cost little more than the first. */
static inline __attribute__((always_inline)) void
sym_rows2(int NW, long np, const double *x, const double *y, const double *z, const double *w,
          double c2, int exact, long i, long j0, long j1, double *o, double *p) {
    const simd_d cc = simd_set1(c2);
    const simd_d x0 = simd_set1(x[i]), y0 = simd_set1(y[i]), z0 = simd_set1(z[i]);
    const simd_d x1 = simd_set1(x[i + 1]), y1 = simd_set1(y[i + 1]), z1 = simd_set1(z[i + 1]);
    simd_d w0[RBF_MAXW], w1[RBF_MAXW], a0[RBF_MAXW], a1[RBF_MAXW];
    for (int k = 0; k < NW; ++k) {
        w0[k] = simd_set1(w[k * np + i]), w1[k] = simd_set1(w[k * np + i + 1]);
        a0[k] = a1[k] = simd_set1(0.0);
    }
    for (long j = j0; j < j1; j += W) {
        simd_d xj = simd_load(x + j), yj = simd_load(y + j), zj = simd_load(z + j);
        simd_d k0 = mq_pair(x0, y0, z0, xj, yj, zj, cc, exact), k1 = mq_pair(x1, y1, z1, xj, yj, zj, cc, exact);
        for (int k = 0; k < NW; ++k) {
            simd_d wj = simd_load(w + k * np + j);
            a0[k] += wj * k0, a1[k] += wj * k1;
            simd_store(p + k * np + j, simd_load(p + k * np + j) + w0[k] * k0 + w1[k] * k1);
        }
    }
    for (int k = 0; k < NW; ++k)
        o[k * np + i] += simd_sum(a0[k]), o[k * np + i + 1] += simd_sum(a1[k]);
}

/* o + e += p over [j0, j1) (j0, j1 multiples of W) for each of the NW vectors, compensated; p = 0
 */
static inline __attribute__((always_inline)) void fold(int NW, long np, long j0, long j1, double *o,
                                                       double *e, double *p) {
    for (int k = 0; k < NW; ++k)
        for (long j = k * np + j0; j < k * np + j1; j += W) {
            simd_d t = simd_load(p + j), oj = simd_load(o + j), s = oj + t;
            simd_store(o + j, s);
            simd_store(e + j, simd_load(e + j) + two_sum_err(s, oj, t));
            simd_store(p + j, simd_set1(0.0));
        }
}

/* columns a row's float partial sums run over before they go into a double */
#define RBF_SINGLE_RUN 256

/* sym_rows2 in single precision: x y z w the float copies (j0, j1 multiples of WF), o in double,
   p in float */
static inline __attribute__((always_inline)) void
sym_rows2_single(int NW, long np, const float *x, const float *y, const float *z, const float *w,
                 float c2, long i, long j0, long j1, double *o, float *p) {
    const simd_f cc = simd_f_set1(c2);
    const simd_f x0 = simd_f_set1(x[i]), y0 = simd_f_set1(y[i]), z0 = simd_f_set1(z[i]);
    const simd_f x1 = simd_f_set1(x[i + 1]), y1 = simd_f_set1(y[i + 1]), z1 = simd_f_set1(z[i + 1]);
    simd_f w0[RBF_MAXW], w1[RBF_MAXW];
    double s0[RBF_MAXW] = {0}, s1[RBF_MAXW] = {0};
    for (int k = 0; k < NW; ++k)
        w0[k] = simd_f_set1(w[k * np + i]), w1[k] = simd_f_set1(w[k * np + i + 1]);
    for (long jr = j0; jr < j1; jr += RBF_SINGLE_RUN) {
        const long je = jr + RBF_SINGLE_RUN < j1 ? jr + RBF_SINGLE_RUN : j1;
        simd_f a0[RBF_MAXW], a1[RBF_MAXW];
        for (int k = 0; k < NW; ++k) a0[k] = a1[k] = simd_f_set1(0);
        for (long j = jr; j < je; j += WF) {
            simd_f xj = simd_f_load(x + j), yj = simd_f_load(y + j), zj = simd_f_load(z + j);
            simd_f d0 = x0 - xj, e0 = y0 - yj, f0 = z0 - zj, d1 = x1 - xj, e1 = y1 - yj,
                   f1 = z1 - zj;
            simd_f k0 = simd_f_sqrt(d0 * d0 + e0 * e0 + f0 * f0 + cc);
            simd_f k1 = simd_f_sqrt(d1 * d1 + e1 * e1 + f1 * f1 + cc);
            for (int k = 0; k < NW; ++k) {
                simd_f wj = simd_f_load(w + k * np + j);
                a0[k] += wj * k0, a1[k] += wj * k1;
                simd_f_store(p + k * np + j, simd_f_load(p + k * np + j) + w0[k] * k0 + w1[k] * k1);
            }
        }
        for (int k = 0; k < NW; ++k) s0[k] += simd_f_sum(a0[k]), s1[k] += simd_f_sum(a1[k]);
    }
    for (int k = 0; k < NW; ++k) o[k * np + i] += s0[k], o[k * np + i + 1] += s1[k];
}

/* o += p over [j0, j1) for each of the NW vectors (p in float); p = 0 */
static inline __attribute__((always_inline)) void fold_single(int NW, long np, long j0, long j1,
                                                              double *o, float *p) {
    for (int k = 0; k < NW; ++k)
        for (long j = k * np + j0; j < k * np + j1; ++j) o[j] += p[j], p[j] = 0;
}

/* The padded centres and weights: x y z w (NW vectors of np) in double, and their float copies
   xs ys zs ws for single-precision passes (NULL otherwise). */
typedef struct {
    const double *x, *y, *z, *w;
    const float *xs, *ys, *zs, *ws;
} sym_points;

/* o + e += this thread's share of Phi w over the np padded centres (np a multiple of WF; o, e,
   p: its own buffers of NW np, zeroed; p float in SINGLE; exact: see mq_sqrt). Columns in tiles
   that stay in L2 while the blocks of row pairs stream past them; a row pair inside a tile also
   takes its own 2 x 2 block (the diagonal c w_i and the pair), and the columns before the first
   whole vector, in double. */
static inline __attribute__((always_inline)) void sym_share(int NW, int SINGLE, long np,
                                                            sym_points P, double c2, int exact,
                                                            double *o, double *e, void *p) {
    const double c = sqrt(c2);
    const double *x = P.x, *y = P.y, *z = P.z, *w = P.w;
    const int vw = SINGLE ? WF : W;
    for (long j0 = 0; j0 < np; j0 += RBF_SYM_TILE) {
        long j1 = j0 + RBF_SYM_TILE < np ? j0 + RBF_SYM_TILE : np;
        /* a static round-robin of the blocks: which thread's buffers a column's terms go to
           depends only on the thread count, so the sums repeat bitwise (core/reduce.h) */
#pragma omp for schedule(static, 1) nowait
        for (long ia = 0; ia < j1; ia += 2 * RBF_SYM_BLOCK) {
            long ib = ia + 2 * RBF_SYM_BLOCK < j1 ? ia + 2 * RBF_SYM_BLOCK : j1;
            for (long i = ia; i < ib; i += 2) {
                const long jb = i + 2 > j0 ? i + 2 : j0;
                const long jv = (jb + vw - 1) / vw * vw < j1 ? (jb + vw - 1) / vw * vw : j1;
                for (long j = i >= j0 ? i + 1 : jb; j < jv; ++j) /* the pair, the head columns */
                    for (long r = i; r < i + 2 && r < j; ++r) {
                        const double dx = x[r] - x[j], dy = y[r] - y[j], dz = z[r] - z[j];
                        const double kk = sqrt(dx * dx + dy * dy + dz * dz + c2);
                        for (int k = 0; k < NW; ++k)
                            o[k * np + r] += kk * w[k * np + j],
                                o[k * np + j] += kk * w[k * np + r];
                    }
                if (i >= j0)
                    for (int k = 0; k < NW; ++k)
                        o[k * np + i] += c * w[k * np + i],
                            o[k * np + i + 1] += c * w[k * np + i + 1];
                if (jv < j1) {
                    if (SINGLE)
                        sym_rows2_single(NW, np, P.xs, P.ys, P.zs, P.ws, (float)c2, i, jv, j1, o,
                                         p);
                    else
                        sym_rows2(NW, np, x, y, z, w, c2, exact, i, jv, j1, o, p);
                }
            }
            /* the block's columns (p is 0 elsewhere) */
            const long jf = ia + 2 > j0 ? (ia + 2) / vw * vw : j0;
            if (SINGLE)
                fold_single(NW, np, jf, j1, o, p);
            else
                fold(NW, np, jf, j1, o, e, p);
        }
    }
}

int rbf_direct_self_cpu(long n, const double *x, const double *y, const double *z, int nw,
                        const double *w, double c2, int single, double *out, int threads) {
    const long np = (n + WF - 1) / WF * WF;
    const int exact = mq_exact(c2, n, x, y, z, 0, NULL, NULL, NULL);
    double *pts = pad_copy(n, np, x, y, z, nw, w);
    float *fpts = single ? malloc(sizeof(float) * np * (3 + nw)) : NULL;
    /* every pair feeds two rows: each thread sums into its own buffers (sum, compensation, partial
       column sums, nw np each) */
    const long nb = 3L * nw * np;
    double *buf = malloc(sizeof(double) * nb * (threads > 1 ? threads : 1));
    if (!pts || !buf || (single && !fpts)) {
        free(pts), free(fpts), free(buf);
        return FMM_ERR_NOMEM;
    }
    /* the coordinates about their box's centre: rounded to float, their error is then within u_f
       of the largest distance */
    for (int a = 0; single && a < 3 + nw; ++a) {
        double lo = pts[a * np], hi = lo;
        for (long i = 0; a < 3 && i < n; ++i)
            lo = pts[a * np + i] < lo ? pts[a * np + i] : lo,
            hi = pts[a * np + i] > hi ? pts[a * np + i] : hi;
        const double mid = a < 3 ? 0.5 * (lo + hi) : 0;
        for (long i = 0; i < np; ++i) fpts[a * np + i] = (float)(pts[a * np + i] - mid);
    }
    const sym_points P = {pts,  pts + np,  pts + 2 * np,  pts + 3 * np,
                          fpts, fpts + np, fpts + 2 * np, fpts + 3 * np};
    int used = 1;
#pragma omp parallel num_threads(threads)
    {
        double *o = buf + nb * omp_get_thread_num(), *e = o + nw * np, *p = e + nw * np;
        memset(o, 0, sizeof(double) * nb);
#pragma omp single
        used = omp_get_num_threads();
        /* the single's barrier: every buffer is zeroed before any thread adds to another row */
#define RBF_SYM_SHARE(NW)                                                                          \
    single  ? sym_share(NW, 1, np, P, c2, 0, o, e, p)                                              \
    : exact ? sym_share(NW, 0, np, P, c2, 1, o, e, p)                                              \
            : sym_share(NW, 0, np, P, c2, 0, o, e, p)
        if (nw == 1)
            RBF_SYM_SHARE(1);
        else if (nw == 2)
            RBF_SYM_SHARE(2);
        else
            RBF_SYM_SHARE(3);
#undef RBF_SYM_SHARE
#pragma omp barrier
#pragma omp for schedule(static)
        for (long i = 0; i < nw * n; ++i) {
            const long k = i / n, ik = k * np + i % n;
            double s = 0;
            for (int t = 0; t < used; ++t) s += buf[nb * t + ik] + buf[nb * t + nw * np + ik];
            out[i] = s;
        }
    }
    free(pts), free(fpts), free(buf);
    return 0;
}

int rbf_direct_cpu(long ns, const double *sx, const double *sy, const double *sz, int nw,
                   const double *w, double c2, long m, const double *tx, const double *ty,
                   const double *tz, double *out, int threads) {
    const long np = (ns + W - 1) / W * W;
    const int exact = mq_exact(c2, ns, sx, sy, sz, m, tx, ty, tz);
    double *pts = pad_copy(ns, np, sx, sy, sz, nw, w);
    if (!pts) return FMM_ERR_NOMEM;
    const double *px = pts, *py = pts + np, *pz = pts + 2 * np, *pw = pts + 3 * np;
    const simd_d cc = simd_set1(c2);
    for (long i = 0; i < nw * m; ++i) out[i] = 0;
    /* chunks of targets handed out dynamically (no barrier per source tile: a thread that
       shares its core with another process does not hold the other one up) */
#pragma omp parallel for schedule(dynamic, 1) num_threads(threads)
    for (long i0 = 0; i0 < m; i0 += RBF_CHUNK) {
        long i1 = i0 + RBF_CHUNK < m ? i0 + RBF_CHUNK : m;
        for (long j0 = 0; j0 < np; j0 += RBF_TILE) {
            long j1 = j0 + RBF_TILE < np ? j0 + RBF_TILE : np;
            for (long i = i0; i < i1; i += 2) {
                long i2 = i + 1 < i1 ? i + 1 : i;
#define RBF_PAIR_TILE(NW) pair_tile(NW, np, px, py, pz, pw, cc, exact, j0, j1, i, i2, m, tx, ty, tz, out)
                if (nw == 1) RBF_PAIR_TILE(1);
                else if (nw == 2) RBF_PAIR_TILE(2);
                else RBF_PAIR_TILE(3);
#undef RBF_PAIR_TILE
            }
        }
    }
    free(pts);
    return 0;
}

/* Direct multiquadric sums on the CPU: out_i = sum_j w_j sqrt(|t_i - s_j|^2 + c^2), in SIMD
 * vectors of SIMD_W doubles (core/simd.h: 8 with AVX-512, 4 with AVX2). Two targets per pass
 * over a source tile; the mat-vec at the centres uses the symmetry of Phi: each pair is
 * evaluated once and feeds both ends (blocks of SIMD_W centres against SIMD_W by lane
 * rotation), half the square roots of the target form. The points are copied into arrays
 * padded to whole vectors (weight 0 in the padding), so the kernels have no tails. */
#include <math.h>
#include <omp.h>
#include <stdlib.h>
#include <string.h>

#include "core/simd.h"
#include "rbf/rbf_internal.h"

#define W SIMD_W
#define RBF_TILE 4096
#define RBF_CHUNK 64 /* targets per work item of the target sums (even) */
/* centres per tile of the symmetric sum: 2048 (64 KiB of x y z w) stay in L2 while the rows
   stream past them */
#define RBF_SYM_TILE (2048 / W)
/* row blocks per rotation of a source block: with 32 registers (AVX-512) two row blocks share
   each rotation's 5 permutes; with 16 (AVX2) one, or the row block's registers spill */
#define RBF_SYM_R (W == 8 ? 2 : 1)

/* sqrt(a): the SIMD estimate, or exactly where a leaves its range (then the compiler's
   vector square root) */
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

/* whether r^2 + c^2 over the bounding box of the points stays in the estimate's range */
static int mq_exact(double c2, long n, const double *x, const double *y, const double *z, long m,
                    const double *tx, const double *ty, const double *tz) {
    const double *c[2][3] = {{x, y, z}, {tx, ty, tz}};
    const long cnt[2] = {n, m};
    double e2 = 0;
    for (int d = 0; d < 3; ++d) {
        double lo = INFINITY, hi = -INFINITY;
        for (int s = 0; s < 2; ++s)
            for (long i = 0; i < cnt[s]; ++i) {
                lo = c[s][d][i] < lo ? c[s][d][i] : lo;
                hi = c[s][d][i] > hi ? c[s][d][i] : hi;
            }
        if (hi > lo) e2 += (hi - lo) * (hi - lo);
    }
    return !simd_rsqrt_range_ok(c2, e2 + c2);
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

/* Rows of the R blocks bi .. bi + R - 1 against the blocks [jb, je) (all past them) and, if
 * diag, each block against itself (which gives the diagonal term c w_i too). A source block is
 * rotated one lane at a time through all W alignments, its accumulator with it, so after W
 * steps both are back in place. Padding lanes carry w = 0. */
static inline __attribute__((always_inline)) void
sym_rows(int R, const double *x, const double *y, const double *z, const double *w, simd_d cc,
         int exact, long bi, int diag, long jb, long je, double *o) {
    simd_d xi[RBF_SYM_R], yi[RBF_SYM_R], zi[RBF_SYM_R], wi[RBF_SYM_R], ai[RBF_SYM_R];
    for (int k = 0; k < R; ++k) {
        long i = W * (bi + k);
        xi[k] = simd_load(x + i), yi[k] = simd_load(y + i), zi[k] = simd_load(z + i);
        wi[k] = simd_load(w + i), ai[k] = simd_set1(0.0);
        if (!diag) continue;
        simd_d xj = xi[k], yj = yi[k], zj = zi[k], wj = wi[k];
        for (int r = 0; r < W; ++r) {
            ai[k] += wj * mq_pair(xi[k], yi[k], zi[k], xj, yj, zj, cc, exact);
            xj = simd_rotate(xj), yj = simd_rotate(yj), zj = simd_rotate(zj), wj = simd_rotate(wj);
        }
    }
    for (long bj = jb; bj < je; ++bj) {
        long j = W * bj;
        simd_d xj = simd_load(x + j), yj = simd_load(y + j), zj = simd_load(z + j);
        simd_d wj = simd_load(w + j), aj = simd_set1(0.0);
        for (int r = 0; r < W; ++r) {
            for (int k = 0; k < R; ++k) {
                simd_d p = mq_pair(xi[k], yi[k], zi[k], xj, yj, zj, cc, exact);
                ai[k] += wj * p;
                aj += wi[k] * p;
            }
            xj = simd_rotate(xj), yj = simd_rotate(yj), zj = simd_rotate(zj), wj = simd_rotate(wj);
            aj = simd_rotate(aj);
        }
        simd_store(o + j, simd_load(o + j) + aj);
    }
    for (int k = 0; k < R; ++k) {
        long i = W * (bi + k);
        simd_store(o + i, simd_load(o + i) + ai[k]);
    }
}

/* o += this thread's share of Phi w over nb blocks (nb a multiple of RBF_SYM_R; o: its own
   padded buffer, zeroed) */
static inline __attribute__((always_inline)) void sym_share(long nb, const double *x,
                                                           const double *y, const double *z,
                                                           const double *w, double c2, int exact,
                                                           double *o) {
    const simd_d cc = simd_set1(c2);
    const int R = RBF_SYM_R;
    for (long j0 = 0; j0 < nb; j0 += RBF_SYM_TILE) {
        long j1 = j0 + RBF_SYM_TILE < nb ? j0 + RBF_SYM_TILE : nb;
        /* row blocks in groups a .. a + R - 1 (tiles and nb are whole groups, so a group is
           before the tile or inside it) */
#pragma omp for schedule(dynamic, 2) nowait
        for (long a = 0; a < j1; a += R) {
            if (a >= j0) /* the group's own triangle */
                for (int k = 0; k < R; ++k) sym_rows(1, x, y, z, w, cc, exact, a + k, 1, a + k + 1, a + R, o);
            long jb = a >= j0 ? a + R : j0;
            if (jb < j1) sym_rows(R, x, y, z, w, cc, exact, a, 0, jb, j1, o);
        }
    }
}

int rbf_direct_self_cpu(long n, const double *x, const double *y, const double *z,
                        const double *w, double c2, double *out, int threads) {
    const long nb = ((n + W - 1) / W + RBF_SYM_R - 1) / RBF_SYM_R * RBF_SYM_R, np = nb * W;
    const int exact = mq_exact(c2, n, x, y, z, 0, NULL, NULL, NULL);
    double *pts = pad_copy(n, np, x, y, z, 1, w);
    /* every pair feeds two rows: each thread sums into its own buffer */
    double *buf = malloc(sizeof(double) * np * (threads > 1 ? threads : 1));
    if (!pts || !buf) {
        free(pts);
        free(buf);
        return FMM_ERR_NOMEM;
    }
    const double *px = pts, *py = pts + np, *pz = pts + 2 * np, *pw = pts + 3 * np;
    int used = 1;
#pragma omp parallel num_threads(threads)
    {
        double *o = buf + (long)omp_get_thread_num() * np;
        memset(o, 0, sizeof(double) * np);
#pragma omp single
        used = omp_get_num_threads();
        /* the single's barrier: every buffer is zeroed before any thread adds to another row */
        if (exact) sym_share(nb, px, py, pz, pw, c2, 1, o);
        else sym_share(nb, px, py, pz, pw, c2, 0, o);
#pragma omp barrier
#pragma omp for schedule(static)
        for (long i = 0; i < n; ++i) {
            double s = 0;
            for (int t = 0; t < used; ++t) s += buf[(long)t * np + i];
            out[i] = s;
        }
    }
    free(pts);
    free(buf);
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

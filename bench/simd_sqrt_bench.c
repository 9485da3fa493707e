/* Square-root strategies of the pair kernels on an AVX2 machine, one core: the choice that
 * core/simd.h makes for builds without AVX-512.
 *
 *   hw   the hardware square root (and divide, for 1/sqrt): vsqrtpd / vdivpd in the divider
 *   est  the float estimate rsqrtps of a rounded to float, refined in double by the series
 *        in e = 1 - a y0^2 to order e^4 (|e| <= 1.5 * 2^-12): conversions and FMAs, no divider
 *   mix  (multiquadric) one row of the pair step each way, so that both units work
 *
 * Kernels: the symmetric multiquadric step of rbf/direct.c (two rows against a stream of
 * columns, sqrt(r^2 + c^2) feeding row and column) and the Coulomb P2P step of core/p2p.c
 * (one target against a stream of sources, potential and field). Prints ns per pair and a
 * checksum (the variants must agree to rounding).
 *
 *   gcc -O3 -march=native -ffp-contract=fast -fno-math-errno -I. bench/simd_sqrt_bench.c \
 *       -o /tmp/simd_sqrt_bench -lm && taskset -c 1 /tmp/simd_sqrt_bench [N]
 */
#if !defined(__AVX2__) || defined(__AVX512F__)
#error "this benchmark compares the AVX2 strategies: build with -march=native on an AVX2 machine without AVX-512"
#endif
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "core/simd.h"

#define W SIMD_W

static inline simd_d est_rsqrt(simd_d a) {
    simd_d y = (simd_d)_mm256_cvtps_pd(_mm_rsqrt_ps(_mm256_cvtpd_ps((__m256d)a)));
    simd_d e = 1.0 - a * y * y;
    simd_d t = ((e * (35.0 / 128) + 5.0 / 16) * e + 3.0 / 8) * e + 0.5;
    return y + y * (t * e);
}
static inline simd_d est_sqrt(simd_d a) {
    return a * est_rsqrt(a);
}
/* the library's own (core/simd.h without AVX-512: the hardware square root and divide) */
static inline simd_d hw_sqrt(simd_d a) {
    return simd_sqrt(a);
}
static inline simd_d hw_rsqrt(simd_d a) {
    return simd_rsqrt(a);
}

#define MQ_ROWS2(NAME, S0, S1)                                                                     \
    static void NAME(const double *x, const double *y, const double *z, const double *w, double c2, \
                     long i, long j0, long j1, double *o) {                                        \
        const simd_d cc = simd_set1(c2), x0 = simd_set1(x[i]), y0 = simd_set1(y[i]),              \
                     z0 = simd_set1(z[i]), x1 = simd_set1(x[i + 1]), y1 = simd_set1(y[i + 1]),    \
                     z1 = simd_set1(z[i + 1]), w0 = simd_set1(w[i]), w1 = simd_set1(w[i + 1]);    \
        simd_d a0 = simd_set1(0), a1 = simd_set1(0);                                               \
        for (long j = j0; j < j1; j += W) {                                                        \
            simd_d xj = simd_load(x + j), yj = simd_load(y + j), zj = simd_load(z + j),           \
                   wj = simd_load(w + j);                                                          \
            simd_d dx = x0 - xj, dy = y0 - yj, dz = z0 - zj;                                       \
            simd_d k0 = S0(dx * dx + dy * dy + dz * dz + cc);                                      \
            dx = x1 - xj, dy = y1 - yj, dz = z1 - zj;                                              \
            simd_d k1 = S1(dx * dx + dy * dy + dz * dz + cc);                                      \
            a0 += wj * k0, a1 += wj * k1;                                                          \
            simd_store(o + j, simd_load(o + j) + w0 * k0 + w1 * k1);                               \
        }                                                                                          \
        o[i] += simd_sum(a0), o[i + 1] += simd_sum(a1);                                            \
    }
MQ_ROWS2(mq_hw, hw_sqrt, hw_sqrt)
MQ_ROWS2(mq_est, est_sqrt, est_sqrt)
MQ_ROWS2(mq_mix, hw_sqrt, est_sqrt)

#define P2P_ONE(NAME, RS)                                                                          \
    static double NAME(long n, const double *x, const double *y, const double *z, const double *q,  \
                       long i) {                                                                   \
        const simd_d xi = simd_set1(x[i] + 1e-3), yi = simd_set1(y[i]), zi = simd_set1(z[i]);      \
        simd_d p = {0}, fx = {0}, fy = {0}, fz = {0};                                              \
        for (long j = 0; j < n; j += W) {                                                          \
            simd_d dx = xi - simd_load(x + j), dy = yi - simd_load(y + j), dz = zi - simd_load(z + j); \
            simd_d r2 = dx * dx + dy * dy + dz * dz;                                               \
            simd_d rinv = simd_select0(r2 > 0.0, RS(r2));                                          \
            simd_d qr = simd_load(q + j) * rinv, qr3 = qr * rinv * rinv;                           \
            p += qr, fx += qr3 * dx, fy += qr3 * dy, fz += qr3 * dz;                               \
        }                                                                                          \
        return simd_sum(p) + simd_sum(fx) + simd_sum(fy) + simd_sum(fz);                           \
    }
P2P_ONE(p2p_hw, hw_rsqrt)
P2P_ONE(p2p_est, est_rsqrt)

static double now(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec + 1e-9 * t.tv_nsec;
}

static double median3(const double t[3]) {
    double lo = t[0] < t[1] ? t[0] : t[1], hi = t[0] < t[1] ? t[1] : t[0];
    return t[2] < lo ? lo : (t[2] > hi ? hi : t[2]);
}

int main(int argc, char **argv) {
    long n = argc > 1 ? atol(argv[1]) : 20000;
    if (n < 2 * W || n > 1000000) {
        fprintf(stderr, "usage: simd_sqrt_bench [N], %d <= N <= 1000000 (default 20000)\n", 2 * W);
        return 2;
    }
    n = (n + W - 1) / W * W;
    double *b = malloc(sizeof(double) * 5 * n), *x = b, *y = b + n, *z = b + 2 * n, *w = b + 3 * n,
           *o = b + 4 * n;
    if (!b) return 1;
    srand(1);
    for (long i = 0; i < 4 * n; ++i) b[i] = rand() / (double)RAND_MAX - 0.5;
    typedef void (*mq_fn)(const double *, const double *, const double *, const double *, double,
                          long, long, long, double *);
    const mq_fn mq[3] = {mq_hw, mq_est, mq_mix};
    const char *mq_name[3] = {"hw", "est", "mix"};
    printf("# N = %ld, one core; ns per pair (median of 3)\n", n);
    for (int v = 0; v < 3; ++v) {
        double t[3], sum = 0;
        for (int r = 0; r < 3; ++r) {
            for (long i = 0; i < n; ++i) o[i] = 0;
            double t0 = now();
            for (long j0 = 0; j0 < n; j0 += 2048) { /* the column tiles of rbf/direct.c */
                long j1 = j0 + 2048 < n ? j0 + 2048 : n;
                for (long i = 0; i + 1 < j1; i += 2) {
                    long jb = i + 2 > j0 ? i + 2 : j0;
                    jb = (jb + W - 1) / W * W;
                    if (jb < j1) mq[v](x, y, z, w, 1e-4, i, jb, j1, o);
                }
            }
            t[r] = (now() - t0) / (0.5 * n * n) * 1e9;
            sum = 0;
            for (long i = 0; i < n; ++i) sum += o[i];
        }
        printf("multiquadric %-4s %.3f ns/pair  checksum %.15g\n", mq_name[v], median3(t), sum);
    }
    const char *p_name[2] = {"hw", "est"};
    for (int v = 0; v < 2; ++v) {
        double t[3], sum = 0;
        long nt = n < 4096 ? n : 4096;
        for (int r = 0; r < 3; ++r) {
            sum = 0;
            double t0 = now();
            for (long i = 0; i < nt; ++i) sum += v ? p2p_est(n, x, y, z, w, i) : p2p_hw(n, x, y, z, w, i);
            t[r] = (now() - t0) / ((double)nt * n) * 1e9;
        }
        printf("coulomb p2p  %-4s %.3f ns/pair  checksum %.15g\n", p_name[v], median3(t), sum);
    }
    free(b);
    return 0;
}

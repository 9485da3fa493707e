/* Double-precision SIMD for the hot pair kernels (the Coulomb P2P, the multiquadric sums):
 * a GCC vector of SIMD_W doubles (8 with AVX-512, 4 with AVX, 2 otherwise) so that one kernel
 * source serves every instruction set, plus the square roots the compiler cannot choose well.
 *
 * With AVX-512, sqrt and 1/sqrt come from the hardware estimate y0 (vrsqrt14pd, relative error
 * <= 2^-14) refined through e = 1 - a y0^2: 1/sqrt(a) = y0 (1 - e)^(-1/2) = y0 (1 + e/2 +
 * 3e^2/8 + 5e^3/16 + ...), stopped at e^3 (the next term, 0.27 e^4 < 6e-17 for |e| <= 2^-13),
 * about 1 ulp: a handful of FMAs against ~14 cycles of the divider for sqrt + divide.
 * Elsewhere (AVX2, SSE2) the hardware square root and divide, correctly rounded each: on Zen 3
 * the float estimate rsqrtps + series is slower (its conversions and long dependency chain keep
 * the FMA units below their peak), and mixing the two per step does not help either
 * (bench/simd_sqrt_bench.c, one idle core, two runs, ns per pair: multiquadric 0.75-0.79 hw,
 * 1.16-1.36 estimate, 0.78-0.93 mixed; Coulomb P2P 1.27-1.33 hw, 1.48-1.64 estimate;
 * bench/results/simd_sqrt_zen3.txt).
 * Tests: tests/test_operators.cpp, P2P.PairAccuracyAcrossScales.
 *
 * Range: the AVX-512 estimate is used for a in [2^-120, 2^120] only (simd_rsqrt_range_ok;
 * callers check their arguments' range up front, or the finiteness of what they sum, and do
 * the other calls exactly: core/p2p.c, rbf/). The hardware square root takes every a. */
#ifndef FMM_CORE_SIMD_H
#define FMM_CORE_SIMD_H

#include <math.h>

#if defined(__AVX512F__)
#include <immintrin.h>
#define SIMD_W 8
#elif defined(__AVX__)
#include <immintrin.h>
#define SIMD_W 4
#elif defined(__SSE2__)
#include <immintrin.h>
#define SIMD_W 2
#else
#define SIMD_W 2
#endif

typedef double simd_d __attribute__((vector_size(8 * SIMD_W)));
typedef long long simd_l __attribute__((vector_size(8 * SIMD_W)));
/* the same vector at 8-byte alignment, for loads and stores at any double */
typedef double simd_du __attribute__((vector_size(8 * SIMD_W), aligned(8)));

/* PRE##load (at the element's alignment), PRE##store, PRE##set1 (broadcast) and PRE##sum (in
 * double) of the vector type V of N elements T; VU: V at T's alignment. Defined below for double
 * (simd_load, ...) and float (simd_f_load, ...). */
#define SIMD_BASICS(V, VU, T, N, PRE)                                                              \
    static inline V PRE##load(const T *p) {                                                        \
        return *(const VU *)p;                                                                     \
    }                                                                                              \
    static inline void PRE##store(T *p, V v) {                                                     \
        *(VU *)p = v;                                                                              \
    }                                                                                              \
    static inline V PRE##set1(T x) {                                                               \
        return (V){0} + x;                                                                         \
    }                                                                                              \
    static inline double PRE##sum(V v) {                                                           \
        double s = 0;                                                                              \
        for (int k = 0; k < N; ++k) s += v[k];                                                     \
        return s;                                                                                  \
    }
SIMD_BASICS(simd_d, simd_du, double, SIMD_W, simd_)

/* v where mask (a comparison's result) is set, else +0 */
static inline simd_d simd_select0(simd_l mask, simd_d v) {
    return (simd_d)(mask & (simd_l)v);
}
/* whether simd_sqrt and simd_rsqrt may take every a in [lo, hi]: AVX-512's estimate in
 * [2^-120, 2^120] (float's range less a margin of 2^6, a conservative bound for vrsqrt14pd),
 * the hardware square root everywhere */
static inline int simd_rsqrt_range_ok(double lo, double hi) {
#if defined(__AVX512F__)
    return lo >= 0x1p-120 && hi < 0x1p120;
#else
    (void)lo, (void)hi; /* the hardware square root */
    return 1;
#endif
}

/* the squared diagonal of the box around the points x y z (n of them) and u v w + shift (m):
 * it bounds every squared distance among them, for simd_rsqrt_range_ok */
static inline double simd_extent2(long n, const double *x, const double *y, const double *z, long m,
                                  const double *u, const double *v, const double *w,
                                  const double shift[3]) {
    const double *c[2][3] = {{x, y, z}, {u, v, w}};
    const long cnt[2] = {n, m};
    double e2 = 0;
    for (int d = 0; d < 3; ++d) {
        double lo = INFINITY, hi = -INFINITY;
        for (int s = 0; s < 2; ++s)
            for (long k = 0; k < cnt[s]; ++k) {
                double t = c[s][d][k] + (s && shift ? shift[d] : 0.0);
                lo = t < lo ? t : lo;
                hi = t > hi ? t : hi;
            }
        if (hi > lo) e2 += (hi - lo) * (hi - lo);
    }
    return e2;
}

#if defined(__AVX512F__)
/* (1 - e)^(-1/2) = 1 + e (1/2 + 3e/8 + 5e^2/16) for the estimate's |e| <= 2^-14 (see the top) */
static inline simd_d simd_rsqrt_refine(simd_d e) {
    return ((e * (5.0 / 16) + 3.0 / 8) * e + 0.5) * e;
}
#endif

/* 1/sqrt(a), about 1 ulp */
static inline simd_d simd_rsqrt(simd_d a) {
#if defined(__AVX512F__)
    simd_d y = (simd_d)_mm512_rsqrt14_pd((__m512d)a);
    return y + y * simd_rsqrt_refine(1.0 - a * y * y);
#elif defined(__AVX__)
    return 1.0 / (simd_d)_mm256_sqrt_pd((__m256d)a);
#elif defined(__SSE2__)
    return 1.0 / (simd_d)_mm_sqrt_pd((__m128d)a);
#else
    for (int k = 0; k < SIMD_W; ++k) a[k] = 1.0 / sqrt(a[k]);
    return a;
#endif
}

/* sqrt(a), about 1 ulp (correctly rounded with the hardware square root); with AVX-512, g = a y0
 * first, so that a y0^2 is formed as g y0 */
static inline simd_d simd_sqrt(simd_d a) {
#if defined(__AVX512F__)
    simd_d y = (simd_d)_mm512_rsqrt14_pd((__m512d)a);
    simd_d g = a * y;
    return g + g * simd_rsqrt_refine(1.0 - g * y);
#elif defined(__AVX__)
    return (simd_d)_mm256_sqrt_pd((__m256d)a);
#elif defined(__SSE2__)
    return (simd_d)_mm_sqrt_pd((__m128d)a);
#else
    for (int k = 0; k < SIMD_W; ++k) a[k] = sqrt(a[k]);
    return a;
#endif
}

/* Single-precision vectors: SIMD_FW floats in the bytes of SIMD_W doubles (rbf/direct.c's
 * single-precision sums). */
#define SIMD_FW (2 * SIMD_W)
typedef float simd_f __attribute__((vector_size(8 * SIMD_W)));
typedef float simd_fu __attribute__((vector_size(8 * SIMD_W), aligned(4)));
SIMD_BASICS(simd_f, simd_fu, float, SIMD_FW, simd_f_)
/* correctly rounded (rsqrtps and a Newton step made rbf/direct.c's single-precision pass 1.3x
   slower on Zen 3: the FMA units, not the divider, were then the limit) */
static inline simd_f simd_f_sqrt(simd_f a) {
#if defined(__AVX512F__)
    return (simd_f)_mm512_sqrt_ps((__m512)a);
#elif defined(__AVX__)
    return (simd_f)_mm256_sqrt_ps((__m256)a);
#else
    for (int k = 0; k < SIMD_FW; ++k) a[k] = sqrtf(a[k]);
    return a;
#endif
}

#endif

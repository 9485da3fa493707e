/* Double-precision SIMD for the hot pair kernels (the Coulomb P2P, the multiquadric sums):
 * a GCC vector of SIMD_W doubles (8 with AVX-512, 4 with AVX, 2 otherwise) so that one kernel
 * source serves every instruction set, plus the one operation the compiler cannot derive from
 * plain code: a fast reciprocal square root. 1/sqrt(a) as sqrt + divide costs ~14 cycles per
 * 4 lanes on Zen 3 (both in the divider); a hardware estimate refined by a short series is
 * a handful of FMAs.
 *
 * The estimate y0 (AVX-512: vrsqrt14pd, relative error <= 2^-14; AVX/SSE: the float estimate
 * rsqrtps of a rounded to float, <= 1.5 * 2^-12) is refined through e = 1 - a y0^2:
 * 1/sqrt(a) = y0 (1 - e)^(-1/2) = y0 (1 + e/2 + 3e^2/8 + 5e^3/16 + 35e^4/128 + ...). The series
 * stops where the next term is below 2^-53: e^3 for |e| <= 2^-13 (0.27 e^4 < 6e-17), e^4 for
 * |e| <= 7.4e-4 (0.25 e^5 < 6e-17). About 1 ulp either way (tests/test_operators.cpp,
 * P2P.PairAccuracyAcrossScales).
 *
 * Range: with the float estimate, a must lie in float's normal range (about 1.2e-38 to 3.4e38):
 * below it the estimate is infinite and the result NaN, above it zero. Callers check their
 * arguments' range up front (simd_rsqrt_range_ok) or the finiteness of what they sum, and do
 * those calls exactly (core/p2p.c, rbf/). */
#ifndef FMM_CORE_SIMD_H
#define FMM_CORE_SIMD_H

#include <math.h>

#if defined(__AVX512F__)
#include <immintrin.h>
#define SIMD_W 8
#define SIMD_RSQRT_SERIES 3
#elif defined(__AVX__)
#include <immintrin.h>
#define SIMD_W 4
#define SIMD_RSQRT_SERIES 4
#elif defined(__SSE2__)
#include <immintrin.h>
#define SIMD_W 2
#define SIMD_RSQRT_SERIES 4
#else
#define SIMD_W 2
#define SIMD_RSQRT_SERIES 0 /* exact 1/sqrt per lane, no series */
#endif

typedef double simd_d __attribute__((vector_size(8 * SIMD_W)));
typedef long long simd_l __attribute__((vector_size(8 * SIMD_W)));
/* the same vector at 8-byte alignment, for loads and stores at any double */
typedef double simd_du __attribute__((vector_size(8 * SIMD_W), aligned(8)));

static inline simd_d simd_load(const double *p) {
    return *(const simd_du *)p;
}
static inline void simd_store(double *p, simd_d v) {
    *(simd_du *)p = v;
}
static inline simd_d simd_set1(double x) {
    return (simd_d){0} + x;
}
static inline double simd_sum(simd_d v) {
    double s = 0;
    for (int k = 0; k < SIMD_W; ++k) s += v[k];
    return s;
}
/* v where mask (a comparison's result) is set, else +0 */
static inline simd_d simd_select0(simd_l mask, simd_d v) {
    return (simd_d)(mask & (simd_l)v);
}
/* the hardware estimate of 1/sqrt(a) (see the top) */
static inline simd_d simd_rsqrt_estimate(simd_d a) {
#if defined(__AVX512F__)
    return (simd_d)_mm512_rsqrt14_pd((__m512d)a);
#elif defined(__AVX__)
    return (simd_d)_mm256_cvtps_pd(_mm_rsqrt_ps(_mm256_cvtpd_ps((__m256d)a)));
#elif defined(__SSE2__)
    return (simd_d)_mm_cvtps_pd(_mm_rsqrt_ps(_mm_cvtpd_ps((__m128d)a)));
#else
    simd_d y;
    for (int k = 0; k < SIMD_W; ++k) y[k] = 1.0 / sqrt(a[k]);
    return y;
#endif
}

/* (1 - e)^(-1/2) - 1 = e (1/2 + 3e/8 + ...), to the order the estimate needs */
static inline simd_d simd_rsqrt_series(simd_d e) {
#if SIMD_RSQRT_SERIES == 4
    simd_d t = e * (35.0 / 128) + 5.0 / 16;
    t = t * e + 3.0 / 8;
#elif SIMD_RSQRT_SERIES == 3
    simd_d t = e * (5.0 / 16) + 3.0 / 8;
#else
    simd_d t = simd_set1(0.0);
#endif
    return (t * e + 0.5) * e;
}

/* whether every a in [lo, hi] is inside the range the estimate needs (with a margin of 2^6
 * below float's limits) */
static inline int simd_rsqrt_range_ok(double lo, double hi) {
    return lo >= 0x1p-120 && hi < 0x1p120;
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

/* 1/sqrt(a), about 1 ulp */
static inline simd_d simd_rsqrt(simd_d a) {
    simd_d y = simd_rsqrt_estimate(a);
    simd_d e = 1.0 - a * y * y;
    return y + y * simd_rsqrt_series(e);
}

/* sqrt(a), about 1 ulp (correctly rounded where the hardware square root is used). With AVX-512:
 * a y0 refined by the series (g = a y0 first, so a y0^2 is formed as g y0). Otherwise the
 * hardware square root: on Zen 3 (AVX2) it beats the float estimate + series, whose two
 * conversions cost more than the divider (a multiquadric pair sum: 0.80 against 1.07-1.44
 * ns/pair on one idle core); 1/sqrt is another matter, as it needs a divide as well. */
static inline simd_d simd_sqrt(simd_d a) {
#if defined(__AVX512F__)
    simd_d y = simd_rsqrt_estimate(a);
    simd_d g = a * y;
    simd_d e = 1.0 - g * y;
    return g + g * simd_rsqrt_series(e);
#elif defined(__AVX__)
    return (simd_d)_mm256_sqrt_pd((__m256d)a);
#elif defined(__SSE2__)
    return (simd_d)_mm_sqrt_pd((__m128d)a);
#else
    for (int k = 0; k < SIMD_W; ++k) a[k] = sqrt(a[k]);
    return a;
#endif
}

#endif

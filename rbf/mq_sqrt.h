/* sqrt(a) for a >= c^2 > 0 in AVX-512 registers, about 1 ulp: g = a y0 and e = 1 - a y0^2 with
 * y0 = vrsqrt14pd(a), then sqrt(a) = g (1 - e)^(-1/2); |e| <= 2^-13, so the series to e^3 leaves
 * 0.27 e^4 < 2^-53. One dependent chain of 5 FMAs instead of two Newton steps. */
#ifndef FMM_RBF_MQ_SQRT_H
#define FMM_RBF_MQ_SQRT_H

#if defined(__AVX512F__)
#include <immintrin.h>

static inline __m512d rbf_mq_sqrt(__m512d a) {
    __m512d y = _mm512_rsqrt14_pd(a), g = _mm512_mul_pd(a, y);
    __m512d e = _mm512_fnmadd_pd(g, y, _mm512_set1_pd(1.0));
    __m512d t = _mm512_fmadd_pd(e, _mm512_set1_pd(5.0 / 16), _mm512_set1_pd(3.0 / 8));
    t = _mm512_fmadd_pd(e, t, _mm512_set1_pd(0.5));
    return _mm512_fmadd_pd(g, _mm512_mul_pd(t, e), g);
}
#endif

#endif

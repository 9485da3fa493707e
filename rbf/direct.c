/* Direct multiquadric sums on the CPU: out_i = sum_j w_j sqrt(|t_i - s_j|^2 + c^2).
 * With AVX-512: sqrt(a) = a * rsqrt(a), rsqrt from vrsqrt14pd and two Newton steps (about
 * 1 ulp; a >= c^2 > 0), two targets per pass over a source tile; otherwise plain C that the
 * compiler vectorises. */
#include <math.h>
#include <omp.h>

#if defined(__AVX512F__)
#include <immintrin.h>
#endif

#include "rbf/rbf_internal.h"

#define RBF_TILE 4096

#if defined(__AVX512F__)
static inline __m512d mq_sqrt(__m512d a) {
    const __m512d half = _mm512_set1_pd(0.5), three_half = _mm512_set1_pd(1.5);
    __m512d y = _mm512_rsqrt14_pd(a);
    __m512d h = _mm512_mul_pd(half, a);
    y = _mm512_mul_pd(y, _mm512_fnmadd_pd(h, _mm512_mul_pd(y, y), three_half));
    y = _mm512_mul_pd(y, _mm512_fnmadd_pd(h, _mm512_mul_pd(y, y), three_half));
    return _mm512_mul_pd(a, y);
}

/* targets i and i2 (i2 may equal i: then the second result is ignored) against [j0, j1) */
static void pair_tile(const double *sx, const double *sy, const double *sz, const double *w,
                      double c2, long j0, long j1, const double t0[3], const double t1[3],
                      double *o0, double *o1) {
    const __m512d x0 = _mm512_set1_pd(t0[0]), y0 = _mm512_set1_pd(t0[1]), z0 = _mm512_set1_pd(t0[2]);
    const __m512d x1 = _mm512_set1_pd(t1[0]), y1 = _mm512_set1_pd(t1[1]), z1 = _mm512_set1_pd(t1[2]);
    const __m512d cc = _mm512_set1_pd(c2);
    __m512d a0 = _mm512_setzero_pd(), a1 = _mm512_setzero_pd();
    for (long j = j0; j < j1; j += 8) {
        __mmask8 in = j1 - j >= 8 ? (__mmask8)0xff : (__mmask8)((1u << (j1 - j)) - 1);
        __m512d px = _mm512_maskz_loadu_pd(in, sx + j), py = _mm512_maskz_loadu_pd(in, sy + j);
        __m512d pz = _mm512_maskz_loadu_pd(in, sz + j), pw = _mm512_maskz_loadu_pd(in, w + j);
        __m512d dx = _mm512_sub_pd(x0, px), dy = _mm512_sub_pd(y0, py), dz = _mm512_sub_pd(z0, pz);
        __m512d s = _mm512_fmadd_pd(dx, dx, _mm512_fmadd_pd(dy, dy, _mm512_fmadd_pd(dz, dz, cc)));
        a0 = _mm512_fmadd_pd(pw, mq_sqrt(s), a0);
        dx = _mm512_sub_pd(x1, px), dy = _mm512_sub_pd(y1, py), dz = _mm512_sub_pd(z1, pz);
        s = _mm512_fmadd_pd(dx, dx, _mm512_fmadd_pd(dy, dy, _mm512_fmadd_pd(dz, dz, cc)));
        a1 = _mm512_fmadd_pd(pw, mq_sqrt(s), a1);
    }
    *o0 += _mm512_reduce_add_pd(a0);
    *o1 += _mm512_reduce_add_pd(a1);
}
#endif

void rbf_direct_cpu(long ns, const double *sx, const double *sy, const double *sz,
                    const double *w, double c2, long m, const double *tx, const double *ty,
                    const double *tz, double *out, int threads) {
    for (long i = 0; i < m; ++i) out[i] = 0;
#pragma omp parallel num_threads(threads)
    for (long j0 = 0; j0 < ns; j0 += RBF_TILE) {
        long j1 = j0 + RBF_TILE < ns ? j0 + RBF_TILE : ns;
#if defined(__AVX512F__)
#pragma omp for schedule(static)
        for (long i = 0; i < m; i += 2) {
            long i2 = i + 1 < m ? i + 1 : i;
            double t0[3] = {tx[i], ty[i], tz[i]}, t1[3] = {tx[i2], ty[i2], tz[i2]}, o0 = 0, o1 = 0;
            pair_tile(sx, sy, sz, w, c2, j0, j1, t0, t1, &o0, &o1);
            out[i] += o0;
            if (i2 != i) out[i2] += o1;
        }
#else
#pragma omp for schedule(static)
        for (long i = 0; i < m; ++i) {
            double xi = tx[i], yi = ty[i], zi = tz[i], acc = 0;
#pragma omp simd reduction(+ : acc)
            for (long j = j0; j < j1; ++j) {
                double dx = xi - sx[j], dy = yi - sy[j], dz = zi - sz[j];
                acc += w[j] * sqrt(dx * dx + dy * dy + dz * dz + c2);
            }
            out[i] += acc;
        }
#endif
    }
}

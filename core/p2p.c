#include "core/p2p.h"

#include <math.h>

#if defined(__AVX512F__)
#include <immintrin.h>

/* 1/sqrt(r2) to ~1 ulp: 14-bit hardware estimate, two Newton steps (14 -> 28 -> 56 bits).
 * Lanes outside `valid` (self pairs, r2 = 0, and the loop tail) are zero. */
static inline __m512d rsqrt_masked(__m512d r2, __mmask8 valid) {
    const __m512d half = _mm512_set1_pd(0.5), three_half = _mm512_set1_pd(1.5);
    __m512d y = _mm512_maskz_rsqrt14_pd(valid, r2);
    __m512d h = _mm512_mul_pd(half, r2);
    y = _mm512_mul_pd(y, _mm512_fnmadd_pd(h, _mm512_mul_pd(y, y), three_half));
    y = _mm512_mul_pd(y, _mm512_fnmadd_pd(h, _mm512_mul_pd(y, y), three_half));
    return y;
}

void p2p(long nt, const double *tx, const double *ty, const double *tz, long ns,
         const double *sx, const double *sy, const double *sz, const double *sq,
         const double shift[3], double *phi, double *ex, double *ey, double *ez) {
    const __m512d zero = _mm512_setzero_pd();
    for (long i = 0; i < nt; ++i) {
        const __m512d xi = _mm512_set1_pd(tx[i] - shift[0]), yi = _mm512_set1_pd(ty[i] - shift[1]),
                      zi = _mm512_set1_pd(tz[i] - shift[2]);
        __m512d p = zero, fx = zero, fy = zero, fz = zero;
        for (long j = 0; j < ns; j += 8) {
            __mmask8 in = ns - j >= 8 ? 0xff : (__mmask8)((1u << (ns - j)) - 1);
            __m512d dx = _mm512_sub_pd(xi, _mm512_maskz_loadu_pd(in, sx + j));
            __m512d dy = _mm512_sub_pd(yi, _mm512_maskz_loadu_pd(in, sy + j));
            __m512d dz = _mm512_sub_pd(zi, _mm512_maskz_loadu_pd(in, sz + j));
            __m512d q = _mm512_maskz_loadu_pd(in, sq + j);
            __m512d r2 = _mm512_fmadd_pd(dx, dx, _mm512_fmadd_pd(dy, dy, _mm512_mul_pd(dz, dz)));
            __mmask8 valid = _mm512_mask_cmp_pd_mask(in, r2, zero, _CMP_GT_OQ);
            __m512d rinv = rsqrt_masked(r2, valid);
            __m512d qr = _mm512_mul_pd(q, rinv);
            __m512d qr3 = _mm512_mul_pd(qr, _mm512_mul_pd(rinv, rinv));
            p = _mm512_add_pd(p, qr);
            fx = _mm512_fmadd_pd(qr3, dx, fx);
            fy = _mm512_fmadd_pd(qr3, dy, fy);
            fz = _mm512_fmadd_pd(qr3, dz, fz);
        }
        phi[i] += _mm512_reduce_add_pd(p);
        ex[i] += _mm512_reduce_add_pd(fx);
        ey[i] += _mm512_reduce_add_pd(fy);
        ez[i] += _mm512_reduce_add_pd(fz);
    }
}

#else

void p2p(long nt, const double *tx, const double *ty, const double *tz, long ns,
         const double *sx, const double *sy, const double *sz, const double *sq,
         const double shift[3], double *phi, double *ex, double *ey, double *ez) {
    for (long i = 0; i < nt; ++i) {
        const double xi = tx[i] - shift[0], yi = ty[i] - shift[1], zi = tz[i] - shift[2];
        double p = 0.0, fx = 0.0, fy = 0.0, fz = 0.0;
#pragma omp simd reduction(+ : p, fx, fy, fz)
        for (long j = 0; j < ns; ++j) {
            double dx = xi - sx[j], dy = yi - sy[j], dz = zi - sz[j];
            double r2 = dx * dx + dy * dy + dz * dz;
            /* branch-free so that the loop vectorises; the self pair (r2 = 0) gives 0 */
            double rinv = 1.0 / sqrt(r2 > 0.0 ? r2 : 1.0);
            rinv = r2 > 0.0 ? rinv : 0.0;
            double qr = sq[j] * rinv, qr3 = qr * rinv * rinv;
            p += qr;
            fx += qr3 * dx;
            fy += qr3 * dy;
            fz += qr3 * dz;
        }
        phi[i] += p;
        ex[i] += fx;
        ey[i] += fy;
        ez[i] += fz;
    }
}

#endif

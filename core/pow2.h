/* core/pow2.h - exact scaling by powers of two, for the solvers that compute in normalised units
 * (lengths and weights divided by a power of two near their largest magnitude, outputs scaled
 * back): a power of two changes no digit, so results in the normal range are bitwise those of
 * the unscaled computation, and squares, reciprocals and their products stay in the double range
 * for inputs near 1e-300 or 1e300. */
#ifndef FMM_CORE_POW2_H
#define FMM_CORE_POW2_H

#include <float.h>
#include <math.h>
#include <omp.h>

#include "fmm.h"

/* The exponent e with m = f 2^e, f in [0.5, 1) (frexp's); 0 for m = 0. m >= 0 and finite. */
static inline int fmm_pow2_exponent(double m) {
    int e = 0;
    if (m > 0) frexp(m, &e);
    return e;
}

/* x 2^e, as ldexp(x, e) (exact unless the result is subnormal), given f = ldexp(1, e): one
 * multiplication where 2^e is a nonzero finite double, ldexp where it is not. */
static inline double fmm_pow2_scale(double x, double f, int e) {
    return f != 0 && f <= DBL_MAX ? x * f : ldexp(x, e);
}

/* Checks n values (weights): FMM_ERR_NONFINITE for a NaN/Inf, else FMM_OK and in *e the
 * exponent of the largest |v[i]| (fmm_pow2_exponent). nth: OpenMP threads (0 = default). */
static inline int fmm_pow2_check_max(long n, const double *v, int *e, int nth) {
    int bad = 0;
    double m = 0;
#pragma omp parallel for schedule(static) reduction(|                                              \
                                                    : bad) reduction(max                           \
                                                                     : m)                          \
    num_threads(nth > 0 ? nth : omp_get_max_threads())
    for (long i = 0; i < n; ++i) {
        bad |= !isfinite(v[i]);
        m = fabs(v[i]) > m ? fabs(v[i]) : m;
    }
    *e = bad ? 0 : fmm_pow2_exponent(m);
    return bad ? FMM_ERR_NONFINITE : FMM_OK;
}

/* v[i] *= 2^e for i < n (outputs computed in normalised units back to the caller's).
 * FMM_ERR_RANGE where the output is not representable: a value not finite (beyond the double
 * range, or an overflow inside the sum), or a nonzero output whose largest value falls below
 * DBL_MIN (it would lose digits or become 0). Single values below DBL_MIN beside a normal
 * largest one are kept: they lose less than the sum's rounding error relative to it.
 * nth: OpenMP threads (0 = default). */
static inline int fmm_pow2_scale_out(long n, double *v, int e, int nth) {
    const double f = ldexp(1.0, e);
    int bad = 0;
    double in = 0, out = 0;
#pragma omp parallel for schedule(static) reduction(|                                              \
                                                    : bad) reduction(max                           \
                                                                     : in, out)                    \
    num_threads(nth > 0 ? nth : omp_get_max_threads())
    for (long i = 0; i < n; ++i) {
        in = fabs(v[i]) > in ? fabs(v[i]) : in;
        v[i] = fmm_pow2_scale(v[i], f, e);
        bad |= !isfinite(v[i]);
        out = fabs(v[i]) > out ? fabs(v[i]) : out;
    }
    return bad || (in > 0 && out < DBL_MIN) ? FMM_ERR_RANGE : FMM_OK;
}

#endif /* FMM_CORE_POW2_H */

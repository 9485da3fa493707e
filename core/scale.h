/* core/scale.h - the Coulomb sums in normalised units.
 *
 * phi, E, U and the virial are homogeneous in the lengths and the charges: with x = 2^e x' and
 * q = 2^eq q', phi = 2^(eq-e) phi', E = 2^(eq-2e) E', U = 2^(2eq-e) U' and W = 2^(2eq-e) W'.
 * Powers of two scale every floating-point operation exactly (short of overflow and underflow),
 * so the FMM and the reference sums run on x' and q' and scale their outputs back: the same
 * digits at any scale, where 1/r^3 at coordinates of 1e-110 or r^2 at 1e200 would overflow.
 * Inputs of magnitude within [2^-FMM_SCALE_FREE, 2^FMM_SCALE_FREE] are used as they are
 * (exponent 0: no copies, the same results as without normalisation). */
#ifndef FMM_CORE_SCALE_H
#define FMM_CORE_SCALE_H

#include <math.h>

#ifdef __cplusplus
extern "C" {
#endif

#define FMM_SCALE_FREE 64

/* Exponent e for values of magnitude m >= 0 (a box edge, the largest |q|): 0 where m is 0, not
 * finite or within [2^-64, 2^64], else ilogb(m), so that m 2^-e lies in [1, 2). */
static inline int fmm_scale_exponent(double m) {
    if (!(m > 0) || !isfinite(m)) return 0;
    const int e = ilogb(m);
    return e >= -FMM_SCALE_FREE && e <= FMM_SCALE_FREE ? 0 : e;
}

/* Length exponent for a set of extent `extent` (root cube edge, box edge or half of it) whose
 * largest |coordinate| is amax: fmm_scale_exponent(extent), raised where needed so that amax
 * 2^-e stays below 2^1021 (a degenerate set far from the origin, or a small periodic box with
 * coordinates many box lengths away). */
static inline int fmm_length_exponent(double extent, double amax) {
    int e = fmm_scale_exponent(extent);
    if (amax > 0 && isfinite(amax) && ilogb(amax) - e > 1020) e = ilogb(amax) - 1020;
    return e;
}

/* x 2^e exactly (unless the result is subnormal), given f = ldexp(1, e): one multiplication
 * where 2^e is a normal double, ldexp where it is not. */
static inline double fmm_pow2(double x, double f, int e) {
    return f != 0 && f <= 1.7976931348623157e308 ? x * f : ldexp(x, e);
}

/* out[i] = in[i] 2^e for i < n, each array double or (f32) float, in == out allowed; threads
 * as in fmm_opts. Then the range check of an output: FMM_ERR_RANGE where a value is not finite
 * (beyond the range of its type, or an overflow inside the sums at pairs far closer than the
 * set's extent), or where a nonzero output's largest value falls below the type's smallest normal
 * number (it would keep few digits, or none). Values below it beside a normal largest one are
 * kept: they lose less than the sums' rounding relative to it. Else FMM_OK. */
int fmm_scale_output(long n, const void *in, int in_f32, void *out, int out_f32, int e,
                     int threads);

/* The check of an input array before it is normalised: FMM_ERR_NONFINITE if one of v[0..n-1] is
 * NaN or Inf; else FMM_OK and *amax = max(*amax, largest |v[i]|) (a maximum: the same for any
 * thread count), whose fmm_scale_exponent is the power of two to divide by. threads as above. */
int fmm_check_max_abs(long n, const double *v, double *amax, int threads);

#ifdef __cplusplus
}
#endif

#endif /* FMM_CORE_SCALE_H */
